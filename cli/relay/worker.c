/* psplice relay: a worker thread. Its own epoll loop over its listeners and
 * its connections, accepting under --max-conns, the timeouts, and the drain
 * after SIGTERM. */
#include <errno.h>
#include <signal.h>
#include <inttypes.h>
#include <string.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "relay.h"
#include "out.h"

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

/* "relay: accept: Too many open files (41 more in the last 5 s)": the
 * times since the last line. Under n->lock. */
static void note_say(struct note *n, int64_t now)
{
	uint64_t times = atomic_exchange(&n->unsaid, 0);
	int64_t secs = (now - n->said_at + 500) / 1000;
	char why[256];

	if (!times)
		return;
	cli_say("relay: %s: %s (%" PRIu64 " more in the last %" PRId64 " s)", n->what,
		cli_strerror(n->err, why, sizeof(why)), times, secs > 0 ? secs : 1);
	n->said_at = now;
}

void note_error(struct note *n, int err)
{
	int64_t now = now_ms();

	pthread_mutex_lock(&n->lock);
	if (n->said_at && err == n->err) {
		atomic_fetch_add(&n->unsaid, 1);
		if (now - n->said_at >= NOTE_MS)
			note_say(n, now);
	} else {
		/* Another error: what the last one left unsaid first. */
		if (n->said_at)
			note_say(n, now);
		cli_error(err, "relay: %s", n->what);
		n->err = err;
		n->said_at = now;
	}
	pthread_mutex_unlock(&n->lock);
}

/* The count left unsaid: once the error stops (the next accept that works,
 * NOTE_MS after the last line: accepts that work and fail by turns must not
 * make a line each), or, with final, as the relay ends. */
void note_flush(struct note *n, bool final)
{
	int64_t now;

	if (!atomic_load_explicit(&n->unsaid, memory_order_relaxed))
		return;
	now = now_ms();
	pthread_mutex_lock(&n->lock);
	if (final || now - n->said_at >= NOTE_MS)
		note_say(n, now);
	pthread_mutex_unlock(&n->lock);
}

/* A listener that could not be watched again after a pause (the relay's
 * user out of epoll watches): said as accept's errors are, once, then
 * with how often. The worker stays paused and tries again. */
static struct note rewatch = { .lock = PTHREAD_MUTEX_INITIALIZER,
			       .what = "cannot watch the listener" };

/* Every line's listeners back on, said when they cannot be. */
static void resume(struct worker *w)
{
	int err = listeners_on(w, true);

	if (err < 0)
		note_error(&rewatch, -err);
	else
		note_flush(&rewatch, false);
}

/* Line x's listeners off for a while (NULL: every line's, the process
 * out of fds): accept again at the next sweep. */
static void pause_for_retry(struct worker *w, struct relay *x)
{
	if (x)
		listener_on(w, x, false);
	else
		listeners_on(w, false);
	if (now_ms() + RETRY_MS < w->next_check)
		w->next_check = now_ms() + RETRY_MS;
}

/* accept(2) on a listener of line x failed with err, which is not EINTR,
 * ECONNABORTED or EAGAIN. */
static void accept_failed(struct worker *w, struct relay *x, int err)
{
	/* Draining: another worker shut the shared listener down, which
	 * wakes this one too; not an error to report. */
	if (err == EINVAL && atomic_load(&w->proc->draining)) {
		listener_on(w, x, false);
		return;
	}
	/* Not draining: another process holding the socket shut it down
	 * (the relay this one replaced, stopped by a plain signal as it was
	 * taken over). No client can come through it again: said once, and
	 * the relay stops, exiting 1. */
	if (err == EINVAL) {
		listener_on(w, x, false);
		if (!atomic_exchange(&w->proc->listener_lost, true)) {
			cli_error(EINVAL, "relay: the listening socket was shut down by "
				  "another process; stopping");
			kill(getpid(), SIGTERM);
		}
		return;
	}
	/* Out of fds: the queue stays readable, so pause rather than spin
	 * on it, and say so without flooding the log while it lasts. */
	note_error(&x->accept_failed, err);
	pause_for_retry(w, NULL);
}

/* One connection a wakeup, not until EAGAIN: a client that connected
 * alone (the usual case, short connections one at a time) costs no accept
 * that says EAGAIN, and in a storm the listener, level-triggered, is
 * reported again at once, beside the connections' own events. */
static void accept_one(struct worker *w, struct listener *l)
{
	struct relay *x = l->r;
	struct sockaddr_storage ss;
	socklen_t len;
	int i, fd;

	/* Stopped accepting earlier in this batch of events (start_drain):
	 * the listener's event is stale, and its fd may be closed. */
	if (w->drain_end != NEVER)
		return;
	for (i = 0; i < ACCEPT_TRIES; i++) {
		/* Others' connections may close: look again soon. */
		if (!reserve_slot(x)) {
			pause_for_retry(w, x);
			return;
		}
		len = sizeof(ss);
		fd = accept4(l->h.fd, (struct sockaddr *)&ss, &len,
			     SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0) {
			note_flush(&x->accept_failed, false);
			conn_open(w, x, fd, (struct sockaddr *)&ss, len);
			return;
		}
		atomic_fetch_sub(&x->open, 1);
		if (errno == EINTR || errno == ECONNABORTED)
			continue;
		if (errno != EAGAIN)
			accept_failed(w, x, errno);
		return;
	}
}

/* The first connection becomes the last. Connections sharing
 * --rate-total's bucket wake at the same time, and the first one the
 * sweep visits takes what the bucket holds: each sweep starts with
 * another one, so that none waits for ever. */
