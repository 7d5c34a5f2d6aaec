/* psplice relay: forward every connection accepted on LISTEN to TARGET.
 * Each worker thread runs its own epoll loop; each direction of a
 * connection is a psplice pair, prepared once when the connection is set up,
 * and moves with psplice_pair_move(PSPLICE_F_NONBLOCK); when the engine says
 * EAGAIN, it waits for exactly the side the engine names. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

#define CHUNK (1u << 20)     /* asked of each move */
#define BUDGET 16            /* calls per direction per event: fairness */
#define ACCEPT_BATCH 64
#define RETRY_MS 100         /* a paused listener looks again this often */
#define RECONNECT_MS 20      /* a unix target with a full queue, the same */
#define NEVER INT64_MAX

enum { OPT_MAX_CONNS = 0x200, OPT_IDLE, OPT_CONNECT, OPT_DRAIN, OPT_STATS, OPT_COPY,
       OPT_LOWAT, OPT_NAGLE };

static const struct option longopts[] = {
	{ "jobs", required_argument, NULL, 'j' },
	{ "max-conns", required_argument, NULL, OPT_MAX_CONNS },
	{ "idle-timeout", required_argument, NULL, OPT_IDLE },
	{ "connect-timeout", required_argument, NULL, OPT_CONNECT },
	{ "drain-timeout", required_argument, NULL, OPT_DRAIN },
	{ "stats-interval", required_argument, NULL, OPT_STATS },
	{ "copy", required_argument, NULL, OPT_COPY },
	{ "notsent-lowat", required_argument, NULL, OPT_LOWAT },
	{ "nagle", no_argument, NULL, OPT_NAGLE },
	{ "verbose", no_argument, NULL, 'v' },
	CLI_COMMON_LONGOPTS
};

/* What every worker shares; the counters are summed by the stats line. */
struct relay {
	struct cli_addr listen, target;
	int jobs;
	uint64_t max_conns;              /* 0: no limit */
	int64_t idle_ms, connect_ms, drain_ms, stats_ms;
	unsigned int pair_flags;         /* --copy: the planning flags of each pair */
	int notsent_lowat;               /* TCP_NOTSENT_LOWAT of each socket; 0: none */
	bool nagle;                      /* leave TCP_NODELAY off */
	bool verbose;
	atomic_bool draining;
	atomic_uint_fast64_t open, total, ids, bytes[2];
	atomic_int_fast64_t pending[2];  /* held by the pairs, per direction */
	atomic_uint_fast64_t copied;     /* delivered through user memory */
	int done_fd;                     /* eventfd: a worker has finished */
};

enum handle_kind { H_LISTEN, H_WAKE, H_CLIENT, H_TARGET };

/* epoll's data.ptr points at one of these, inside its owner. */
struct handle {
	enum handle_kind kind;
	int fd;
	uint32_t events;     /* registered with epoll; 0: not registered */
};

enum dir_state { D_READ, D_WRITE, D_DONE };

/* One direction: 0 is client to target, 1 target to client. */
struct dir {
	struct handle *in, *out;
	struct psplice_pair *pair; /* in to out, prepared once connected */
	enum dir_state state;
	uint64_t bytes;      /* delivered */
	uint64_t pending;    /* taken from in, held by the pair for out */
};

struct conn {
	struct conn *prev, *next;
	struct handle client, target;
	struct dir d[2];
	bool connecting;
	int64_t retry_at;    /* connect again then (unix target busy); 0: no */
	bool dead;           /* closed; freed after this batch of events */
	uint64_t id;
	int64_t deadline;    /* connect timeout, then idle timeout */
	char peer[80];
};

struct worker {
	pthread_t thread;
	struct relay *r;
	int ep;
	struct handle listener, wake;
	bool paused;         /* listener off: --max-conns reached, or no fds */
	int64_t drain_end;   /* NEVER until draining */
	int64_t next_check;  /* earliest deadline worth a sweep */
	struct conn head;    /* circular list of open connections */
	struct conn *dead;   /* closed in this batch, linked by next */
	size_t nconns;
};

