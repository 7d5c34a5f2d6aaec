/* Fan-out: one input to n sinks. tee(2) duplicates the pages of a pipe into
 * another without consuming them: each step gets the input's bytes into a
 * pipe (the input itself when it is one, else an internal pipe it is
 * spliced into), tees them into the thread's pipe for each sink in turn and
 * splices them out of it, and moves the pages themselves to the last sink.
 * Each sink is the output of a pair whose input is a pipe: its bytes go
 * out by the planner's step on its own plan (planner.c), the pending ones
 * first, as a pair's do. What it cannot take now stays pending in its
 * struct ps_hold (the pipe it went through, kept from the pool's budget, or
 * memory); a sink splice refuses, or one with bytes pending before the
 * step's, gets the step's bytes from one copy in memory.
 * The step itself (ps__tee_step, at the end) delivers each sink's pending
 * bytes first, sizes the step within hold_max, serves it, and ends the
 * input only once every sink has had every byte. */
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

#define NO_SHARE SIZE_MAX
/* A step's most without a pipe to size it by. */
#define TEE_RW_STEP ((size_t)256 << 10)

/* One step's state. */
struct step {
	struct psplice_tee *t;
	unsigned int flags;    /* planning and per-call flags */
	bool retry;            /* a copy: retry EINTR */
	int fd;                /* the pipe that holds the step's bytes */
	size_t len;            /* the most to take */
	size_t k;              /* taken */
	bool known;            /* k is known: the bytes are in fd (or buf) */
	size_t consumed;       /* of them, moved out of fd already */
	bool need_buf;         /* some sink gets its share from memory */
	bool mem_only;         /* every sink does: the input is read(2) */
	int side;              /* of the step's error: who would block */
	unsigned char *buf;    /* the step's bytes, once read */
	struct ps_pipe *tp;    /* the thread's pipe, lent for a sink's tee */
	struct psplice_result *last;
};

static bool live(const struct sink *s)
{
	return !s->error;
}

static struct ps_xfer sink_x(const struct step *st, struct sink *s, size_t len)
{
	return (struct ps_xfer){ .in = &st->t->in, .out = &s->ep, .len = len,
				 .flags = st->flags, .retry_eintr = st->retry,
				 .res = s->res, .hold = &s->hold };
}

static struct ps_xfer input_x(const struct step *st)
{
	return (struct ps_xfer){ .in = &st->t->in, .out = &st->t->sink[0].ep,
				 .flags = st->flags, .res = st->last };
}

/* The pipe that holds the step's bytes: the caller's input, or the
 * internal pipe it was spliced into. */
static const struct ps_endpoint *step_in(const struct step *st, struct ps_endpoint *tmp)
{
	if (st->fd == st->t->in.fd)
		return &st->t->in;
	*tmp = ps_pipe_end(st->fd, O_RDONLY | O_NONBLOCK);
	return tmp;
}

/* One path of the dispatch table between the step's pipes and a sink,
 * with a result of its own: the step counts for the sinks itself. Returns
 * what the path moved, or -errno ("not here" as the errno that said it,
 * EINVAL when none did, as for a 0 from a file that has more); *side is
 * the side its error was put on. */
static ssize_t run_path(struct ps_xfer *x, int method, int *side)
{
	struct psplice_result r = { 0 };
	ssize_t n;
	int why;

	x->res = &r;
	n = ps__path_run(x, method);
	*side = r.side;
	if (!ps_is_not_here(n))
		return n;
	why = ps_why_not_here(n);
	return why > 0 ? -why : -EINVAL;
}

/* A sink whose move failed for good is out; EAGAIN and EINTR leave it in,
 * with its bytes pending. */
static void settle(struct sink *s)
{
	int err = s->res->error;

	if (err && err != EAGAIN && err != EINTR)
		s->error = err;
}

/* Without PSPLICE_F_NONBLOCK, wait until sink s takes bytes. The pool's
 * pipes have a non-blocking read end (draining one never waits), and
 * splice(2) from one into a pipe says EAGAIN rather than wait. */
