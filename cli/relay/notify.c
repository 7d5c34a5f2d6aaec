/* psplice relay under a service manager's Type=notify: the state said in
 * datagrams to the unix socket NOTIFY_SOCKET names, as sd_notify(3)
 * documents the protocol (a path, or "@" for the abstract namespace;
 * newline-separated VAR=VALUE lines). READY=1 once the relay serves;
 * RELOADING=1 with MONOTONIC_USEC when SIGUSR2 starts a new relay; then
 * MAINPID of the new relay and READY=1 once it serves (sent by the old
 * one, the main process the manager listens to), or READY=1 alone when
 * the reload failed; STOPPING=1 at a stop. A relay started by a reload
 * says nothing at its start: the relay it replaces speaks for it. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "relay.h"
#include "out.h"

static bool failed_said;

/* NOTIFY_SOCKET's address into a; its length, or 0 when unset or not a
 * unix socket's (the vsock forms are not for a relay). */
static socklen_t notify_addr(struct sockaddr_un *a)
{
	const char *path = getenv("NOTIFY_SOCKET");
	size_t len = path ? strlen(path) : 0;

	if (len < 2 || (path[0] != '/' && path[0] != '@') || len >= sizeof(a->sun_path))
		return 0;
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	memcpy(a->sun_path, path, len);
	if (path[0] == '@')
		a->sun_path[0] = '\0';
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len +
			   (path[0] == '/'));
}

/* One datagram; a manager that does not take it is said once. Never
 * waits: a full queue drops the state rather than stop the relay. */
static void notify(const char *fmt, ...)
{
	struct sockaddr_un a;
	socklen_t alen = notify_addr(&a);
	char text[256];
	va_list ap;
	int fd, len, err = 0;

	if (!alen)
		return;
	va_start(ap, fmt);
	len = vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || sendto(fd, text, (size_t)len, MSG_DONTWAIT | MSG_NOSIGNAL,
			     (struct sockaddr *)&a, alen) != len)
		err = errno;
	if (fd >= 0)
		close(fd);
	if (err && !failed_said) {
		failed_said = true;
		cli_error(err, "relay: cannot notify the service manager at %s",
			  cli_quote(getenv("NOTIFY_SOCKET")));
	}
}

void notify_ready(pid_t main_pid)
{
	notify("READY=1\nMAINPID=%ld\n", (long)main_pid);
}

void notify_reloading(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	notify("RELOADING=1\nMONOTONIC_USEC=%lld\n",
	       (long long)now.tv_sec * 1000000 + now.tv_nsec / 1000);
}

/* The reload ended: pid serves in this one's place, or (0) it failed and
 * this one serves on. */
void notify_reloaded(pid_t pid)
{
	if (pid > 0)
		notify("MAINPID=%ld\nREADY=1\n", (long)pid);
	else
		notify("READY=1\nSTATUS=reload failed: process %ld serves on\n",
		       (long)getpid());
}

void notify_stopping(void)
{
	notify("STOPPING=1\n");
}