static const char *const dir_name[2] = { "client->target", "target->client" };

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- addresses ---- */

/* For messages: "127.0.0.1:80", "[::1]:80", "unix:/run/x". */
static void addr_text(const struct sockaddr *sa, socklen_t len, char *buf, size_t size)
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

/* ---- listeners, made before any worker starts so errors exit 1 ---- */

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
static int make_listeners(struct relay *r, struct worker *w)
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

/* ---- epoll interest ---- */

static void set_events(struct worker *w, struct handle *h, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = h };
	int op;

	if (events == h->events)
		return;
	/* An fd nobody waits on is taken out of the set: a hangup on it would
	 * otherwise be reported again and again (EPOLLHUP cannot be masked). */
	op = !events ? EPOLL_CTL_DEL : h->events ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
	if (epoll_ctl(w->ep, op, h->fd, &ev) == 0 || op == EPOLL_CTL_DEL)
		h->events = events;
}

/* Each fd waits for what the directions using it wait for, nothing else. */
static void update_interest(struct worker *w, struct conn *c)
{
	uint32_t ev[2] = { 0, 0 };   /* client, target */
	int i;

	if (c->connecting) {
		/* A socket between two connect attempts has nothing to say. */
		set_events(w, &c->target, c->retry_at ? 0 : EPOLLOUT);
		return;
	}
	for (i = 0; i < 2; i++) {
		struct dir *d = &c->d[i];

		if (d->state == D_READ)
			ev[d->in == &c->target] |= EPOLLIN;
		else if (d->state == D_WRITE)
			ev[d->out == &c->target] |= EPOLLOUT;
	}
	set_events(w, &c->client, ev[0]);
	set_events(w, &c->target, ev[1]);
}

static void listener_on(struct worker *w, bool on)
{
	/* EPOLLEXCLUSIVE: a shared unix listener wakes one worker, not all. */
	uint32_t ev = EPOLLIN | (w->r->listen.ss.ss_family == AF_UNIX ? EPOLLEXCLUSIVE : 0);

	if (w->listener.fd < 0)
		return;
	/* EPOLLEXCLUSIVE cannot be modified, only added and deleted. */
	set_events(w, &w->listener, on ? ev : 0);
	w->paused = !on;
}

/* ---- connections ---- */

static void log_close(struct worker *w, struct conn *c, const char *how, int err)
{
	bool failed = how != NULL;
	char lost[2][64] = { "", "" };
	int i;

	if (!failed && !w->r->verbose)
		return;
	/* Bytes taken from one side that never reached the other are named:
	 * a failed connection says exactly what went where. */
	for (i = 0; i < 2; i++)
		if (c->d[i].pending)
			snprintf(lost[i], sizeof(lost[i]), " (%" PRIu64 " more read, not delivered)",
				 c->d[i].pending);
	fprintf(stderr, CLI_NAME ": relay: #%" PRIu64 " %s %s%s%s: %" PRIu64 " bytes %s%s, %"
		PRIu64 " bytes %s%s\n", c->id, c->peer, failed ? how : "closed",
		err ? ": " : "", err ? strerror(err) : "", c->d[0].bytes, dir_name[0],
		lost[0], c->d[1].bytes, dir_name[1], lost[1]);
}

/* Close without a reset: a client whose data we never read would get an
 * RST from close(), so what it sent is read and dropped first (bounded). */
static void close_gently(int fd)
{
	char sink[4096];
	int i;

	shutdown(fd, SHUT_WR);
	for (i = 0; i < 16 && recv(fd, sink, sizeof(sink), MSG_DONTWAIT) > 0; i++)
		;
	close(fd);
}

