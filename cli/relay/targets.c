/* psplice relay: several targets. Each connection picks one by --balance
 * among those that are up; a connect that fails or times out marks that
 * target down and the connection tries the next, so a client never sees a
 * target fail while another is up. Nothing the client sent was read yet:
 * its bytes wait in its socket until a target is connected, and retrying
 * loses none. The checker thread probes the down targets with a connect
 * every --check-interval and brings back those that answer. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "relay.h"
#include "out.h"

/* Which candidate is better: an up target before a down one (a down one
 * is tried only when every up one failed: it may be back already), then,
 * for leastconn, the one with fewer connections. -1: a is better. */
static int rank(const struct relay *r, struct target *a, struct target *b)
{
	bool da = atomic_load(&a->down), db = atomic_load(&b->down);
	uint_fast64_t ca, cb;

	if (da != db)
		return da ? 1 : -1;
	if (r->balance != BAL_LEASTCONN)
		return 0;
	ca = atomic_load(&a->conns);
	cb = atomic_load(&b->conns);
	return ca < cb ? -1 : ca > cb;
}

/* Roundrobin: of the targets c has not tried that rank as well as best
 * (up before down), the (c->turn mod their number)-th in order, so that a
 * target that is down shares its turns among the others rather than
 * handing them all to the one after it. The ranks are read once: the
 * checker may bring a target up meanwhile. */
static int in_turn(const struct relay *r, const struct conn *c, int best)
{
	uint64_t equal = 0;
	unsigned int n = 0, k;
	int i;

	for (i = 0; i < r->ntargets; i++)
		if (!(c->tried & (UINT64_C(1) << i)) &&
		    (i == best || rank(r, &r->targets[i], &r->targets[best]) == 0)) {
			equal |= UINT64_C(1) << i;
			n++;
		}
	k = c->turn % n;
	for (i = 0; k || !(equal & (UINT64_C(1) << i)); i++)
		if (equal & (UINT64_C(1) << i))
			k--;
	return i;
}

/* The next target for c, counted in its conns; NULL when c tried them
 * all. Among equals the first met wins (first, leastconn), or the one
 * whose turn it is (roundrobin). */
struct target *target_pick(struct relay *r, struct conn *c)
{
	struct target *best = NULL;
	int i, at = -1;

	target_leave(r, c);
	for (i = 0; i < r->ntargets; i++) {
		if (c->tried & (UINT64_C(1) << i))
			continue;
		if (!best || rank(r, &r->targets[i], best) < 0) {
			best = &r->targets[i];
			at = i;
		}
	}
	if (!best)
		return NULL;
	if (r->balance == BAL_ROUNDROBIN) {
		at = in_turn(r, c, at);
		best = &r->targets[at];
	}
	c->tried |= UINT64_C(1) << at;
	c->tgt = best;
	c->counted = true;
	atomic_fetch_add(&best->conns, 1);
	return best;
}

/* c no longer counts for its target: it closed or tries another. */
void target_leave(struct relay *r, struct conn *c)
{
	(void)r;
	if (c->counted)
		atomic_fetch_sub(&c->tgt->conns, 1);
	c->counted = false;
}

/* "a, b, c": the targets, for the line that says where the relay forwards. */
void targets_text(const struct relay *r, char *buf, size_t size)
{
	size_t used = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; i < r->ntargets && used < size; i++)
		used += (size_t)snprintf(buf + used, size - used, "%s%s", i ? ", " : "",
					 r->targets[i].addr.text);
}

/* A connect to t failed (counted for --metrics). With a single target
 * there is nothing to fail over to: each connection tries it, and its
 * failure is said per connection, as it always was. */
void target_down(struct relay *r, struct target *t, int err)
{
	bool was = false;
	char why[256];

	atomic_fetch_add_explicit(&t->failed, 1, memory_order_relaxed);
	if (r->ntargets > 1 && atomic_compare_exchange_strong(&t->down, &was, true))
		cli_say("relay: target %s is down (%s)", cli_quote(t->addr.text),
			strerror_r(err, why, sizeof(why)));
}

