/* psplice bench, group "per-call": what one psplice call costs over the raw
 * syscall a caller would write for the same move, where that cost shows, in
 * the moves a file server makes one request at a time: N bytes of a cached
 * file at an offset into /dev/null (sendfile) and into a pipe (splice), and
 * N bytes from a Unix socket into a file at an offset ("recvfile": splice
 * through a pipe the caller keeps), at 4 KiB, 64 KiB and 1 MiB; and a file
 * into a file, both at offsets (copy_file_range), where the kernel's own
 * answer tells a one-shot call what both fds are. The one-shot
 * calls give the word that SIGPIPE is ignored, as the pairs do (the bench
 * ignores it, as servers do); one row shows a call into a pipe without it.
 * A bare syscall's cost is measured beside them: it bounds what a call that
 * must ask the kernel anything can cost. The variants take turns in short
 * rounds so that a noisy neighbour hits them alike; the best round of each
 * counts. Only the moves are timed, not filling or draining between them. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bench.h"
#include "psplice.h"

#define GROUP "per-call"
#define SPAN (16u << 20) /* the moves walk the first 16 MiB of the files */
#define ROUNDS 7
#define BATCH_MAX 64
#define PIPE_CAP (1u << 20)
#define SOCK_BUF (8u << 20)
#define PROMISE PSPLICE_F_SIGPIPE_IGNORED

enum variant { RAW, ONESHOT, ONESHOT_BARE, COPY, PAIR, N_VARIANTS };
static const char *const variant_names[] = {
	"raw syscall", "psplice()", "psplice(), flags 0", "psplice_copy()",
	"psplice_pair_move()",
};

enum shape { TO_NULL, TO_PIPE, RECVFILE, TO_FILE, N_SHAPES };
static const char *const shape_names[] = {
	"file -> /dev/null", "file -> pipe", "unix -> file", "file -> file",
};

struct fds {
	int file, null, pr, pw;  /* the source, /dev/null, the pipe */
	int sw, sr, out;         /* the socket's two ends, recvfile's file */
	int kr, kw;              /* the raw recvfile's kept pipe */
	struct psplice_pair *pair[N_SHAPES];
};

struct run {
	struct fds *f;
	enum shape shape;
	enum variant v;
	size_t n;
	int64_t off;
};

static int64_t next_off(struct run *r)
{
	int64_t at = r->off;

	r->off = at + (int64_t)r->n >= SPAN ? 0 : at + (int64_t)r->n;
	return at;
}

/* One step of at most left bytes, the variant's way; > 0 moved. */
static ssize_t step(struct run *r, int in, int64_t *oi, int out, int64_t *oo, size_t left)
{
	loff_t li = oi ? *oi : 0, lo = oo ? *oo : 0;
	ssize_t m;

	switch (r->v) {
	case RAW:
		if (r->shape == TO_NULL) {
			m = sendfile(out, in, &li, left);
		} else if (r->shape == TO_FILE) {
			m = copy_file_range(in, &li, out, &lo, left, 0);
		} else {
			m = splice(in, oi ? &li : NULL, out, oo ? &lo : NULL, left, 0);
		}
		if (m > 0 && oi)
			*oi += m;
		if (m > 0 && oo)
			*oo += m;
		return m;
	case ONESHOT: return psplice(in, oi, out, oo, left, PROMISE);
	case ONESHOT_BARE: return psplice(in, oi, out, oo, left, 0);
	case COPY:
		return psplice_copy(in, oi, out, oo, left, PROMISE, NULL) ? -1 :
		       (ssize_t)psplice_last()->out_bytes;
	default: return psplice_pair_move(r->f->pair[r->shape], oi, oo, left, 0, NULL);
	}
}

/* Recvfile's raw way: the socket into a pipe kept for it, the pipe into
 * the file at the offset, as a server that splices by itself does. */
static bool raw_recvfile(struct run *r, int64_t *oo)
{
	loff_t lo = *oo;
	size_t done = 0;
	ssize_t m, k;

	while (done < r->n) {
		m = splice(r->f->sr, NULL, r->f->kw, NULL, r->n - done, 0);
		if (m <= 0)
			return false;
		for (k = 0; k < m;) {
			ssize_t w = splice(r->f->kr, NULL, r->f->out, &lo, (size_t)(m - k), 0);

			if (w <= 0)
				return false;
			k += w;
		}
		done += (size_t)m;
	}
	*oo = lo;
	return true;
}

