/* psplice relay --metrics=ADDR: a listener of its own and one thread that
 * answers GET /metrics with the counters (metrics.c) over HTTP/1.x, one
 * request a connection. The thread is not a worker: a scrape never waits
 * for a connection's events, nor one for a scrape. It serves at most
 * MAX_CLIENTS at once, each for CLIENT_MS from its accept, request and
 * answer together, its request at most REQ_MAX bytes: a client that sends
 * nothing, sends byte by byte or does not read is dropped at its
 * deadline, and while every slot is taken new clients wait their turn in
 * the listener's queue rather than being dropped or evicting another.
 * A relay that takes over (SIGUSR2, --replace) binds the same address
 * beside this one (SO_REUSEPORT, which this listener has too); once it
 * serves, this one closes its listener and scrapes reach the new one. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "relay.h"
#include "out.h"

#define MAX_CLIENTS 16
#define CLIENT_MS 5000
#define REQ_MAX 8192

struct mclient {
	int fd;              /* -1: a free slot */
	int64_t deadline;
	size_t got;          /* of the request */
	char *out;           /* the answer, once the request is whole; or NULL */
	size_t out_len, out_off;
	char req[REQ_MAX];
};

struct metrics {
	struct relay *r;
	int lfd;             /* -1 once handed over */
	int wake_fd;         /* eventfd: a handover or the stop */
	int64_t retry_at;    /* the listener is not watched before (out of fds) */
	bool started;
	atomic_bool stop;
	pthread_t thread;
	struct mclient c[MAX_CLIENTS];
};

/* Bound with SO_REUSEPORT set for the relay that will replace this one.
 * Set before bind only when this one replaces another (a reload, or
 * --replace): a relay started anew by mistake on a busy address is
 * refused (EADDRINUSE) rather than sharing it. -errno on failure. */