static void conn_close(struct worker *w, struct conn *c, const char *how, int err)
{
	int i;

	log_close(w, c, how, err);
	if (c->connecting)
		close_gently(c->client.fd);
	else
		close(c->client.fd);
	if (c->target.fd >= 0)
		close(c->target.fd);
	/* What a pair still holds is handed back by psplice_pair_free: the
	 * output is gone or stalled past its timeout, so it is dropped here,
	 * counted in the report above. */
	for (i = 0; i < 2; i++) {
		psplice_pair_free(c->d[i].pair);
		atomic_fetch_sub(&w->r->pending[i], (int_fast64_t)c->d[i].pending);
	}
	c->prev->next = c->next;
	c->next->prev = c->prev;
	w->nconns--;
	/* Later events of this batch may name it: free it after them. */
	c->dead = true;
	c->next = w->dead;
	w->dead = c;
	atomic_fetch_sub(&w->r->open, 1);
	/* A slot is free again: this worker may take the next client. */
	if (w->paused && w->drain_end == NEVER)
		listener_on(w, true);
}

static void touch(struct worker *w, struct conn *c)
{
	c->deadline = w->r->idle_ms ? now_ms() + w->r->idle_ms : NEVER;
	/* Later than before, except right after connecting: sweep by then. */
	if (c->deadline < w->next_check)
		w->next_check = c->deadline;
}

/* Both directions classified and planned once, for all their moves. serve()
 * ignores SIGPIPE before any worker starts and never restores it, so the
 * pairs say so and their moves skip the engine's SIGPIPE guard. */
static int prepare_pairs(struct conn *c, unsigned int flags)
{
	int i;

	for (i = 0; i < 2; i++) {
		c->d[i].pair = psplice_pair_new(c->d[i].in->fd, c->d[i].out->fd,
						flags | PSPLICE_F_SIGPIPE_IGNORED);
		if (!c->d[i].pair)
			return -errno;
	}
	return 0;
}

static void connected(struct worker *w, struct conn *c)
{
	int err = prepare_pairs(c, w->r->pair_flags);

	c->connecting = false;
	if (err < 0) {
		conn_close(w, c, "cannot relay", -err);
		return;
	}
	c->d[0].state = D_READ;
	c->d[1].state = D_READ;
	touch(w, c);
	update_interest(w, c);
}

static void connect_failed(struct worker *w, struct conn *c, int err)
{
	cli_error(err, "relay: #%" PRIu64 " %s: cannot connect to %s", c->id, c->peer,
		  cli_quote(w->r->target.text));
	conn_close(w, c, NULL, 0);
}

/* TCP completes in the loop (EPOLLOUT). A unix listener whose queue is full
 * says EAGAIN at once instead of making us wait: try again shortly, until
 * the connect timeout. */
static void try_connect(struct worker *w, struct conn *c)
{
	const struct cli_addr *t = &w->r->target;

	c->retry_at = 0;
	if (connect(c->target.fd, (const struct sockaddr *)&t->ss, t->len) == 0) {
		connected(w, c);
		return;
	}
	if (errno == EAGAIN && t->ss.ss_family == AF_UNIX) {
		c->retry_at = now_ms() + RECONNECT_MS;
		if (c->retry_at < w->next_check)
			w->next_check = c->retry_at;
	} else if (errno != EINPROGRESS) {
		connect_failed(w, c, errno);
		return;
	}
	update_interest(w, c);
}

/* TCP sockets of a connection: no Nagle delay (a relay that holds a small
 * reply back for an ACK adds its 40 ms to every request), and, if asked, a
 * bound on the bytes queued unsent. Other sockets ignore both. */
static void tune(const struct relay *r, int fd)
{
	int one = 1;

	if (!r->nagle)
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (r->notsent_lowat)
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &r->notsent_lowat,
				 sizeof(r->notsent_lowat));
}

