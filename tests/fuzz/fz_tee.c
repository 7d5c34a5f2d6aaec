/* The differential fuzzer's model of fan-out (psplice_tee_*): one source,
 * up to four sinks of any kind, each read by a thread that may read at
 * once, slowly, stall, or leave after some bytes; random moves, copies and
 * takes with random flags and hold_max. At every call the model checks
 * each sink's result (a sink that is in takes every byte the step took; a
 * sink that is out says its error again and takes nothing), the pending
 * count of every sink (pending + in - out - taken; a sink that is out may
 * drop what it held, never gain), that a sink fails only
 * because its reader left and fails alone, that pending bytes stay within
 * hold_max plus one step, and that a blocking call leaves nothing pending;
 * psplice_tee_take() hands back the sink's next bytes. At the end every
 * sink holds every byte of the stream (a sink whose reader left, a prefix
 * of it) and a stream source is drained. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fz_int.h"
#include "psplice.h"

#define TEE_SINKS 4
#define TEE_IMAGE (8u << 20)

struct tsink {
	struct fz_end e;
	uint64_t in, out, taken;  /* the model: taken for it, delivered, handed back */
	int error;                /* it is out, with this error */
};

struct tz {
	struct fz_end src;
	struct tsink k[TEE_SINKS];
	size_t n;
	size_t hold_max;
	bool nofallback, stuck;
	struct psplice_tee *t;
	uint64_t total;           /* bytes taken from the source */
	struct fz_stats *st;
	int step;
	uint8_t *buf, *want;
	char why[512];
};

static volatile sig_atomic_t tee_sigpipes;

static void on_sigpipe(int sig)
{
	(void)sig;
	tee_sigpipes++;
}

static int fail(struct tz *z, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(z->why, sizeof(z->why), "step %d: ", z->step);

	va_start(ap, fmt);
	vsnprintf(z->why + n, sizeof(z->why) - (size_t)n, fmt, ap);
	va_end(ap);
	return -1;
}

static uint32_t rnd(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(*s >> 33);
}

/* FZ_TRACE in the environment: each call and each sink's result. */
static void trace(const struct tz *z, const char *what, long ret,
		  const struct psplice_result *res)
{
	if (!getenv("FZ_TRACE"))
		return;
	fprintf(stderr, "fz-tee %d: %s = %ld (%s, side %d, in %" PRIu64 ")\n", z->step, what,
		ret, strerror(psplice_last()->error), psplice_last()->side,
		psplice_last()->in_bytes);
	for (size_t i = 0; res && i < z->n; i++)
		fprintf(stderr, "  sink %zu %s mode %d: in %" PRIu64 " out %" PRIu64
			" error %d side %d method %d pending %zu\n", i,
			fz_kind_name(z->k[i].e.kind), z->k[i].e.mode, res[i].in_bytes,
			res[i].out_bytes, res[i].error, res[i].side, res[i].method,
			psplice_tee_pending(z->t, i));
}

static bool is_file(int kind)
{
	return kind == FZ_TMPFS || kind == FZ_DISK;
}

static uint64_t max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

static uint64_t pending_of(const struct tsink *s)
{
	return s->in - s->out - s->taken;
}

static uint64_t a_len(uint64_t *r)
{
	static const uint64_t sizes[] = { 0, 1, 4095, 4096, 4097, 65536, 65543,
					  131085, 1 << 20 };

	if (rnd(r) % 4 == 0)
		return rnd(r) % (3u << 20);
	return sizes[rnd(r) % (sizeof(sizes) / sizeof(sizes[0]))];
}

