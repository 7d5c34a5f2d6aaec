/* The planner: check the arguments, classify both fds, pick the ordered list
 * of paths for the pair, run them, account the bytes and attribute errors.
 * A prepared pair (psplice_pair_new) keeps the classification and the plan
 * for many moves; psplice_ex and psplice_copy build one on the stack for a
 * single call, so every entry point goes through the same code. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "sys.h"

/* Flags that shape the plan, and flags that only shape one move. */
#define PLAN_FLAGS (PSPLICE_F_NOFALLBACK | PSPLICE_F_REFLINK | PSPLICE_F_ONLY_MASK | \
		    PSPLICE_F_SIGPIPE_IGNORED)
#define CALL_FLAGS (PSPLICE_F_MOVE | PSPLICE_F_NONBLOCK | PSPLICE_F_MORE)
#define KNOWN_FLAGS (PLAN_FLAGS | CALL_FLAGS)
#define MAX_PLAN 6

typedef int (*ps_path_fn)(struct ps_xfer *);

struct plan {
	int n;
	int method[MAX_PLAN];
};

/* What can be known of two fds without knowing the call: their kinds and
 * flags, and the paths to try. Never a file's size: it changes between
 * moves, and a prepared pair keeps -1 in its place. */
struct psplice_pair {
	struct ps_endpoint in, out;
	struct plan plan;
	unsigned int flags;  /* the planning flags */
	bool guard;          /* block SIGPIPE around each move */
	bool reap;           /* no guard, as the caller keeps SIGPIPE ignored:
	                        a failed move still takes back one a blocked
	                        mask would keep */
	bool sized;          /* a move needs the input's size of now */
	bool short_raises;   /* a short move may have raised SIGPIPE */
	bool holds;          /* a prepared pair with a non-seekable input:
	                        what it takes and cannot deliver is pending */
	struct ps_hold hold;
};

struct call {
	struct ps_endpoint in;     /* a sized pair's input, with its size of now */
	struct ps_xfer x;
	const struct plan *plan;
	uint64_t want;             /* the bytes asked for: a move that stops
	                              short may have raised SIGPIPE */
	bool short_raises;         /* it may, into this output */
	int64_t pos_in, pos_out;   /* a copy to end of input: the file
	                              positions it began at, or -1 */
	struct ps_sigguard sg;
	bool guard;                /* block SIGPIPE around the call */
};

static const ps_path_fn path_of[] = {
	[PSPLICE_METHOD_CLONE] = ps__path_clone,
	[PSPLICE_METHOD_COPY_FILE_RANGE] = ps__path_cfr,
	[PSPLICE_METHOD_SENDFILE] = ps__path_sendfile,
	[PSPLICE_METHOD_SPLICE] = ps__path_splice,
	[PSPLICE_METHOD_SPLICE_PIPE] = ps__path_splice_pipe,
	[PSPLICE_METHOD_READWRITE] = ps__path_readwrite,
};

static int fail_early(struct psplice_result *res, int err, int side)
{
	res->error = err;
	res->side = side;
	return -1;
}

