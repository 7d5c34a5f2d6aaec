/* psplice relay: the listeners a service manager passed (LISTEN "-").
 * systemd's socket activation, as sd_listen_fds(3) describes it: the
 * listening sockets are fds 3, 4, ... up to 3 + LISTEN_FDS - 1, meant for the
 * process whose pid is LISTEN_PID, named in LISTEN_FDNAMES (colon-separated)
 * if the manager names them. Read here with no library: the protocol is a
 * few environment variables. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "relay.h"
#include "out.h"

#define FIRST_FD 3            /* SD_LISTEN_FDS_START */
#define MAX_FDS 4096          /* far more than a socket unit lists */

/* A decimal number and nothing else; -1 otherwise. */
static long decimal(const char *s)
{
	char *end;
	long v;

	if (!s || !*s || strspn(s, "0123456789") != strlen(s))
		return -1;
	errno = 0;
	v = strtol(s, &end, 10);
	return errno ? -1 : v;
}

/* How many listeners were passed to this process; -1 once said why not. */
static int passed_count(void)
{
	const char *fds = getenv("LISTEN_FDS"), *pid = getenv("LISTEN_PID");
	long n = decimal(fds), owner = decimal(pid);

	if (!fds) {
		cli_error(0, "relay: LISTEN is '-' but no listening sockets were passed "
			  "(LISTEN_FDS is not set): start the relay from a systemd socket "
			  "unit or systemd-socket-activate");
		return -1;
	}
	if (n < 1 || n > MAX_FDS) {
		cli_error(0, "relay: invalid LISTEN_FDS %s (want a count of sockets, 1 to %d)",
			  cli_quote(fds), MAX_FDS);
		return -1;
	}
	if (!pid) {
		cli_error(0, "relay: LISTEN_FDS is set but LISTEN_PID is not: "
			  "the sockets may be meant for another process");
		return -1;
	}
	/* A variable inherited from a parent that was itself activated:
	 * fds 3 and up are not (or no longer) the listeners it names. */
	if (owner != (long)getpid()) {
		cli_error(0, "relay: the listening sockets were passed to process %s, "
			  "not to this one (%ld): LISTEN_PID does not match",
			  cli_quote(pid), (long)getpid());
		return -1;
	}
	return (int)n;
}

/* LISTEN_FDNAMES cut at the colons, if it names each of the n sockets;
 * NULL otherwise (the names only label messages). The first pointer holds
 * the copy of the whole string. */
static char **passed_names(int n)
{
	const char *env = getenv("LISTEN_FDNAMES");
	char **names, *s;
	int k;

	if (!env || (names = calloc((size_t)n, sizeof(*names))) == NULL)
		return NULL;
	s = strdup(env);
	for (k = 0; s && k < n; k++) {
		names[k] = s;
		s = strchr(s, ':');
		if (s)
			*s++ = '\0';
	}
	if (k == n && !s)
		return names;
	free(names[0]);
	free(names);
	return NULL;
}

void free_names(char **names)
{
	if (names)
		free(names[0]);
	free(names);
}

/* Each passed fd must be a TCP or unix stream socket that listens: a
 * datagram socket (ListenDatagram=), a FIFO (ListenFIFO=) or a socket not
 * yet listening (Accept=yes hands out connections) would never accept. The
 * fds are made close-on-exec, as the relay's own are, and non-blocking: the
 * workers accept until EAGAIN. */
static int check_listener(const struct relay *r, int k)
{
	int fd = FIRST_FD + k, type = 0, conn = 0, domain = 0, flags;
	socklen_t len = sizeof(int);
	char what[300];
	const char *bad = NULL;

	snprintf(what, sizeof(what), "relay: fd %d passed in LISTEN_FDS%s%s%s", fd,
		 r->listen_names ? " (" : "", r->listen_names ? r->listen_names[k] : "",
		 r->listen_names ? ")" : "");
	if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0) {
		cli_error(errno, "%s", what);
		return -1;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0) {
		cli_error(errno, "%s", what);
		return -1;
	}
	len = sizeof(int);
	getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &conn, &len);
	len = sizeof(int);
	getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len);
	if (type != SOCK_STREAM)
		bad = "is not a stream socket";
	else if (domain != AF_INET && domain != AF_INET6 && domain != AF_UNIX)
		bad = "is not a TCP or unix socket";
	else if (!conn)
		bad = "is not listening (a socket unit with Accept=yes passes connections)";
	if (bad) {
		cli_error(0, "%s %s", what, bad);
		return -1;
	}
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
		cli_error(errno, "%s", what);
		return -1;
	}
	return 0;
}

/* The listeners passed, checked: fds FIRST_FD and up; how many, or -1
 * once said why not. Named in LISTEN_FDNAMES, their names in
 * r->listen_names. */
int passed_listeners(struct relay *r)
{
	int n = passed_count(), k;

	if (n < 0)
		return -1;
	r->listen_names = passed_names(n);
	/* Read once, for this process: a program the relay ever starts
	 * must not take the sockets for its own. */
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDNAMES");
	for (k = 0; k < n; k++)
		if (check_listener(r, k) < 0)
			return -1;
	return n;
}

/* The workers share every passed listener, each woken alone
 * (EPOLLEXCLUSIVE), as they share the one they make without --reuseport:
 * a socket per worker would need binding the address again, which the
 * relay may have no right to do (a port below 1024, a path it cannot
 * create) and which SO_REUSEPORT would open to any process of its user. */
int inherit_listeners(struct relay *r)
{
	int n = passed_listeners(r), i, k;

	if (n < 0)
		return -1;
	r->nlisten = n;
	r->shared = true;
	if (listener_handles(r) < 0)
		return -1;
	for (i = 0; i < r->jobs; i++)
		for (k = 0; k < n; k++)
			listener_at(r, i, k)->h.fd = FIRST_FD + k;
	return 0;
}
