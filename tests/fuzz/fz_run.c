/* The model of psplice's contract, and the run of a sequence against it.
 *
 * The model knows the source's bytes (stream seed, or zeros for /dev/zero),
 * where each offset and file position stands, the bytes a prepared pair
 * holds pending, and what the sink must hold: a stream's bytes in order, or
 * a file's image. Each call's result is checked against it as the call
 * returns (counts, offsets, positions, parked and pending bytes, the error's
 * class and side, no SIGPIPE); the sink's and the source's bytes at the
 * end. The library may move fewer bytes than asked (a short count); the
 * model then follows what it says it moved, and the bytes at the end prove
 * or refute it. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "errname.h"
#include "fz_int.h"
#include "psplice.h"

#define PLAN_FLAGS PSPLICE_F_PLAN_MASK
#define CALL_FLAGS (PSPLICE_F_MOVE | PSPLICE_F_NONBLOCK | PSPLICE_F_MORE)
#define MAX_IMAGE (48u << 20)
#define HUGE_OFF (INT64_MAX - 7)

struct fz {
	const struct fz_seq *s;
	struct fz_end in, out;
	struct fz_stats *st;
	int step;
	/* The source: the next byte of a stream that is the sink's, and the
	 * file position and positional offset of a file. */
	uint64_t src_next;
	int64_t in_pos, in_off;
	/* The pair, and the bytes it holds (they follow src_next). */
	struct psplice_pair *pair;
	unsigned int pair_flags;
	uint64_t pending;
	/* The sink: its file position and offset, and what it must hold. */
	int64_t out_pos, out_off;
	uint8_t *exp;
	size_t exp_len, exp_cap;
	uint8_t *buf, *take; /* scratch, MAX_IMAGE each */
	const char *tmpfs;
	char why[512];
};

static volatile sig_atomic_t sigpipes;

static void on_sigpipe(int sig)
{
	(void)sig;
	sigpipes++;
}

static int fail(struct fz *z, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	if (z->why[0])
		return -1;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(z->why, sizeof(z->why), "step %d (%s): %s", z->step,
		 z->step < (int)z->s->n ? fz_op_name(z->s->op[z->step].code) : "end", msg);
	return -1;
}

static bool is_file(int kind)
{
	return kind == FZ_TMPFS || kind == FZ_DISK;
}

static bool appends(const struct fz *z)
{
	return (z->s->fdmode & 4) && is_file(z->s->out_kind);
}

static bool is_stream(int kind)
{
	return kind == FZ_PIPE || kind == FZ_UNIX || kind == FZ_TCP || kind == FZ_PTY;
}

static bool src_zero(const struct fz *z)
{
	return z->s->in_kind == FZ_DEV;
}

static bool sink_dead(const struct fz *z)
{
	return __atomic_load_n(&z->out.dead, __ATOMIC_ACQUIRE);
}

/* The expected sink: n source bytes from source offset src, at out. */
static int expect(struct fz *z, uint64_t src, size_t at, size_t n)
{
	if (!n)
		return 0;
	if (at + n > MAX_IMAGE)
		return fail(z, "the sink would exceed the model's %u bytes", MAX_IMAGE);
	if (at + n > z->exp_cap) {
		size_t cap = (at + n) * 2 < MAX_IMAGE ? (at + n) * 2 : MAX_IMAGE;
		uint8_t *b = realloc(z->exp, cap);

		if (!b)
			return fail(z, "out of memory");
		z->exp = b;
		z->exp_cap = cap;
	}
	if (at > z->exp_len)
		memset(z->exp + z->exp_len, 0, at - z->exp_len);
	fz_gen(z->s->seed, src_zero(z), src, z->exp + at, n);
	if (at + n > z->exp_len)
		z->exp_len = at + n;
	return 0;
}

/* Where the sink's next n bytes go, for the model; advances the cursor. */
static size_t sink_cursor(struct fz *z, bool positional, uint64_t n)
{
	int64_t *c = positional ? &z->out_off : &z->out_pos;
	size_t at;

	if (!is_file(z->s->out_kind))
		return z->exp_len;
	/* O_APPEND: at the end, and the position follows (no offset can be
	 * given: refused). */
	if (appends(z) && n) {
		z->out_pos = (int64_t)(z->exp_len + n);
		return z->exp_len;
	}
	at = (size_t)*c;
	*c += (int64_t)n;
	return at;
}

/* The driver writes bytes handed back to it (parked, taken, returned by a
 * freed pair) to the sink itself, as a caller would, so that the sink
 * still holds the whole stream. Its own SIGPIPE is taken back. */
