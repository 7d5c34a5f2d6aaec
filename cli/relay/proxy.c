/* psplice relay: the PROXY protocol on each connection. --accept-proxy
 * reads the client's header before anything else and takes the client's
 * address from it; --send-proxy and --send-proxy-v2 begin the stream to
 * TARGET with a header naming the client. The header is the only thing
 * the relay ever reads or writes itself: its bytes are few, and the
 * client's own bytes stay in the socket for the splice. */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>

#include "relay.h"

/* The header to send, naming src and dst. */
static void prepare(const struct relay *r, struct conn *c, const struct sockaddr *src,
		    socklen_t slen, const struct sockaddr *dst, socklen_t dlen)
{
	c->hdr_len = (uint16_t)proxy_make(r->send_proxy, src, slen, dst, dlen, c->hdr);
	c->hdr_off = 0;
}

/* The header naming the connection itself: the client's address, and
 * the one it connected to (the listener's, or a unix listener's path).
 * One that cannot be had is sent as unknown (UNKNOWN, UNSPEC): the
 * receiver then uses its connection's own, as the specification says. */
void proxy_prepare(const struct relay *r, struct conn *c)
{
	struct sockaddr_storage peer, me;
	socklen_t plen = sizeof(peer), mlen = sizeof(me);

	if (getpeername(c->client.fd, (struct sockaddr *)&peer, &plen) < 0 ||
	    getsockname(c->client.fd, (struct sockaddr *)&me, &mlen) < 0) {
		peer.ss_family = me.ss_family = AF_UNSPEC;
		plen = mlen = sizeof(me.ss_family);
	}
	prepare(r, c, (struct sockaddr *)&peer, plen, (struct sockaddr *)&me, mlen);
}

/* Wait for the client's header, for PROXY_WAIT_MS at most: a client that
 * sends nothing holds a slot no longer than that. */
void proxy_start(struct worker *w, struct conn *c)
{
	c->awaiting = true;
	c->deadline = now_ms() + PROXY_WAIT_MS;
	if (c->deadline < w->next_check)
		w->next_check = c->deadline;
	conn_watch(w, c);
}

static void drop(struct worker *w, struct conn *c, int err)
{
	conn_close(w, c, &(struct ending){ .how = END_PROXY, .side = SIDE_CLIENT,
					   .reading = true, .err = err });
}

void proxy_timeout(struct worker *w, struct conn *c)
{
	drop(w, c, ETIMEDOUT);
}

/* How much to look at: a version 2 header says its length in its first 16
 * bytes; a version 1 line is at most PROXY_V1_MAX. Looking further would
 * copy the client's data for nothing. */
static size_t wanted(const unsigned char *buf, ssize_t n)
{
	if (n >= PROXY_V2_FIXED && buf[0] == '\r')
		return PROXY_V2_FIXED + ((size_t)buf[14] << 8 | buf[15]);
	return PROXY_V1_MAX;
}

/* Whether the client ended its stream (or the connection failed). */
static bool ended(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLRDHUP };

	return poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* The header as the client sent it so far: looked at with MSG_PEEK, and
 * once whole and valid, taken off the socket exactly, so that the first
 * byte the splice sees is the client's first. A bad one is never passed
 * on: the connection is closed before TARGET is even connected. True when
 * the header was read whole, and TARGET is next; false while more is to
 * come, or when the connection was closed. */
bool proxy_read(struct worker *w, struct conn *c)
{
	unsigned char buf[PROXY_MAX];
	struct proxy_addrs a;
	size_t want = PROXY_V1_MAX;
	ssize_t n, got;

	for (;;) {
		n = recv(c->client.fd, buf, want, MSG_PEEK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			if (errno != EAGAIN)
				drop(w, c, errno);
			return false;
		}
		got = proxy_parse(buf, (size_t)n, &a);
		if (got || n == 0 || (size_t)n < want || wanted(buf, n) <= want)
			break;
		/* A version 2 header longer than the first look: look again. */
		want = wanted(buf, n);
	}
	/* A beginning of a header: epoll says when more comes (EPOLLET), the
	 * time limit ends the wait. The end of the stream after it, which a
	 * peek cannot see behind the bytes, makes it a truncated one. */
	if (got == 0 && n > 0 && !ended(c->client.fd))
		return false;
	if (got <= 0 || recv(c->client.fd, buf, (size_t)got, 0) != got) {
		drop(w, c, EPROTO);
		return false;
	}
	c->awaiting = false;
	if (!gate_named(c->r, c, &a)) {
		conn_refuse(w, c);
		return false;
	}
	if (a.known)
		addr_text((struct sockaddr *)&a.src, a.len, c->peer, sizeof(c->peer));
	if (c->r->send_proxy) {
		if (a.known)
			prepare(c->r, c, (struct sockaddr *)&a.src, a.len,
				(struct sockaddr *)&a.dst, a.len);
		else
			proxy_prepare(c->r, c);
	}
	if (!c->r->json)
		log_open(c->r, c);
	return true;
}

/* What is left of the header to TARGET: 0 when all is sent, 1 when the
 * socket is full (rare: a new connection's buffer holds it whole), or a
 * negative errno. */
int proxy_send(struct conn *c)
{
	ssize_t n;

	while (c->hdr_off < c->hdr_len) {
		n = send(c->target.fd, c->hdr + c->hdr_off, c->hdr_len - c->hdr_off,
			 MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN ? 1 : -errno;
		c->hdr_off += (uint16_t)n;
	}
	return 0;
}
