/* psplice relay: what every file that makes or names sockets shares: the
 * text of an address for messages, each worker's handles of the
 * listeners, listeners made elsewhere handed to the workers, and the
 * options each connection's TCP sockets get. It calls nothing of the
 * relay. */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
int listener_handles(struct relay *r)
{
	size_t n = (size_t)r->jobs * (size_t)r->nlisten, k;

	if (!(r->lis = calloc(n, sizeof(*r->lis)))) {
		cli_error(ENOMEM, "relay");
		return -1;
	}
	for (k = 0; k < n; k++)
		r->lis[k] = (struct listener){ .h = { .kind = H_LISTEN, .fd = -1 }, .r = r };
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

/* The sockets of a --reuseport relay with as many workers as this one:
 * one each on the same address, all SO_REUSEPORT. */
static bool one_per_worker(const struct relay *r, const int *fds, int n)
{
	struct sockaddr_storage first, ss;
	socklen_t flen = sizeof(first), len;
	int k, on;

	if (n < 2 || n != r->jobs ||
	    getsockname(fds[0], (struct sockaddr *)&first, &flen) < 0)
		return false;
	for (k = 0; k < n; k++) {
		len = sizeof(int);
		on = 0;
		if (getsockopt(fds[k], SOL_SOCKET, SO_REUSEPORT, &on, &len) < 0 || !on)
			return false;
		len = sizeof(ss);
		if (getsockname(fds[k], (struct sockaddr *)&ss, &len) < 0 || len != flen ||
		    memcmp(&ss, &first, len))
			return false;
	}
	return true;
}

/* Sockets made elsewhere, taken from the relay --replace names or passed by
 * a reload (claim.c), served as a service manager's are: each worker watches
 * every one, woken alone (EPOLLEXCLUSIVE). That holds for any --jobs: the
 * sockets of a --reuseport relay, one per worker, are each watched by all
 * the workers of this one, however many, so none is left with a queue
 * nobody reads. With as many workers as sockets, each worker has one of
 * its own again, with no accept shared. */
int serve_fds(struct relay *r, int *fds, int n)
{
	int i, k, flags;

	r->shared = !one_per_worker(r, fds, n);
	r->nlisten = r->shared ? n : 1;
	if (listener_handles(r) < 0)
		return -1;
	for (k = 0; k < n; k++) {
		/* The flags are the socket's, shared with the process it came
		 * from: that one set them already. */
		flags = fcntl(fds[k], F_GETFL);
		if (flags < 0 || fcntl(fds[k], F_SETFL, flags | O_NONBLOCK) < 0) {
			cli_error(errno, "relay: cannot serve a listener taken");
			return -1;
		}
		if (!r->shared)
			listener_at(r, k, 0)->h.fd = fds[k];
		else
			for (i = 0; i < r->jobs; i++)
				listener_at(r, i, k)->h.fd = fds[k];
	}
	return 0;
}