void target_up(struct relay *r, struct target *t)
{
	bool was = true;

	if (r->ntargets > 1 && atomic_compare_exchange_strong(&t->down, &was, false))
		cli_say("relay: target %s is up again", cli_quote(t->addr.text));
}

/* Start a probe of t: its socket, connecting, or -1 when it was refused
 * at once. A connect that succeeds at once (a unix socket) brings t up. */
static int probe_start(struct relay *r, struct target *t)
{
	int fd = socket(t->addr.ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	if (connect(fd, (const struct sockaddr *)&t->addr.ss, t->addr.len) == 0 ||
	    (errno == EAGAIN && t->addr.ss.ss_family == AF_UNIX)) {
		/* A unix listener with a full queue is there all the same. */
		target_up(r, t);
	} else if (errno == EINPROGRESS) {
		return fd;
	}
	close(fd);
	return -1;
}

/* Probe every down target at once; wait for the answers at most the
 * connect timeout (and the interval). */
static void probe(struct relay *r)
{
	struct pollfd p[MAX_TARGETS];
	struct target *who[MAX_TARGETS];
	int64_t end = now_ms() + (r->connect_ms < r->check_ms ? r->connect_ms : r->check_ms);
	int n = 0, i, left, err;
	socklen_t l;

	for (i = 0; i < r->ntargets; i++) {
		if (!atomic_load(&r->targets[i].down))
			continue;
		p[n].fd = probe_start(r, &r->targets[i]);
		p[n].events = POLLOUT;
		who[n] = &r->targets[i];
		n += p[n].fd >= 0;
	}
	for (left = n; left > 0 && now_ms() < end;) {
		if (poll(p, (nfds_t)n, wait_ms(end, now_ms())) <= 0)
			continue;
		for (i = 0; i < n; i++) {
			if (p[i].fd < 0 || !p[i].revents)
				continue;
			l = sizeof(err);
			if (getsockopt(p[i].fd, SOL_SOCKET, SO_ERROR, &err, &l) == 0 && !err)
				target_up(r, who[i]);
			close(p[i].fd);
			p[i].fd = -1;
			left--;
		}
	}
	for (i = 0; i < n; i++)
		if (p[i].fd >= 0)
			close(p[i].fd);
}

/* Every check_ms until checker_stop; the condition variable wakes it at
 * the stop rather than at the end of an interval. */
static void *checker_main(void *arg)
{
	struct relay *r = arg;
	struct timespec at;
	bool stop;

	pthread_mutex_lock(&r->check_lock);
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &at);
		at.tv_sec += r->check_ms / 1000;
		at.tv_nsec += r->check_ms % 1000 * 1000000;
		if (at.tv_nsec >= 1000000000) {
			at.tv_sec++;
			at.tv_nsec -= 1000000000;
		}
		while (!r->check_stop &&
		       pthread_cond_timedwait(&r->check_cond, &r->check_lock, &at) == 0)
			;
		stop = r->check_stop;
		pthread_mutex_unlock(&r->check_lock);
		if (stop)
			return NULL;
		probe(r);
		pthread_mutex_lock(&r->check_lock);
	}
}

/* The checker runs only with targets to fail over between and an
 * interval. 0, or an errno value. */
int checker_start(struct relay *r)
{
	pthread_condattr_t a;
	int err;

	if (r->ntargets < 2 || !r->check_ms)
		return 0;
	pthread_mutex_init(&r->check_lock, NULL);
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&r->check_cond, &a);
	pthread_condattr_destroy(&a);
	err = pthread_create(&r->checker, NULL, checker_main, r);
	if (err)
		r->check_ms = 0;
	return err;
}

void checker_stop(struct relay *r)
{
	if (r->ntargets < 2 || !r->check_ms)
		return;
	pthread_mutex_lock(&r->check_lock);
	r->check_stop = true;
	pthread_cond_signal(&r->check_cond);
	pthread_mutex_unlock(&r->check_lock);
	pthread_join(r->checker, NULL);
	pthread_cond_destroy(&r->check_cond);
	pthread_mutex_destroy(&r->check_lock);
}