/* One request: n bytes moved, whatever number of steps it takes. */
static bool move(struct run *r)
{
	struct fds *f = r->f;
	int64_t at = next_off(r), to = at, *oi = &at, *oo = NULL;
	int in = f->file, out = r->shape == TO_NULL ? f->null : f->pw;
	size_t done = 0;
	ssize_t m;

	if (r->shape == RECVFILE) {
		in = f->sr;
		out = f->out;
		oi = NULL;
		oo = &at;
		if (r->v == RAW)
			return raw_recvfile(r, oo);
	} else if (r->shape == TO_FILE) {
		out = f->out;
		oo = &to;
	}
	while (done < r->n) {
		m = step(r, in, oi, out, oo, r->n - done);
		if (m <= 0)
			return false;
		done += (size_t)m;
	}
	return true;
}

/* What the next batch of moves needs ready, untimed: the Unix socket
 * filled with as many requests as fit (at most BATCH_MAX). The batch's
 * size, or 0. */
static int batch_ready(struct run *r)
{
	static char buf[1 << 16];
	int k = 0;

	if (r->shape == TO_NULL || r->shape == TO_FILE)
		return BATCH_MAX;
	if (r->shape == TO_PIPE)
		return (int)(PIPE_CAP / r->n < BATCH_MAX ? PIPE_CAP / r->n : BATCH_MAX);
	for (; k < BATCH_MAX; k++) {
		size_t done = 0;
		ssize_t w;

		while (done < r->n) {
			w = send(r->f->sw, buf, r->n - done < sizeof(buf) ? r->n - done : sizeof(buf),
				 MSG_DONTWAIT);
			if (w <= 0)
				break;
			done += (size_t)w;
		}
		if (done < r->n)
			return k ? k : (done ? 0 : 0);
	}
	return k;
}

/* What a batch left behind, untimed: the pipe drained. */
static bool batch_done(struct run *r)
{
	ssize_t m;

	if (r->shape != TO_PIPE)
		return true;
	do
		m = splice(r->f->pr, NULL, r->f->null, NULL, PIPE_CAP, SPLICE_F_NONBLOCK);
	while (m > 0);
	return m == 0 || errno == EAGAIN;
}

/* ns per move over one round of about secs seconds; < 0 on a failure. */
static double round_ns(struct run *r, double secs)
{
	double spent = 0, t0, start = bench_now();
	long moves = 0;
	int k, i;

	do {
		k = batch_ready(r);
		if (k <= 0)
			return -1;
		t0 = bench_now();
		for (i = 0; i < k; i++)
			if (!move(r))
				return -1;
		spent += bench_now() - t0;
		moves += k;
		if (!batch_done(r))
			return -1;
	} while (bench_now() - start < secs);
	return spent * 1e9 / (double)moves;
}

static bool applies(enum shape s, enum variant v)
{
	/* Without the word, only an output that can raise SIGPIPE differs. */
	return v != ONESHOT_BARE || s == TO_PIPE;
}

static void size_name(char *buf, size_t size, size_t n)
{
	if (n >= (1u << 20))
		snprintf(buf, size, "%zu MiB", n >> 20);
	else
		snprintf(buf, size, "%zu KiB", n >> 10);
}

static void targets(const char *item)
{
	static const enum variant want[] = { ONESHOT, COPY, PAIR };
	char what[96];
	size_t i;

	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		snprintf(what, sizeof(what), "%s per call over raw, %.48s",
			 want[i] == PAIR ? "prepared pair" : variant_names[want[i]], item);
		bench_target_ratio(what, GROUP, item, variant_names[want[i]], variant_names[RAW],
				   false, 1.10, false);
	}
}

static void measure(struct fds *f, enum shape s, size_t n, double secs)
{
	struct run r = { .f = f, .shape = s, .n = n };
	double best[N_VARIANTS], ns;
	char item[64], sz[24];
	int round, v;

	size_name(sz, sizeof(sz), n);
	snprintf(item, sizeof(item), "%s %s", sz, shape_names[s]);
	for (v = 0; v < N_VARIANTS; v++)
		best[v] = -1;
	for (round = 0; round < ROUNDS; round++)
		for (v = 0; v < N_VARIANTS; v++) {
			if (!applies(s, (enum variant)v))
				continue;
			r.v = (enum variant)v;
			ns = round_ns(&r, secs / ROUNDS / N_VARIANTS);
			if (ns < 0) {
				bench_skip(GROUP, item, variant_names[v], "move failed: %s",
					   strerror(errno));
				return;
			}
			if (best[v] < 0 || ns < best[v])
				best[v] = ns;
		}
	for (v = 0; v < N_VARIANTS; v++)
		if (applies(s, (enum variant)v))
			bench_row(GROUP, item, variant_names[v], BENCH_NSCALL, best[v], -1, v == RAW,
				  v == RAW ? "best of 7 rounds, ns per move of N bytes" : "");
	targets(item);
}