static bool wait_out(const struct step *st, struct sink *s)
{
	if ((st->flags & PSPLICE_F_NONBLOCK) || ps__wait_out(&s->ep, st->retry) < 0)
		return false;
	*s->res = (struct psplice_result){ .in_bytes = s->res->in_bytes,
					   .out_bytes = s->res->out_bytes,
					   .method = s->res->method };
	return true;
}

/* Sink s as the output of a pair whose input is the pipe `in`: one step
 * of its plan, its pending bytes first, into r (r->in_bytes: what the step
 * took from in). The plan moves past its splice only when splice refused
 * the sink (a pipe gives no 0 that is not its end): the sink is served by
 * write(2) from then on. */
static void sink_step(const struct step *st, struct sink *s, const struct ps_endpoint *in,
		      size_t len, struct psplice_result *r)
{
	struct ps_xfer x = { .in = in, .out = &s->ep, .len = len, .flags = st->flags,
			     .retry_eintr = st->retry, .res = r, .hold = &s->hold };
	struct ps_plan_pos pos = { .at = 0 };

	*r = (struct psplice_result){ 0 };
	ps__plan_step(&x, &s->plan, &pos);
	if (pos.at)
		s->nosplice = true;
}

/* What a step of sink s delivered, and its failure, which is the sink's
 * whatever side the path saw (its input is the tee's own pipe): what the
 * sink took is the step's to count. */
static void sink_add(struct sink *s, const struct psplice_result *r)
{
	s->res->out_bytes += r->out_bytes;
	if (r->out_bytes)
		s->res->method = r->method;
	if (r->error && !s->res->error) {
		s->res->error = r->error;
		s->res->side = PSPLICE_SIDE_OUT;
	}
}

/* Deliver what sink s holds: all of it, or until it would block or fails. */
static void deliver(const struct step *st, struct sink *s)
{
	struct psplice_result r;
	size_t held;

	while ((held = ps__held(&s->hold)) && !s->res->error) {
		sink_step(st, s, &st->t->in, held, &r);
		sink_add(s, &r);
		if (r.error == EAGAIN && wait_out(st, s))
			continue;
		if (ps__held(&s->hold) == held && !s->res->error)
			break;
	}
	settle(s);
}

/* n bytes of sink s's share, in memory: written now when nothing is
 * pending before them (by the write the read/write path makes), the rest
 * held. A sink that failed in this step keeps its share pending: nothing
 * taken is dropped. */
static void serve_memory(const struct step *st, struct sink *s,
			 const unsigned char *b, size_t n)
{
	struct ps_xfer x = sink_x(st, s, n);
	size_t done = 0;

	if (live(s) && !ps__held(&s->hold) && !s->res->error) {
		done = ps__write_all(&x, b, n);
		if (done)
			s->res->method = PSPLICE_METHOD_READWRITE;
	}
	if (done < n && ps__hold_bytes(&s->hold, b + done, n - done) < 0)
		ps__fail(&x, ENOMEM, PSPLICE_SIDE_NONE);
	/* Without NONBLOCK the move returns once every sink has its share:
	 * an O_NONBLOCK sink that had no room is waited for. */
	if (s->res->error == EAGAIN && !wait_out(st, s)) {
		settle(s);
		return;
	}
	deliver(st, s);
}

/* The thread's pipe holds n bytes for sink s: the sink keeps it (within
 * the pool's budget) and delivers from it, and the thread makes or reuses
 * another for the next sink. Past the budget the bytes go to memory. */
static void serve_pipe(struct step *st, struct sink *s, size_t n)
{
	struct ps_pipe *kp = ps__pipe_keep(st->tp, st->flags & PSPLICE_F_NOFALLBACK);
	struct ps_xfer x = sink_x(st, s, n);
	size_t size, got, c;
	unsigned char *b;
	int err = 0;

	if (kp) {
		st->tp = NULL;
		s->hold.pipe = kp;
		s->hold.in_pipe = n;
		deliver(st, s);
		return;
	}
	b = ps__buf(&size);
	if (!b)
		err = -ENOMEM;
	for (got = 0; got < n && !err; got += c) {
		c = size < n - got ? size : n - got;
		err = ps__pipe_read(st->tp->r, b, c) == c ? 0 : -EIO;
		if (!err)
			err = ps__hold_bytes(&s->hold, b, c);
	}
	if (err) {
		ps__fail(&x, err == -ENOMEM ? ENOMEM : EIO, PSPLICE_SIDE_NONE);
		ps__pipe_put(st->tp, true);
		st->tp = NULL;
		settle(s);
		return;
	}
	deliver(st, s);
}

