/* psplice bench, group "per-call": what a psplice call costs over the raw
 * syscall it makes, for small transfers where that cost shows: 4 KiB and
 * 64 KiB from a cached file to /dev/null (sendfile), and through a pipe
 * (splice in, splice out). The variants take turns in short rounds so that
 * a noisy neighbour hits them alike; the best round of each counts. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/sendfile.h>
#include <unistd.h>

#include "bench.h"
#include "psplice.h"

#define GROUP "per-call"
#define SPAN (1 << 20)   /* the calls walk the first MiB of the file */
#define ROUNDS 7

enum variant { RAW, ONESHOT, PAIR, N_VARIANTS };
static const char *const variant_names[] = {
	"raw syscall", "psplice()", "psplice_pair_move()",
};

struct fds {
	int file, null, pr, pw;
	struct psplice_pair *to_null, *to_pipe, *from_pipe;
};

static int64_t next_off(int64_t *off, size_t n)
{
	int64_t at = *off;

	*off = at + (int64_t)n >= SPAN ? 0 : at + (int64_t)n;
	return at;
}

/* One sendfile-shaped call of n bytes, the variant's way. */
static bool call_sendfile(struct fds *f, enum variant v, size_t n, int64_t *off)
{
	int64_t at = next_off(off, n);
	off_t o = (off_t)at;

	switch (v) {
	case RAW: return sendfile(f->null, f->file, &o, n) == (ssize_t)n;
	case ONESHOT: return psplice(f->file, &at, f->null, NULL, n, 0) == (ssize_t)n;
	default: return psplice_pair_move(f->to_null, &at, NULL, n, 0, NULL) == (ssize_t)n;
	}
}

/* A file into the pipe and out of it into /dev/null: two calls. */
static bool call_splice(struct fds *f, enum variant v, size_t n, int64_t *off)
{
	int64_t at = next_off(off, n);
	loff_t o = at;

	switch (v) {
	case RAW:
		return splice(f->file, &o, f->pw, NULL, n, 0) == (ssize_t)n &&
		       splice(f->pr, NULL, f->null, NULL, n, 0) == (ssize_t)n;
	case ONESHOT:
		return psplice(f->file, &at, f->pw, NULL, n, 0) == (ssize_t)n &&
		       psplice(f->pr, NULL, f->null, NULL, n, 0) == (ssize_t)n;
	default:
		return psplice_pair_move(f->to_pipe, &at, NULL, n, 0, NULL) == (ssize_t)n &&
		       psplice_pair_move(f->from_pipe, NULL, NULL, n, 0, NULL) == (ssize_t)n;
	}
}

typedef bool (*call_fn)(struct fds *, enum variant, size_t, int64_t *);

/* ns per call over one round of about secs seconds; < 0 on a failed call. */
static double round_ns(struct fds *f, call_fn fn, enum variant v, size_t n, double secs)
{
	int64_t off = 0;
	long calls = 0, i;
	double t0 = bench_now(), t;

	do {
		for (i = 0; i < 256; i++)
			if (!fn(f, v, n, &off))
				return -1;
		calls += 256;
		t = bench_now();
	} while (t - t0 < secs);
	return (t - t0) * 1e9 / (double)calls;
}

static void measure(struct fds *f, const char *item, call_fn fn, size_t n, double secs)
{
	double best[N_VARIANTS], ns;
	char what[96];
	int r, v;

	for (v = 0; v < N_VARIANTS; v++)
		best[v] = -1;
	for (r = 0; r < ROUNDS; r++)
		for (v = 0; v < N_VARIANTS; v++) {
			ns = round_ns(f, fn, (enum variant)v, n, secs / ROUNDS);
			if (ns < 0) {
				bench_skip(GROUP, item, variant_names[v], "call failed: %s",
					   strerror(errno));
				return;
			}
			if (best[v] < 0 || ns < best[v])
				best[v] = ns;
		}
	for (v = 0; v < N_VARIANTS; v++)
		bench_row(GROUP, item, variant_names[v], BENCH_NSCALL, best[v], -1, v == RAW,
			  v == RAW ? "best of 7 rounds" : "");
	snprintf(what, sizeof(what), "psplice() per call over raw, %s", item);
	/* Two fstat calls classify the fds; under PTI each costs about what
	 * a 4 KiB sendfile does: 2.2x is what the one-shot call may cost. */
	bench_target_ratio(what, GROUP, item, variant_names[ONESHOT], variant_names[RAW],
			   false, 2.2, false);
	snprintf(what, sizeof(what), "prepared pair per call over raw, %s", item);
	bench_target_ratio(what, GROUP, item, variant_names[PAIR], variant_names[RAW],
			   false, 1.10, false);
}

static int open_fds(struct fds *f, const char *path)
{
	int p[2];

	*f = (struct fds){ .file = -1, .null = -1, .pr = -1, .pw = -1 };
	f->file = open(path, O_RDONLY | O_CLOEXEC);
	f->null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (f->file < 0 || f->null < 0 || pipe2(p, O_CLOEXEC) < 0)
		return -1;
	f->pr = p[0];
	f->pw = p[1];
	fcntl(f->pw, F_SETPIPE_SZ, 1 << 20);
	/* psplice bench ignores SIGPIPE for its whole run, as servers do. */
	f->to_null = psplice_pair_new(f->file, f->null, PSPLICE_F_SIGPIPE_IGNORED);
	f->to_pipe = psplice_pair_new(f->file, f->pw, PSPLICE_F_SIGPIPE_IGNORED);
	f->from_pipe = psplice_pair_new(f->pr, f->null, PSPLICE_F_SIGPIPE_IGNORED);
	return f->to_null && f->to_pipe && f->from_pipe ? 0 : -1;
}

static void close_fd(int fd)
{
	if (fd >= 0)
		close(fd);
}

static void close_fds(struct fds *f)
{
	psplice_pair_free(f->to_null);
	psplice_pair_free(f->to_pipe);
	psplice_pair_free(f->from_pipe);
	close_fd(f->file);
	close_fd(f->null);
	close_fd(f->pr);
	close_fd(f->pw);
}

void bench_percall(const struct bench_opts *o)
{
	static const size_t sizes[] = { 4096, 65536 };
	struct fds f = { .file = -1, .null = -1, .pr = -1, .pw = -1 };
	char path[4096], item[64];
	size_t i;

	snprintf(path, sizeof(path), "%s/percall-src", o->dir);
	if (bench_make_file(path, SPAN) < 0 || open_fds(&f, path) < 0) {
		bench_skip(GROUP, "all", "-", "cannot set up: %s", strerror(errno));
		close_fds(&f);
		unlink(path);
		return;
	}
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		snprintf(item, sizeof(item), "%zu KiB file -> /dev/null", sizes[i] / 1024);
		measure(&f, item, call_sendfile, sizes[i], o->secs * 1.5);
		snprintf(item, sizeof(item), "%zu KiB file -> pipe -> /dev/null",
			 sizes[i] / 1024);
		measure(&f, item, call_splice, sizes[i], o->secs * 1.5);
	}
	close_fds(&f);
	unlink(path);
}
