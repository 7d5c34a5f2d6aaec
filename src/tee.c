/* Fan-out: one input to n sinks. tee(2) duplicates the pages of a pipe into
 * another without consuming them: each step gets the input's bytes into a
 * pipe (the input itself when it is one, else an internal pipe it is
 * spliced into), tees them into the thread's pipe for each sink in turn and
 * splices them out of it, and moves the pages themselves to the last sink.
 * A sink that cannot take its share now keeps it pending in its struct
 * ps_hold (the pipe it went through, kept from the pool's budget, or
 * memory), as a pair does; a sink splice refuses, or one with bytes pending
 * before the step's, gets the step's bytes from one copy in memory. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "endpoint.h"
#include "hold.h"
#include "pipepool.h"
#include "psplice.h"
#include "sigpipe.h"
#include "tee.h"

/* ---- the step ---- */

static void fail_step(struct step *st, int err, int side)
{
	if (!st->last->error) {
		st->last->error = err;
		st->last->side = side;
	}
}

/* Pending bytes first. A sink still holding some afterwards holds the
 * input back: at once without NONBLOCK (the wait was interrupted), else
 * once it holds hold_max; below that the step takes at most the room
 * left. false: the step takes nothing. */
static bool pending_first(struct step *st)
{
	struct psplice_tee *t = st->t;
	size_t i, held, most = 0;
	struct sink *s;

	for (i = 0; i < t->n; i++) {
		s = &t->sink[i];
		if (ps_tee_live(s) && ps__held(&s->hold))
			ps__tee_deliver(st, s);
		if (ps_tee_live(s) && (held = ps__held(&s->hold)) > most)
			most = held;
	}
	if (!most)
		return true;
	for (i = 0; i < t->n; i++) {
		s = &t->sink[i];
		held = ps__held(&s->hold);
		if (!ps_tee_live(s) || !held)
			continue;
		if (!(st->flags & PSPLICE_F_NONBLOCK) && s->res->error) {
			fail_step(st, s->res->error, PSPLICE_SIDE_OUT);
		} else if (held >= t->hold_max) {
			if (!s->res->error) {
				s->res->error = EAGAIN;
				s->res->side = PSPLICE_SIDE_OUT;
			}
			fail_step(st, EAGAIN, PSPLICE_SIDE_OUT);
		}
	}
	if (st->last->error)
		return false;
	if (t->ended) {
		fail_step(st, EAGAIN, PSPLICE_SIDE_OUT);
		return false;
	}
	if (st->len > t->hold_max - most)
		st->len = t->hold_max - most;
	return true;
}

static const struct sink *first_out(const struct psplice_tee *t)
{
	for (size_t i = 0; i < t->n; i++)
		if (ps_tee_live(&t->sink[i]))
			return NULL;
	for (size_t i = 0; i < t->n; i++)
		if (t->sink[i].error)
			return &t->sink[i];
	return NULL;
}

static void finish(struct step *st, bool *took)
{
	struct psplice_tee *t = st->t;
	uint64_t least = UINT64_MAX;

	for (size_t i = 0; i < t->n; i++) {
		struct sink *s = &t->sink[i];

		if (took[i])
			s->res->in_bytes += st->k;
		if (took[i] && s->res->out_bytes < least)
			least = s->res->out_bytes;
	}
	/* A lone sink that failed before the step took a byte: not the end. */
	if (!st->known && !st->last->error && first_out(t))
		fail_step(st, first_out(t)->error, PSPLICE_SIDE_OUT);
	st->last->in_bytes = st->k;
	st->last->out_bytes = least == UINT64_MAX ? 0 : least;
	if (!st->known || st->k || st->last->error)
		return;
	/* The end of input, but only once every sink has had every byte. */
	t->ended = true;
	for (size_t i = 0; i < t->n; i++)
		if (ps_tee_live(&t->sink[i]) && ps__held(&t->sink[i].hold))
			fail_step(st, EAGAIN, PSPLICE_SIDE_OUT);
}

/* The step's bytes to every live sink: the internal pipe the input is
 * spliced into and the thread's pipe first, then the step's size, then the
 * serving (tee_serve.c). */
static void serve_step(struct step *st, bool *took)
{
	struct psplice_tee *t = st->t;
	int err;

	/* The internal pipe first: the thread's pipe is lent after it. */
	if (!t->rw && t->in.kind != PS_K_PIPE && !t->src)
		t->src = ps__tee_get_src(t->flags & PSPLICE_F_NOFALLBACK);
	if (!t->rw && ps__pipe_get(&st->tp) < 0)
		st->tp = NULL;
	st->mem_only = t->rw || !st->tp || (t->in.kind != PS_K_PIPE && !t->src);
	if (st->mem_only && (t->flags & PSPLICE_F_NOFALLBACK)) {
		fail_step(st, t->rw ? EOPNOTSUPP : ENFILE, PSPLICE_SIDE_NONE);
		goto put;
	}
	if (st->len > (st->mem_only ? TEE_RW_STEP : st->tp->size))
		st->len = st->mem_only ? TEE_RW_STEP : st->tp->size;
	if (t->src && st->len > t->src->size)
		st->len = t->src->size;
	for (size_t i = 0; i < t->n; i++)
		took[i] = ps_tee_live(&t->sink[i]);
	st->side = PSPLICE_SIDE_IN;
	err = ps__tee_serve(st);
	if (err < 0)
		fail_step(st, -err, st->side);
put:
	if (st->tp)
		ps__pipe_put(st->tp, !ps__pipe_empty(st->tp));
	finish(st, took);
}