static int check_flags(unsigned int flags, unsigned int known,
		       struct psplice_result *res)
{
	if ((flags & ~known) ||
	    ((flags & PSPLICE_F_ONLY_MASK) >> 12) > PSPLICE_METHOD_READWRITE)
		return fail_early(res, EINVAL, PSPLICE_SIDE_NONE);
	return 0;
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

static bool same_file(const struct call *c)
{
	const struct ps_endpoint *in = c->x.in, *out = c->x.out;

	return in->kind == PS_K_FILE && out->kind == PS_K_FILE &&
	       in->dev == out->dev && in->ino == out->ino;
}

/* Copying a file onto an overlapping range of itself would read bytes it
 * has just written: refuse it as copy_file_range(2) does. */
static bool overlaps(const struct call *c, uint64_t len)
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
static uint64_t self_copy_len(const struct call *c, uint64_t len)
{
	int64_t si, size = c->x.in->size;

	if (!same_file(c))
		return len;
	si = c->x.off_in ? *c->x.off_in : ps_lseek(c->x.in->fd, 0, SEEK_CUR);
	if (si < 0 || si >= size || len <= (uint64_t)(size - si))
		return len;
	return (uint64_t)(size - si);
}

static void add(struct plan *p, int method)
{
	p->method[p->n++] = method;
}

static bool planned(const struct plan *p, int method)
{
	for (int i = 0; i < p->n; i++)
		if (p->method[i] == method)
			return true;
	return false;
}

/* The ordered paths for this pair of endpoints, fastest first. */
static void make_plan(struct psplice_pair *pair)
{
	const struct ps_endpoint *in = &pair->in, *out = &pair->out;
	unsigned int flags = pair->flags, only = (flags & PSPLICE_F_ONLY_MASK) >> 12;
	struct plan *p = &pair->plan;

	p->n = 0;
	if (only) {
		add(p, (int)only);
		return;
	}
	if (flags & PSPLICE_F_REFLINK)
		add(p, PSPLICE_METHOD_CLONE);
	if (in->kind == PS_K_PIPE || out->kind == PS_K_PIPE) {
		add(p, PSPLICE_METHOD_SPLICE);
	} else if (in->seekable && out->seekable) {
		add(p, PSPLICE_METHOD_COPY_FILE_RANGE);
		add(p, PSPLICE_METHOD_SENDFILE);
		add(p, PSPLICE_METHOD_SPLICE_PIPE);
	} else if (in->seekable) {
		add(p, PSPLICE_METHOD_SENDFILE);
		add(p, PSPLICE_METHOD_SPLICE_PIPE);
	} else {
		add(p, PSPLICE_METHOD_SPLICE_PIPE);
	}
	add(p, PSPLICE_METHOD_READWRITE);
}

/* A call refused for another reason than a bad fd still names a bad fd
 * first: the flags that tell one are asked only now (ps__unusable). */
static int refuse(const struct psplice_pair *p, struct psplice_result *res, int err,
		  int side)
{
	int bad = ps__unusable(&p->in, &p->out);

	return bad ? fail_early(res, EBADF, bad) : fail_early(res, err, side);
}

/* Everything that needs only the two fds: classify them and plan. flags
 * holds the planning flags alone. An fd not open for its direction, or
 * O_PATH, is refused by the kernel before a byte moves, and attributed
 * then (ps__fail); it is looked for here only to name it first. */
static int pair_init(struct psplice_pair *p, int fd_in, int fd_out,
		     unsigned int flags, struct psplice_result *res)
{
	bool raises;

	if ((flags & PSPLICE_F_SIGPIPE_IGNORED) && !ps__sigpipe_ignored())
		return fail_early(res, EINVAL, PSPLICE_SIDE_NONE);
	if (ps__classify(fd_in, &p->in) < 0)
		return fail_early(res, EBADF, PSPLICE_SIDE_IN);
	if (ps__classify(fd_out, &p->out) < 0)
		return fail_early(res, EBADF, ps__readable(&p->in) ? PSPLICE_SIDE_OUT :
								      PSPLICE_SIDE_IN);
	if (p->in.kind == PS_K_DIR)
		return refuse(p, res, EISDIR, PSPLICE_SIDE_IN);
	p->flags = flags;
	make_plan(p);
	raises = p->out.kind == PS_K_PIPE || ps_is_socket(p->out.kind);
	p->guard = raises && !(flags & PSPLICE_F_SIGPIPE_IGNORED);
	p->reap = raises && !p->guard;
	p->short_raises = ps_is_socket(p->out.kind) ||
			  (p->out.kind == PS_K_PIPE && (p->in.kind == PS_K_PIPE ||
							planned(&p->plan, PSPLICE_METHOD_SENDFILE)));
	p->sized = false; /* the sizes were just read */
	p->holds = false;  /* a one-shot call parks */
	return 0;
}

/* Everything else that can be refused before a byte moves: the offsets and
 * the length of this call. flags holds the per-call flags alone. */
static int begin(struct call *c, struct psplice_pair *p, int64_t *off_in,
		 int64_t *off_out, uint64_t len, unsigned int flags,
		 struct psplice_result *res)
{
	const struct ps_endpoint *in = &p->in;
	int err;