static int bind_metrics(const struct cli_addr *a, bool successor)
{
	int fd = socket(a->ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1, err;

	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (successor && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0)
		goto fail;
	if (bind(fd, (const struct sockaddr *)&a->ss, a->len) < 0)
		goto fail;
	if (!successor && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0)
		goto fail;
	if (listen(fd, 64) < 0)
		goto fail;
	return fd;
fail:
	err = errno;
	close(fd);
	return -err;
}

static void say_bound(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	char where[128];

	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return;
	addr_text((struct sockaddr *)&ss, len, where, sizeof(where));
	cli_say("relay: metrics on http://%s/metrics", where);
}

int metrics_listen(struct relay *r)
{
	struct metrics *m;
	int fd, i;

	if (!r->metrics_text)
		return 0;
	fd = bind_metrics(&r->metrics_addr, r->ready_fd >= 0 || r->replace_pid);
	if (fd < 0) {
		cli_error(-fd, "cannot listen on %s for --metrics", cli_quote(r->metrics_text));
		return -1;
	}
	m = calloc(1, sizeof(*m));
	if (!m || (m->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
		cli_error(m ? errno : ENOMEM, "relay: --metrics");
		free(m);
		close(fd);
		return -1;
	}
	m->r = r;
	m->lfd = fd;
	for (i = 0; i < MAX_CLIENTS; i++)
		m->c[i].fd = -1;
	r->metrics = m;
	if (r->verbose)
		say_bound(fd);
	return 0;
}

/* The client's end: what it sent after its request is read and dropped
 * first (bounded), so that the close does not reset the answer away. */
static void drop(struct mclient *c)
{
	char sink[1024];
	int i;

	shutdown(c->fd, SHUT_WR);
	for (i = 0; i < 8 && recv(c->fd, sink, sizeof(sink), MSG_DONTWAIT) > 0; i++)
		;
	close(c->fd);
	free(c->out);
	c->fd = -1;
	c->out = NULL;
}

/* The answer out as far as the socket takes it; the client dropped once
 * it is all sent, or on an error. */
static void send_some(struct mclient *c)
{
	ssize_t n;

	while (c->out_off < c->out_len) {
		n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0)
			break;
		c->out_off += (size_t)n;
	}
	drop(c);
}

/* Whether the request's head ended (an empty line, a bare LF tolerated)
 * in its bytes from "from" on: each byte is looked at about once, however
 * the request comes. */
static bool ended(const struct mclient *c, size_t from)
{
	size_t i;

	for (i = from > 2 ? from - 2 : 1; i < c->got; i++)
		if (c->req[i] == '\n' &&
		    (c->req[i - 1] == '\n' || (i >= 2 && c->req[i - 1] == '\r' &&
						c->req[i - 2] == '\n')))
			return true;
	return false;
}

/* A method: a token of RFC 9110, visible characters but its separators. */
static bool token(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (s[i] <= ' ' || s[i] >= 0x7f || strchr("\"(),/:;<=>?@[\\]{}", s[i]))
			return false;
	return n > 0;
}

/* The path of "METHOD SP /PATH[?QUERY] SP HTTP/1.x": its status, 200 for
 * /metrics; *head for HEAD, which is answered without the body. */
static int judge(const char *req, size_t len, bool *head)
{
	const char *nl = memchr(req, '\n', len), *sp1, *sp2, *q;
	size_t n, m, t, i;

	if (!nl || memchr(req, '\0', len))
		return 400;
	n = (size_t)(nl - req) - (nl > req && nl[-1] == '\r');
	sp1 = memchr(req, ' ', n);
	sp2 = sp1 ? memchr(sp1 + 1, ' ', n - (size_t)(sp1 + 1 - req)) : NULL;
	if (!sp2)
		return 400;
	m = (size_t)(sp1 - req);
	t = (size_t)(sp2 - sp1 - 1);
	if (!token(req, m) || n - m - t - 2 != 8 ||
	    memcmp(sp2 + 1, "HTTP/1.", 7) || (sp2[8] != '0' && sp2[8] != '1') ||
	    !t || sp1[1] != '/')
		return 400;
	for (i = 1; i <= t; i++)
		if ((unsigned char)sp1[i] <= ' ' || (unsigned char)sp1[i] >= 0x7f)
			return 400;
	*head = m == 4 && !memcmp(req, "HEAD", 4);
	if (!*head && !(m == 3 && !memcmp(req, "GET", 3)))
		return 405;
	q = memchr(sp1 + 1, '?', t);
	t = q ? (size_t)(q - sp1 - 1) : t;
	return t == 8 && !memcmp(sp1 + 1, "/metrics", 8) ? 200 : 404;
}

static const char *reason(int code)
{
	switch (code) {
	case 200: return "OK";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 431: return "Request Header Fields Too Large";
	default: return "Bad Request";
	}
}

/* The whole answer to a request of len bytes (whole: its head ended
 * within REQ_MAX), malloc'd; NULL when out of memory. */
static char *http_answer(struct relay *r, const char *req, size_t len, bool whole,
			 size_t *out_len)
{
	bool head = false;
	int code = whole ? judge(req, len, &head) : 431;
	char hdr[256], *body = NULL, *out;
	size_t blen = 0, hlen;

	if (code == 200 && !(body = metrics_render(r, &blen)))
		return NULL;
	if (code != 200)
		blen = strlen(reason(code)) + 1;
	hlen = (size_t)snprintf(hdr, sizeof(hdr), "HTTP/1.1 %d %s\r\nContent-Type: %s\r\n"
				"Content-Length: %zu\r\n%sConnection: close\r\n\r\n", code,
				reason(code), code == 200 ? "text/plain; version=0.0.4; "
				"charset=utf-8" : "text/plain; charset=utf-8", blen,
				code == 405 ? "Allow: GET, HEAD\r\n" : "");
	out = malloc(hlen + blen);
	if (out) {
		memcpy(out, hdr, hlen);
		if (code == 200) {
			memcpy(out + hlen, body, blen);
		} else {
			memcpy(out + hlen, reason(code), blen - 1);
			out[hlen + blen - 1] = '\n';
		}
		*out_len = hlen + (head ? 0 : blen);
	}
	free(body);
	return out;
}

static void answer(struct relay *r, struct mclient *c, bool whole)
{
	c->out = http_answer(r, c->req, c->got, whole, &c->out_len);
	c->out_off = 0;
	if (!c->out) {
		drop(c);
		return;
	}
	send_some(c);
}

static void receive(struct relay *r, struct mclient *c)
{
	ssize_t n = recv(c->fd, c->req + c->got, REQ_MAX - c->got, 0);

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		drop(c);
		return;
	}
	c->got += (size_t)n;
	if (ended(c, c->got - (size_t)n))
		answer(r, c, true);
	else if (c->got == REQ_MAX)
		answer(r, c, false);
}

