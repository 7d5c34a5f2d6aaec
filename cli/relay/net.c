/* psplice relay: addresses and sockets. The text of an address for
 * messages, the listeners (made before any worker starts, so that an error
 * exits 1), and the options each connection's TCP sockets get. */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "relay.h"
#include "out.h"

/* For messages: "127.0.0.1:80", "[::1]:80", "unix:/run/x". */
void addr_text(const struct sockaddr *sa, socklen_t len, char *buf, size_t size)
{
	char host[INET6_ADDRSTRLEN], port[8];

	if (sa->sa_family == AF_UNIX) {
		const struct sockaddr_un *un = (const struct sockaddr_un *)sa;

		snprintf(buf, size, "unix:%s", len > offsetof(struct sockaddr_un, sun_path) &&
			 un->sun_path[0] ? un->sun_path : "(unnamed)");
		return;
	}
	if (getnameinfo(sa, len, host, sizeof(host), port, sizeof(port),
			NI_NUMERICHOST | NI_NUMERICSERV)) {
		snprintf(buf, size, "?");
		return;
	}
	snprintf(buf, size, sa->sa_family == AF_INET6 ? "[%s]:%s" : "%s:%s", host, port);
}

/* A unix socket file nobody listens on (a relay that was killed left it):
 * connecting to it is refused. */
static bool stale(const struct sockaddr *sa, socklen_t len)
{
	struct stat st;
	int fd, r;

	/* Connecting to a file that is not a socket is refused too. */
	if (lstat(((const struct sockaddr_un *)sa)->sun_path, &st) < 0 || !S_ISSOCK(st.st_mode))
		return false;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	r = connect(fd, sa, len);
	close(fd);
	return r < 0 && errno == ECONNREFUSED;
}

static int listen_on(const struct relay *r, const struct sockaddr *sa, socklen_t len,
		     bool reuseport)
{
	int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	const char *path = ((const struct sockaddr_un *)sa)->sun_path;
	int one = 1, err;

	if (fd < 0)
		return -errno;
	if (sa->sa_family != AF_UNIX) {
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		/* One listener per worker on the same port: the kernel spreads
		 * new connections across them, with no shared accept lock. */
		if (reuseport && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0)
			goto fail;
	}
	if (bind(fd, sa, len) < 0) {
		if (sa->sa_family != AF_UNIX || errno != EADDRINUSE || !stale(sa, len) ||
		    unlink(path) < 0 || bind(fd, sa, len) < 0)
			goto fail;
	}
	/* Before listen(): no client connects while the mode is still wrong. */
	if (sa->sa_family == AF_UNIX && r->unix_mode >= 0 &&
	    chmod(path, (mode_t)r->unix_mode) < 0)
		goto fail;
	if (listen(fd, SOMAXCONN) < 0)
		goto fail;
	return fd;
fail:
	err = errno;
	close(fd);
	return -err;
}

/* Each worker's handles of the r->nlisten listeners, in one block that
 * free_listeners frees; no fd yet. */
int listener_handles(struct relay *r, struct worker *w)
{
	size_t n = (size_t)r->nlisten;
	struct handle *h = calloc((size_t)r->jobs * n, sizeof(*h));
	size_t k;
	int i;

	if (!h) {
		cli_error(ENOMEM, "relay");
		return -1;
	}
	for (i = 0; i < r->jobs; i++) {
		w[i].listeners = h + (size_t)i * n;
		for (k = 0; k < n; k++)
			w[i].listeners[k].fd = -1;
	}
	return 0;
}

void free_listeners(struct relay *r, struct worker *w)
{
	free(w[0].listeners);
	free_names(r->listen_names);
}

/* For messages: the address listener k of w is bound to, and the name the
 * service manager gave it. */
void listener_text(const struct relay *r, const struct worker *w, int k, char *buf,
		   size_t size)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	size_t used;

	if (getsockname(w->listeners[k].fd, (struct sockaddr *)&ss, &len) < 0) {
		snprintf(buf, size, "fd %d", w->listeners[k].fd);
		return;
	}
	addr_text((struct sockaddr *)&ss, len, buf, size);
	used = strlen(buf);
	if (r->listen_names && used < size)
		snprintf(buf + used, size - used, " (%s)", r->listen_names[k]);
}

/* One listener, shared by the workers (each woken alone, EPOLLEXCLUSIVE).
 * With --reuseport on TCP, one SO_REUSEPORT listener per worker instead,
 * the kernel spreading connections among them; the first bind settles
 * port 0 and the others take the port it got. SO_REUSEPORT lets any process
 * of the same user bind the port too and take a share of its connections,
 * so a second relay started by mistake would do so silently: only when
 * asked. Unix: a stale socket file is replaced, a live one is not.
 * LISTEN "-", or a relay started by a reload: the sockets passed
 * (relay_activate.c); --replace: those of the relay replaced
 * (relay_replace.c). */
int make_listeners(struct relay *r, struct worker *w)
{
	struct sockaddr_storage ss = r->listen.ss;
	socklen_t len = r->listen.len;
	bool unix_sock = ss.ss_family == AF_UNIX;
	int i, fd;

	if (r->ready_fd >= 0)
		return inherit_listeners(r, w);
	if (r->replace_pid)
		return replace_take(r, w);
	if (r->inherited)
		return inherit_listeners(r, w);
	r->nlisten = 1;
	if (listener_handles(r, w) < 0)
		return -1;
	r->shared = unix_sock || !r->reuseport;
	for (i = 0; i < r->jobs; i++) {
		if (r->shared && i) {
			w[i].listeners[0].fd = w[0].listeners[0].fd;
			continue;
		}
		fd = listen_on(r, (struct sockaddr *)&ss, len, !r->shared);
		if (fd < 0) {
			cli_error(-fd, "cannot listen on %s", cli_quote(r->listen.text));
			return -1;
		}
		if (!i && !r->shared)
			getsockname(fd, (struct sockaddr *)&ss, &len);
		w[i].listeners[0].fd = fd;
	}
	return 0;
}

/* TCP sockets of a connection: no Nagle delay (a relay that holds a small
 * reply back for an ACK adds its 40 ms to every request), and, if asked, a
 * bound on the bytes queued unsent. Other sockets ignore both. */
void tune(const struct relay *r, int fd)
{
	int one = 1;

	if (!r->nagle)
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (r->notsent_lowat)
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &r->notsent_lowat,
				 sizeof(r->notsent_lowat));
}