/* A sink that is out says so in every step; SIGPIPE put back as it was. A
 * step may have raised it when a sink failed or stopped short (into a
 * socket, splice returns what it moved with the signal already sent). */
static void report_sinks(struct psplice_tee *t, struct psplice_result *res,
			 struct ps_sigguard *g)
{
	bool raised = false;
	size_t i;

	for (i = 0; i < t->n; i++)
		if (t->sink[i].error && !res[i].error) {
			res[i].error = t->sink[i].error;
			res[i].side = PSPLICE_SIDE_OUT;
		}
	for (i = 0; i < t->n; i++)
		if (res[i].error || (ps_is_socket(t->sink[i].ep.kind) &&
				     ps__held(&t->sink[i].hold)))
			raised = true;
	ps__sigpipe_end(g, &t->sig, raised);
}

static void tee_step(struct psplice_tee *t, size_t len, unsigned int flags, bool retry,
		     struct psplice_result *res, struct psplice_result *last)
{
	struct step st = { .t = t, .flags = t->flags | flags, .retry = retry,
			   .fd = t->in.fd, .last = last, .side = PSPLICE_SIDE_IN };
	bool took[PSPLICE_TEE_MAX] = { false };
	const struct sink *out;
	struct ps_sigguard g;

	for (size_t i = 0; i < t->n; i++) {
		res[i] = (struct psplice_result){ 0 };
		t->sink[i].res = &res[i];
	}
	ps__sigpipe_block(&g, t->sig.guard);
	st.len = len;
	if (!pending_first(&st))
		goto out;
	if ((out = first_out(t))) {
		fail_step(&st, out->error, PSPLICE_SIDE_OUT);
		goto out;
	}
	/* A step asked for no byte delivers what is pending and takes
	 * nothing: a 0 from the input then would not be its end. */
	if (!t->ended && st.len)
		serve_step(&st, took);
out:
	report_sinks(t, res, &g);
}

/* ---- the public calls ---- */

static int classify_all(struct psplice_tee *t, int fd_in, const int *fds_out)
{
	bool raises = false;
	struct sink *s;

	if (ps__classify(fd_in, &t->in) < 0)
		return ps__reject(EBADF, PSPLICE_SIDE_IN);
	if (t->in.kind == PS_K_DIR)
		return ps__reject(EISDIR, PSPLICE_SIDE_IN);
	if (!ps__readable(&t->in))
		return ps__reject(EBADF, PSPLICE_SIDE_IN);
	for (size_t i = 0; i < t->n; i++) {
		s = &t->sink[i];
		if (ps__classify(fds_out[i], &s->ep) < 0 || !ps__writable(&s->ep))
			return ps__reject(EBADF, PSPLICE_SIDE_OUT);
		/* splice(2) refuses an O_APPEND output before a byte moves. */
		s->nosplice = s->ep.kind != PS_K_PIPE && ps__append(&s->ep);
		raises |= ps__raises_sigpipe(&s->ep);
	}
	ps__sigpipe_policy(&t->sig, raises, t->flags);
	return 0;
}

static void tee_release(struct psplice_tee *t)
{
	for (size_t i = 0; i < t->n; i++)
		ps__hold_release(&t->sink[i].hold);
	ps__tee_put_src(t->src);
	pthread_mutex_destroy(&t->lock);
	free(t->step_res);
	free(t);
}

struct psplice_tee *psplice_tee_new(int fd_in, const int *fds_out, size_t n,
				    size_t hold_max, unsigned int flags)
{
	struct psplice_result r = { 0 };
	struct psplice_tee *t;

	if (!fds_out || !n || n > PSPLICE_TEE_MAX)
		ps__fail_early(&r, EINVAL, PSPLICE_SIDE_NONE);
	if (r.error || ps__check_flags(flags, TEE_PLAN_FLAGS, &r) < 0) {
		ps__copy_return(&r, NULL);
		return NULL;
	}
	t = calloc(1, sizeof(*t) + n * sizeof(t->sink[0]));
	if (!t || !(t->step_res = calloc(2 * n, sizeof(*t->step_res)))) {
		free(t);
		ps__reject(ENOMEM, PSPLICE_SIDE_NONE);
		return NULL;
	}
	t->total_res = t->step_res + n;
	t->n = n;
	t->hold_max = hold_max;
	t->flags = flags;
	pthread_mutex_init(&t->lock, NULL);
	if (classify_all(t, fd_in, fds_out) < 0) {
		int err = errno;

		tee_release(t);
		errno = err;
		return NULL;
	}
	return t;
}

