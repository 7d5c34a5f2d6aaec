/* psplice relay: several targets. Each connection picks one by --balance
 * among those that are up; a connect that fails or times out marks that
 * target down and the connection tries the next, so a client never sees a
 * target fail while another is up. Nothing the client sent was read yet:
 * its bytes wait in its socket until a target is connected, and retrying
 * loses none. The checker thread, one for every line of a --config file,
 * probes the down targets with a connect every --check-interval (each
 * line's own) and brings back those that answer. */
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
			cli_strerror(err, why, sizeof(why)));
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

/* The probes of a round: every down target of the lines due, at once;
 * of[i] the line of who[i], whose answer is waited for until its end. */
struct round {
	struct pollfd *p;
	struct target **who;
	struct relay **of;
	int n;
};

/* Whether line x's targets are probed: it has some to fail over between
 * and an interval. */
static bool checks(const struct relay *x)
{
	return x->ntargets > 1 && x->check_ms;
}

/* The longest a line's probes are waited for: its connect timeout, and
 * not past its interval. */
static int64_t probe_end(const struct relay *x, int64_t start)
{
	return start + (x->connect_ms < x->check_ms ? x->connect_ms : x->check_ms);
}

/* Start the probes of every line due at now. */
static void probe_start_due(struct relay *proc, struct round *rd, int64_t now)
{
	struct relay *x;
	int i;

	rd->n = 0;
	for (x = proc; x; x = x->next) {
		if (!checks(x) || x->probe_at > now)
			continue;
		x->probe_at = NEVER;     /* due again once the round ends */
		for (i = 0; i < x->ntargets; i++) {
			if (!atomic_load(&x->targets[i].down))
				continue;
			rd->p[rd->n] = (struct pollfd){ .fd = probe_start(x, &x->targets[i]),
							.events = POLLOUT };
			rd->who[rd->n] = &x->targets[i];
			rd->of[rd->n] = x;
			rd->n += rd->p[rd->n].fd >= 0;
		}
	}
}

/* Probe i answered: its target is up when the connect succeeded. */
static void probe_answer(struct round *rd, int i)
{
	socklen_t l = sizeof(int);
	int err;

	if (getsockopt(rd->p[i].fd, SOL_SOCKET, SO_ERROR, &err, &l) == 0 && !err)
		target_up(rd->of[i], rd->who[i]);
	close(rd->p[i].fd);
	rd->p[i].fd = -1;
}

/* The probes not answered by their line's end given up; the earliest end
 * of those left, or NEVER when none is. */
static int64_t probe_expire(struct round *rd, int64_t start, int64_t now)
{
	int64_t first = NEVER, end;
	int i;

	for (i = 0; i < rd->n; i++) {
		if (rd->p[i].fd < 0)
			continue;
		end = probe_end(rd->of[i], start);
		if (end <= now) {
			close(rd->p[i].fd);
			rd->p[i].fd = -1;
		} else if (end < first) {
			first = end;
		}
	}
	return first;
}

/* A round: the lines due probed, their answers waited for (poll passes
 * over the fds closed, -1), each line due again its interval after. */
static void probe(struct relay *proc, struct round *rd)
{
	int64_t start = now_ms(), end;
	struct relay *x;
	int i;

	probe_start_due(proc, rd, start);
	while ((end = probe_expire(rd, start, now_ms())) != NEVER) {
		if (poll(rd->p, (nfds_t)rd->n, wait_ms(end, now_ms())) <= 0)
			continue;
		for (i = 0; i < rd->n; i++)
			if (rd->p[i].fd >= 0 && rd->p[i].revents)
				probe_answer(rd, i);
	}
	for (x = proc; x; x = x->next)
		if (checks(x) && x->probe_at == NEVER)
			x->probe_at = now_ms() + x->check_ms;
}

/* The earliest line due, as the checker's condition variable counts
 * (CLOCK_MONOTONIC, as now_ms). */
static struct timespec next_due(const struct relay *proc)
{
	int64_t at = NEVER;
	const struct relay *x;

	for (x = proc; x; x = x->next)
		if (checks(x) && x->probe_at < at)
			at = x->probe_at;
	return (struct timespec){ .tv_sec = at / 1000, .tv_nsec = at % 1000 * 1000000 };
}

/* Room for every target of the lines probed; -1 when out of memory. */
static int round_alloc(const struct relay *proc, struct round *rd)
{
	const struct relay *x;
	size_t n = 0;

	for (x = proc; x; x = x->next)
		if (checks(x))
			n += (size_t)x->ntargets;
	rd->p = calloc(n, sizeof(*rd->p));
	rd->who = calloc(n, sizeof(*rd->who));
	rd->of = calloc(n, sizeof(*rd->of));
	return rd->p && rd->who && rd->of ? 0 : -1;
}

/* Each line's probes every check_ms until checker_stop; the condition
 * variable wakes it at the stop rather than at the next one due. */
static void *checker_main(void *arg)
{
	struct relay *proc = arg;
	struct round rd = { 0 };
	struct timespec at;
	bool stop;

	if (round_alloc(proc, &rd) < 0) {
		cli_error(ENOMEM, "relay: target checker");
		return NULL;
	}
	pthread_mutex_lock(&proc->check_lock);
	for (;;) {
		at = next_due(proc);
		while (!proc->check_stop &&
		       pthread_cond_timedwait(&proc->check_cond, &proc->check_lock, &at) == 0)
			;
		stop = proc->check_stop;
		pthread_mutex_unlock(&proc->check_lock);
		if (stop)
			break;
		probe(proc, &rd);
		pthread_mutex_lock(&proc->check_lock);
	}
	free(rd.p);
	free(rd.who);
	free(rd.of);
	return NULL;
}

/* The checker runs only when a line has targets to fail over between and
 * an interval: one thread for every line. 0, or an errno value. */
int checker_start(struct relay *proc)
{
	pthread_condattr_t a;
	struct relay *x;
	int err;

	for (x = proc; x && !checks(x); x = x->next)
		;
	if (!x)
		return 0;
	for (x = proc; x; x = x->next)
		x->probe_at = now_ms() + x->check_ms;
	pthread_mutex_init(&proc->check_lock, NULL);
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&proc->check_cond, &a);
	pthread_condattr_destroy(&a);
	err = pthread_create(&proc->checker, NULL, checker_main, proc);
	proc->checking = !err;
	return err;
}

void checker_stop(struct relay *proc)
{
	if (!proc->checking)
		return;
	pthread_mutex_lock(&proc->check_lock);
	proc->check_stop = true;
	pthread_cond_signal(&proc->check_cond);
	pthread_mutex_unlock(&proc->check_lock);
	pthread_join(proc->checker, NULL);
	pthread_cond_destroy(&proc->check_cond);
	pthread_mutex_destroy(&proc->check_lock);
	proc->checking = false;
}