/* Sink files are opened here: the shared helper names one file per run. */
static int open_sink_file(struct fz_end *e, const char *dir, size_t i)
{
	snprintf(e->path, sizeof(e->path), "%s/fz-%d-tee%zu", dir, (int)getpid(), i);
	e->fd = open(e->path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	return e->fd < 0 ? -1 : 0;
}

static int open_sink(struct tz *z, size_t i, uint64_t *r, const char *disk,
		     const char *tmpfs)
{
	static const int kinds[] = { FZ_TMPFS, FZ_DISK, FZ_PIPE, FZ_UNIX, FZ_TCP, FZ_DEV };
	struct fz_end *e = &z->k[i].e;
	int fl;

	*e = (struct fz_end){ .kind = kinds[rnd(r) % 6], .fd = -1, .peer = -1,
			      .mode = (int)(rnd(r) % FZ_NPEERS) };
	if (e->mode == FZ_CLOSE || e->mode == FZ_RESET)
		e->after = rnd(r) % 3 == 0 ? 0 : rnd(r) % (2u << 20);
	if (is_file(e->kind)) {
		if (open_sink_file(e, e->kind == FZ_DISK ? disk : tmpfs, i) < 0)
			return -1;
		/* splice(2) refuses an O_APPEND file: the copy in memory. */
		if (rnd(r) % 3 == 0)
			fcntl(e->fd, F_SETFL, fcntl(e->fd, F_GETFL) | O_APPEND);
		return 0;
	}
	if (fz_sink_open(e, disk, tmpfs) < 0)
		return -1;
	fl = fcntl(e->fd, F_GETFL);
	if (e->kind != FZ_DEV && rnd(r) % 2)
		fcntl(e->fd, F_SETFL, fl | O_NONBLOCK);
	return 0;
}

static int open_ends(struct tz *z, uint64_t *r, const char *disk, const char *tmpfs)
{
	static const int kinds[] = { FZ_TMPFS, FZ_DISK, FZ_PIPE, FZ_UNIX, FZ_TCP };

	z->src = (struct fz_end){ .kind = kinds[rnd(r) % 5], .fd = -1, .peer = -1,
				  .seed = rnd(r), .size = a_len(r), .slow = rnd(r) % 4 == 0 };
	if (fz_source_open(&z->src, disk, tmpfs) < 0)
		return fail(z, "cannot open the source: %s", strerror(errno));
	if (!is_file(z->src.kind) && rnd(r) % 3 == 0)
		fcntl(z->src.fd, F_SETFL, fcntl(z->src.fd, F_GETFL) | O_NONBLOCK);
	z->n = 1 + rnd(r) % TEE_SINKS;
	for (size_t i = 0; i < z->n; i++) {
		if (open_sink(z, i, r, disk, tmpfs) < 0)
			return fail(z, "cannot open sink %zu: %s", i, strerror(errno));
		fz_sink_settle(&z->k[i].e);
	}
	return 0;
}

/* A call that may wait: stalled readers read from now on. With
 * PSPLICE_F_NONBLOCK only a sink that is a pipe or O_NONBLOCK is promised
 * not to make the call wait (psplice.h): the others are released too. */
static void release(struct tz *z, unsigned int flags)
{
	for (size_t i = 0; i < z->n; i++) {
		struct fz_end *e = &z->k[i].e;

		if (!(flags & PSPLICE_F_NONBLOCK) ||
		    (e->kind != FZ_PIPE && !(fcntl(e->fd, F_GETFL) & O_NONBLOCK)))
			fz_sink_release(e);
	}
}

/* Whether sink i may have failed with err: when its reader left, or
 * under PSPLICE_F_NOFALLBACK when it would need write(2) (an O_APPEND
 * file, pending bytes past the budget of pipes). */
static bool may_fail(const struct tz *z, const struct tsink *s, int err)
{
	if (z->nofallback && err == EOPNOTSUPP)
		return true;
	if (s->e.mode != FZ_CLOSE && s->e.mode != FZ_RESET)
		return false;
	return err == EPIPE || err == ECONNRESET;
}

/* One sink's result of a move or copy. took: the bytes the call took
 * from the source while this sink was in (a move's step, or the copy's
 * most). */
static int check_sink_result(struct tz *z, size_t i, const struct psplice_result *r,
			     uint64_t took, bool copy)
{
	struct tsink *s = &z->k[i];

	if (s->error) {
		if (r->error != s->error || r->in_bytes || r->out_bytes)
			return fail(z, "sink %zu is out (%s) and says %s, in %" PRIu64
				    " out %" PRIu64, i, strerror(s->error),
				    strerror(r->error), r->in_bytes, r->out_bytes);
		return 0;
	}
	/* One that fails delivering what it held before the step takes none
	 * of the step's bytes. */
	if (copy || (r->error && r->error != EAGAIN && r->error != EINTR) ?
	    r->in_bytes > took : r->in_bytes != took)
		return fail(z, "sink %zu took %" PRIu64 ", the call %" PRIu64, i, r->in_bytes,
			    took);
	if (r->out_bytes > pending_of(s) + r->in_bytes)
		return fail(z, "sink %zu delivered %" PRIu64 " of %" PRIu64, i, r->out_bytes,
			    pending_of(s) + r->in_bytes);
	if (r->error && r->side != PSPLICE_SIDE_OUT)
		return fail(z, "sink %zu failed (%s) on side %d", i, strerror(r->error), r->side);
	s->in += r->in_bytes;
	s->out += r->out_bytes;
	if (r->error && r->error != EAGAIN && r->error != EINTR) {
		if (!may_fail(z, s, r->error))
			return fail(z, "sink %zu failed with %s, its reader did not leave", i,
				    strerror(r->error));
		s->error = r->error;
	}
	return 0;
}

/* Every sink's pending count against the model. bound: the most a sink
 * still in may hold after the call, 0 for no bound. A step that took k
 * bytes leaves no sink holding more than hold_max, or than k when none
 * held any before it; a step that took nothing adds to no sink. */
static int check_pending(struct tz *z, uint64_t bound, bool blocking_done)
{
	for (size_t i = 0; i < z->n; i++) {
		struct tsink *s = &z->k[i];
		size_t p = psplice_tee_pending(z->t, i);

		/* A sink that is out keeps what it held, for take: nothing
		 * taken is dropped. */
		if (p != pending_of(s))
			return fail(z, "sink %zu pending %zu, model %" PRIu64, i, p, pending_of(s));
		if (s->error)
			continue;
		if (bound && p > bound)
			return fail(z, "sink %zu holds %zu, hold_max %zu, bound %" PRIu64, i, p,
				    z->hold_max, bound);
		if (blocking_done && p)
			return fail(z, "sink %zu holds %zu after a blocking call", i, p);
	}
	return 0;
}

static int check_return(struct tz *z, long ret, int err, const struct psplice_result *last)
{
	const struct psplice_result *pl = psplice_last();

	if ((ret < 0) != (last->error != 0))
		return fail(z, "returned %ld with error %s", ret, strerror(last->error));
	if (ret < 0 && err != last->error)
		return fail(z, "errno %s, result %s", strerror(err), strerror(last->error));
	if (pl->error != last->error || pl->in_bytes != last->in_bytes)
		return fail(z, "psplice_last() is not the call's result");
	/* No step may go through memory: one that must fails, and the
	 * stream stops there for every sink. */
	if (z->nofallback && last->error == EOPNOTSUPP) {
		z->stuck = true;
		return 0;
	}
	if (last->error && last->error != EAGAIN && last->error != EINTR) {
		for (size_t i = 0; i < z->n; i++)
			if (z->k[i].error == last->error)
				return 0;
		return fail(z, "the call failed with %s, side %d, no sink did",
			    strerror(last->error), last->side);
	}
	return 0;
}

/* psplice_tee_move: last is the step's result. */
static int op_move(struct tz *z, uint64_t *r)
{
	struct psplice_result res[TEE_SINKS], last;
	unsigned int flags = rnd(r) % 2 ? PSPLICE_F_NONBLOCK : 0;
	size_t len = (size_t)a_len(r);
	ssize_t ret;
	int err;

	if (rnd(r) % 4 == 0)
		flags |= PSPLICE_F_MORE;
	release(z, flags);
	ret = psplice_tee_move(z->t, len, flags, res);
	err = errno;
	last = *psplice_last();
	trace(z, flags & PSPLICE_F_NONBLOCK ? "move nonblock" : "move", ret, res);
	if (ret >= 0 && (uint64_t)ret != last.in_bytes)
		return fail(z, "move returned %zd, in_bytes %" PRIu64, ret, last.in_bytes);
	if (last.in_bytes > len)
		return fail(z, "move took %" PRIu64 " of %zu", last.in_bytes, len);
	z->total += last.in_bytes;
	for (size_t i = 0; i < z->n; i++)
		if (check_sink_result(z, i, &res[i], last.in_bytes, false) < 0)
			return -1;
	if (check_return(z, (long)ret, err, &last) < 0)
		return -1;
	return check_pending(z, last.in_bytes ? max_u64(z->hold_max, last.in_bytes) : 0,
			     !(flags & PSPLICE_F_NONBLOCK) && ret > 0);
}

static int op_copy(struct tz *z, uint64_t len, unsigned int flags)
{
	struct psplice_result res[TEE_SINKS], last;
	int ret, err;

	release(z, flags);
	ret = psplice_tee_copy(z->t, len, flags, res);
	err = errno;
	last = *psplice_last();
	trace(z, flags & PSPLICE_F_NONBLOCK ? "copy nonblock" : "copy", ret, res);
	if (len != PSPLICE_TO_EOF && last.in_bytes > len)
		return fail(z, "copy took %" PRIu64 " of %" PRIu64, last.in_bytes, len);
	/* A copy of no byte makes no step: every result is empty. */
	for (size_t i = 0; !len && i < z->n; i++)
		if (ret || res[i].error || res[i].in_bytes || res[i].out_bytes)
			return fail(z, "a copy of 0 bytes returned %d, sink %zu error %d", ret,
				    i, res[i].error);
	if (!len)
		return check_pending(z, 0, false);
	z->total += last.in_bytes;
	for (size_t i = 0; i < z->n; i++)
		if (check_sink_result(z, i, &res[i], last.in_bytes, true) < 0)
			return -1;
	if (check_return(z, ret, err, &last) < 0)
		return -1;
	/* A step takes at most 1 MiB (a pipe grown to its most). */
	return check_pending(z, last.in_bytes ? max_u64(z->hold_max, 1u << 20) : 0,
			     !(flags & PSPLICE_F_NONBLOCK) && !ret);
}

/* Write bytes handed back to the sink itself, so that it still holds the
 * whole stream; a sink that is out takes none. The driver's own write
 * into a sink whose reader left must not count as the library's SIGPIPE. */
static void put_back(struct tsink *s, const uint8_t *p, size_t n)
{
	struct pollfd pf = { .fd = s->e.fd, .events = POLLOUT };
	struct timespec zero = { 0, 0 };
	sigset_t set, old;
	int i;

	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	fz_sink_release(&s->e);
	for (i = 0; n && !s->error && i < 20000; i++) {
		ssize_t w = write(s->e.fd, p, n);

		if (w > 0) {
			p += w;
			n -= (size_t)w;
		} else if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
			poll(&pf, 1, 100);
		} else {
			break;
		}
	}
	while (sigtimedwait(&set, NULL, &zero) == SIGPIPE)
		;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static int op_take(struct tz *z, uint64_t *r)
{
	size_t i = rnd(r) % z->n, want = (size_t)a_len(r), got;
	struct tsink *s = &z->k[i];
	uint64_t pend = pending_of(s), at = s->out + s->taken;

	if (want > TEE_IMAGE)
		want = TEE_IMAGE;
	got = psplice_tee_take(z->t, i, z->buf, want);
	trace(z, "take", (long)got, NULL);
	if (got != (want < pend ? want : pend))
		return fail(z, "take of %zu from sink %zu gave %zu, pending %" PRIu64, want, i,
			    got, pend);
	fz_gen(z->src.seed, false, at, z->want, got);
	if (memcmp(z->buf, z->want, got))
		return fail(z, "take from sink %zu: not the stream's bytes at %" PRIu64, i, at);
	s->taken += got;
	put_back(s, z->buf, got);
	return check_pending(z, 0, false);
}

static int run_op(struct tz *z, uint64_t *r)
{
	unsigned int fl = rnd(r) % 2 ? PSPLICE_F_NONBLOCK : 0;

	z->st->ops++;
	switch (rnd(r) % 5) {
	case 0: case 1:
		return op_move(z, r);
	case 2:
		return op_copy(z, rnd(r) % 2 ? PSPLICE_TO_EOF : a_len(r), fl);
	default:
		return op_take(z, r);
	}
}

/* What sink i holds: its file, or what its reader read. */
static int sink_bytes(struct tz *z, struct tsink *s, const uint8_t **p, size_t *n)
{
	struct stat st;

	if (is_file(s->e.kind)) {
		if (fstat(s->e.fd, &st) < 0 || (uint64_t)st.st_size > TEE_IMAGE ||
		    pread(s->e.fd, z->buf, (size_t)st.st_size, 0) != st.st_size)
			return fail(z, "a sink file cannot be read back");
		*p = z->buf;
		*n = (size_t)st.st_size;
		return 0;
	}
	fz_sink_release(&s->e);
	fz_sink_wait(&s->e, s->out + s->taken);
	close(s->e.fd);
	s->e.fd = -1;
	if (s->e.th_on)
		pthread_join(s->e.th, NULL);
	s->e.th_on = false;
	*p = s->e.got;
	*n = s->e.got_len;
	return 0;
}

/* What a sink still in holds at the end: the stream, or as much of it as
 * its reader read before it left (all of it may have reached the socket's
 * buffer before). */
static uint64_t sink_want(const struct tz *z, const struct tsink *s)
{
	if ((s->e.mode == FZ_CLOSE || s->e.mode == FZ_RESET) && s->e.kind != FZ_DEV &&
	    !is_file(s->e.kind) && s->e.after < z->src.size)
		return s->e.after;
	return z->src.size;
}

/* Every byte of every sink: the stream from its start, all of it for a
 * sink still in, a prefix for one whose reader left. */
static int check_sinks(struct tz *z)
{
	const uint8_t *p = NULL;
	size_t n = 0;

	for (size_t i = 0; i < z->n; i++) {
		struct tsink *s = &z->k[i];

		if (s->e.kind == FZ_DEV)
			continue;
		if (sink_bytes(z, s, &p, &n) < 0)
			return -1;
		if (!s->error && !z->stuck && n != sink_want(z, s))
			return fail(z, "sink %zu holds %zu of %" PRIu64 " bytes", i, n,
				    sink_want(z, s));
		if (n > z->src.size)
			return fail(z, "sink %zu holds %zu bytes of %" PRIu64, i, n, z->src.size);
		fz_gen(z->src.seed, false, 0, z->want, n);
		for (size_t j = 0; j < n; j++)
			if (p[j] != z->want[j])
				return fail(z, "sink %zu: byte %zu is %#x, want %#x", i, j, p[j],
					    z->want[j]);
		z->st->bytes += n;
	}
	return 0;
}

/* The end: a blocking copy to the end of input (again while an O_NONBLOCK
 * source has nothing yet or an O_NONBLOCK sink no room: the fd's own flag
 * says not to wait), then every
 * byte checked; a stream source must be drained. */
static int finish(struct tz *z)
{
	struct pollfd pf = { .fd = z->src.fd, .events = POLLIN };
	bool any = false;

	z->step = -2;
	for (int round = 0; round < 20000; round++) {
		if (op_copy(z, PSPLICE_TO_EOF, 0) < 0)
			return -1;
		if (psplice_last()->error != EAGAIN)
			break;
		poll(&pf, psplice_last()->side == PSPLICE_SIDE_IN, 5);
	}
	for (size_t i = 0; i < z->n; i++)
		any |= !z->k[i].error;
	if (any && !z->stuck && z->total != z->src.size)
		return fail(z, "%" PRIu64 " of %" PRIu64 " bytes taken", z->total, z->src.size);
	if (tee_sigpipes)
		return fail(z, "SIGPIPE reached the caller %d times", (int)tee_sigpipes);
	return check_sinks(z);
}

static void close_all(struct tz *z)
{
	psplice_tee_free(z->t);
	z->t = NULL;
	for (size_t i = 0; i < z->n; i++)
		fz_end_close(&z->k[i].e);
	fz_end_close(&z->src);
}

int fz_tee_run(uint64_t seed, size_t steps, const char *disk, const char *tmpfs,
	       struct fz_stats *st, const char **why)
{
	static const size_t holds[] = { 0, 4096, 65536, 1 << 20 };
	static struct tz z;
	uint64_t r = seed * 2654435761u + 1;
	int fds[TEE_SINKS], ret;

	if (!z.buf)
		fz_once(on_sigpipe, TEE_IMAGE, &z.buf, &z.want);
	memset(z.k, 0, sizeof(z.k));
	z.total = 0;
	z.stuck = false;
	z.st = st;
	z.step = -1;
	z.why[0] = '\0';
	z.n = 0;
	tee_sigpipes = 0;
	st->seqs++;
	ret = open_ends(&z, &r, disk, tmpfs);
	z.hold_max = holds[rnd(&r) % 4];
	for (size_t i = 0; i < z.n; i++)
		fds[i] = z.k[i].e.fd;
	if (!ret) {
		z.nofallback = rnd(&r) % 4 == 0;
		z.t = psplice_tee_new(z.src.fd, fds, z.n, z.hold_max,
				      z.nofallback ? PSPLICE_F_NOFALLBACK : 0);
		if (!z.t)
			ret = fail(&z, "psplice_tee_new: %s", strerror(errno));
	}
	for (size_t k = 0; !ret && k < steps; k++) {
		z.step = (int)k;
		ret = run_op(&z, &r);
	}
	if (!ret)
		ret = finish(&z);
	close_all(&z);
	if (ret)
		st->failures++;
	*why = z.why;
	return ret;
}
