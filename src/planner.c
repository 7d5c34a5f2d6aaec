/* The planner: for a pair of endpoints, the ordered list of paths, and one
 * step that runs them. Each path says whether it ran, failed or is not for
 * this pair (path.h); the dispatch table says what the planner must
 * know of each; no mechanism has a rule of its own here. */
#include <errno.h>
#include <poll.h>

#include "accounting.h"
#include "call.h"
#include "endpoint.h"
#include "hold.h"
#include "path.h"
#include "psplice.h"

struct ps_path {
	ssize_t (*run)(struct ps_xfer *x);
	bool fatal_after_progress; /* a "not here" errno after the path moved
	                              bytes in the call is the call's error */
	bool sized;                /* needs the input's size of now */
	bool short_raises;         /* into a pipe, may stop short with SIGPIPE
	                              raised */
};

/* copy_file_range's failed call may have written bytes before it failed
 * (EOVERFLOW, NFS's EIO): after progress, its "not here" is an error.
 * splice, sendfile and read/write report what they moved rather than fail
 * after moving it, so a failure of theirs moved nothing and the next path
 * may go on: a tty hung up by its reader, for one, answers splice with
 * EINVAL, and write(2) then tells the real error (EIO) or the end. Clone
 * measures the input as it is when the move begins. sendfile into a pipe
 * is counted among the calls that may have raised SIGPIPE when they stop
 * short, as kernels have looped over chunks there. */
static const struct ps_path paths[] = {
	[PSPLICE_METHOD_CLONE] = { .run = ps__path_clone, .sized = true },
	[PSPLICE_METHOD_COPY_FILE_RANGE] = { .run = ps__path_cfr,
					     .fatal_after_progress = true },
	[PSPLICE_METHOD_SENDFILE] = { .run = ps__path_sendfile, .short_raises = true },
	[PSPLICE_METHOD_SPLICE] = { .run = ps__path_splice },
	[PSPLICE_METHOD_SPLICE_PIPE] = { .run = ps__path_splice_pipe },
	[PSPLICE_METHOD_READWRITE] = { .run = ps__path_readwrite },
	[PS_PATH_TEE] = { .run = ps__path_tee },
};

static const struct ps_path *path_of(int method)
{
	if (method < 0 || method >= (int)(sizeof(paths) / sizeof(paths[0])) ||
	    !paths[method].run)
		return NULL;
	return &paths[method];
}

static void plan_add(struct ps_plan *p, int method)
{
	const struct ps_path *path = path_of(method);

	p->method[p->n++] = method;
	p->sized |= path && path->sized;
	p->short_raises |= path && path->short_raises;
}

/* The ordered paths for this pair of endpoints, fastest first. */
void ps__plan_make(struct ps_plan *p, const struct ps_endpoint *in,
		   const struct ps_endpoint *out, unsigned int flags)
{
	unsigned int only = (flags & PSPLICE_F_ONLY_MASK) >> 12;

	*p = (struct ps_plan){ .n = 0 };
	if (only) {
		plan_add(p, (int)only);
		return;
	}
	if (flags & PSPLICE_F_REFLINK)
		plan_add(p, PSPLICE_METHOD_CLONE);
	if (in->kind == PS_K_PIPE || out->kind == PS_K_PIPE) {
		plan_add(p, PSPLICE_METHOD_SPLICE);
	} else if (in->seekable && out->seekable) {
		plan_add(p, PSPLICE_METHOD_COPY_FILE_RANGE);
		plan_add(p, PSPLICE_METHOD_SENDFILE);
		plan_add(p, PSPLICE_METHOD_SPLICE_PIPE);
	} else if (in->seekable) {
		plan_add(p, PSPLICE_METHOD_SENDFILE);
		plan_add(p, PSPLICE_METHOD_SPLICE_PIPE);
	} else {
		plan_add(p, PSPLICE_METHOD_SPLICE_PIPE);
	}
	plan_add(p, PSPLICE_METHOD_READWRITE);
}

ssize_t ps__path_run(struct ps_xfer *x, int method)
{
	const struct ps_path *path = path_of(method);

	return path ? path->run(x) : ps_not_here(EOPNOTSUPP);
}

static bool lacking(int err)
{
	return err == EMFILE || err == ENFILE || err == ENOMEM;
}

/* No path applied: say why. An fd no move can use comes first: the paths
 * that said "not here" may never have asked the kernel about it. Running
 * out of fds or memory for the internal pipe is worth reporting as such,
 * even when a later path (the user-space copy, forbidden by
 * PSPLICE_F_NOFALLBACK) only said "not here"; otherwise the pair is not
 * supported. */
static void none_applied(struct ps_xfer *x, int lack)
{
	int bad = ps__unusable(x->in, x->out);

	if (bad)
		ps__fail(x, EBADF, bad);
	else
		ps__fail(x, lack ? lack : EOPNOTSUPP, PSPLICE_SIDE_NONE);
}

static bool unready(const struct ps_endpoint *ep, short events)
{
	struct pollfd p = { .fd = ep->fd, .events = events };

	if (ep->seekable || ep->kind == PS_K_PIPE || ps__nonblock(ep))
		return false;
	return poll(&p, 1, 0) == 0;
}

