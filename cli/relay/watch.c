/* psplice relay: what a worker's epoll set waits for. A connection's fds
 * wait for what its directions wait for, a listener for connections while
 * the worker takes them. The floor under the worker, its connections and
 * the PROXY reader: it calls nothing of the relay. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "relay.h"

/* epoll's data: the handle's address in the low 48 bits, its gen in the
 * 16 above. Linux gives a process addresses above 2^48 only when it asks
 * for them (an mmap hint above), which malloc does not; conn_alloc
 * refuses memory that does not fit rather than name it wrongly. */
#define GEN_SHIFT 48
#define ADDR_MASK ((UINT64_C(1) << GEN_SHIFT) - 1)

static bool fits(const void *p)
{
	return !((uint64_t)(uintptr_t)p & ~ADDR_MASK);
}

/* The handle an event names, or NULL when it was registered for an fd
 * closed since: see closing_begin. */
struct handle *event_handle(uint64_t data)
{
	struct handle *h = (struct handle *)(uintptr_t)(data & ADDR_MASK);

	return (uint16_t)(data >> GEN_SHIFT) == h->gen ? h : NULL;
}

/* 0, or epoll_ctl's -errno, h's events then left as they were: an add
 * fails with ENOSPC when the relay's user is out of epoll watches
 * (fs.epoll.max_user_watches), or ENOMEM. Nothing would ever wake what the
 * handle waits for: the caller ends it, or tries again. A delete that
 * fails (the fd was not in the set) leaves nothing watched either: 0. */
int set_events(struct worker *w, struct handle *h, uint32_t events)
{
	struct epoll_event ev = { .events = events,
				  .data.u64 = (uint64_t)(uintptr_t)h | (uint64_t)h->gen << GEN_SHIFT };
	int op;

	/* Memory epoll's data cannot name (see fits) is never registered:
	 * for a listener, worker_init says so. */
	if (events == h->events || !fits(h))
		return 0;
	/* An fd nobody waits on is taken out of the set: a hangup on it would
	 * otherwise be reported again and again (EPOLLHUP cannot be masked). */
	op = !events ? EPOLL_CTL_DEL : h->events ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
	if (epoll_ctl(w->ep, op, h->fd, &ev) < 0 && op != EPOLL_CTL_DEL)
		return -errno;
	h->events = events;
	return 0;
}

/* Out of the epoll set. */
void unwatch(struct worker *w, struct handle *h)
{
	set_events(w, h, 0);
}

/* Whether the connection closing now may keep its memory for the next
 * one (counted then): up to KEEP_MAX a worker. */
bool closing_keeps(struct worker *w)
{
	if (w->nkept >= KEEP_MAX)
		return false;
	w->nkept++;
	return true;
}

/* Before a connection's fds a and b (b may be NULL) are closed, until
 * closing_end; kept: the handles' memory stays (conn_bury), a's and b's
 * gens are bumped. Closing its last fd takes a socket out of every epoll
 * set, and a close then costs no epoll_ctl. But a socket another process
 * holds too stays registered, its events still coming: a reload's child
 * from its fork to its exec, a relay taking over (--replace) as it looks
 * at each of this one's fds, ss -p or lsof for a moment. Such an event
 * names memory that is still a handle, and a gen that is not its own any
 * more: event_handle drops it. Handles whose memory goes, and every fd
 * while a reload's child may hold copies (forks, under the read lock: no
 * fork falls between the look and the close), are taken out first. */
void closing_begin(struct worker *w, struct handle *a, struct handle *b, bool kept)
{
	bool del;

	pthread_rwlock_rdlock(&w->proc->fork_lock);
	del = !kept || atomic_load_explicit(&w->proc->forks, memory_order_relaxed) != 0;
	if (del)
		unwatch(w, a);
	a->events = 0;
	a->gen++;
	if (b && del)
		unwatch(w, b);
	if (b) {
		b->events = 0;
		b->gen++;
	}
}

void closing_end(struct worker *w)
{
	pthread_rwlock_unlock(&w->proc->fork_lock);
}

/* Each fd waits for what the directions using it wait for, nothing else.
 * 0, or set_events's error for the first fd that cannot be watched. */