static int sink_put(struct fz *z, const uint8_t *p, size_t n, bool positional, uint64_t src)
{
	sigset_t set, old;
	int64_t at = positional ? z->out_off : z->out_pos;
	size_t done = 0;
	struct timespec zero = { 0, 0 };
	int tries = 0;

	if (z->s->out_kind == FZ_DEV || !n)
		return 0;
	fz_sink_release(&z->out);
	if (!sink_dead(z) && expect(z, src, sink_cursor(z, positional, n), n) < 0)
		return -1;
	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	while (done < n) {
		ssize_t w = is_file(z->s->out_kind) ?
			pwrite(z->out.fd, p + done, n - done, at + (int64_t)done) :
			write(z->out.fd, p + done, n - done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN && tries++ < 10000) {
			struct pollfd pf = { .fd = z->out.fd, .events = POLLOUT };

			poll(&pf, 1, 1);
			continue;
		}
		if (w <= 0)
			break;
		done += (size_t)w;
	}
	if (!positional && is_file(z->s->out_kind))
		lseek(z->out.fd, z->out_pos, SEEK_SET);
	while (sigtimedwait(&set, NULL, &zero) == SIGPIPE)
		;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (done < n && !sink_dead(z))
		return fail(z, "the driver could not write %zu handed-back bytes (%s)",
			    n, strerror(errno));
	return 0;
}

/* The handed-back bytes must be the source's next ones. */
static int check_bytes(struct fz *z, const void *p, size_t n, uint64_t src, const char *what)
{
	size_t i;

	if (n && !p)
		return fail(z, "%s: %zu bytes but no pointer", what, n);
	if (n > MAX_IMAGE)
		return fail(z, "%s: %zu bytes", what, n);
	fz_gen(z->s->seed, src_zero(z), src, z->buf, n);
	for (i = 0; i < n; i++)
		if (((const uint8_t *)p)[i] != z->buf[i])
			return fail(z, "%s: byte %zu of %zu is %#x, the source's %" PRIu64
				    " is %#x", what, i, n, ((const uint8_t *)p)[i],
				    src + i, z->buf[i]);
	return 0;
}

static int check_pos(struct fz *z, int fd, int64_t want, const char *what)
{
	int64_t at = lseek(fd, 0, SEEK_CUR);

	if (at != want)
		return fail(z, "%s file position %" PRId64 ", model %" PRId64, what, at, want);
	return 0;
}

static int check_sigpipe(struct fz *z)
{
	sigset_t set;

	sigpending(&set);
	if (sigpipes)
		return fail(z, "SIGPIPE reached the caller");
	if (sigismember(&set, SIGPIPE))
		return fail(z, "SIGPIPE left pending");
	return 0;
}

/* One transfer call as the driver makes it. */
struct call {
	bool pair, copy, pin, pout;
	uint64_t len;
	unsigned int flags;
	int64_t off_in, off_out;    /* the offsets given, when positional */
	int64_t in0, out0;          /* the input's and output's cursor before */
	uint64_t pending0;
	bool fed0;                  /* the producer had closed before the call */
};

/* The refusal the contract promises for this call, before any byte moves:
 * an errno and its side, or 0. */
static int refusal(const struct fz *z, const struct call *c, int *side)
{
	unsigned int known = c->pair ? CALL_FLAGS : PLAN_FLAGS | CALL_FLAGS;

	*side = PSPLICE_SIDE_NONE;
	if ((c->flags & ~known) || (!c->pair && ((c->flags & PSPLICE_F_ONLY_MASK) >> 12) >
				    PSPLICE_METHOD_READWRITE))
		return EINVAL;
	/* SIGPIPE has the driver's handler: it is not ignored. */
	if (!c->pair && (c->flags & PSPLICE_F_SIGPIPE_IGNORED))
		return EINVAL;
	*side = PSPLICE_SIDE_IN;
	if (c->pin && !is_file(z->s->in_kind))
		return ESPIPE;
	*side = PSPLICE_SIDE_OUT;
	if (c->pout && !is_file(z->s->out_kind))
		return ESPIPE;
	if (c->pout && appends(z))
		return EINVAL;
	*side = PSPLICE_SIDE_NONE;
	return 0;
}

static int check_refused(struct fz *z, const struct call *c, ssize_t ret, int err,
			 const struct psplice_result *r, int want, int side)
{
	if (ret != -1 || err != want || r->error != want || r->side != side)
		return fail(z, "want -1 %s side %s, got %zd errno %s, result %s side %s", ps_errname(want),
			    psplice_side_name(side), ret, ps_errname(err) ? ps_errname(err) : "0",
			    ps_errname(r->error) ? ps_errname(r->error) : "0",
			    psplice_side_name(r->side));
	if (r->in_bytes || r->out_bytes || r->parked_len)
		return fail(z, "refused, yet in %" PRIu64 " out %" PRIu64 " parked %zu",
			    r->in_bytes, r->out_bytes, r->parked_len);
	if (z->pair && psplice_pair_pending(z->pair) != c->pending0)
		return fail(z, "refused, yet pending %zu -> %zu", (size_t)c->pending0,
			    psplice_pair_pending(z->pair));
	return 0;
}

static bool source_ended(const struct fz *z)
{
	if (is_file(z->s->in_kind))
		return false; /* told by the cursor, by the caller */
	return !src_zero(z) && z->src_next + z->pending >= z->s->size;
}

/* The input has a byte or its end for the taking: a device, or a stream
 * whose producer wrote all and closed, all taken. A pty never ends. */
static bool input_ready(const struct fz *z, const struct call *c)
{
	if (src_zero(z))
		return true;
	return z->s->in_kind != FZ_PTY && source_ended(z) && c->fed0;
}

