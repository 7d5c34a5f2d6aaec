/* psplice relay: what every file that makes or names sockets shares: the
 * text of an address for messages, each worker's handles of the
 * listeners, and the options each connection's TCP sockets get. It calls
 * nothing of the relay. */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>

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
