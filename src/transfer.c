/* The planner: check the arguments, classify both fds, pick the ordered list
 * of paths for the pair, run them, account the bytes and attribute errors. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "sys.h"

#define KNOWN_FLAGS (PSPLICE_F_MOVE | PSPLICE_F_NONBLOCK | PSPLICE_F_MORE | \
		     PSPLICE_F_NOFALLBACK | PSPLICE_F_REFLINK | PSPLICE_F_ONLY_MASK)
#define MAX_PLAN 6

typedef int (*ps_path_fn)(struct ps_xfer *);

struct plan {
	int n;
	int method[MAX_PLAN];
};

struct call {
	struct ps_endpoint in, out;
	struct ps_xfer x;
	struct plan plan;
	sigset_t old_mask;
	bool masked, pipe_pending; /* SIGPIPE pending before the call */
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

/* Copying a file onto an overlapping range of itself would read bytes it
 * has just written: refuse it as copy_file_range(2) does. */
static bool overlaps(const struct call *c, uint64_t len)
{
	int64_t si, so;
	uint64_t n;

	if (c->in.kind != PS_K_FILE || c->out.kind != PS_K_FILE ||
	    c->in.dev != c->out.dev || c->in.ino != c->out.ino)
		return false;
	si = c->x.off_in ? *c->x.off_in : ps_lseek(c->in.fd, 0, SEEK_CUR);
	so = c->x.off_out ? *c->x.off_out : ps_lseek(c->out.fd, 0, SEEK_CUR);
	if (si < 0 || so < 0 || si >= c->in.size)
		return false;
	n = (uint64_t)(c->in.size - si);
	if (len < n)
		n = len;
	/* O_APPEND writes where the input ends, whatever the position says:
	 * reading up to that end is `cat f >> f`, refused as cat refuses it. */
	if (c->out.append)
		return (uint64_t)si + n >= (uint64_t)c->in.size;
	return (uint64_t)si < (uint64_t)so + n && (uint64_t)so < (uint64_t)si + n;
}

/* A loop copying a file onto its own end would read back the bytes it has
 * just written and never reach end of file: for a file copied into itself,
 * the input ends where it ended when the call began. */
static uint64_t self_copy_len(const struct call *c, uint64_t len)
{
	int64_t si;

	if (c->in.kind != PS_K_FILE || c->out.kind != PS_K_FILE ||
	    c->in.dev != c->out.dev || c->in.ino != c->out.ino)
		return len;
	si = c->x.off_in ? *c->x.off_in : ps_lseek(c->in.fd, 0, SEEK_CUR);
	if (si < 0 || si >= c->in.size || len <= (uint64_t)(c->in.size - si))
		return len;
	return (uint64_t)(c->in.size - si);
}

/* Everything that can be refused before a byte moves. */
static int prepare(struct call *c, int fd_in, int64_t *off_in, int fd_out,
		   int64_t *off_out, uint64_t len, unsigned int flags,
		   struct psplice_result *res)
{
	int err;

	memset(res, 0, sizeof(*res));
	if ((flags & ~KNOWN_FLAGS) ||
	    ((flags & PSPLICE_F_ONLY_MASK) >> 12) > PSPLICE_METHOD_READWRITE)
		return fail_early(res, EINVAL, PSPLICE_SIDE_NONE);
	if (ps__classify(fd_in, &c->in) < 0 || !c->in.readable)
		return fail_early(res, EBADF, PSPLICE_SIDE_IN);
	if (ps__classify(fd_out, &c->out) < 0 || !c->out.writable)
		return fail_early(res, EBADF, PSPLICE_SIDE_OUT);
	if (c->in.kind == PS_K_DIR)
		return fail_early(res, EISDIR, PSPLICE_SIDE_IN);
	if ((err = check_offset(&c->in, off_in, len)))
		return fail_early(res, err, PSPLICE_SIDE_IN);
	if ((err = check_offset(&c->out, off_out, len)))
		return fail_early(res, err, PSPLICE_SIDE_OUT);
	/* pwrite(2) on an O_APPEND file appends whatever the offset says. */
	if (off_out && c->out.append)
		return fail_early(res, EINVAL, PSPLICE_SIDE_OUT);
	c->x = (struct ps_xfer){ .in = &c->in, .out = &c->out, .off_in = off_in,
				 .off_out = off_out, .flags = flags, .res = res };
	if (overlaps(c, len))
		return fail_early(res, EINVAL, PSPLICE_SIDE_NONE);
	return 0;
}

static void add(struct plan *p, int method)
{
	p->method[p->n++] = method;
}

/* The ordered paths for this pair of endpoints, fastest first. */
static void make_plan(struct call *c)
{
	const struct ps_endpoint *in = &c->in, *out = &c->out;
	unsigned int flags = c->x.flags, only = (flags & PSPLICE_F_ONLY_MASK) >> 12;
	struct plan *p = &c->plan;

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

/* Splicing into a socket or a pipe without a reader raises SIGPIPE, and
 * splice(2) has no MSG_NOSIGNAL: block it around the call, and take back the
 * one our call raised. */
static void guard_sigpipe(struct call *c)
{
	sigset_t set;

	c->masked = c->out.kind == PS_K_PIPE || ps_is_socket(c->out.kind);
	if (!c->masked)
		return;
	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &set, &c->old_mask);
	/* While SIGPIPE was unblocked none can be pending for this thread: it
	 * would have been delivered. Ask the kernel only when it was blocked. */
	c->pipe_pending = sigismember(&c->old_mask, SIGPIPE) &&
			  sigpending(&set) == 0 && sigismember(&set, SIGPIPE);
}