/* The error a call stopped with: its class, by side and circumstance. */
static int check_error(struct fz *z, const struct call *c, const struct psplice_result *r)
{
	bool nb = c->flags & PSPLICE_F_NONBLOCK;
	unsigned int fdnb = z->s->fdmode & 3;
	unsigned int f = c->flags | (c->pair ? z->pair_flags : 0);
	bool restricted = f & (PSPLICE_F_NOFALLBACK | PSPLICE_F_ONLY_MASK);

	/* The end of input is never a failure, reader or room or not. */
	if ((r->error == EAGAIN || r->error == EPIPE) && is_file(z->s->in_kind) &&
	    c->in0 >= (int64_t)z->s->size && !r->out_bytes)
		return fail(z, "the end of a file input reported as %s",
			    ps_errname(r->error));
	switch (r->error) {
	case EAGAIN:
		/* An O_NONBLOCK fd makes every call on it non-blocking: the
		 * kernel's splice between two pipes does not wait on either
		 * when one is O_NONBLOCK. */
		if (!nb && !fdnb)
			return fail(z, "EAGAIN side %s from a blocking call on %s fds",
				    psplice_side_name(r->side), fdnb ? "O_NONBLOCK" : "blocking");
		if (r->side == PSPLICE_SIDE_OUT && is_stream(z->s->out_kind))
			return 0;
		/* An input that cannot block (a device, a stream at its end and
		 * closed) may still be named when the output's reader made
		 * room between the call and the library's look at both: either
		 * answer wakes an event loop at once (ps__blocked_side). */
		if (r->side == PSPLICE_SIDE_IN && (is_stream(z->s->in_kind) || src_zero(z)) &&
		    (is_stream(z->s->out_kind) || !input_ready(z, c)))
			return 0;
		return fail(z, "EAGAIN side %s (%s to %s)", psplice_side_name(r->side),
			    fz_kind_name(z->s->in_kind), fz_kind_name(z->s->out_kind));
	case EPIPE:
		if (r->side == PSPLICE_SIDE_OUT && sink_dead(z))
			return 0;
		return fail(z, "EPIPE side %s, the reader %s", psplice_side_name(r->side),
			    sink_dead(z) ? "gone" : "still there");
	case EOPNOTSUPP:
		if (restricted && r->side != PSPLICE_SIDE_IN)
			return 0;
		return fail(z, "EOPNOTSUPP side %s, flags %#x", psplice_side_name(r->side),
			    c->flags);
	}
	return fail(z, "unexpected %s side %s", ps_errname(r->error) ?
		    ps_errname(r->error) : "?", psplice_side_name(r->side));
}

/* The bytes the call took and where they went: the model follows. */
static int account(struct fz *z, const struct call *c, const struct psplice_result *r)
{
	uint64_t src = c->in0, out = r->out_bytes;

	if (is_file(z->s->in_kind)) {
		if (r->in_bytes != out || r->parked_len)
			return fail(z, "a file input: in %" PRIu64 " out %" PRIu64
				    " parked %zu (must be given back)", r->in_bytes, out,
				    r->parked_len);
		if (c->pin)
			z->in_off += (int64_t)out;
		else
			z->in_pos += (int64_t)out;
	} else {
		src = z->src_next;
		z->src_next += out;
	}
	if (z->s->out_kind != FZ_DEV &&
	    expect(z, src, sink_cursor(z, c->pout, out), out) < 0)
		return -1;
	if (is_file(z->s->in_kind))
		return 0;
	if (c->pair) {
		if (r->parked_len)
			return fail(z, "a pair parked %zu bytes", r->parked_len);
		z->pending = z->pending + r->in_bytes - out;
		if (psplice_pair_pending(z->pair) != z->pending)
			return fail(z, "pending %zu, model %" PRIu64 " (before %" PRIu64
				    ", in %" PRIu64 ", out %" PRIu64 ")",
				    psplice_pair_pending(z->pair), z->pending, c->pending0,
				    r->in_bytes, out);
		return 0;
	}
	if (r->parked_len != r->in_bytes - out)
		return fail(z, "parked %zu, in - out = %" PRIu64, r->parked_len,
			    r->in_bytes - out);
	if (check_bytes(z, r->parked, r->parked_len, z->src_next, "parked") < 0)
		return -1;
	src = z->src_next;
	z->src_next += r->parked_len;
	return sink_put(z, r->parked, r->parked_len, c->pout, src);
}

/* Offsets advanced by what was delivered; file positions by the same, or
 * untouched by a positional call. */
static int check_cursors(struct fz *z, const struct call *c)
{
	if (c->pin && c->off_in != z->in_off)
		return fail(z, "input offset %" PRId64 ", model %" PRId64, c->off_in, z->in_off);
	if (c->pout && c->off_out != z->out_off)
		return fail(z, "output offset %" PRId64 ", model %" PRId64, c->off_out,
			    z->out_off);
	if (is_file(z->s->in_kind) && check_pos(z, z->in.fd, z->in_pos, "input") < 0)
		return -1;
	if (is_file(z->s->out_kind) && check_pos(z, z->out.fd, z->out_pos, "output") < 0)
		return -1;
	return 0;
}

