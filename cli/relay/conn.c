/* psplice relay: one connection's state machine. Connecting to TARGET, then
 * two directions, each a psplice pair moved with PSPLICE_F_NONBLOCK until it
 * would block on the side the engine names, ends (the half-close is passed
 * on once the pair holds nothing), or fails; then the close (close.c). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "relay.h"
#include "out.h"

static void touch(struct worker *w, struct conn *c)
{
	c->deadline = c->r->idle_ms ? now_ms() + c->r->idle_ms : NEVER;
	/* Later than before, except right after connecting: sweep by then. */
	if (c->deadline < w->next_check)
		w->next_check = c->deadline;
}

/* Both directions planned once, for all their moves, from what the relay
 * knows of the sockets it accepted and made: nothing is asked of the
 * kernel. serve() ignores SIGPIPE before any worker starts and never
 * restores it, so the pairs say so and their moves skip the engine's
 * SIGPIPE guard. */
static int prepare_pairs(struct conn *c, unsigned int flags)
{
	int i;

	for (i = 0; i < 2; i++) {
		c->d[i].pair = psplice_pair_new_known(c->d[i].in->fd, c->d[i].in->known,
						      c->d[i].out->fd, c->d[i].out->known,
						      flags | PSPLICE_F_SIGPIPE_IGNORED);
		if (!c->d[i].pair)
			return -errno;
	}
	return 0;
}

/* What the relay knows of a socket of its own: accept4(2) and socket(2)
 * made it O_NONBLOCK, of the family of its address. */
static unsigned int known(sa_family_t family)
{
	return (family == AF_UNIX ? PSPLICE_FD_UNIX : PSPLICE_FD_TCP) | PSPLICE_FD_NONBLOCK;
}

static int pump(struct worker *w, struct conn *c, struct dir *d, struct ending *f, bool hup);
static void settle(struct worker *w, struct conn *c);

/* Connected, the header sent: the client's bytes move at once. A client
 * speaks first, most often, and what it sent while the target was
 * connecting is there: moved now, not after another epoll_wait. A server
 * that speaks first costs one move that says EAGAIN. */
static void flowing(struct worker *w, struct conn *c)
{
	struct ending f = { .how = END_FIN };

	c->d[0].state = D_READ;
	c->d[1].state = D_READ;
	touch(w, c);
	if (pump(w, c, &c->d[0], &f, false) < 0)
		conn_close(w, c, &f);
	else
		settle(w, c);
}

/* --send-proxy*: the header goes out whole before the client's first
 * byte; what the socket did not take waits for EPOLLOUT. */
static void send_header(struct worker *w, struct conn *c)
{
	int s = proxy_send(c);

	if (s < 0)
		conn_close(w, c, &(struct ending){ .how = END_ERROR, .side = SIDE_TARGET,
						   .err = -s });
	else if (s > 0)
		conn_watch(w, c);
	else
		flowing(w, c);
}

static void connected(struct worker *w, struct conn *c)
{
	int err = prepare_pairs(c, c->r->pair_flags);

	/* Tried while marked down, as the last one left, and there again. */
	target_up(c->r, c->tgt);
	c->connecting = false;
	if (err < 0) {
		conn_close(w, c, &(struct ending){ .how = END_SETUP, .err = -err });
		return;
	}
	touch(w, c);
	send_header(w, c);
}

/* A target that failed is marked down and the next one tried; when none
 * is left, the client is closed (its bytes unread) and the failure said. */
static void give_up(struct worker *w, struct conn *c, int err)
{
	cli_error(err, "relay: %s%s#%" PRIu64 " %s: cannot connect to %s", LISTENER(c->r), c->id,
		  c->peer, cli_quote(c->tgt->addr.text));
	conn_close(w, c, &(struct ending){ .how = END_CONNECT, .side = SIDE_TARGET, .err = err });
}

/* Errors of the relay's own, not the target's: out of fds, memory or
 * local ports. */