int update_interest(struct worker *w, struct conn *c)
{
	uint32_t ev[2] = { 0, 0 };   /* client, target */
	int i, err;

	/* Edge-triggered: a header half there stays readable, and each
	 * arrival is what is worth another look. */
	if (c->awaiting)
		return set_events(w, &c->client, EPOLLIN | EPOLLRDHUP | EPOLLET);
	/* A socket between two connect attempts has nothing to say. */
	if (c->connecting)
		return set_events(w, &c->target, c->retry_at ? 0 : EPOLLOUT);
	for (i = 0; i < 2; i++) {
		struct dir *d = &c->d[i];

		if (d->state == D_READ)
			ev[d->in == &c->target] |= EPOLLIN | EPOLLRDHUP;
		else if (d->state == D_WRITE)
			ev[d->out == &c->target] |= EPOLLOUT;
	}
	/* --send-proxy*: the rest of the header, before either direction. */
	if (c->hdr_off < c->hdr_len)
		ev[1] |= EPOLLOUT;
	err = set_events(w, &c->client, ev[0]);
	return err < 0 ? err : set_events(w, &c->target, ev[1]);
}

/* Line x's listeners in w's set, or out: 0, or the error of one that
 * could not be watched again. */
static int line_on(struct worker *w, struct relay *x, bool on)
{
	/* EPOLLEXCLUSIVE: a shared listener wakes one worker, not all. */
	uint32_t ev = EPOLLIN | (x->shared ? EPOLLEXCLUSIVE : 0);
	int k, e, err = 0;

	/* Closed at the drain: nothing to turn on or off any more. */
	if (!x->nlisten || listener_at(x, w->i, 0)->h.fd < 0)
		return 0;
	/* EPOLLEXCLUSIVE cannot be modified, only added and deleted. */
	for (k = 0; k < x->nlisten; k++)
		if ((e = set_events(w, &listener_at(x, w->i, k)->h, on ? ev : 0)) < 0 && !err)
			err = e;
	return err;
}

/* A paused worker's sweep turns every line's listeners on again; after an
 * error, RETRY_MS from now at the latest. */
static void paused(struct worker *w, int err)
{
	w->paused = true;
	if (err < 0 && now_ms() + RETRY_MS < w->next_check)
		w->next_check = now_ms() + RETRY_MS;
}

/* Line x's listeners on or off in w: off for --max-conns, a line's own
 * limit, while the other lines' accept on. 0, or the error of a listener
 * that could not be watched again: the worker then stays paused. */
int listener_on(struct worker *w, struct relay *x, bool on)
{
	int err = line_on(w, x, on);

	if (!on || err < 0)
		paused(w, err);
	return err;
}

/* Every line's listeners on or off in w: 0, or the first error of a
 * listener that could not be watched again (the ones that could be are
 * watched meanwhile), the worker then left paused. */
int listeners_on(struct worker *w, bool on)
{
	struct relay *x;
	int e, err = 0;

	w->paused = false;
	for (x = w->proc; x; x = x->next)
		if ((e = line_on(w, x, on)) < 0 && !err)
			err = e;
	if (!on || err < 0)
		paused(w, err);
	return err;
}

/* A connection's memory: one closed before and kept, its handles' gens as
 * they were, or a new one. NULL when out of memory. */
struct conn *conn_alloc(struct worker *w)
{
	struct conn *c = w->spare;
	uint16_t gen[2] = { 0, 0 };

	if (c) {
		w->spare = c->next;
		w->nkept--;
		gen[0] = c->client.gen;
		gen[1] = c->target.gen;
		memset(c, 0, sizeof(*c));
		c->client.gen = gen[0];
		c->target.gen = gen[1];
		return c;
	}
	c = calloc(1, sizeof(*c));
	if (c && !fits(c)) {
		free(c);
		return NULL;
	}
	return c;
}

/* After a batch of events: the connections closed in it are kept for new
 * ones, or freed (their fds were taken out of the set). At the worker's
 * end (all), every one is freed: nothing waits on its set any more. */
void conn_bury(struct worker *w, bool all)
{
	struct conn *c;

	while ((c = w->dead)) {
		w->dead = c->next;
		if (c->kept && !all) {
			c->next = w->spare;
			w->spare = c;
		} else {
			free(c);
		}
	}
	while (all && (c = w->spare)) {
		w->spare = c->next;
		free(c);
	}
}