static void rotate(struct worker *w)
{
	struct conn *first = w->head.next;

	if (first == &w->head || first->next == &w->head)
		return;
	w->head.next = first->next;
	first->next->prev = &w->head;
	first->prev = w->head.prev;
	first->next = &w->head;
	w->head.prev->next = first;
	w->head.prev = first;
}

/* Timeouts, directions out of tokens and a paused listener; sets the next
 * deadline. */
static void sweep(struct worker *w)
{
	int64_t now = now_ms(), next = w->drain_end;
	struct conn *c, *n;

	for (c = w->head.next; c != &w->head; c = n) {
		n = c->next;
		if (c->deadline <= now) {
			/* A timed out connect may go on to the next target. */
			if (c->awaiting)
				proxy_timeout(w, c);
			else if (c->connecting)
				connect_failed(w, c, ETIMEDOUT);
			else
				conn_idle(w, c);
			if (c->dead)
				continue;
		}
		if (c->retry_at && c->retry_at <= now) {
			try_connect(w, c);
			if (c->dead)
				continue;
		}
		if (conn_wake_at(c) <= now) {
			conn_wake(w, c, now);
			if (c->dead)
				continue;
		}
		if (c->deadline < next)
			next = c->deadline;
		if (c->retry_at && c->retry_at < next)
			next = c->retry_at;
		if (conn_wake_at(c) < next)
			next = conn_wake_at(c);
	}
	if (w->rotate)
		rotate(w);
	if (w->paused && w->drain_end == NEVER) {
		resume(w);
		if (now + RETRY_MS < next)
			next = now + RETRY_MS;
	}
	w->next_check = next;
}

/* Closed, not only unwatched: new clients are refused rather than left in
 * a queue nobody reads. A shared TCP listener is shut down, its fd left to
 * the others (shutting it down again is harmless); a unix one stays open,
 * and its path is already gone. The service manager's listeners are its
 * own as well: shut down, they would stop listening for it too; unwatched,
 * the clients that come meanwhile wait in their queues for the relay it
 * starts next. After a reload they are the new relay's: left as they are. */
static void close_listeners(struct worker *w)
{
	bool handed_over = atomic_load(&w->proc->handed_over);
	struct listener *l;
	struct relay *x;
	int k;

	for (x = w->proc; x; x = x->next) {
		for (k = 0; k < x->nlisten; k++) {
			l = listener_at(x, w->i, k);
			if (!x->shared) {
				close(l->h.fd);
				l->h.fd = -1;
			} else if (!x->inherited && !handed_over &&
				   x->listen.ss.ss_family != AF_UNIX) {
				shutdown(l->h.fd, SHUT_RDWR);
			}
		}
	}
}

/* A stop signal: stop accepting and drain until the drain timeout. The
 * second one (cutting) brings the timeout to now: the worker ends every
 * connection itself, each reset and recorded as cut, and only then
 * finishes; the main thread waits for that before the process dies. */
static void start_drain(struct worker *w)
{
	uint64_t v;

	if (read(w->wake.fd, &v, sizeof(v)) < 0)
		return;
	if (w->drain_end == NEVER) {
		listeners_on(w, false);
		close_listeners(w);
		w->drain_end = now_ms() + w->proc->drain_ms;
	}
	if (atomic_load(&w->proc->cutting))
		w->drain_end = now_ms();
	if (w->drain_end < w->next_check)
		w->next_check = w->drain_end;
}

static struct conn *conn_of(struct handle *h)
{
	size_t off = h->kind == H_CLIENT ? offsetof(struct conn, client) :
		     offsetof(struct conn, target);

	return (struct conn *)((char *)h - off);
}

void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct epoll_event ev[64];
	int64_t now;
	uint64_t one = 1;
	int n, i;

	while (w->drain_end == NEVER || w->nconns) {
		now = now_ms();
		if (w->drain_end != NEVER && now >= w->drain_end) {
			/* One reason for every connection cut. */
			int how = atomic_load(&w->proc->cutting) ? END_STOP : END_DRAIN;

			while (w->head.next != &w->head)
				conn_close(w, w->head.next, &(struct ending){ .how = how });
			break;
		}
		if (now >= w->next_check)
			sweep(w);
		n = epoll_wait(w->ep, ev, 64, wait_ms(w->next_check, now));
		for (i = 0; i < n; i++) {
			struct handle *h = event_handle(ev[i].data.u64);

			/* An fd closed since it was registered: see closing_begin. */
			if (!h)
				continue;
			if (h->kind == H_LISTEN)
				accept_one(w, (struct listener *)h);
			else if (h->kind == H_WAKE)
				start_drain(w);
			else
				conn_event(w, conn_of(h), h, ev[i].events);
		}
		conn_bury(w, false);
	}
	conn_bury(w, true);
	note_flush(&rewatch, true);
	if (write(w->proc->done_fd, &one, sizeof(one)) < 0)
		cli_error(errno, "relay: eventfd");
	return NULL;
}

/* Worker i of the process proc, which watches every line's listeners. */
int worker_init(struct relay *proc, struct worker *w, int i)
{
	struct relay *x;
	int k;

	w->proc = proc;
	w->i = i;
	w->drain_end = NEVER;
	w->next_check = NEVER;
	w->head.next = w->head.prev = &w->head;
	for (x = proc; x; x = x->next)
		w->rotate |= x->rate_total.bps != 0;
	w->wake = (struct handle){ .kind = H_WAKE };
	w->ep = epoll_create1(EPOLL_CLOEXEC);
	w->wake.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (w->ep < 0 || w->wake.fd < 0)
		return -1;
	set_events(w, &w->wake, EPOLLIN);
	listeners_on(w, true);
	for (x = proc; x; x = x->next)
		for (k = 0; k < x->nlisten; k++)
			if (!listener_at(x, i, k)->h.events)
				return -1;
	return w->wake.events ? 0 : -1;
}
