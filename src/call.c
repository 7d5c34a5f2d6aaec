/* One call on a pair of fds: check the arguments, classify both fds and
 * plan (planner.c), then one step or a copy to the end, with SIGPIPE
 * guarded and the result published. A prepared pair (pair.c) keeps the
 * classification and the plan for many calls; psplice_ex and psplice_copy
 * (oneshot.c) make one on the stack for a single call, so every entry
 * point goes through the same code. */
#include <errno.h>
#include <string.h>

#include "accounting.h"
#include "call.h"
#include "endpoint.h"
#include "pipepool.h"
#include "psplice.h"
#include "sigpipe.h"
#include "sys.h"

/* One call's state. */
struct ps_call {
	struct ps_endpoint in;     /* a sized pair's input, with its size of now */
	struct ps_xfer x;
	const struct ps_plan *plan;
	struct ps_plan_pos pos;
	uint64_t want;             /* the bytes asked for: a move that stops
	                              short may have raised SIGPIPE */
	bool short_raises;         /* it may, into this output */
	int64_t pos_in, pos_out;   /* a copy to end of input: the file
	                              positions it began at, or -1 */
	struct ps_sigguard sg;
	bool guard;                /* block SIGPIPE around the call */
};

int ps__fail_early(struct psplice_result *res, int err, int side)
{
	res->error = err;
	res->side = side;
	return -1;
}

/* The one check of flags for every entry point: known holds the flags
 * the call takes. The caller's promise that SIGPIPE is ignored is checked
 * where it is made (a pair or tee is prepared, a one-shot call begins):
 * moves then trust it. */
int ps__check_flags(unsigned int flags, unsigned int known, struct psplice_result *res)
{
	if ((flags & ~known) ||
	    ((flags & PSPLICE_F_ONLY_MASK) >> 12) > PSPLICE_METHOD_READWRITE ||
	    ((flags & PSPLICE_F_SIGPIPE_IGNORED) && !ps__sigpipe_ignored()))
		return ps__fail_early(res, EINVAL, PSPLICE_SIDE_NONE);
	return 0;
}

/* A move or copy on a prepared pair or tee (obj): it exists, and its flags
 * are those of a move. */
int ps__check_enter(const void *obj, unsigned int flags, unsigned int known,
		    struct psplice_result *res)
{
	if (!obj)
		return ps__fail_early(res, EINVAL, PSPLICE_SIDE_NONE);
	return ps__check_flags(flags, known, res);
}

static int check_offset(const struct ps_endpoint *ep, const int64_t *off,
			uint64_t len)
{
	if (!off)
		return 0;
	if (!ep->seekable)
		return ESPIPE;
	if (*off < 0)
		return EINVAL;
	if (len != PSPLICE_TO_EOF && len > (uint64_t)(INT64_MAX - *off))
		return EINVAL;
	return 0;
}

static bool same_file(const struct ps_call *c)
{
	const struct ps_endpoint *in = c->x.in, *out = c->x.out;

	return in->kind == PS_K_FILE && out->kind == PS_K_FILE &&
	       in->dev == out->dev && in->ino == out->ino;
}

/* Copying a file onto an overlapping range of itself would read bytes it
 * has just written: refuse it as copy_file_range(2) does. */
static bool overlaps(const struct ps_call *c, uint64_t len)
{
	int64_t si, so, size = c->x.in->size;
	uint64_t n;

	if (!same_file(c))
		return false;
	si = c->x.off_in ? *c->x.off_in : ps_lseek(c->x.in->fd, 0, SEEK_CUR);
	so = c->x.off_out ? *c->x.off_out : ps_lseek(c->x.out->fd, 0, SEEK_CUR);
	if (si < 0 || so < 0 || si >= size)
		return false;
	n = (uint64_t)(size - si);
	if (len < n)
		n = len;
	/* O_APPEND writes where the input ends, whatever the position says:
	 * reading up to that end is `cat f >> f`, refused as cat refuses it. */
	if (ps__append(c->x.out))
		return (uint64_t)si + n >= (uint64_t)size;
	return (uint64_t)si < (uint64_t)so + n && (uint64_t)so < (uint64_t)si + n;
}

/* A loop copying a file onto its own end would read back the bytes it has
 * just written and never reach end of file: for a file copied into itself,
 * the input ends where it ended when the call began. */