/* Tee the step's bytes to sink s through the thread's pipe. The first tee
 * out of an input pipe takes what is there and so says how many bytes the
 * step has. A short one (the input pipe has more slots than ours) leaves
 * the rest of the share to memory. */
static int serve_tee(struct step *st, struct sink *s)
{
	struct ps_endpoint in, out;
	struct ps_xfer x;
	int err, side;
	ssize_t r;

	/* No pipe for this sink (out of fds): once earlier sinks have their
	 * share, the step's bytes are taken, and this sink gets its share
	 * from memory; a later step must not tee them again. */
	if (!st->tp && (err = ps__pipe_get(&st->tp)) < 0) {
		st->tp = NULL;
		if (!st->known)
			return err;
		s->from = 0;
		st->need_buf = true;
		return 0;
	}
	/* Once the step's size is known the bytes are there: never wait. */
	out = ps_pipe_end(st->tp->w, O_WRONLY);
	x = (struct ps_xfer){ .in = step_in(st, &in), .out = &out,
			      .len = st->known ? st->k : st->len,
			      .flags = st->known ? PSPLICE_F_NONBLOCK :
						   st->flags & PSPLICE_F_NONBLOCK,
			      .retry_eintr = st->retry || st->known };
	r = run_path(&x, PS_PATH_TEE, &side);
	if (!st->known) {
		if (r < 0)
			return (int)r;
		st->k = (size_t)r;
		st->known = true;
		if (!r)
			return 0;
	}
	if (r < 0)
		r = 0;
	if ((size_t)r < st->k) {
		s->from = (size_t)r;
		st->need_buf = true;
	}
	if (r) {
		s->res->method = PSPLICE_METHOD_SPLICE_PIPE;
		serve_pipe(st, s, (size_t)r);
	}
	return 0;
}

/* Out of the caller's pipe, the last sink's rest moves on into the
 * thread's pipe, which serve_pipe makes its pending bytes: the pages, not
 * a copy into memory that a NOFALLBACK tee could not write(2). The bytes
 * are there: nothing waits. Returns how many moved. */
static size_t rest_to_pipe(struct step *st, struct sink *s, size_t rest)
{
	struct ps_endpoint in, out;
	struct ps_xfer x;
	ssize_t r;
	int side;

	if (!st->tp && ps__pipe_get(&st->tp) < 0) {
		st->tp = NULL;
		return 0;
	}
	out = ps_pipe_end(st->tp->w, O_WRONLY);
	x = (struct ps_xfer){ .in = step_in(st, &in), .out = &out, .len = rest,
			      .flags = PSPLICE_F_NONBLOCK, .retry_eintr = true };
	r = run_path(&x, PSPLICE_METHOD_SPLICE, &side);
	if (r <= 0)
		return 0;
	serve_pipe(st, s, (size_t)r);
	return (size_t)r;
}

/* What the last sink did not take of the step's bytes, taken for it all
 * the same (a sink that failed keeps them too): pending in the internal
 * pipe, which becomes its own, or in a pipe of the pool, or its share from
 * memory, after any bytes its step already holds there. */
static void leave_rest(struct step *st, struct sink *s, size_t taken)
{
	st->consumed = taken;
	if (!st->known || taken == st->k)
		return;
	if (st->t->src && !s->nosplice && !ps__held(&s->hold)) {
		s->hold.pipe = st->t->src;
		s->hold.in_pipe = st->k - taken;
		st->t->src = NULL;
		st->consumed = st->k;
		return;
	}
	if (!st->t->src && !s->nosplice && !ps__held(&s->hold))
		st->consumed = taken += rest_to_pipe(st, s, st->k - taken);
	if (taken == st->k)
		return;
	s->from = taken;
	st->need_buf = true;
}