/* Start the connection to TARGET. */
static void conn_open(struct worker *w, int cfd, const struct sockaddr *sa, socklen_t len)
{
	struct relay *r = w->r;
	struct conn *c = calloc(1, sizeof(*c));
	int tfd;

	if (!c) {
		close(cfd);
		atomic_fetch_sub(&r->open, 1);
		return;
	}
	c->id = atomic_fetch_add(&r->ids, 1) + 1;
	atomic_fetch_add(&r->total, 1);
	addr_text(sa, len, c->peer, sizeof(c->peer));
	c->client = (struct handle){ .kind = H_CLIENT, .fd = cfd };
	c->target = (struct handle){ .kind = H_TARGET, .fd = -1 };
	c->d[0] = (struct dir){ .in = &c->client, .out = &c->target, .state = D_DONE };
	c->d[1] = (struct dir){ .in = &c->target, .out = &c->client, .state = D_DONE };
	c->next = w->head.next;
	c->prev = &w->head;
	w->head.next->prev = c;
	w->head.next = c;
	w->nconns++;
	c->connecting = true;
	if (r->verbose)
		fprintf(stderr, CLI_NAME ": relay: #%" PRIu64 " %s open\n", c->id, c->peer);

	tfd = socket(r->target.ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (tfd < 0) {
		connect_failed(w, c, errno);
		return;
	}
	c->target.fd = tfd;
	if (r->target.ss.ss_family != AF_UNIX)
		tune(r, tfd);
	if (sa->sa_family != AF_UNIX)
		tune(r, cfd);
	c->deadline = now_ms() + r->connect_ms;
	if (c->deadline < w->next_check)
		w->next_check = c->deadline;
	try_connect(w, c);
}

static void connect_done(struct worker *w, struct conn *c)
{
	int err = 0;
	socklen_t l = sizeof(err);

	if (getsockopt(c->target.fd, SOL_SOCKET, SO_ERROR, &err, &l) < 0)
		err = errno;
	if (err)
		connect_failed(w, c, err);
	else
		connected(w, c);
}

/* A move's bytes: delivered ones for the report and the stats line, and
 * what the pair holds now (pending after = before + taken - delivered). */
static void count(struct worker *w, struct conn *c, struct dir *d,
		  const struct psplice_result *res)
{
	int i = d == &c->d[1];

	d->bytes += res->out_bytes;
	d->pending = d->pending + res->in_bytes - res->out_bytes;
	if (res->out_bytes)
		atomic_fetch_add(&w->r->bytes[i], res->out_bytes);
	if (res->in_bytes != res->out_bytes)
		atomic_fetch_add(&w->r->pending[i],
				 (int_fast64_t)res->in_bytes - (int_fast64_t)res->out_bytes);
	if (res->method == PSPLICE_METHOD_READWRITE)
		atomic_fetch_add(&w->r->copied, res->out_bytes);
}

/* Why a direction stopped, for the report. */
struct failure {
	const char *how;
	int err;
};

static void fail_on(struct failure *f, struct conn *c, struct handle *h, bool reading,
		    int err)
{
	static const char *const how[2][2] = {
		{ "error writing to client", "error writing to target" },
		{ "error reading from client", "error reading from target" },
	};

	f->how = how[reading][h == &c->target];
	f->err = err;
}

/* Move one direction until it would block, ends, fails or used its
 * budget. -1 when the connection must close (f says why). What the output
 * cannot take stays in the pair, in its pipe, and goes out first when the
 * output has room: the relay never copies a byte itself. */
static int pump(struct worker *w, struct conn *c, struct dir *d, struct failure *f)
{
	struct psplice_result res;
	int i;

	for (i = 0; i < BUDGET; i++) {
		psplice_pair_move(d->pair, NULL, NULL, CHUNK, PSPLICE_F_NONBLOCK, &res);
		count(w, c, d, &res);
		if (res.in_bytes)
			touch(w, c);
		if (!res.error) {
			if (res.in_bytes || res.out_bytes)
				continue;
			/* End of input, and nothing pending (a move delivers
			 * those first): forward the half-close; the other
			 * direction keeps flowing. */
			shutdown(d->out->fd, SHUT_WR);
			d->state = D_DONE;
			return 0;
		}
		if (res.error == EINTR)
			continue;
		if (res.error == EAGAIN) {
			d->state = res.side == PSPLICE_SIDE_OUT ? D_WRITE : D_READ;
			return 0;
		}
		fail_on(f, c, res.side == PSPLICE_SIDE_IN ? d->in : d->out,
			res.side == PSPLICE_SIDE_IN, res.error);
		return -1;
	}
	/* Budget used: epoll is level-triggered and reports the side again. */
	d->state = d->pending ? D_WRITE : D_READ;
	return 0;
}

static void conn_event(struct worker *w, struct conn *c, struct handle *h)
{
	struct failure f = { NULL, 0 };
	int i;

	if (c->dead)
		return;
	if (c->connecting) {
		if (h == &c->target)
			connect_done(w, c);
		return;
	}
	for (i = 0; i < 2; i++) {
		struct dir *d = &c->d[i];

		if ((d->state == D_READ && d->in == h) || (d->state == D_WRITE && d->out == h))
			if (pump(w, c, d, &f) < 0) {
				conn_close(w, c, f.how, f.err);
				return;
			}
	}
	if (c->d[0].state == D_DONE && c->d[1].state == D_DONE) {
		conn_close(w, c, NULL, 0);
		return;
	}
	update_interest(w, c);
}

/* Take a slot under --max-conns, or say there is none. */
static bool reserve_slot(struct relay *r)
{
	uint_fast64_t open = atomic_load(&r->open);

	do {
		if (r->max_conns && open >= r->max_conns)
			return false;
	} while (!atomic_compare_exchange_weak(&r->open, &open, open + 1));
	return true;
}

static void accept_some(struct worker *w)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int i, fd;

	for (i = 0; i < ACCEPT_BATCH; i++) {
		if (!reserve_slot(w->r)) {
			/* Others' connections may close: look again soon. */
			listener_on(w, false);
			if (now_ms() + RETRY_MS < w->next_check)
				w->next_check = now_ms() + RETRY_MS;
			return;
		}
		len = sizeof(ss);
		fd = accept4(w->listener.fd, (struct sockaddr *)&ss, &len,
			     SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0) {
			conn_open(w, fd, (struct sockaddr *)&ss, len);
			continue;
		}
		atomic_fetch_sub(&w->r->open, 1);
		if (errno == EINTR || errno == ECONNABORTED)
			continue;
		if (errno != EAGAIN) {
			/* Out of fds: the queue stays readable, so pause
			 * rather than spin on it. */
			cli_error(errno, "relay: accept");
			listener_on(w, false);
			w->next_check = now_ms() + RETRY_MS;
		}
		return;
	}
}

