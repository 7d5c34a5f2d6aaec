/* A tee's step, sink by sink. Each sink is the output of a pair whose
 * input is a pipe: its bytes go out by the planner's step on its own plan
 * (planner.c), the pending ones first, as a pair's do. tee(2) duplicates
 * the step's pipe into the thread's pipe for each sink but the last, which
 * the sink keeps as its pending bytes when it cannot take them now (within
 * the pool's budget of pipes, else they are read into memory); the last
 * sink takes the pages themselves. What a sink cannot take stays pending
 * in its struct ps_hold; a sink splice refuses, or one with bytes pending
 * before the step's, gets the step's bytes from one copy in memory. */
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
#include "tee_sink.h"

bool ps__sink_live(const struct sink *s)
{
	return !s->error;
}

static struct ps_xfer sink_x(const struct step *st, struct sink *s, size_t len)
{
	return (struct ps_xfer){ .in = &st->t->in, .out = &s->ep, .len = len,
				 .flags = st->flags, .retry_eintr = st->retry,
				 .res = s->res, .hold = &s->hold };
}

struct ps_xfer ps__step_input_x(const struct step *st)
{
	return (struct ps_xfer){ .in = &st->t->in, .out = &st->t->sink[0].ep,
				 .flags = st->flags, .res = st->last };
}

/* The pipe that holds the step's bytes: the caller's input, or the
 * internal pipe it was spliced into. */
const struct ps_endpoint *ps__step_in(const struct step *st, struct ps_endpoint *tmp)
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
ssize_t ps__step_run_path(struct ps_xfer *x, int method, int *side)
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
void ps__sink_deliver(const struct step *st, struct sink *s)
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
void ps__sink_serve_memory(const struct step *st, struct sink *s,
			   const unsigned char *b, size_t n)
{
	struct ps_xfer x = sink_x(st, s, n);
	size_t done = 0;

	if (ps__sink_live(s) && !ps__held(&s->hold) && !s->res->error) {
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
	ps__sink_deliver(st, s);
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
		ps__sink_deliver(st, s);
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
	ps__sink_deliver(st, s);
}

/* Tee the step's bytes to sink s through the thread's pipe. The first tee
 * out of an input pipe takes what is there and so says how many bytes the
 * step has. A short one (the input pipe has more slots than ours) leaves
 * the rest of the share to memory. */
int ps__sink_serve_tee(struct step *st, struct sink *s)
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
	x = (struct ps_xfer){ .in = ps__step_in(st, &in), .out = &out,
			      .len = st->known ? st->k : st->len,
			      .flags = st->known ? PSPLICE_F_NONBLOCK :
						   st->flags & PSPLICE_F_NONBLOCK,
			      .retry_eintr = st->retry || st->known };
	r = ps__step_run_path(&x, PS_PATH_TEE, &side);
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
	x = (struct ps_xfer){ .in = ps__step_in(st, &in), .out = &out, .len = rest,
			      .flags = PSPLICE_F_NONBLOCK, .retry_eintr = true };
	r = ps__step_run_path(&x, PSPLICE_METHOD_SPLICE, &side);
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
int ps__sink_serve_move(struct step *st, struct sink *s)
{
	size_t taken = 0, want = st->known ? st->k : st->len;
	struct psplice_result r;
	struct ps_endpoint tmp;
	const struct ps_endpoint *in = ps__step_in(st, &tmp);
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
		ps__sink_deliver(st, s);
	return 0;
}