/* Before the step's size is known (one sink, an input pipe), its first
 * step says it: what it took. An error before it took a byte is the
 * step's when the input caused it or it would block (returned, -errno);
 * else the sink failed alone (EPIPE, or ENOMEM or EOPNOTSUPP with no side
 * from the planner), and the step's size stays unknown. */
static int first_move(struct step *st, struct sink *s, const struct psplice_result *r)
{
	if (r->error && !r->in_bytes) {
		if (r->side == PSPLICE_SIDE_IN || r->error == EAGAIN || r->error == EINTR) {
			st->side = r->side;
			if (st->side == PSPLICE_SIDE_OUT)
				sink_add(s, r);
			return -r->error;
		}
		sink_add(s, r);
		return 1;
	}
	st->k = (size_t)r->in_bytes;
	st->known = true;
	return 0;
}

/* The last sink takes the pages themselves, out of the step's pipe, by
 * the steps of its plan (a splice, or read/write when splice is not for
 * it). What it does not take is its pending (leave_rest). When the step's
 * size is not known yet (one sink), the first step takes what the input
 * has. */
static int serve_move(struct step *st, struct sink *s)
{
	size_t taken = 0, want = st->known ? st->k : st->len;
	struct psplice_result r;
	struct ps_endpoint tmp;
	const struct ps_endpoint *in = step_in(st, &tmp);
	int err;

	while (taken < want) {
		sink_step(st, s, in, want - taken, &r);
		/* A blocking move waits for a sink that has no room, the
		 * step's size known or not. */
		if (!st->known && !r.in_bytes && r.error == EAGAIN &&
		    r.side == PSPLICE_SIDE_OUT && wait_out(st, s))
			continue;
		if (!st->known) {
			if ((err = first_move(st, s, &r)) < 0)
				return err;
			if (err || !(want = st->k))
				break;
		}
		taken += (size_t)r.in_bytes;
		sink_add(s, &r);
		/* Out of the internal pipe, the pages went through it. */
		if (r.out_bytes && r.method == PSPLICE_METHOD_SPLICE && st->t->src)
			s->res->method = PSPLICE_METHOD_SPLICE_PIPE;
		if (r.error == EAGAIN && wait_out(st, s))
			continue;
		if (r.error || (!r.in_bytes && !r.out_bytes))
			break;
	}
	settle(s);
	leave_rest(st, s, taken);
	/* What its read/write step held back goes out before a blocking move
	 * returns. */
	if (!(st->flags & PSPLICE_F_NONBLOCK) && ps__held(&s->hold))
		deliver(st, s);
	return 0;
}

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

	r = run_path(&x, PSPLICE_METHOD_SPLICE, &side);
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
	struct ps_xfer x = input_x(st);
	struct ps_endpoint in;
	ssize_t r;

	if (st->buf)
		return 0;
	st->buf = ps__park_buf(st->known ? st->k : st->len);
	if (!st->buf)
		return -ENOMEM;
	if (st->known)
		return ps__pipe_read(step_in(st, &in)->fd, st->buf + st->consumed,
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
		if (!live(s))
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
		return serve_move(st, mover);
	}
	for (i = 0; i < t->n && n_tee; i++) {
		s = &t->sink[i];
		if (!s->tee || (s == mover && !st->need_buf))
			continue;
		if ((err = serve_tee(st, s)) < 0 || !st->k)
			return err;
	}
	if (mover && !st->need_buf && (err = serve_move(st, mover)) < 0)
		return err;
	if (!st->need_buf)
		return 0;
	if ((err = fill_buf(st)) < 0)
		return err;
	for (i = 0; i < t->n; i++) {
		s = &t->sink[i];
		if (s->from < st->k)
			serve_memory(st, s, st->buf + s->from, st->k - s->from);
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
		if (live(s) && ps__held(&s->hold))
			deliver(st, s);
		if (live(s) && (held = ps__held(&s->hold)) > most)
			most = held;
	}
	if (!most)
		return true;
	for (i = 0; i < t->n; i++) {
		s = &t->sink[i];
		held = ps__held(&s->hold);
		if (!live(s) || !held)
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
		if (live(&t->sink[i]))
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
		if (live(&t->sink[i]) && ps__held(&t->sink[i].hold))
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
		took[i] = live(&t->sink[i]);
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