/* The floor: a syscall that does nothing (getppid), in the same rounds'
 * fashion. Whatever a call asks the kernel before its move costs this. */
static void bare_syscall(double secs)
{
	double best = -1, t0, ns;
	int round, i;

	for (round = 0; round < ROUNDS; round++) {
		t0 = bench_now();
		for (i = 0; i < 4096; i++)
			syscall(SYS_getppid);
		ns = (bench_now() - t0) * 1e9 / 4096;
		if (best < 0 || ns < best)
			best = ns;
		if (bench_now() - t0 > secs)
			break;
	}
	bench_row(GROUP, "a syscall that does nothing", "getppid()", BENCH_NSCALL, best, -1, true,
		  "best of 7 rounds: what one more syscall adds to a call");
}

static int open_pipe(int *r, int *w)
{
	int p[2];

	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	*r = p[0];
	*w = p[1];
	return fcntl(p[1], F_SETPIPE_SZ, PIPE_CAP) < 0 ? -1 : 0;
}

static int open_socket(struct fds *f)
{
	int s[2], sz = SOCK_BUF;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, s) < 0)
		return -1;
	f->sw = s[0];
	f->sr = s[1];
	/* A batch of 1 MiB requests waits in the socket: past wmem_max only
	 * root may say so (SO_SNDBUFFORCE); otherwise fewer fit. */
	if (setsockopt(f->sw, SOL_SOCKET, SO_SNDBUFFORCE, &sz, sizeof(sz)) < 0)
		setsockopt(f->sw, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	return 0;
}

static int open_fds(struct fds *f, const char *src, const char *dst)
{
	*f = (struct fds){ .file = -1, .null = -1, .pr = -1, .pw = -1, .sw = -1, .sr = -1,
			   .out = -1, .kr = -1, .kw = -1 };
	f->file = open(src, O_RDONLY | O_CLOEXEC);
	f->null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	f->out = open(dst, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (f->file < 0 || f->null < 0 || f->out < 0 || open_pipe(&f->pr, &f->pw) < 0 ||
	    open_pipe(&f->kr, &f->kw) < 0 || open_socket(f) < 0)
		return -1;
	/* psplice bench ignores SIGPIPE for its whole run, as servers do. */
	f->pair[TO_NULL] = psplice_pair_new(f->file, f->null, PROMISE);
	f->pair[TO_PIPE] = psplice_pair_new(f->file, f->pw, PROMISE);
	f->pair[RECVFILE] = psplice_pair_new(f->sr, f->out, PROMISE);
	f->pair[TO_FILE] = psplice_pair_new(f->file, f->out, PROMISE);
	return f->pair[TO_NULL] && f->pair[TO_PIPE] && f->pair[RECVFILE] && f->pair[TO_FILE] ?
	       0 : -1;
}

static void close_fds(struct fds *f)
{
	int *fd[] = { &f->file, &f->null, &f->pr, &f->pw, &f->sw, &f->sr, &f->out, &f->kr, &f->kw };
	size_t i;

	for (i = 0; i < N_SHAPES; i++)
		psplice_pair_free(f->pair[i]);
	for (i = 0; i < sizeof(fd) / sizeof(fd[0]); i++)
		if (*fd[i] >= 0)
			close(*fd[i]);
}

void bench_percall(const struct bench_opts *o)
{
	static const size_t sizes[] = { 4096, 65536, 1 << 20 };
	char src[4096], dst[4096];
	size_t i, nsizes = o->quick ? 2 : 3;
	struct fds f;
	int s;

	snprintf(src, sizeof(src), "%s/percall-src", o->dir);
	snprintf(dst, sizeof(dst), "%s/percall-dst", o->dir);
	if (bench_make_file(src, SPAN) < 0 || open_fds(&f, src, dst) < 0) {
		bench_skip(GROUP, "all", "-", "cannot set up: %s", strerror(errno));
		close_fds(&f);
		unlink(src);
		unlink(dst);
		return;
	}
	bare_syscall(o->secs);
	for (i = 0; i < nsizes; i++)
		for (s = 0; s < N_SHAPES; s++)
			measure(&f, (enum shape)s, sizes[i], o->secs * 1.5);
	close_fds(&f);
	unlink(src);
	unlink(dst);
}