/* Timeouts and a paused listener; returns the next deadline. */
static void sweep(struct worker *w)
{
	int64_t now = now_ms(), next = w->drain_end;
	struct conn *c, *n;

	for (c = w->head.next; c != &w->head; c = n) {
		n = c->next;
		if (c->deadline <= now) {
			if (c->connecting)
				connect_failed(w, c, ETIMEDOUT);
			else
				conn_close(w, c, "idle timeout", 0);
			continue;
		}
		if (c->retry_at && c->retry_at <= now) {
			try_connect(w, c);
			if (c->dead)
				continue;
		}
		if (c->deadline < next)
			next = c->deadline;
		if (c->retry_at && c->retry_at < next)
			next = c->retry_at;
	}
	if (w->paused && w->drain_end == NEVER) {
		listener_on(w, true);
		if (now + RETRY_MS < next)
			next = now + RETRY_MS;
	}
	w->next_check = next;
}

static void start_drain(struct worker *w)
{
	uint64_t v;

	if (read(w->wake.fd, &v, sizeof(v)) < 0 || w->drain_end != NEVER)
		return;
	listener_on(w, false);
	/* Closed, not only unwatched: new clients are refused rather than
	 * left in a queue nobody reads. A shared unix listener stays open
	 * (other workers hold it); its path is already gone. */
	if (w->r->listen.ss.ss_family != AF_UNIX) {
		close(w->listener.fd);
		w->listener.fd = -1;
	}
	w->drain_end = now_ms() + w->r->drain_ms;
	if (w->drain_end < w->next_check)
		w->next_check = w->drain_end;
}

static struct conn *conn_of(struct handle *h)
{
	size_t off = h->kind == H_CLIENT ? offsetof(struct conn, client) :
		     offsetof(struct conn, target);

	return (struct conn *)((char *)h - off);
}