static uint64_t self_copy_len(const struct ps_call *c, uint64_t len)
{
	int64_t si, size = c->x.in->size;

	if (!same_file(c))
		return len;
	si = c->x.off_in ? *c->x.off_in : ps_lseek(c->x.in->fd, 0, SEEK_CUR);
	if (si < 0 || si >= size || len <= (uint64_t)(size - si))
		return len;
	return (uint64_t)(size - si);
}

/* A call refused for another reason than a bad fd still names a bad fd
 * first: the flags that tell one are asked only now (ps__unusable). */
static int refuse_call(const struct psplice_pair *p, struct psplice_result *res, int err,
		       int side)
{
	int bad = ps__unusable(&p->in, &p->out);

	return bad ? ps__fail_early(res, EBADF, bad) : ps__fail_early(res, err, side);
}

/* Everything that needs only the two fds: classify them and plan. flags
 * holds the planning flags alone. An fd not open for its direction, or
 * O_PATH, is refused by the kernel before a byte moves, and attributed
 * then (ps__fail); it is looked for here only to name it first. */
int ps__pair_init(struct psplice_pair *p, int fd_in, int fd_out, unsigned int flags,
		  struct psplice_result *res)
{
	if (ps__classify(fd_in, &p->in) < 0)
		return ps__fail_early(res, EBADF, PSPLICE_SIDE_IN);
	if (ps__classify(fd_out, &p->out) < 0)
		return ps__fail_early(res, EBADF, ps__readable(&p->in) ? PSPLICE_SIDE_OUT :
									  PSPLICE_SIDE_IN);
	if (p->in.kind == PS_K_DIR)
		return refuse_call(p, res, EISDIR, PSPLICE_SIDE_IN);
	ps__pair_plan(p, flags);
	return 0;
}

/* The plan and the SIGPIPE policy for two classified fds; flags holds the
 * planning flags alone. */
void ps__pair_plan(struct psplice_pair *p, unsigned int flags)
{
	p->flags = flags;
	ps__plan_make(&p->plan, &p->in, &p->out, flags);
	ps__sigpipe_policy(&p->sig, ps__raises_sigpipe(&p->out), flags);
	p->short_raises = ps_is_socket(p->out.kind) ||
			  (p->out.kind == PS_K_PIPE && (p->in.kind == PS_K_PIPE ||
							p->plan.short_raises));
	p->sized = false; /* the sizes were just read */
	p->holds = false;  /* a one-shot call parks */
	p->unsure = 0;
}

/* The offsets and the length of this call: refused before a byte moves. */
static int check_call(const struct psplice_pair *p, const int64_t *off_in,
		      const int64_t *off_out, uint64_t len, struct psplice_result *res)
{
	int err;

	if ((err = check_offset(&p->in, off_in, len)))
		return refuse_call(p, res, err, PSPLICE_SIDE_IN);
	if ((err = check_offset(&p->out, off_out, len)))
		return refuse_call(p, res, err, PSPLICE_SIDE_OUT);
	/* pwrite(2) on an O_APPEND file appends whatever the offset says. An
	 * output a one-shot call recalled is a file that the first path's
	 * call refuses itself when it is O_APPEND (oneshot.c). */
	if (off_out && !(p->unsure & PS_UNSURE_OUT) && ps__append(&p->out))
		return refuse_call(p, res, EINVAL, PSPLICE_SIDE_OUT);
	/* No syscall will refuse a bad fd: a zero length does not excuse it. */
	if (!len && (err = ps__unusable(&p->in, &p->out)))
		return ps__fail_early(res, EBADF, err);
	return 0;
}

/* Set up a call on a classified pair, or refuse it before a byte moves
 * (-1). flags holds the per-call flags alone. A refusal on sides recalled,
 * not asked, may be the old fds': 1, the call must begin again. */
static int call_begin(struct ps_call *c, struct psplice_pair *p, int64_t *off_in,
		      int64_t *off_out, uint64_t len, unsigned int flags,
		      struct psplice_result *res)
{
	const struct ps_endpoint *in = &p->in;