/* Ready means some room, not room for the step: splice(2) and sendfile(2)
 * into a socket left blocking wait for room for all they are given. Such
 * a step is held to the room the socket's buffer has left; false when it
 * has none. A tty or device says nothing of its room: a large write into
 * one may still wait. */
static bool held_to_room(struct ps_xfer *x)
{
	int64_t room;

	if (!ps_is_socket(x->out->kind) || ps__nonblock(x->out))
		return true;
	room = ps__sock_room(x->out);
	if (room == 0)
		return false;
	if (room > 0 && (uint64_t)room < x->len)
		x->len = (size_t)room;
	return true;
}

static bool out_unready(struct ps_xfer *x)
{
	return unready(x->out, POLLOUT) || !held_to_room(x);
}

/* sendfile(2) takes no flags, and SPLICE_F_NONBLOCK does not reach a socket,
 * tty or device on the other side of splice(2): with PSPLICE_F_NONBLOCK such
 * an fd left blocking is polled, with a zero timeout, before any byte moves,
 * and a socket's step held to its room. */
static int nonblock_side(struct ps_xfer *x)
{
	if (!(x->flags & PSPLICE_F_NONBLOCK))
		return PSPLICE_SIDE_NONE;
	if (unready(x->in, POLLIN))
		return PSPLICE_SIDE_IN;
	/* A file at its end has nothing to wait for: the step returns 0. */
	if (out_unready(x) && !ps__input_ended(x))
		return PSPLICE_SIDE_OUT;
	return PSPLICE_SIDE_NONE;
}

/* A pair's pending bytes go first, and alone: only the output counts. */
static void deliver_held_first(struct ps_xfer *x)
{
	if ((x->flags & PSPLICE_F_NONBLOCK) && out_unready(x))
		ps__fail(x, EAGAIN, PSPLICE_SIDE_OUT);
	else
		ps__deliver_held(x);
}

/* What the kernel answers for an fd of a kind the call does not take,
 * before a byte moves. */
static bool doubtful(const struct ps_xfer *x, ssize_t r)
{
	if (ps_is_not_here(r))
		return true;
	if (r >= 0)
		return false;
	switch (x->res->error) {
	case EINVAL: case EBADF: case ESPIPE: case EISDIR: case EXDEV:
	case EOPNOTSUPP: case ENOSYS: case EPERM: case EOVERFLOW: case ETXTBSY:
		return true;
	}
	return false;
}

/* A one-shot call's sides taken from the thread's memory of its fds are
 * borne out by the first path's answer: the kernel took them as the kinds
 * that path takes (oneshot.c picks only such sides). Any other answer may
 * come from an fd closed and opened again as another kind: nothing moved,
 * and the call begins again on the fds as they are now. */
static bool borne_out(struct ps_xfer *x, ssize_t r)
{
	if (!x->unsure)
		return true;
	if (doubtful(x, r)) {
		x->stale = true;
		return false;
	}
	x->unsure = 0;
	return true;
}

/* Run the paths from pos->at on; pos->at moves past those that were not
 * here. A path that said "not here" with an errno after it moved bytes in
 * this call fails the call where the table says so. A 0 where the file
 * seemed to have more (PS_WHY_ZERO), from a path that has moved bytes of
 * this file in this call, is no /proc file's 0: it is the end the path
 * found, the file cut and written again since, as read(2) would have
 * reported it. A later path may read on; if none does, the step ends
 * there, with what the call moved. */
static void run_plan(struct ps_xfer *x, const struct ps_plan *p, struct ps_plan_pos *pos)
{
	uint64_t before = x->res->out_bytes;
	bool ended = false;
	int why, lack = 0;
	ssize_t r;

	for (; pos->at < p->n; pos->at++) {
		r = ps__path_run(x, p->method[pos->at]);
		if (!borne_out(x, r))
			return;
		if (!ps_is_not_here(r)) {
			if (x->res->out_bytes > before)
				pos->progress[pos->at] = true;
			return;
		}
		why = ps_why_not_here(r);
		if (pos->progress[pos->at] && why > 0 &&
		    path_of(p->method[pos->at])->fatal_after_progress) {
			ps__fail(x, why, ps__side_of(x, why));
			return;
		}
		ended |= pos->progress[pos->at] && why == PS_WHY_ZERO;
		if (lacking(why))
			lack = why;
	}
	if (!ended)
		none_applied(x, lack);
}

/* One step: a pair's pending bytes, or the plan's paths, after a poll that
 * PSPLICE_F_NONBLOCK may ask for. */
void ps__plan_step(struct ps_xfer *x, const struct ps_plan *p, struct ps_plan_pos *pos)
{
	int side;

	if (x->hold && ps__held(x->hold)) {
		deliver_held_first(x);
		return;
	}
	side = nonblock_side(x);
	/* Whether a side may wait, or a file input is at its end, is the
	 * kinds' to say: a recalled one is not borne out by a poll. */
	if (side != PSPLICE_SIDE_NONE && x->unsure)
		x->stale = true;
	else if (side != PSPLICE_SIDE_NONE)
		ps__fail(x, EAGAIN, side);
	else
		run_plan(x, p, pos);
}