static void bury(struct worker *w)
{
	struct conn *c;

	while ((c = w->dead)) {
		w->dead = c->next;
		free(c);
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct epoll_event ev[64];
	int64_t now;
	uint64_t one = 1;
	int n, i, timeout;

	while (w->drain_end == NEVER || w->nconns) {
		now = now_ms();
		if (w->drain_end != NEVER && now >= w->drain_end) {
			while (w->head.next != &w->head)
				conn_close(w, w->head.next, "closed at drain timeout", 0);
			break;
		}
		if (now >= w->next_check)
			sweep(w);
		timeout = w->next_check == NEVER ? -1 :
			  (int)(w->next_check - now > 0 ? w->next_check - now : 0);
		n = epoll_wait(w->ep, ev, 64, timeout);
		for (i = 0; i < n; i++) {
			struct handle *h = ev[i].data.ptr;

			if (h->kind == H_LISTEN)
				accept_some(w);
			else if (h->kind == H_WAKE)
				start_drain(w);
			else
				conn_event(w, conn_of(h), h);
		}
		bury(w);
	}
	bury(w);
	if (write(w->r->done_fd, &one, sizeof(one)) < 0)
		cli_error(errno, "relay: eventfd");
	return NULL;
}

/* ---- the main thread: signals, stats, the end ---- */

static void print_stats(struct relay *r)
{
	fprintf(stderr, CLI_NAME ": relay: connections %" PRIu64 " open, %" PRIu64
		" total; bytes %" PRIu64 " %s, %" PRIu64 " %s; pending %" PRId64 " %s, %"
		PRId64 " %s; copied %" PRIu64 "\n",
		(uint64_t)atomic_load(&r->open), (uint64_t)atomic_load(&r->total),
		(uint64_t)atomic_load(&r->bytes[0]), dir_name[0],
		(uint64_t)atomic_load(&r->bytes[1]), dir_name[1],
		(int64_t)atomic_load(&r->pending[0]), dir_name[0],
		(int64_t)atomic_load(&r->pending[1]), dir_name[1],
		(uint64_t)atomic_load(&r->copied));
}

/* Wait for the workers; SIGTERM/SIGINT start the drain, SIGUSR1 and the
 * stats interval print the counters. */
static void supervise(struct relay *r, struct worker *w, int sfd)
{
	struct pollfd p[2] = { { .fd = sfd, .events = POLLIN },
			       { .fd = r->done_fd, .events = POLLIN } };
	struct signalfd_siginfo si;
	int running = r->jobs, i;
	uint64_t v, one = 1;
	int64_t next_stats = r->stats_ms ? now_ms() + r->stats_ms : NEVER, now;

	while (running > 0) {
		now = now_ms();
		if (now >= next_stats) {
			print_stats(r);
			next_stats = now + r->stats_ms;
		}
		if (poll(p, 2, next_stats == NEVER ? -1 : (int)(next_stats - now)) < 0)
			continue;
		if ((p[1].revents & POLLIN) && read(r->done_fd, &v, sizeof(v)) == sizeof(v))
			running -= (int)v;
		if (!(p[0].revents & POLLIN) || read(sfd, &si, sizeof(si)) != sizeof(si))
			continue;
		if (si.ssi_signo == SIGUSR1) {
			print_stats(r);
			continue;
		}
		if (r->verbose && !atomic_load(&r->draining))
			fprintf(stderr, CLI_NAME ": relay: draining (%" PRIu64 " open)\n",
				(uint64_t)atomic_load(&r->open));
		if (r->listen.ss.ss_family == AF_UNIX && !atomic_load(&r->draining))
			unlink(((struct sockaddr_un *)&r->listen.ss)->sun_path);
		atomic_store(&r->draining, true);
		for (i = 0; i < r->jobs; i++)
			if (write(w[i].wake.fd, &one, sizeof(one)) < 0)
				cli_error(errno, "relay: eventfd");
	}
}

static int worker_init(struct relay *r, struct worker *w)
{
	w->r = r;
	w->drain_end = NEVER;
	w->next_check = NEVER;
	w->head.next = w->head.prev = &w->head;
	w->listener.kind = H_LISTEN;
	w->wake = (struct handle){ .kind = H_WAKE };
	w->ep = epoll_create1(EPOLL_CLOEXEC);
	w->wake.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (w->ep < 0 || w->wake.fd < 0)
		return -1;
	set_events(w, &w->wake, EPOLLIN);
	listener_on(w, true);
	return w->wake.events && !w->paused ? 0 : -1;
}

static int serve(struct relay *r, struct worker *w)
{
	char where[160];
	sigset_t set;
	int sfd, i, err;

	for (i = 0; i < r->jobs; i++)
		w[i].listener.fd = -1;
	if (make_listeners(r, w) < 0)
		return 1;
	/* Signals go to the signalfd alone: workers inherit the mask. A peer
	 * that went away must not end the relay: SIGPIPE is ignored before
	 * any pair is prepared,
	 * so the pairs' moves need no guard against it (psplice_pair_new(3)). */
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	sfd = signalfd(-1, &set, SFD_CLOEXEC);
	r->done_fd = eventfd(0, EFD_CLOEXEC);
	if (sfd < 0 || r->done_fd < 0) {
		cli_error(errno, "relay");
		return 1;
	}
	for (i = 0; i < r->jobs; i++)
		if (worker_init(r, &w[i]) < 0) {
			cli_error(errno, "relay: epoll");
			return 1;
		}
	if (r->verbose) {
		struct sockaddr_storage ss;
		socklen_t len = sizeof(ss);

		getsockname(w[0].listener.fd, (struct sockaddr *)&ss, &len);
		addr_text((struct sockaddr *)&ss, len, where, sizeof(where));
		fprintf(stderr, CLI_NAME ": relay: listening on %s, forwarding to %s, %d worker%s\n",
			where, r->target.text, r->jobs, r->jobs == 1 ? "" : "s");
	}
	for (i = 0; i < r->jobs; i++) {
		err = pthread_create(&w[i].thread, NULL, worker_main, &w[i]);
		if (err) {
			/* Workers already running use w: leave without freeing. */
			cli_error(err, "relay: cannot start a worker");
			exit(1);
		}
	}
	supervise(r, w, sfd);
	for (i = 0; i < r->jobs; i++)
		pthread_join(w[i].thread, NULL);
	if (r->verbose)
		print_stats(r);
	return 0;
}

static int run(struct relay *r)
{
	struct worker *w = calloc((size_t)r->jobs, sizeof(*w));
	int status;

	if (!w) {
		cli_error(ENOMEM, "relay");
		return 1;
	}
	status = serve(r, w);
	free(w);
	return status;
}

/* Seconds, fractions allowed ("0.5"); -1 when malformed. */
static int64_t parse_secs(const char *s)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= 0) || v > 1e9)
		return -1;
	return (int64_t)(v * 1000 + 0.5);
}