	if (check_call(p, off_in, off_out, len, res) < 0) {
		if (!p->unsure)
			return -1;
		*res = (struct psplice_result){ 0 };
		return 1;
	}
	if (p->sized) {
		/* The overlap refusal and clone measure the input as it is
		 * now: `cat f >> f` is refused after f has grown too. */
		c->in = p->in;
		c->in.size = ps__size_now(c->in.fd, c->in.kind);
		if (c->in.size < 0)
			return refuse_call(p, res, (int)-c->in.size, PSPLICE_SIDE_IN);
		in = &c->in;
	}
	c->x = (struct ps_xfer){ .in = in, .out = &p->out, .off_in = off_in,
				 .off_out = off_out, .flags = p->flags | flags,
				 .res = res, .hold = p->holds ? &p->hold : NULL,
				 .unsure = p->unsure };
	c->plan = &p->plan;
	c->pos = (struct ps_plan_pos){ .at = 0 };
	c->want = len;
	c->short_raises = p->short_raises;
	c->guard = p->sig.guard;
	if (overlaps(c, len))
		return refuse_call(p, res, EINVAL, PSPLICE_SIDE_NONE);
	return 0;
}

static void guard_sigpipe(struct ps_call *c)
{
	ps__sigpipe_block(&c->sg, c->guard);
}

/* A call that failed may have raised SIGPIPE, and so may one that stopped
 * short into a socket: sendfile and splice return the bytes they moved
 * before the peer left, with the signal already sent. Into a pipe the
 * kernel checks for readers under the pipe's lock and raises it only when
 * it moved nothing; pipe to pipe and sendfile into a pipe are counted in
 * anyway, as kernels have looped over chunks there. */
static void unguard_sigpipe(struct ps_call *c, const struct psplice_pair *p)
{
	struct psplice_result *r = c->x.res;
	bool raised;

	if (c->sg.on)
		raised = r->error || c->x.raised || (c->short_raises && r->out_bytes < c->want);
	else
		raised = r->error == EPIPE || c->x.raised;
	ps__sigpipe_end(&c->sg, &p->sig, raised);
}

void ps__publish(const struct psplice_result *r, struct psplice_result *res)
{
	struct psplice_result *last = ps__last();

	if (r != last)
		*last = *r;
	if (res && res != last)
		*res = *r;
}

/* A call refused before it began: published, errno set, -1. */
int ps__reject(int err, int side)
{
	struct psplice_result r = { 0 };

	ps__fail_early(&r, err, side);
	return ps__copy_return(&r, NULL);
}

/* psplice_ex's return value, from the published result. */
ssize_t ps__step_return(const struct psplice_result *r, struct psplice_result *res)
{
	ps__publish(r, res);
	if (r->out_bytes && !r->parked_len)
		return (ssize_t)r->out_bytes;
	if (r->error) {
		errno = r->error;
		return -1;
	}
	return 0;
}

int ps__copy_return(const struct psplice_result *r, struct psplice_result *res)
{
	ps__publish(r, res);
	if (r->error) {
		errno = r->error;
		return -1;
	}
	return 0;
}

/* A step whose recalled sides the first path did not bear out moved
 * nothing and raised no SIGPIPE: its result is cleared for the call to
 * begin again. */
static bool stale(struct ps_call *c, const struct psplice_pair *p)
{
	if (!c->x.stale)
		return false;
	*c->x.res = (struct psplice_result){ 0 };
	ps__sigpipe_end(&c->sg, &p->sig, false);
	return true;
}

/* One step on a classified pair: the body of psplice_ex and of
 * psplice_pair_move. flags holds the per-call flags alone. true: the
 * pair's recalled sides were not borne out, nothing moved (oneshot.c). */
bool ps__call_step(struct psplice_pair *p, int64_t *off_in, int64_t *off_out,
		   size_t len, unsigned int flags, struct psplice_result *r)
{
	struct ps_call c;
	int b = call_begin(&c, p, off_in, off_out, len, flags, r);

	if (b || !len)
		return b > 0;
	c.x.len = len;
	guard_sigpipe(&c);
	ps__plan_step(&c.x, c.plan, &c.pos);
	if (stale(&c, p))
		return true;
	unguard_sigpipe(&c, p);
	return false;
}

/* What the next step of a copy may move: what is left of len, and no byte
 * at or past INT64_MAX on a positional side. Only PSPLICE_TO_EOF gets that
 * far (a length is checked against the offsets before the copy). 0 with
 * *end set: the input has nothing more there; 0 without it: the output can
 * take nothing more. */
