/* Fan-out: one input to n sinks. Each step gets the input's bytes into a
 * pipe (the input itself when it is one, else an internal pipe it is
 * spliced into), or into memory when no sink can take them by splice, and
 * serves them to each sink in turn (tee_sink.c). The step itself
 * (ps__tee_step, at the end) delivers each sink's pending bytes first,
 * sizes the step within hold_max, serves it, and ends the input only once
 * every sink has had every byte. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "accounting.h"
#include "call.h"
#include "hold.h"
#include "path.h"
#include "pipepool.h"
#include "psplice.h"
#include "sigpipe.h"
#include "tee.h"
#include "tee_sink.h"

/* A step's most without a pipe to size it by. */
#define TEE_RW_STEP ((size_t)256 << 10)

/* The internal pipe, from the pool: the thread's, kept within the budget
 * (or past it, when nothing may go through memory). Without one the step
 * reads the input into memory. */
static struct ps_pipe *get_src(bool always)
{
	struct ps_pipe *p, *k;

	if (ps__pipe_get(&p) < 0)
		return NULL;
	k = ps__pipe_keep(p, always);
	if (!k)
		ps__pipe_put(p, false);
	return k;
}

void ps__tee_put_src(struct ps_pipe *p)
{
	if (!p)
		return;
	if (ps__pipe_empty(p))
		ps__pipe_back(p);
	else
		ps__pipe_close(p);
}

/* The step's bytes into the internal pipe. An input splice will not read
 * (a tty, a procfs file) is read(2) from then on. */
static int fill_src(struct step *st)
{
	struct ps_endpoint out = ps_pipe_end(st->t->src->w, O_WRONLY);
	struct ps_xfer x = { .in = &st->t->in, .out = &out, .len = st->len,
			     .flags = st->flags & PSPLICE_F_NONBLOCK,
			     .retry_eintr = st->retry };
	ssize_t r;
	int side;

	r = ps__step_run_path(&x, PSPLICE_METHOD_SPLICE, &side);
	/* procfs and sysfs files splice nothing and still have content: the
	 * path says "not here" for them, as for an input splice refuses. */
	if (ps__splice_refused(r)) {
		if (st->flags & PSPLICE_F_NOFALLBACK)
			return -EOPNOTSUPP;
		st->t->rw = st->mem_only = true;
		return 0;
	}
	if (r < 0)
		return (int)r;
	st->k = (size_t)r;
	st->known = true;
	st->fd = st->t->src->r;
	return 0;
}

/* The step's bytes in memory: read(2) from the input when nothing took
 * them yet, else read out of the step's pipe (which that empties). */
static int fill_buf(struct step *st)
{
	struct ps_xfer x = ps__step_input_x(st);
	struct ps_endpoint in;
	ssize_t r;

	if (st->buf)
		return 0;
	st->buf = ps__park_buf(st->known ? st->k : st->len);
	if (!st->buf)
		return -ENOMEM;
	if (st->known)
		return ps__pipe_read(ps__step_in(st, &in)->fd, st->buf + st->consumed,
				     st->k - st->consumed) == st->k - st->consumed ? 0 : -EIO;
	do
		r = ps__read_once(&x, st->buf, st->len);
	while (r == -EINTR && st->retry);
	if (r < 0)
		return (int)r;
	st->k = (size_t)r;
	st->known = true;
	return 0;
}

/* Which sinks take their share by tee, the last of them by the move of the
 * pages; and which from memory: those with bytes pending before the step's,
 * those splice refuses, all of them when the input is read(2). */
static size_t plan_sinks(struct step *st, struct sink **mover)
{
	struct psplice_tee *t = st->t;
	size_t i, n_tee = 0;
	struct sink *s;

	*mover = NULL;
	for (i = 0; i < t->n; i++) {
		s = &t->sink[i];
		s->from = NO_SHARE;
		s->tee = false;
		if (!ps__sink_live(s))
			continue;
		if (st->mem_only || s->nosplice || ps__held(&s->hold)) {
			s->from = 0;
			st->need_buf = true;
		} else {
			s->tee = true;
			*mover = s;
			n_tee++;
		}
	}
	return n_tee;
}

static int serve(struct step *st)
{
	struct psplice_tee *t = st->t;
	struct sink *s, *mover;
	size_t i, n_tee;
	int err;

	if (!st->mem_only && t->src) {
		err = fill_src(st);
		if (err < 0 || (st->known && !st->k))
			return err;
	}
	n_tee = plan_sinks(st, &mover);
	if (!n_tee) {
		if (st->tp) {
			ps__pipe_put(st->tp, false);
			st->tp = NULL;
		}
	} else if (!st->known && !st->need_buf && n_tee == 1) {
		/* One sink and an input pipe: a pair's step straight
		 * through. */
		return ps__sink_serve_move(st, mover);
	}
	for (i = 0; i < t->n && n_tee; i++) {
		s = &t->sink[i];
		if (!s->tee || (s == mover && !st->need_buf))
			continue;
		if ((err = ps__sink_serve_tee(st, s)) < 0 || !st->k)
			return err;
	}
	if (mover && !st->need_buf && (err = ps__sink_serve_move(st, mover)) < 0)
		return err;
	if (!st->need_buf)
		return 0;
	if ((err = fill_buf(st)) < 0)
		return err;
	for (i = 0; i < t->n; i++) {
		s = &t->sink[i];
		if (s->from < st->k)
			ps__sink_serve_memory(st, s, st->buf + s->from, st->k - s->from);
	}
	return 0;
}

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
		if (ps__sink_live(s) && ps__held(&s->hold))
			ps__sink_deliver(st, s);
		if (ps__sink_live(s) && (held = ps__held(&s->hold)) > most)
			most = held;
	}
	if (!most)
		return true;
	for (i = 0; i < t->n; i++) {
		s = &t->sink[i];
		held = ps__held(&s->hold);
		if (!ps__sink_live(s) || !held)
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
		if (ps__sink_live(&t->sink[i]))
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
		if (ps__sink_live(&t->sink[i]) && ps__held(&t->sink[i].hold))
			fail_step(st, EAGAIN, PSPLICE_SIDE_OUT);
}

/* The step's bytes to every live sink: the internal pipe the input is
 * spliced into and the thread's pipe first, then the step's size, then the
 * serving (serve, by tee_sink.c). */
static void serve_step(struct step *st, bool *took)
{
	struct psplice_tee *t = st->t;
	int err;

	/* The internal pipe first: the thread's pipe is lent after it. */
	if (!t->rw && t->in.kind != PS_K_PIPE && !t->src)
		t->src = get_src(t->flags & PSPLICE_F_NOFALLBACK);
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
		took[i] = ps__sink_live(&t->sink[i]);
	st->side = PSPLICE_SIDE_IN;
	err = serve(st);
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

void ps__tee_step(struct psplice_tee *t, size_t len, unsigned int flags, bool retry,
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