static uint64_t parse_count(const struct cli_cmd *cmd, const char *opt, const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || *s == '-')
		cli_usage_error(cmd, "invalid %s %s", opt, cli_quote(s));
	return v;
}

static int64_t secs_arg(const struct cli_cmd *cmd, const char *opt, const char *s)
{
	int64_t ms = parse_secs(s);

	if (ms < 0)
		cli_usage_error(cmd, "invalid %s %s (want seconds)", opt, cli_quote(s));
	return ms;
}

/* --copy=splice (the engine's choice) or readwrite (through user memory,
 * for comparison and for fds the kernel cannot splice). */
static unsigned int copy_arg(const struct cli_cmd *cmd, const char *s)
{
	if (!strcmp(s, "splice"))
		return 0;
	if (!strcmp(s, "readwrite"))
		return PSPLICE_F_ONLY(PSPLICE_METHOD_READWRITE);
	cli_usage_error(cmd, "invalid --copy %s (want splice or readwrite)", cli_quote(s));
	return 0;
}

static int lowat_arg(const struct cli_cmd *cmd, const char *s)
{
	int64_t n = cli_parse_size(s);

	if (n < 0 || n > INT32_MAX)
		cli_usage_error(cmd, "invalid --notsent-lowat %s (want a size, e.g. 128K)",
				cli_quote(s));
	return (int)n;
}