static uint64_t copy_room(const struct ps_call *c, uint64_t left, bool *end)
{
	int64_t oi = c->x.off_in ? *c->x.off_in : c->pos_in;
	int64_t oo = c->x.off_out ? *c->x.off_out : c->pos_out;
	uint64_t done = c->x.res->out_bytes;

	*end = false;
	/* A file position moved by the bytes delivered so far (a seekable
	 * input gives back what it took and did not deliver). */
	if (!c->x.off_in && oi >= 0)
		oi += (int64_t)done;
	if (!c->x.off_out && oo >= 0)
		oo += (int64_t)done;
	if (oi >= 0 && left > (uint64_t)(INT64_MAX - oi))
		left = (uint64_t)(INT64_MAX - oi);
	if (!left) {
		*end = true;
		return 0;
	}
	if (oo >= 0 && left > (uint64_t)(INT64_MAX - oo))
		left = (uint64_t)(INT64_MAX - oo);
	/* An output at the limit stops the copy only if the input has more. */
	if (!left && ps__input_ended(&c->x))
		*end = true;
	return left;
}

/* Only a copy to end of input can reach INT64_MAX (a length is checked
 * against the offsets): it measures the file positions once. */
static void copy_positions(struct ps_call *c, const struct psplice_pair *p, uint64_t len)
{
	c->pos_in = c->pos_out = -1;
	if (len == PSPLICE_TO_EOF && !c->x.off_in && p->in.seekable)
		c->pos_in = ps_lseek(p->in.fd, 0, SEEK_CUR);
	if (len == PSPLICE_TO_EOF && !c->x.off_out && p->out.seekable &&
	    !ps__append(&p->out))
		c->pos_out = ps_lseek(p->out.fd, 0, SEEK_CUR);
}

/* A read interrupted before it took anything, or a pair's move that keeps
 * what it took: the copy tries again, unless the caller asked for EINTR. */
static bool retry_eintr(const struct ps_call *c, struct psplice_result *r)
{
	if (r->error != EINTR || !c->x.retry_eintr ||
	    !(c->x.hold || (!r->parked_len && r->in_bytes == r->out_bytes)))
		return false;
	r->error = 0;
	r->side = PSPLICE_SIDE_NONE;
	return true;
}

/* psplice_copy's loop on a classified pair. flags holds the per-call flags
 * alone. true as for ps__call_step; only the first step can say so. */
bool ps__call_copy(struct psplice_pair *p, int64_t *off_in, int64_t *off_out,
		   uint64_t len, unsigned int flags, struct psplice_result *r)
{
	uint64_t before, room;
	struct ps_call c;
	bool end;
	int b = call_begin(&c, p, off_in, off_out, len, flags, r);

	if (b)
		return b > 0;
	len = self_copy_len(&c, len);
	copy_positions(&c, p, len);
	/* With PSPLICE_F_EINTR the steps give up on EINTR as a single step
	 * does, parking or holding what they took. */
	c.x.retry_eintr = !(flags & PSPLICE_F_EINTR);
	guard_sigpipe(&c);
	while (r->out_bytes < len || len == PSPLICE_TO_EOF) {
		room = copy_room(&c, len == PSPLICE_TO_EOF ? len : len - r->out_bytes, &end);
		if (end)
			break;
		if (!room) {
			ps__fail(&c.x, EFBIG, PSPLICE_SIDE_OUT);
			break;
		}
		c.x.len = room > SIZE_MAX ? SIZE_MAX : (size_t)room;
		before = r->out_bytes;
		ps__plan_step(&c.x, c.plan, &c.pos);
		if (stale(&c, p))
			return true;
		if (retry_eintr(&c, r))
			continue;
		if (r->error || r->out_bytes == before)
			break;
	}
	unguard_sigpipe(&c, p);
	return false;
}

const struct psplice_result *psplice_last(void)
{
	return ps__last();
}

const char *psplice_method_name(int method)
{
	static const char *const names[] = {
		"none", "clone", "copy_file_range", "sendfile", "splice",
		"splice_pipe", "vmsplice", "readwrite"
	};

	if (method < 0 || method >= (int)(sizeof(names) / sizeof(names[0])))
		return "?";
	return names[method];
}

const char *psplice_side_name(int side)
{
	static const char *const names[] = { "none", "in", "out" };

	if (side < 0 || side > PSPLICE_SIDE_OUT)
		return "?";
	return names[side];
}

const char *psplice_version(void)
{
	return PS_STR(PSPLICE_VERSION_MAJOR) "." PS_STR(PSPLICE_VERSION_MINOR) "."
	       PS_STR(PSPLICE_VERSION_PATCH);
}
