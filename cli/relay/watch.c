/* psplice relay: what a worker's epoll set waits for. A connection's fds
 * wait for what its directions wait for, a listener for connections while
 * the worker takes them. The floor under the worker, its connections and
 * the PROXY reader: it calls nothing of the relay. */
#include <stdint.h>
#include <sys/epoll.h>

#include "relay.h"

void set_events(struct worker *w, struct handle *h, uint32_t events)
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

/* Out of the epoll set. */
void unwatch(struct worker *w, struct handle *h)
{
	set_events(w, h, 0);
}

/* Before a connection's fds a and b (b may be NULL) are closed, until
 * closing_end. Closing its last fd takes a socket out of every epoll set,
 * and a close costs no epoll_ctl, except while a reload's child holds
 * copies of the fds (from its fork to its exec): then a closed fd would
 * stay registered, its events naming a connection already freed, so each
 * is taken out first. The read lock keeps a fork from falling between
 * the look at forks and the close. */
void closing_begin(struct worker *w, struct handle *a, struct handle *b)
{
	bool forked;

	pthread_rwlock_rdlock(&w->r->fork_lock);
	forked = atomic_load_explicit(&w->r->forks, memory_order_relaxed) != 0;
	if (forked)
		unwatch(w, a);
	a->events = 0;
	if (b && forked)
		unwatch(w, b);
	if (b)
		b->events = 0;
}

void closing_end(struct worker *w)
{
	pthread_rwlock_unlock(&w->r->fork_lock);
}

/* Each fd waits for what the directions using it wait for, nothing else. */
void update_interest(struct worker *w, struct conn *c)
{
	uint32_t ev[2] = { 0, 0 };   /* client, target */
	int i;

	/* Edge-triggered: a header half there stays readable, and each
	 * arrival is what is worth another look. */
	if (c->awaiting) {
		set_events(w, &c->client, EPOLLIN | EPOLLRDHUP | EPOLLET);
		return;
	}
	if (c->connecting) {
		/* A socket between two connect attempts has nothing to say. */
		set_events(w, &c->target, c->retry_at ? 0 : EPOLLOUT);
		return;
	}
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
	set_events(w, &c->client, ev[0]);
	set_events(w, &c->target, ev[1]);
}

void listener_on(struct worker *w, bool on)
{
	/* EPOLLEXCLUSIVE: a shared listener wakes one worker, not all. */
	uint32_t ev = EPOLLIN | (w->r->shared ? EPOLLEXCLUSIVE : 0);
	int i;

	/* Closed at the drain: nothing to turn on or off any more. */
	if (w->listeners[0].fd < 0)
		return;
	/* EPOLLEXCLUSIVE cannot be modified, only added and deleted. */
	for (i = 0; i < w->r->nlisten; i++)
		set_events(w, &w->listeners[i], on ? ev : 0);
	w->paused = !on;
}