static bool own_fault(int err)
{
	return err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM ||
	       err == EADDRNOTAVAIL;
}

void connect_failed(struct worker *w, struct conn *c, int err)
{
	if (!own_fault(err))
		target_down(c->r, c->tgt, err);
	if (c->target.fd >= 0) {
		/* Out of the set first: the connection may end with its
		 * memory freed, and this fd's registration must not outlive
		 * it (closing_begin). */
		closing_begin(w, &c->target, NULL, false);
		close(c->target.fd);
		closing_end(w);
		c->target.fd = -1;
	}
	if (own_fault(err) || conn_target(w, c) < 0)
		give_up(w, c, err);
}

/* TCP completes in the loop (EPOLLOUT). A unix listener whose queue is full
 * says EAGAIN at once instead of making us wait: try again shortly, until
 * the connect timeout. */
void try_connect(struct worker *w, struct conn *c)
{
	const struct cli_addr *t = &c->tgt->addr;

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
	conn_watch(w, c);
}

/* Connect c to the next target --balance picks, with a connect timeout
 * of its own. -1 when every target was tried. */
int conn_target(struct worker *w, struct conn *c)
{
	struct relay *r = c->r;
	struct target *t = target_pick(r, c);
	int tfd;

	if (!t)
		return -1;
	tfd = socket(t->addr.ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (tfd < 0) {
		/* A family this host lacks (EAFNOSUPPORT) is the target's
		 * fault: the next one is tried. Out of fds is ours. */
		if (own_fault(errno))
			give_up(w, c, errno);
		else
			connect_failed(w, c, errno);
		return 0;
	}
	c->target.fd = tfd;
	c->target.known = known(t->addr.ss.ss_family);
	if (t->addr.ss.ss_family != AF_UNIX)
		tune(r, tfd);
	c->deadline = now_ms() + r->connect_ms;
	if (c->deadline < w->next_check)
		w->next_check = c->deadline;
	try_connect(w, c);
	return 0;
}

/* Start the connection a listener of line r accepted to a target, unless
 * the client is refused (gate.c: said there, and its socket set to reset
 * at its close), before a byte of it is read. */
void conn_open(struct worker *w, struct relay *r, int cfd, const struct sockaddr *sa,
	       socklen_t len)
{
	struct source src;
	struct conn *c = NULL;

	if (!gate_admit(r, cfd, sa, len, &src) || !(c = conn_alloc(w))) {
		gate_leave(r, &src);
		close(cfd);
		atomic_fetch_sub(&r->open, 1);
		return;
	}
	c->src = src;
	c->r = r;
	c->id = atomic_fetch_add(&w->proc->ids, 1) + 1;
	atomic_fetch_add(&r->total, 1);
	addr_text(sa, len, c->peer, sizeof(c->peer));
	c->client = (struct handle){ .kind = H_CLIENT, .fd = cfd, .known = known(sa->sa_family) };
	c->target = (struct handle){ .kind = H_TARGET, .fd = -1 };
	c->d[0] = (struct dir){ .in = &c->client, .out = &c->target, .state = D_DONE,
				.cap = TAKE_BLIND };
	c->d[1] = (struct dir){ .in = &c->target, .out = &c->client, .state = D_DONE,
				.cap = TAKE_BLIND };
	c->next = w->head.next;
	c->prev = &w->head;
	w->head.next->prev = c;
	w->head.next = c;
	w->nconns++;
	c->connecting = true;
	if (r->balance == BAL_ROUNDROBIN)
		c->turn = (unsigned int)atomic_fetch_add(&r->turn, 1);
	/* A listener the relay made has the options (listen_on), which an
	 * accepted socket inherits. */
	if (r->tune_accepted && sa->sa_family != AF_UNIX)
		tune(r, cfd);
	if (r->accept_proxy) {
		/* The header first, TARGET once it is read; the -v line
		 * then names the client it names. */
		if (r->json)
			log_open(r, c);
		proxy_start(w, c);
		return;
	}
	if (r->send_proxy)
		proxy_prepare(r, c);
	log_open(r, c);
	conn_target(w, c);
}

/* Writable without an error or a hangup: connected (a socket still
 * connecting is not writable). Otherwise the error is asked for. */
static void connect_done(struct worker *w, struct conn *c, uint32_t events)
{
	int err = 0;
	socklen_t l = sizeof(err);

	if ((events & (EPOLLERR | EPOLLHUP)) &&
	    getsockopt(c->target.fd, SOL_SOCKET, SO_ERROR, &err, &l) < 0)
		err = errno;
	if (err)
		connect_failed(w, c, err);
	else
		connected(w, c);
}

/* A move's bytes: delivered ones for the report and the stats line, and
 * what the pair holds now (pending after = before + taken - delivered). */
static void count(struct conn *c, struct dir *d,
		  const struct psplice_result *res)
{
	int i = d == &c->d[1];

	d->bytes += res->out_bytes;
	d->pending = d->pending + res->in_bytes - res->out_bytes;
	if (res->out_bytes)
		atomic_fetch_add(&c->r->bytes[i], res->out_bytes);
	if (res->in_bytes != res->out_bytes)
		atomic_fetch_add(&c->r->pending[i],
				 (int_fast64_t)res->in_bytes - (int_fast64_t)res->out_bytes);
	if (res->method == PSPLICE_METHOD_READWRITE)
		atomic_fetch_add(&c->r->copied, res->out_bytes);
	/* Tokens pay for the bytes taken from the input, not for pending
	 * ones delivered: those were paid for when they were taken. */
	if (res->in_bytes && (c->r->rate.bps || c->r->rate_total.bps)) {
		int64_t now = cli_now_ns();

		bucket_spend(&c->r->rate, &d->empty_at, now, res->in_bytes);
		bucket_spend(&c->r->rate_total, &c->r->total_empty_at[i], now, res->in_bytes);
	}
	/* For the record: the paths that delivered bytes (a move that only
	 * took some, its output full, names none). */
	if (res->out_bytes)
		d->methods |= 1u << (res->method & 31);
}

static enum end_side side_of(const struct conn *c, const struct handle *h)
{
	return h == &c->target ? SIDE_TARGET : SIDE_CLIENT;
}

/* Why a direction stopped: a reset by the peer it reads, the peer it
 * writes gone (the engine says EPIPE for its close and its reset alike: a
 * target that ends its side of a test with the client's bytes unread, as
 * iperf3's server does), or another error. */
static void fail_on(struct ending *e, const struct conn *c, const struct handle *h,
		    bool reading, int err)
{
	e->how = err == ECONNRESET ? END_RST : err == EPIPE && !reading ? END_CLOSED : END_ERROR;
	e->side = side_of(c, h);
	e->reading = reading;
	e->err = err;
}

/* A move that took less than it asked and delivered all it took found the
 * input empty: a request is read whole, and the next move would only say
 * EAGAIN. The direction waits for its input instead (epoll is
 * level-triggered: bytes that came since are reported at once) -- unless
 * the input's peer has ended its stream (hup, from the event): then the
 * next move reads the end at once, rather than after another epoll_wait
 * that would report it. */
static bool emptied(struct dir *d, const struct psplice_result *res, size_t len, bool hup)
{
	if (!res->in_bytes || res->in_bytes >= len || d->pending || hup)
		return false;
	d->state = D_READ;
	return true;
}

/* End of input, and nothing pending (a move delivers those first): the
 * half-close goes on, and the other direction keeps flowing. When that
 * one has ended too, the close says it (a FIN: all the output's input was
 * read) and the shutdown would be a call for nothing. */
static void ended(struct conn *c, struct dir *d)
{
	struct dir *other = d == &c->d[0] ? &c->d[1] : &c->d[0];

	if (other->state != D_DONE)
		shutdown(d->out->fd, SHUT_WR);
	d->state = D_DONE;
	if (c->first_fin == SIDE_RELAY)
		c->first_fin = side_of(c, d->in);
}

/* Move one direction until it would block, ends, fails, used its budget
 * or its tokens. -1 when the connection must close (f says why). What the output
 * cannot take stays in the pair, in its pipe, and goes out first when the
 * output has room: the relay never copies a byte itself. */
static int pump(struct worker *w, struct conn *c, struct dir *d, struct ending *f, bool hup)
{
	struct psplice_result res;
	bool writable = d->state == D_WRITE; /* what woke d: its output */
	int i;

	for (i = 0; i < BUDGET; i++, writable = false) {
		size_t len = move_take(w, c, d, writable);

		if (!len)
			return 0;
		psplice_pair_move(d->pair, NULL, NULL, len, PSPLICE_F_NONBLOCK, &res);
		count(c, d, &res);
		move_taken(d, &res, len);
		/* A slow reader taking held bytes is not idle. */
		if (res.in_bytes || res.out_bytes)
			touch(w, c);
		if (!res.error) {
			if (emptied(d, &res, len, hup))
				return 0;
			if (res.in_bytes || res.out_bytes)
				continue;
			ended(c, d);
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

/* After moves: closed when both directions ended, else each fd watched
 * for what its directions wait for. */
static void settle(struct worker *w, struct conn *c)
{
	if (c->d[0].state == D_DONE && c->d[1].state == D_DONE) {
		conn_close(w, c, &(struct ending){ .how = END_FIN, .side = c->first_fin });
		return;
	}
	conn_watch(w, c);
}

void conn_event(struct worker *w, struct conn *c, struct handle *h, uint32_t events)
{
	struct ending f = { .how = END_FIN };
	bool hup = events & (EPOLLRDHUP | EPOLLHUP);
	int i;

	if (c->dead)
		return;
	if (c->awaiting) {
		/* A whole header read: on to TARGET. */
		if (proxy_read(w, c))
			conn_target(w, c);
		return;
	}
	if (c->connecting) {
		if (h == &c->target)
			connect_done(w, c, events);
		return;
	}
	if (c->hdr_off < c->hdr_len) {
		if (h == &c->target)
			send_header(w, c);
		return;
	}
	for (i = 0; i < 2; i++) {
		struct dir *d = &c->d[i];

		if ((d->state == D_READ && d->in == h) || (d->state == D_WRITE && d->out == h))
			if (pump(w, c, d, &f, hup && d->in == h) < 0) {
				conn_close(w, c, &f);
				return;
			}
	}
	settle(w, c);
}

/* The idle timeout came: the connection closes, unless a direction waits
 * for tokens, which is the relay's doing, not the peers'. */
void conn_idle(struct worker *w, struct conn *c)
{
	if (c->d[0].state == D_PACED || c->d[1].state == D_PACED)
		touch(w, c);
	else
		conn_close(w, c, &(struct ending){ .how = END_IDLE });
}

/* When the first direction waiting for tokens is due; NEVER if none is. */
int64_t conn_wake_at(const struct conn *c)
{
	int64_t at = NEVER;
	int i;

	for (i = 0; i < 2; i++)
		if (c->d[i].state == D_PACED && c->d[i].wake_at < at)
			at = c->d[i].wake_at;
	return at;
}

/* The timer: the directions whose tokens are due move again, at once
 * rather than after another epoll_wait. */
void conn_wake(struct worker *w, struct conn *c, int64_t now)
{
	struct ending f = { .how = END_FIN };
	int i;

	for (i = 0; i < 2; i++) {
		struct dir *d = &c->d[i];

		if (d->state != D_PACED || d->wake_at > now)
			continue;
		d->state = D_READ;
		if (pump(w, c, d, &f, false) < 0) {
			conn_close(w, c, &f);
			return;
		}
	}
	settle(w, c);
}