static int relay_main(const struct cli_cmd *cmd, int argc, char **argv)
{
	struct relay r = { .connect_ms = 10000, .drain_ms = 10000 };
	const char *why = NULL;
	uint64_t jobs = 0;
	int c;

	while ((c = getopt_long(argc, argv, "j:v", longopts, NULL)) != -1) {
		switch (c) {
		case 'j':
			jobs = parse_count(cmd, "--jobs", optarg);
			if (!jobs || jobs > 1024)
				cli_usage_error(cmd, "invalid --jobs %s (1 to 1024)",
						cli_quote(optarg));
			break;
		case OPT_MAX_CONNS:
			r.max_conns = parse_count(cmd, "--max-conns", optarg);
			break;
		case OPT_IDLE: r.idle_ms = secs_arg(cmd, "--idle-timeout", optarg); break;
		case OPT_CONNECT: r.connect_ms = secs_arg(cmd, "--connect-timeout", optarg); break;
		case OPT_DRAIN: r.drain_ms = secs_arg(cmd, "--drain-timeout", optarg); break;
		case OPT_STATS: r.stats_ms = secs_arg(cmd, "--stats-interval", optarg); break;
		case OPT_COPY: r.pair_flags = copy_arg(cmd, optarg); break;
		case OPT_LOWAT: r.notsent_lowat = lowat_arg(cmd, optarg); break;
		case OPT_NAGLE: r.nagle = true; break;
		case 'v': r.verbose = true; break;
		default: cli_common_option(cmd, c);
		}
	}
	if (argc - optind < 2)
		cli_usage_error(cmd, argc - optind ? "missing TARGET operand" :
				"missing LISTEN and TARGET operands");
	if (argc - optind > 2)
		cli_usage_error(cmd, "extra operand %s", cli_quote(argv[optind + 2]));
	if (cli_parse_addr(argv[optind], &r.listen, true, &why) < 0)
		cli_usage_error(cmd, "invalid address %s: %s", cli_quote(argv[optind]), why);
	if (cli_parse_addr(argv[optind + 1], &r.target, false, &why) < 0)
		cli_usage_error(cmd, "invalid address %s: %s", cli_quote(argv[optind + 1]), why);
	if (!jobs) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		jobs = n > 0 ? (uint64_t)n : 1;
	}
	r.jobs = (int)jobs;
	return run(&r);
}

const struct cli_cmd cli_cmd_relay = {
	.name = "relay",
	.args = "LISTEN TARGET",
	.summary = "forward every connection accepted on LISTEN to TARGET",
	.help =
	"Accept connections on LISTEN and forward each to TARGET, both directions\n"
	"by splice through the kernel. Addresses: HOST:PORT, [IPv6]:PORT, unix:PATH.\n"
	"A half-close is passed on; SIGTERM or SIGINT stops accepting and lets open\n"
	"connections finish; SIGUSR1 prints the counters.\n"
	"\n"
	"  -j, --jobs=N             worker threads (default: number of CPUs)\n"
	"      --max-conns=N        accept no more than N open connections (0: no limit)\n"
	"      --idle-timeout=SEC   close a connection idle for SEC seconds (0: never)\n"
	"      --connect-timeout=SEC  give up connecting to TARGET (default 10)\n"
	"      --drain-timeout=SEC  after SIGTERM, close what is still open (default 10)\n"
	"      --stats-interval=SEC print connections and bytes every SEC seconds\n"
	"      --copy=HOW           splice (default): socket to pipe to socket in the\n"
	"                           kernel; readwrite: read and write through a buffer,\n"
	"                           for comparison or for fds the kernel cannot splice\n"
	"      --notsent-lowat=SIZE bound the bytes each TCP socket queues unsent\n"
	"                           (TCP_NOTSENT_LOWAT; default: the system's)\n"
	"      --nagle              leave Nagle's algorithm on (default: TCP_NODELAY)\n"
	"  -v, --verbose            log each connection's open and close with byte counts\n"
	"\n"
	"Example: " CLI_NAME " relay -v 127.0.0.1:8080 127.0.0.1:80\n",
	.main = relay_main,
};