	if ((err = check_offset(&p->in, off_in, len)))
		return refuse(p, res, err, PSPLICE_SIDE_IN);
	if ((err = check_offset(&p->out, off_out, len)))
		return refuse(p, res, err, PSPLICE_SIDE_OUT);
	/* pwrite(2) on an O_APPEND file appends whatever the offset says. */
	if (off_out && ps__append(&p->out))
		return refuse(p, res, EINVAL, PSPLICE_SIDE_OUT);
	/* No syscall will refuse a bad fd: a zero length does not excuse it. */
	if (!len && (err = ps__unusable(&p->in, &p->out)))
		return fail_early(res, EBADF, err);
	if (p->sized) {
		/* The overlap refusal and clone measure the input as it is
		 * now: `cat f >> f` is refused after f has grown too. */
		c->in = p->in;
		c->in.size = ps__size_now(c->in.fd, c->in.kind);
		if (c->in.size < 0)
			return refuse(p, res, (int)-c->in.size, PSPLICE_SIDE_IN);
		in = &c->in;
	}
	c->x = (struct ps_xfer){ .in = in, .out = &p->out, .off_in = off_in,
				 .off_out = off_out, .flags = p->flags | flags,
				 .res = res, .hold = p->holds ? &p->hold : NULL };
	c->plan = &p->plan;
	c->want = len;
	c->short_raises = p->short_raises;
	c->guard = p->guard;
	if (overlaps(c, len))
		return refuse(p, res, EINVAL, PSPLICE_SIDE_NONE);
	return 0;
}

static void guard_sigpipe(struct call *c)
{
	ps__sigpipe_block(&c->sg, c->guard);
}

/* A call that failed may have raised SIGPIPE, and so may one that stopped
 * short into a socket: sendfile and splice return the bytes they moved
 * before the peer left, with the signal already sent. Into a pipe the
 * kernel checks for readers under the pipe's lock and raises it only when
 * it moved nothing; pipe to pipe and sendfile into a pipe are counted in
 * anyway, as kernels have looped over chunks there. */
static void unguard_sigpipe(struct call *c)
{
	ps__sigpipe_restore(&c->sg, c->x.res->error || c->x.raised ||
				    (c->short_raises && c->x.res->out_bytes < c->want));
}

static int run_path(struct call *c, int method)
{
	if (method >= (int)(sizeof(path_of) / sizeof(path_of[0])) || !path_of[method])
		return ps__next(&c->x, EOPNOTSUPP);
	c->x.next_err = 0;
	return path_of[method](&c->x);
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
static void none_applied(struct call *c, int lack)
{
	int bad = ps__unusable(c->x.in, c->x.out);

	if (bad)
		ps__fail(&c->x, EBADF, bad);
	else
		ps__fail(&c->x, lack ? lack : EOPNOTSUPP, PSPLICE_SIDE_NONE);
}

static bool unready(const struct ps_endpoint *ep, short events)
{
	struct pollfd p = { .fd = ep->fd, .events = events };

	if (ep->seekable || ep->kind == PS_K_PIPE || ps__nonblock(ep))
		return false;
	return poll(&p, 1, 0) == 0;
}

/* sendfile(2) takes no flags, and SPLICE_F_NONBLOCK does not reach a socket,
 * tty or device on the other side of splice(2): with PSPLICE_F_NONBLOCK such
 * an fd left blocking is polled, with a zero timeout, before any byte moves.
 * Ready means some room, so a large write into it may still wait. */
static int nonblock_side(const struct call *c)
{
	if (!(c->x.flags & PSPLICE_F_NONBLOCK))
		return PSPLICE_SIDE_NONE;
	if (unready(c->x.in, POLLIN))
		return PSPLICE_SIDE_IN;
	/* A file at its end has nothing to wait for: the step returns 0. */
	if (unready(c->x.out, POLLOUT) && !ps__input_ended(&c->x))
		return PSPLICE_SIDE_OUT;
	return PSPLICE_SIDE_NONE;
}

/* One step, starting at plan index *at; moves *at past paths that did not
 * apply. progress[i] says whether path i has moved bytes in this call. A
 * "fall back" errno from copy_file_range after that is a hard error: the
 * failed call may have written bytes before it failed (EOVERFLOW, NFS's
 * EIO). splice, sendfile and read/write report what they moved rather than
 * fail after moving it, so a failure of theirs moved nothing and the next
 * path may go on: a tty hung up by its reader, for one, answers splice with
 * EINVAL, and write(2) then tells the real error (EIO) or the end.
 * A suspicious 0 (next_err 0: the file seemed to have more) from a path
 * that has moved bytes of this file in this call is no /proc file's 0: it
 * is the end the path found, the file cut and written again since, as
 * read(2) would have reported it. A later path may read on; if none does,
 * the step ends there, with what the call moved. */
static void step(struct call *c, int *at, bool *progress)
{
	uint64_t before = c->x.res->out_bytes;
	int side, lack = 0;
	bool ended = false;

	/* A pair's pending bytes go first, and alone: only the output counts. */
	if (c->x.hold && ps__held(c->x.hold)) {
		if ((c->x.flags & PSPLICE_F_NONBLOCK) && unready(c->x.out, POLLOUT))
			ps__fail(&c->x, EAGAIN, PSPLICE_SIDE_OUT);
		else
			ps__deliver_held(&c->x);
		return;
	}
	side = nonblock_side(c);
	if (side != PSPLICE_SIDE_NONE) {
		ps__fail(&c->x, EAGAIN, side);
		return;
	}
	for (; *at < c->plan->n; (*at)++) {
		if (run_path(c, c->plan->method[*at]) != PS_NEXT) {
			if (c->x.res->out_bytes > before)
				progress[*at] = true;
			return;
		}
		if (progress[*at] && c->x.next_err > 0 &&
		    c->plan->method[*at] == PSPLICE_METHOD_COPY_FILE_RANGE) {
			ps__fail(&c->x, c->x.next_err,
				 ps__side_of(&c->x, c->x.next_err));
			return;
		}
		if (progress[*at] && !c->x.next_err)
			ended = true;
		if (lacking(c->x.next_err))
			lack = c->x.next_err;
	}
	if (!ended)
		none_applied(c, lack);
}

static void publish(const struct psplice_result *r, struct psplice_result *res)
{
	struct psplice_result *last = ps__last();

	if (r != last)
		*last = *r;
	if (res && res != last)
		*res = *r;
}

/* psplice_ex's return value, from the published result. */
static ssize_t step_return(const struct psplice_result *r, struct psplice_result *res)
{
	publish(r, res);
	if (r->out_bytes && !r->parked_len)
		return (ssize_t)r->out_bytes;
	if (r->error) {
		errno = r->error;
		return -1;
	}
	return 0;
}

/* One step on a classified pair: the body of psplice_ex and of
 * psplice_pair_move. flags holds the per-call flags alone. */
static void move(struct psplice_pair *p, int64_t *off_in, int64_t *off_out,
		 size_t len, unsigned int flags, struct psplice_result *r)
{
	bool progress[MAX_PLAN] = { false };
	struct call c;
	int at = 0;

	if (begin(&c, p, off_in, off_out, len, flags, r) < 0 || !len)
		return;
	c.x.len = len;
	guard_sigpipe(&c);
	step(&c, &at, progress);
	unguard_sigpipe(&c);
	if (p->reap && (r->error == EPIPE || c.x.raised))
		ps__sigpipe_reap();
}

ssize_t psplice_ex(int fd_in, int64_t *off_in, int fd_out, int64_t *off_out,
		   size_t len, unsigned int flags, struct psplice_result *res)
{
	struct psplice_result r = { 0 };
	struct psplice_pair p;

	if (len > PS_MAX_CHUNK)
		len = PS_MAX_CHUNK;
	if (check_flags(flags, KNOWN_FLAGS, &r) == 0 &&
	    pair_init(&p, fd_in, fd_out, flags & PLAN_FLAGS, &r) == 0)
		move(&p, off_in, off_out, len, flags & CALL_FLAGS, &r);
	return step_return(&r, res);
}

ssize_t psplice(int fd_in, int64_t *off_in, int fd_out, int64_t *off_out,
		size_t len, unsigned int flags)
{
	return psplice_ex(fd_in, off_in, fd_out, off_out, len, flags, NULL);
}

/* What the next step of a copy may move: what is left of len, and no byte
 * at or past INT64_MAX on a positional side. Only PSPLICE_TO_EOF gets that
 * far (a length is checked against the offsets before the copy). 0 with
 * *end set: the input has nothing more there; 0 without it: the output can
 * take nothing more. */
static uint64_t copy_room(const struct call *c, uint64_t left, bool *end)
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

/* psplice_copy's loop on a classified pair. flags holds the per-call flags
 * alone. */
static void copy(struct psplice_pair *p, int64_t *off_in, int64_t *off_out,
		 uint64_t len, unsigned int flags, struct psplice_result *r)
{
	bool progress[MAX_PLAN] = { false };
	uint64_t before, room;
	struct call c;
	bool end;
	int at = 0;

	if (begin(&c, p, off_in, off_out, len, flags, r) < 0)
		return;
	len = self_copy_len(&c, len);
	/* Only a copy to end of input can reach INT64_MAX (a length is checked
	 * against the offsets): it measures the file positions once. */
	c.pos_in = c.pos_out = -1;
	if (len == PSPLICE_TO_EOF && !off_in && p->in.seekable)
		c.pos_in = ps_lseek(p->in.fd, 0, SEEK_CUR);
	if (len == PSPLICE_TO_EOF && !off_out && p->out.seekable && !ps__append(&p->out))
		c.pos_out = ps_lseek(p->out.fd, 0, SEEK_CUR);
	c.x.retry_eintr = true;
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
		step(&c, &at, progress);
		/* A read interrupted before it took anything, or a pair's
		 * move that keeps what it took: try again. */
		if (r->error == EINTR && (c.x.hold || (!r->parked_len &&
						       r->in_bytes == r->out_bytes))) {
			r->error = 0;
			r->side = PSPLICE_SIDE_NONE;
			continue;
		}
		if (r->error || r->out_bytes == before)
			break;
	}
	unguard_sigpipe(&c);
	if (p->reap && (r->error == EPIPE || c.x.raised))
		ps__sigpipe_reap();
}

static int copy_return(const struct psplice_result *r, struct psplice_result *res)
{
	publish(r, res);
	if (r->error) {
		errno = r->error;
		return -1;
	}
	return 0;
}

int psplice_copy(int fd_in, int64_t *off_in, int fd_out, int64_t *off_out,
		 uint64_t len, unsigned int flags, struct psplice_result *res)
{
	struct psplice_result r = { 0 };
	struct psplice_pair p;

	if (check_flags(flags, KNOWN_FLAGS, &r) == 0 &&
	    pair_init(&p, fd_in, fd_out, flags & PLAN_FLAGS, &r) == 0)
		copy(&p, off_in, off_out, len, flags & CALL_FLAGS, &r);
	return copy_return(&r, res);
}

/* A pair outlives the call that prepared it: forget the sizes, which change
 * between moves, and say which moves must read the input's again. */
static void keep(struct psplice_pair *p)
{
	if (p->in.seekable)
		p->in.size = -1;
	if (p->out.seekable)
		p->out.size = -1;
	p->sized = (p->in.kind == PS_K_FILE && p->out.kind == PS_K_FILE) ||
		   planned(&p->plan, PSPLICE_METHOD_CLONE);
}

static struct psplice_pair *refused(const struct psplice_result *r)
{
	publish(r, NULL);
	errno = r->error;
	return NULL;
}

static struct psplice_pair *pair_new(int fd_in, int fd_out, unsigned int flags,
				      bool hold)
{
	struct psplice_result r = { 0 };
	struct psplice_pair p, *pp;
	int bad;

	if (check_flags(flags, PLAN_FLAGS, &r) < 0 ||
	    pair_init(&p, fd_in, fd_out, flags, &r) < 0)
		return refused(&r);
	/* Ask for the flags now: moves never change a pair threads share. */
	if ((bad = ps__unusable(&p.in, &p.out))) {
		fail_early(&r, EBADF, bad);
		return refused(&r);
	}
	keep(&p);
	pp = malloc(sizeof(*pp));
	if (!pp) {
		fail_early(&r, ENOMEM, PSPLICE_SIDE_NONE);
		return refused(&r);
	}
	*pp = p;
	/* Bytes taken from a non-seekable input exist nowhere else. */
	pp->holds = hold && !pp->in.seekable;
	if (pp->holds) {
		pp->hold = (struct ps_hold){ .pipe = NULL };
		pthread_mutex_init(&pp->hold.lock, NULL);
	}
	return pp;
}

/* .symver as a directive: clang, which builds the fuzzers, has no symver
 * attribute. */
__asm__(".symver ps__pair_new_0_2, psplice_pair_new@@PSPLICE_0.2");
__attribute__((visibility("default")))
struct psplice_pair *ps__pair_new_0_2(int fd_in, int fd_out, unsigned int flags);
struct psplice_pair *ps__pair_new_0_2(int fd_in, int fd_out, unsigned int flags)
{
	return pair_new(fd_in, fd_out, flags, true);
}

/* Programs built against 0.1 were promised parked bytes from a pair's
 * moves, as from psplice_ex: their pairs never hold bytes pending. */
__asm__(".symver ps__pair_new_0_1, psplice_pair_new@PSPLICE_0.1");
__attribute__((visibility("default")))
struct psplice_pair *ps__pair_new_0_1(int fd_in, int fd_out, unsigned int flags);
struct psplice_pair *ps__pair_new_0_1(int fd_in, int fd_out, unsigned int flags)
{
	return pair_new(fd_in, fd_out, flags, false);
}

static void lock(struct psplice_pair *p)
{
	if (p->holds)
		pthread_mutex_lock(&p->hold.lock);
}

static void unlock(struct psplice_pair *p)
{
	if (p->holds)
		pthread_mutex_unlock(&p->hold.lock);
}

ssize_t psplice_pair_move(struct psplice_pair *p, int64_t *off_in, int64_t *off_out,
			  size_t len, unsigned int flags, struct psplice_result *res)
{
	struct psplice_result r = { 0 };

	if (len > PS_MAX_CHUNK)
		len = PS_MAX_CHUNK;
	if (!p) {
		fail_early(&r, EINVAL, PSPLICE_SIDE_NONE);
	} else if (check_flags(flags, CALL_FLAGS, &r) == 0) {
		lock(p);
		move(p, off_in, off_out, len, flags, &r);
		unlock(p);
	}
	return step_return(&r, res);
}

int psplice_pair_copy(struct psplice_pair *p, int64_t *off_in, int64_t *off_out,
		      uint64_t len, unsigned int flags, struct psplice_result *res)
{
	struct psplice_result r = { 0 };

	if (!p) {
		fail_early(&r, EINVAL, PSPLICE_SIDE_NONE);
	} else if (check_flags(flags, CALL_FLAGS, &r) == 0) {
		lock(p);
		copy(p, off_in, off_out, len, flags, &r);
		unlock(p);
	}
	return copy_return(&r, res);
}

size_t psplice_pair_pending(struct psplice_pair *p)
{
	size_t n;

	if (!p || !p->holds)
		return 0;
	lock(p);
	n = ps__held(&p->hold);
	unlock(p);
	return n;
}

size_t psplice_pair_take(struct psplice_pair *p, void *buf, size_t len)
{
	size_t n;

	if (!p || !p->holds || !buf)
		return 0;
	lock(p);
	n = ps__hold_take(&p->hold, buf, len);
	unlock(p);
	return n;
}

/* Pending bytes are handed back as a one-shot call hands back what it
 * could not deliver: parked, in psplice_last(). Those in a pipe kept
 * before a fork() are left to the process that uses the pair. */
static void hand_back(struct psplice_pair *p)
{
	struct psplice_result r = { 0 };
	size_t n = ps__held_here(&p->hold);
	unsigned char *buf;

	if (!n)
		return;
	r.in_bytes = n;
	buf = ps__park_buf(n);
	if (!buf) {
		fail_early(&r, ENOMEM, PSPLICE_SIDE_NONE);
	} else {
		r.parked = buf;
		r.parked_len = ps__hold_take(&p->hold, buf, n);
		if (r.parked_len < n)
			fail_early(&r, EIO, PSPLICE_SIDE_NONE);
	}
	publish(&r, NULL);
}

void psplice_pair_free(struct psplice_pair *p)
{
	if (p && p->holds) {
		hand_back(p);
		ps__hold_release(&p->hold);
		pthread_mutex_destroy(&p->hold.lock);
	}
	free(p);
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