/* New clients into the free slots; a listener that fails for want of fds
 * is left alone for RETRY_MS rather than reported readable again and
 * again. */
static void take(struct metrics *m)
{
	int i, fd;

	for (i = 0; i < MAX_CLIENTS; i++) {
		if (m->c[i].fd >= 0)
			continue;
		fd = accept4(m->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
				m->retry_at = now_ms() + RETRY_MS;
			return;
		}
		m->c[i] = (struct mclient){ .fd = fd, .deadline = now_ms() + CLIENT_MS };
	}
}

/* A wake: the listeners were handed over (close this one), or the stop. */
static void woken(struct metrics *m)
{
	uint64_t v;

	if (read(m->wake_fd, &v, sizeof(v)) < 0)
		return;
	if (atomic_load(&m->r->handed_over) && m->lfd >= 0) {
		close(m->lfd);
		m->lfd = -1;
	}
}

/* The poll set: the wake, the listener (when a slot is free), each
 * client; slot[k] the client of p[k]. The timeout to the first deadline. */
static int watch_set(struct metrics *m, struct pollfd *p, int *slot, int *timeout)
{
	int64_t now = now_ms(), first = m->retry_at > now ? m->retry_at : NEVER;
	int i, n = 2;
	bool full = true;

	for (i = 0; i < MAX_CLIENTS; i++) {
		if (m->c[i].fd < 0) {
			full = false;
			continue;
		}
		if (m->c[i].deadline < first)
			first = m->c[i].deadline;
		p[n] = (struct pollfd){ .fd = m->c[i].fd, .events = m->c[i].out ? POLLOUT : POLLIN };
		slot[n++] = i;
	}
	p[0] = (struct pollfd){ .fd = m->wake_fd, .events = POLLIN };
	p[1] = (struct pollfd){ .fd = full || m->retry_at > now ? -1 : m->lfd, .events = POLLIN };
	*timeout = first == NEVER ? -1 : first > now ? (int)(first - now) : 0;
	return n;
}

static void expire(struct metrics *m)
{
	int64_t now = now_ms();
	int i;

	for (i = 0; i < MAX_CLIENTS; i++)
		if (m->c[i].fd >= 0 && now >= m->c[i].deadline)
			drop(&m->c[i]);
}

static void *metrics_main(void *arg)
{
	struct metrics *m = arg;
	struct pollfd p[2 + MAX_CLIENTS];
	int slot[2 + MAX_CLIENTS], n, k, timeout;

	while (!atomic_load(&m->stop)) {
		n = watch_set(m, p, slot, &timeout);
		if (poll(p, (nfds_t)n, timeout) < 0)
			continue;
		if (p[0].revents)
			woken(m);
		for (k = 2; k < n; k++) {
			struct mclient *c = &m->c[slot[k]];

			if (!p[k].revents || c->fd < 0)
				continue;
			if (c->out)
				send_some(c);
			else
				receive(m->r, c);
		}
		if (p[1].revents && m->lfd >= 0)
			take(m);
		expire(m);
	}
	return NULL;
}

int metrics_start(struct relay *r)
{
	struct metrics *m = r->metrics;
	int err;

	if (!m)
		return 0;
	err = pthread_create(&m->thread, NULL, metrics_main, m);
	if (err) {
		cli_error(err, "relay: cannot start the --metrics thread");
		return -1;
	}
	m->started = true;
	return 0;
}

void metrics_wake(struct relay *r)
{
	uint64_t one = 1;

	if (r->metrics && write(r->metrics->wake_fd, &one, sizeof(one)) < 0)
		cli_error(errno, "relay: eventfd");
}

void metrics_stop(struct relay *r)
{
	struct metrics *m = r->metrics;
	int i;

	if (!m)
		return;
	if (m->started) {
		atomic_store(&m->stop, true);
		metrics_wake(r);
		pthread_join(m->thread, NULL);
	}
	for (i = 0; i < MAX_CLIENTS; i++)
		if (m->c[i].fd >= 0)
			drop(&m->c[i]);
	if (m->lfd >= 0)
		close(m->lfd);
	close(m->wake_fd);
	free(m);
	r->metrics = NULL;
}
