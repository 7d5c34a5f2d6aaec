/* psplice relay: addresses and sockets. The text of an address for
 * messages, the listeners (made before any worker starts, so that an error
 * exits 1), and the options each connection's TCP sockets get. */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "relay.h"

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

static int listen_on(const struct sockaddr *sa, socklen_t len, bool reuseport)
{
	int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
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
	if (bind(fd, sa, len) < 0 || listen(fd, SOMAXCONN) < 0)
		goto fail;
	return fd;
fail:
	err = errno;
	close(fd);
	return -err;
}

/* TCP: one SO_REUSEPORT listener per worker; the first bind settles port 0
 * and the others take the port it got. Unix: one listener, shared. */
int make_listeners(struct relay *r, struct worker *w)
{
	struct sockaddr_storage ss = r->listen.ss;
	socklen_t len = r->listen.len;
	bool unix_sock = ss.ss_family == AF_UNIX;
	int i, fd;

	for (i = 0; i < r->jobs; i++) {
		if (unix_sock && i) {
			w[i].listener.fd = w[0].listener.fd;
			continue;
		}
		fd = listen_on((struct sockaddr *)&ss, len, !unix_sock);
		if (fd < 0) {
			cli_error(-fd, "cannot listen on %s", cli_quote(r->listen.text));
			return -1;
		}
		if (!i && !unix_sock)
			getsockname(fd, (struct sockaddr *)&ss, &len);
		w[i].listener.fd = fd;
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