/* A move or copy on a tee: refused (published), or the tee locked for
 * it. */
static bool tee_enter(struct psplice_tee *t, unsigned int flags)
{
	struct psplice_result r = { 0 };

	if (ps__check_enter(t, flags, TEE_CALL_FLAGS, &r) < 0) {
		ps__copy_return(&r, NULL);
		return false;
	}
	pthread_mutex_lock(&t->lock);
	return true;
}

ssize_t psplice_tee_move(struct psplice_tee *t, size_t len, unsigned int flags,
			 struct psplice_result *res)
{
	struct psplice_result last = { 0 };

	if (!tee_enter(t, flags))
		return -1;
	tee_step(t, len, flags, false, res ? res : t->step_res, &last);
	pthread_mutex_unlock(&t->lock);
	if (ps__copy_return(&last, NULL) < 0)
		return -1;
	return (ssize_t)last.in_bytes;
}

static void add_step(struct psplice_result *total, const struct psplice_result *r, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		total[i].in_bytes += r[i].in_bytes;
		total[i].out_bytes += r[i].out_bytes;
		if (r[i].out_bytes)
			total[i].method = r[i].method;
		if (r[i].error && !total[i].error) {
			total[i].error = r[i].error;
			total[i].side = r[i].side;
		}
	}
}

static void tee_copy(struct psplice_tee *t, uint64_t len, unsigned int flags,
		     struct psplice_result *total, struct psplice_result *last)
{
	struct psplice_result r;
	uint64_t taken = 0;
	size_t i;

	memset(total, 0, t->n * sizeof(*total));
	while (len == PSPLICE_TO_EOF || taken < len) {
		r = (struct psplice_result){ 0 };
		tee_step(t, len - taken > SIZE_MAX ? SIZE_MAX : (size_t)(len - taken), flags,
			 true, t->step_res, &r);
		add_step(total, t->step_res, t->n);
		taken += r.in_bytes;
		if (r.error || !r.in_bytes) {
			*last = r;
			break;
		}
	}
	last->in_bytes = taken;
	last->out_bytes = taken;
	for (i = 0; i < t->n; i++)
		if (total[i].out_bytes < last->out_bytes)
			last->out_bytes = total[i].out_bytes;
	if (last->error)
		return;
	for (i = 0; i < t->n; i++)
		if (total[i].error) {
			last->error = total[i].error;
			last->side = PSPLICE_SIDE_OUT;
			return;
		}
}

int psplice_tee_copy(struct psplice_tee *t, uint64_t len, unsigned int flags,
		     struct psplice_result *res)
{
	struct psplice_result last = { 0 };

	if (!tee_enter(t, flags))
		return -1;
	tee_copy(t, len, flags, res ? res : t->total_res, &last);
	pthread_mutex_unlock(&t->lock);
	return ps__copy_return(&last, NULL);
}

size_t psplice_tee_pending(struct psplice_tee *t, size_t i)
{
	size_t n;

	if (!t || i >= t->n)
		return 0;
	pthread_mutex_lock(&t->lock);
	n = ps__held(&t->sink[i].hold);
	pthread_mutex_unlock(&t->lock);
	return n;
}

size_t psplice_tee_take(struct psplice_tee *t, size_t i, void *buf, size_t len)
{
	size_t n;

	if (!t || i >= t->n || !buf)
		return 0;
	pthread_mutex_lock(&t->lock);
	n = ps__hold_take(&t->sink[i].hold, buf, len);
	pthread_mutex_unlock(&t->lock);
	return n;
}

void psplice_tee_free(struct psplice_tee *t)
{
	if (t)
		tee_release(t);
}

int psplice_tee(int fd_in, const int *fds_out, size_t n, uint64_t len,
		unsigned int flags, struct psplice_result *res)
{
	struct psplice_result res0 = { 0 };
	struct psplice_tee *t;
	int r;

	/* One call blocks: PSPLICE_F_NONBLOCK is refused. */
	if (ps__check_flags(flags, TEE_PLAN_FLAGS | (TEE_CALL_FLAGS & ~PSPLICE_F_NONBLOCK),
			    &res0) < 0)
		return ps__copy_return(&res0, NULL);
	t = psplice_tee_new(fd_in, fds_out, n, 0, flags & TEE_PLAN_FLAGS);
	if (!t)
		return -1;
	r = psplice_tee_copy(t, len, flags & PSPLICE_F_MORE, res);
	psplice_tee_free(t);
	return r;
}