/* What a call that returned at the end of input or the end of len must
 * have moved. */
static int check_extent(struct fz *z, const struct call *c, ssize_t ret,
			const struct psplice_result *r)
{
	int64_t left = is_file(z->s->in_kind) ?
		(int64_t)z->s->size - (c->pin ? z->in_off : z->in_pos) : 0;
	bool ended = is_file(z->s->in_kind) ? left <= 0 : source_ended(z) && !z->pending;

	if (r->error)
		return 0;
	if (c->copy) {
		if (c->len != PSPLICE_TO_EOF && r->out_bytes > c->len)
			return fail(z, "copied %" PRIu64 " of len %" PRIu64, r->out_bytes, c->len);
		if (r->out_bytes < c->len && !ended)
			return fail(z, "the copy ended after %" PRIu64 " of %" PRIu64
				    " bytes, the source not at its end", r->out_bytes, c->len);
		return 0;
	}
	if (r->out_bytes > c->len)
		return fail(z, "moved %" PRIu64 " of len %" PRIu64, r->out_bytes, c->len);
	if (ret == 0 && c->len && !ended)
		return fail(z, "0 (end of input) with the source not at its end");
	return 0;
}

static int check_call(struct fz *z, struct call *c, ssize_t ret, int err,
		      const struct psplice_result *r)
{
	const struct psplice_result *last = psplice_last();
	int side, want = refusal(z, c, &side);
	unsigned int only = ((c->flags | (c->pair ? z->pair_flags : 0)) & PSPLICE_F_ONLY_MASK) >> 12;

	if (getenv("FZ_TRACE"))
		fprintf(stderr, "fuzz: step %d %s len %" PRIu64 " flags %#x offs %" PRId64
			"/%" PRId64 " -> %zd, in %" PRIu64 " out %" PRIu64 " error %s side %s "
			"parked %zu method %s pending %zu\n", z->step,
			fz_op_name(z->s->op[z->step].code), c->len, c->flags, c->off_in,
			c->off_out, ret, r->in_bytes, r->out_bytes,
			r->error ? ps_errname(r->error) : "0", psplice_side_name(r->side),
			r->parked_len, psplice_method_name(r->method),
			z->pair ? psplice_pair_pending(z->pair) : 0);

	if (check_sigpipe(z) < 0)
		return -1;
	if (last->in_bytes != r->in_bytes || last->out_bytes != r->out_bytes ||
	    last->error != r->error || last->side != r->side ||
	    last->parked_len != r->parked_len)
		return fail(z, "psplice_last() is not the call's result");
	if (want)
		return check_refused(z, c, ret, err, r, want, side);
	/* A pair's pending bytes go out first and count in out_bytes. */
	if (r->in_bytes + (c->pair ? c->pending0 : 0) < r->out_bytes)
		return fail(z, "in %" PRIu64 " + pending %" PRIu64 " < out %" PRIu64, r->in_bytes,
			    c->pair ? c->pending0 : 0, r->out_bytes);
	if (ret == -1 && (!r->error || err != r->error))
		return fail(z, "-1 with errno %d, result error %d", err, r->error);
	if (!c->copy && ret >= 0 && (uint64_t)ret != r->out_bytes)
		return fail(z, "returned %zd, out_bytes %" PRIu64, ret, r->out_bytes);
	if (c->copy && ret == 0 && r->error)
		return fail(z, "0 with error %d", r->error);
	if (ret >= 0 && !c->copy && r->parked_len)
		return fail(z, "returned a count with %zu bytes parked", r->parked_len);
	if (!r->parked_len != !r->parked)
		return fail(z, "parked %p with parked_len %zu", r->parked, r->parked_len);
	if ((r->out_bytes == 0) != (r->method == PSPLICE_METHOD_NONE) ||
	    r->method < 0 || r->method > PSPLICE_METHOD_READWRITE)
		return fail(z, "method %s with %" PRIu64 " bytes delivered",
			    psplice_method_name(r->method), r->out_bytes);
	if (only && r->out_bytes && r->method != (int)only)
		return fail(z, "method %s under PSPLICE_F_ONLY(%s)", psplice_method_name(r->method),
			    psplice_method_name((int)only));
	if (r->error && check_error(z, c, r) < 0)
		return -1;
	if (!r->error && r->side != PSPLICE_SIDE_NONE)
		return fail(z, "no error, side %s", psplice_side_name(r->side));
	if (account(z, c, r) < 0 || check_cursors(z, c) < 0)
		return -1;
	z->st->bytes += r->out_bytes;
	return check_extent(z, c, ret, r);
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* A pty never ends: a blocking call must not ask it for more than it will
 * get. And the model's image is bounded: a call that could outgrow it is
 * left out. false: skip the call. */
static bool prepare(struct fz *z, const struct fz_op *op, struct call *c)
{
	uint64_t held = op->code == FZ_PMOVE || op->code == FZ_PCOPY ? z->pending : 0;
	uint64_t left = z->s->size - min_u64(z->s->size, z->src_next + z->pending);
	uint64_t at = is_file(z->s->out_kind) ? (uint64_t)(op->offs & 2 ? z->out_off : z->out_pos) :
		      z->exp_len, most;

	*c = (struct call){ .pair = op->code == FZ_PMOVE || op->code == FZ_PCOPY,
			    .copy = op->code == FZ_COPY || op->code == FZ_PCOPY,
			    .pin = op->offs & 1, .pout = op->offs & 2,
			    .len = op->len, .flags = op->flags };
	if (c->pair && !z->pair)
		return false;
	if (src_zero(z) && c->len == PSPLICE_TO_EOF)
		c->len = 1 << 20;
	if (z->s->in_kind == FZ_PTY && !(c->flags & PSPLICE_F_NONBLOCK) &&
	    !(z->s->fdmode & 1)) {
		if (c->copy)
			c->len = min_u64(c->len, left + held);
		else if (!left && !held)
			c->flags |= PSPLICE_F_NONBLOCK;
	}
	most = src_zero(z) ? c->len : min_u64(c->len, z->s->size + held);
	if (at + most + (1u << 20) > MAX_IMAGE || z->exp_len + most + (1u << 20) > MAX_IMAGE)
		return false;
	c->off_in = z->in_off;
	c->off_out = z->out_off;
	c->in0 = c->pin ? z->in_off : z->in_pos;
	c->pending0 = z->pending;
	c->fed0 = __atomic_load_n(&z->in.dead, __ATOMIC_ACQUIRE);
	return true;
}

static int op_pfree(struct fz *z)
{
	const struct psplice_result *last;
	uint64_t n = z->pending, src = z->src_next;

	if (!z->pair)
		return 0;
	psplice_pair_free(z->pair);
	z->pair = NULL;
	z->pending = 0;
	if (!n)
		return 0;
	last = psplice_last();
	if (last->parked_len != n || last->in_bytes != n || last->error)
		return fail(z, "a freed pair with %" PRIu64 " pending handed back %zu (in %"
			    PRIu64 ", error %d)", n, last->parked_len, last->in_bytes, last->error);
	if (check_bytes(z, last->parked, n, src, "handed back") < 0)
		return -1;
	z->src_next += n;
	return sink_put(z, last->parked, n, false, src);
}

static int op_transfer(struct fz *z, const struct fz_op *op)
{
	struct psplice_result r;
	struct call c;
	int64_t *oi, *oo;
	ssize_t ret;
	int err;

	if (op->code != FZ_PMOVE && op->code != FZ_PCOPY && z->pending && op_pfree(z) < 0)
		return -1;
	if (!prepare(z, op, &c))
		return 0;
	oi = c.pin ? &c.off_in : NULL;
	oo = c.pout ? &c.off_out : NULL;
	memset(&r, 0xa5, sizeof(r));
	errno = 0;
	switch (op->code) {
	case FZ_MOVE:
		if (op->arg & 0x20) { /* psplice(): the result from psplice_last() */
			ret = psplice(z->in.fd, oi, z->out.fd, oo, c.len, c.flags);
			err = errno;
			r = *psplice_last();
			errno = err;
		} else {
			ret = psplice_ex(z->in.fd, oi, z->out.fd, oo, c.len, c.flags, &r);
		}
		break;
	case FZ_COPY:
		ret = psplice_copy(z->in.fd, oi, z->out.fd, oo, c.len, c.flags, &r);
		break;
	case FZ_PMOVE:
		ret = psplice_pair_move(z->pair, oi, oo, c.len, c.flags, &r);
		break;
	default:
		ret = psplice_pair_copy(z->pair, oi, oo, c.len, c.flags, &r);
	}
	err = errno;
	return check_call(z, &c, ret, err, &r);
}

/* What the driver knows of an fd it made, as psplice_pair_new_known takes
 * it; 0 for a kind with no such description (a file, a device, a pty). */
static unsigned int described(int kind, bool nonblock)
{
	unsigned int d = kind == FZ_TCP ? PSPLICE_FD_TCP : kind == FZ_UNIX ? PSPLICE_FD_UNIX :
			 kind == FZ_PIPE ? PSPLICE_FD_PIPE : 0;

	return d && nonblock ? d | PSPLICE_FD_NONBLOCK : d;
}

/* A pair, prepared by psplice_pair_new or, for fds the driver can
 * describe and at arg's word, by psplice_pair_new_known: the model is the
 * same for both. */
static int op_pnew(struct fz *z, const struct fz_op *op)
{
	unsigned int f = op->flags;
	int want = 0;

	if (op_pfree(z) < 0)
		return -1;
	if ((f & ~PLAN_FLAGS) || ((f & PSPLICE_F_ONLY_MASK) >> 12) > PSPLICE_METHOD_READWRITE ||
	    (f & PSPLICE_F_SIGPIPE_IGNORED))
		want = EINVAL;
	errno = 0;
	if ((op->arg & 0x20) && described(z->s->in_kind, z->s->fdmode & 1) &&
	    described(z->s->out_kind, z->s->fdmode & 2))
		z->pair = psplice_pair_new_known(z->in.fd, described(z->s->in_kind, z->s->fdmode & 1),
						 z->out.fd, described(z->s->out_kind,
								      z->s->fdmode & 2), f);
	else
		z->pair = psplice_pair_new(z->in.fd, z->out.fd, f);
	if (z->pair && want)
		return fail(z, "a pair made with flags %#x, want %s", f, ps_errname(want));
	if (!z->pair && (errno != (want ? want : EOPNOTSUPP) ||
			 (!want && !(f & (PSPLICE_F_ONLY_MASK | PSPLICE_F_NOFALLBACK)))))
		return fail(z, "no pair for flags %#x: %s", f, strerror(errno));
	if (!z->pair && (psplice_last()->in_bytes || psplice_last()->out_bytes))
		return fail(z, "a refused psplice_pair_new moved bytes");
	z->pair_flags = f;
	return check_sigpipe(z);
}

static int op_ptake(struct fz *z, const struct fz_op *op)
{
	size_t want, n, len = (size_t)min_u64(op->len, MAX_IMAGE);
	uint64_t src = z->src_next;

	if (!z->pair)
		return 0;
	want = (size_t)min_u64(len, z->pending);
	n = psplice_pair_take(z->pair, z->take, len);
	if (n != want)
		return fail(z, "took %zu of %zu asked, model %zu pending", n, len,
			    (size_t)z->pending);
	if (check_bytes(z, z->take, n, src, "taken") < 0)
		return -1;
	z->pending -= n;
	z->src_next += n;
	if (psplice_pair_pending(z->pair) != z->pending)
		return fail(z, "pending %zu after take, model %" PRIu64,
			    psplice_pair_pending(z->pair), z->pending);
	return sink_put(z, z->take, n, false, src);
}

static int op_seek(struct fz *z, const struct fz_op *op)
{
	if (op->arg & 1)
		z->out_off = (int64_t)(op->len % (z->exp_len + 65536));
	else
		z->in_off = (int64_t)(op->len % (z->s->size + 4097));
	return 0;
}

static int check_still(struct fz *z)
{
	struct call c = { 0 };

	if (check_sigpipe(z) < 0)
		return -1;
	if (z->pair && psplice_pair_pending(z->pair) != z->pending)
		return fail(z, "pending %zu, model %" PRIu64, psplice_pair_pending(z->pair),
			    z->pending);
	return check_cursors(z, &c);
}

/* A call refused before any byte moves: nothing moves, nothing changes. */
static int op_bad(struct fz *z, const struct fz_op *op)
{
	static const unsigned int unknown[] = { 0x8, 0x80, 0x400000, 0x10000, 0x80000000u };
	struct call c = { .len = op->len % 65536 + 1, .pending0 = z->pending };
	bool pair = z->pair && (op->arg & 0x10);
	int fd_in = z->in.fd, fd_out = z->out.fd, want = EINVAL, side = PSPLICE_SIDE_NONE;
	int tmp = -1, variant = op->arg % 8, err;
	int64_t off = -1 - (int64_t)(op->len % 100), *oi = NULL, *oo = NULL;
	struct psplice_result r;
	ssize_t ret;

	if (pair && (variant == 4 || variant == 5 || variant == 6))
		variant = 0;
	switch (variant) {
	case 0:
		c.flags = pair ? PSPLICE_F_NOFALLBACK : unknown[op->len % 5];
		break;
	case 3:
		off = INT64_MAX - 1;
		c.len = 4096;
		/* fall through */
	case 1:
		oi = &off;
		side = PSPLICE_SIDE_IN;
		want = is_file(z->s->in_kind) ? EINVAL : ESPIPE;
		break;
	case 2:
		oo = &off;
		side = PSPLICE_SIDE_OUT;
		want = is_file(z->s->out_kind) ? EINVAL : ESPIPE;
		break;
	case 4:
		fd_in = -1;
		want = EBADF;
		side = PSPLICE_SIDE_IN;
		break;
	case 5:
		tmp = open("/dev/null", O_RDONLY | O_CLOEXEC);
		close(tmp);
		fd_out = tmp;
		tmp = -1;
		want = EBADF;
		side = PSPLICE_SIDE_OUT;
		break;
	case 6:
		tmp = is_file(z->s->in_kind) ? open(z->in.path, O_WRONLY | O_CLOEXEC) : -1;
		fd_in = tmp;
		want = EBADF;
		side = PSPLICE_SIDE_IN;
		break;
	default:
		c.flags = op->len & 1 ? PSPLICE_F_ONLY_MASK : PSPLICE_F_SIGPIPE_IGNORED;
		if (pair)
			c.flags = op->len & 1 ? PSPLICE_F_ONLY_MASK : PSPLICE_F_REFLINK;
	}
	errno = 0;
	ret = pair ? psplice_pair_move(z->pair, oi, oo, c.len, c.flags, &r) :
		     psplice_ex(fd_in, oi, fd_out, oo, c.len, c.flags, &r);
	err = errno;
	if (tmp >= 0)
		close(tmp);
	if (check_refused(z, &c, ret, err, &r, want, side) < 0)
		return -1;
	if ((oi || oo) && off != (variant == 3 ? INT64_MAX - 1 : -1 - (int64_t)(op->len % 100)))
		return fail(z, "a refused call changed its offset to %" PRId64, off);
	return check_still(z);
}

/* Offsets near INT64_MAX: an input offset past the end is the end of
 * input; an output offset takes what the filesystem allows (EFBIG past
 * its limit); one whose sum with len overflows is refused. */
static int op_hioff(struct fz *z, const struct fz_op *op)
{
	struct call c = { .len = op->len % 16, .pending0 = 0 };
	bool out = op->arg & 1;
	int kind = out ? z->s->out_kind : z->s->in_kind, err;
	int64_t off = HUGE_OFF;
	struct psplice_result r;
	ssize_t ret;

	if (out && !is_file(z->s->in_kind))
		return 0;
	if (z->pending && op_pfree(z) < 0)
		return -1;
	errno = 0;
	ret = psplice_ex(z->in.fd, out ? NULL : &off, z->out.fd, out ? &off : NULL, c.len, 0, &r);
	err = errno;
	if (!is_file(kind) || c.len > 7 || (out && appends(z)))
		return check_refused(z, &c, ret, err, &r, is_file(kind) ? EINVAL : ESPIPE,
				     out ? PSPLICE_SIDE_OUT : PSPLICE_SIDE_IN) < 0 ? -1 :
		       check_still(z);
	if (!out) {
		if (ret != 0 || r.error || r.in_bytes || off != HUGE_OFF)
			return fail(z, "an input offset past the end: %zd (%s), offset %" PRId64,
				    ret, strerror(err), off);
		return check_still(z);
	}
	if (ret < 0) {
		if (r.error != EFBIG || r.side != PSPLICE_SIDE_OUT || r.in_bytes || r.out_bytes ||
		    off != HUGE_OFF)
			return fail(z, "an output offset near INT64_MAX: %s side %s, in %" PRIu64
				    " out %" PRIu64, strerror(r.error), psplice_side_name(r.side),
				    r.in_bytes, r.out_bytes);
		return check_still(z);
	}
	if ((uint64_t)ret != r.out_bytes || r.in_bytes != r.out_bytes || off != HUGE_OFF + ret ||
	    (size_t)ret > c.len || pread(z->out.fd, z->take, (size_t)ret, HUGE_OFF) != ret ||
	    check_bytes(z, z->take, (size_t)ret, (uint64_t)z->in_pos, "written near INT64_MAX") < 0)
		return fail(z, "an output offset near INT64_MAX: %zd, offset %" PRId64, ret, off);
	z->in_pos += ret;
	if (ftruncate(z->out.fd, (off_t)z->exp_len) < 0)
		return fail(z, "ftruncate: %s", strerror(errno));
	return check_still(z);
}

/* An fd number another kind for one call of its own (fz_swap.c): the
 * model's fds are as they were, and so must its next calls be. */
static int op_swap(struct fz *z, const struct fz_op *op)
{
	bool out = op->arg & 1;
	char msg[200];

	if (fz_swap(out ? z->out.fd : z->in.fd, !out, op->arg >> 1, z->tmpfs, msg,
		    sizeof(msg)) < 0)
		return fail(z, "%s", msg);
	return check_still(z);
}

static int run_op(struct fz *z, const struct fz_op *op)
{
	z->st->ops++;
	/* A stalled reader would hold a call that may wait for it forever
	 * (even PSPLICE_F_NONBLOCK may wait on a blocking socket): it stalls
	 * only an O_NONBLOCK output. */
	if (!(z->s->fdmode & 2))
		fz_sink_release(&z->out);
	switch (op->code) {
	case FZ_PNEW:
		return op_pnew(z, op);
	case FZ_PTAKE:
		return op_ptake(z, op);
	case FZ_PFREE:
		return op_pfree(z);
	case FZ_BAD:
		return op_bad(z, op);
	case FZ_HIOFF:
		return op_hioff(z, op);
	case FZ_SEEK:
		return op_seek(z, op);
	case FZ_SWAP:
		return op_swap(z, op);
	default:
		return op_transfer(z, op);
	}
}

/* What is left of a stream source must be exactly the bytes after the
 * last one the sink got: nothing taken was lost, nothing read twice. */
static int check_source(struct fz *z)
{
	uint64_t left = z->s->size - min_u64(z->s->size, z->src_next);
	size_t n, i;

	if (src_zero(z))
		return 0;
	if (is_file(z->s->in_kind)) {
		if (pread(z->in.fd, z->take, z->s->size, 0) != (ssize_t)z->s->size)
			return fail(z, "the source file cannot be read back");
		return check_bytes(z, z->take, z->s->size, 0, "the source file");
	}
	if (z->src_next > z->s->size)
		return fail(z, "%" PRIu64 " bytes reached the sink of a %" PRIu64 "-byte source",
			    z->src_next, z->s->size);
	n = fz_read_rest(z->in.fd, z->take, z->s->in_kind == FZ_PTY ? left : left + 1);
	if (n != left)
		return fail(z, "%zu bytes left in the source, model %" PRIu64, n, left);
	fz_gen(z->s->seed, false, z->src_next, z->buf, n);
	for (i = 0; i < n; i++)
		if (z->take[i] != z->buf[i])
			return fail(z, "the source's byte %" PRIu64 " left is %#x, want %#x",
				    z->src_next + i, z->take[i], z->buf[i]);
	return 0;
}

static int compare(struct fz *z, const uint8_t *got, size_t n, size_t want)
{
	size_t i;

	if (n != want)
		return fail(z, "the sink holds %zu bytes, model %zu", n, want);
	for (i = 0; i < n; i++)
		if (got[i] != z->exp[i])
			return fail(z, "the sink's byte %zu is %#x, model %#x", i, got[i],
				    z->exp[i]);
	return 0;
}

static int check_sink(struct fz *z)
{
	struct stat st;
	size_t want = z->exp_len;

	switch (z->s->out_kind) {
	case FZ_DEV:
		return 0;
	case FZ_TMPFS:
	case FZ_DISK:
		if (fstat(z->out.fd, &st) < 0 || st.st_size < 0 || (size_t)st.st_size > MAX_IMAGE)
			return fail(z, "the sink file's size %lld", (long long)st.st_size);
		if (pread(z->out.fd, z->take, (size_t)st.st_size, 0) != st.st_size)
			return fail(z, "the sink file cannot be read back");
		return compare(z, z->take, (size_t)st.st_size, want);
	}
	if (z->out.mode == FZ_CLOSE || z->out.mode == FZ_RESET)
		want = (size_t)min_u64(want, z->out.after);
	fz_sink_release(&z->out);
	fz_sink_wait(&z->out, want);
	close(z->out.fd);
	z->out.fd = -1;
	pthread_join(z->out.th, NULL);
	z->out.th_on = false;
	return compare(z, z->out.got, z->out.got_len, want);
}

static int finish(struct fz *z)
{
	z->step = (int)z->s->n;
	if (op_pfree(z) < 0 || check_sigpipe(z) < 0)
		return -1;
	if (check_source(z) < 0)
		return -1;
	return check_sink(z);
}

static void setup_ends(struct fz *z, const struct fz_seq *s)
{
	z->in = (struct fz_end){ .kind = s->in_kind % FZ_NKINDS, .fd = -1, .peer = -1,
				 .seed = s->seed, .size = s->size, .slow = s->slow_feed };
	z->out = (struct fz_end){ .kind = s->out_kind % FZ_NKINDS, .fd = -1, .peer = -1,
				  .mode = s->peer % FZ_NPEERS, .after = s->peer_after };
	/* A pty's reader that hangs up makes writes fail with EIO, not EPIPE:
	 * another contract, not this one's. */
	if (z->out.kind == FZ_PTY && (z->out.mode == FZ_CLOSE || z->out.mode == FZ_RESET))
		z->out.mode = FZ_FAST;
}

int fz_run(const struct fz_seq *s, const char *disk, const char *tmpfs,
	   struct fz_stats *st, const char **why)
{
	static struct fz z;
	static bool ready;
	int r = 0;
	size_t i;

	if (!ready) {
		fz_once(on_sigpipe, MAX_IMAGE, &z.buf, &z.take);
		ready = true;
	}
	sigpipes = 0;
	z.s = s;
	z.st = st;
	z.tmpfs = tmpfs;
	z.step = -1;
	z.why[0] = '\0';
	z.src_next = z.pending = 0;
	z.in_pos = z.in_off = z.out_pos = z.out_off = 0;
	z.exp_len = 0;
	z.pair = NULL;
	setup_ends(&z, s);
	st->seqs++;
	if (fz_source_open(&z.in, disk, tmpfs) < 0 || fz_sink_open(&z.out, disk, tmpfs) < 0) {
		fail(&z, "cannot make the endpoints (%s to %s): %s", fz_kind_name(z.in.kind),
		     fz_kind_name(z.out.kind), strerror(errno));
		r = -1;
	}
	if (!r && (s->fdmode & 1) && z.in.fd >= 0)
		fcntl(z.in.fd, F_SETFL, fcntl(z.in.fd, F_GETFL) | O_NONBLOCK);
	if (!r && (s->fdmode & 2) && z.out.fd >= 0)
		fcntl(z.out.fd, F_SETFL, fcntl(z.out.fd, F_GETFL) | O_NONBLOCK);
	if (!r && (s->fdmode & 4) && is_file(z.out.kind))
		fcntl(z.out.fd, F_SETFL, fcntl(z.out.fd, F_GETFL) | O_APPEND);
	fz_sink_settle(&z.out);
	for (i = 0; !r && i < s->n; i++) {
		z.step = (int)i;
		r = run_op(&z, &s->op[i]);
	}
	if (!r)
		r = finish(&z);
	if (z.pair)
		psplice_pair_free(z.pair);
	z.pair = NULL;
	fz_end_close(&z.out);
	fz_end_close(&z.in);
	if (r)
		st->failures++;
	*why = z.why;
	return r;
}