static void unguard_sigpipe(struct call *c)
{
	struct timespec zero = { 0, 0 };
	sigset_t set;

	if (!c->masked)
		return;
	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	/* A SIGPIPE pending before the call is the caller's. One the call
	 * raised is taken back even when the caller blocks SIGPIPE: it would
	 * be delivered the moment the caller unblocks it. Only a failed call
	 * can have raised one. */
	if (c->x.res->error && !c->pipe_pending)
		while (sigtimedwait(&set, NULL, &zero) == SIGPIPE)
			;
	pthread_sigmask(SIG_SETMASK, &c->old_mask, NULL);
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

/* No path applied: say why. Running out of fds or memory for the internal
 * pipe is worth reporting as such, even when a later path (the user-space
 * copy, forbidden by PSPLICE_F_NOFALLBACK) only said "not here"; otherwise
 * the pair is not supported. */
static void none_applied(struct call *c, int lack)
{
	ps__fail(&c->x, lack ? lack : EOPNOTSUPP, PSPLICE_SIDE_NONE);
}

static bool unready(const struct ps_endpoint *ep, short events)
{
	struct pollfd p = { .fd = ep->fd, .events = events };

	if (ep->nonblock || ep->seekable || ep->kind == PS_K_PIPE)
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
	if (unready(&c->in, POLLIN))
		return PSPLICE_SIDE_IN;
	if (unready(&c->out, POLLOUT))
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
 * EINVAL, and write(2) then tells the real error (EIO) or the end. */
static void step(struct call *c, int *at, bool *progress)
{
	uint64_t before = c->x.res->out_bytes;
	int side = nonblock_side(c), lack = 0;

	if (side != PSPLICE_SIDE_NONE) {
		ps__fail(&c->x, EAGAIN, side);
		return;
	}
	for (; *at < c->plan.n; (*at)++) {
		if (run_path(c, c->plan.method[*at]) != PS_NEXT) {
			if (c->x.res->out_bytes > before)
				progress[*at] = true;
			return;
		}
		if (progress[*at] && c->x.next_err &&
		    c->plan.method[*at] == PSPLICE_METHOD_COPY_FILE_RANGE) {
			ps__fail(&c->x, c->x.next_err,
				 ps__side_of(&c->x, c->x.next_err));
			return;
		}
		if (lacking(c->x.next_err))
			lack = c->x.next_err;
	}
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

ssize_t psplice_ex(int fd_in, int64_t *off_in, int fd_out, int64_t *off_out,
		   size_t len, unsigned int flags, struct psplice_result *res)
{
	struct psplice_result r;
	bool progress[MAX_PLAN] = { false };
	struct call c;
	int at = 0;

	if (len > PS_MAX_CHUNK)
		len = PS_MAX_CHUNK;
	if (prepare(&c, fd_in, off_in, fd_out, off_out, len, flags, &r) < 0)
		goto out;
	if (!len)
		goto out;
	c.x.len = len;
	make_plan(&c);
	guard_sigpipe(&c);
	step(&c, &at, progress);
	unguard_sigpipe(&c);
out:
	publish(&r, res);
	if (r.out_bytes && !r.parked_len)
		return (ssize_t)r.out_bytes;
	if (r.error) {
		errno = r.error;
		return -1;
	}
	return 0;
}

ssize_t psplice(int fd_in, int64_t *off_in, int fd_out, int64_t *off_out,
		size_t len, unsigned int flags)
{
	return psplice_ex(fd_in, off_in, fd_out, off_out, len, flags, NULL);
}

int psplice_copy(int fd_in, int64_t *off_in, int fd_out, int64_t *off_out,
		 uint64_t len, unsigned int flags, struct psplice_result *res)
{
	struct psplice_result r;
	bool progress[MAX_PLAN] = { false };
	uint64_t before;
	struct call c;
	int at = 0;

	if (prepare(&c, fd_in, off_in, fd_out, off_out, len, flags, &r) < 0)
		goto out;
	len = self_copy_len(&c, len);
	make_plan(&c);
	c.x.retry_eintr = true;
	guard_sigpipe(&c);
	while (r.out_bytes < len || len == PSPLICE_TO_EOF) {
		c.x.len = len == PSPLICE_TO_EOF ? SIZE_MAX : (size_t)(len - r.out_bytes);
		before = r.out_bytes;
		step(&c, &at, progress);
		/* A read interrupted before it took anything: try again. */
		if (r.error == EINTR && !r.parked_len && r.in_bytes == r.out_bytes) {
			r.error = 0;
			r.side = PSPLICE_SIDE_NONE;
			continue;
		}
		if (r.error || r.out_bytes == before)
			break;
	}
	unguard_sigpipe(&c);
out:
	publish(&r, res);
	if (r.error) {
		errno = r.error;
		return -1;
	}
	return 0;
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
