/* psplice bench, group "tee": psplice tee against GNU tee, 1 GiB from a
 * pipe to 1, 2 and 4 files on tmpfs and to /dev/null alone (standard
 * output is /dev/null in every item). A feeder process vmsplices one
 * buffer into the pipe over and over, so that making the bytes costs
 * little and nothing of it is counted: the figures are the tee process's
 * own (wait4), from its start to its exit.
 *
 * A best-of-N figure per variant follows GNU tee's own CPU per GiB, which
 * moves by a sixth from run to run on a shared machine. So the item runs in
 * rounds, psplice tee and GNU tee back to back in each, in turns first, and
 * the figure compared with the goals is the median of the rounds' own
 * ratios, with the smallest and the largest; each row gives its variant's
 * median run. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <linux/magic.h>
#include <unistd.h>

#include "bench.h"

#define MiB ((uint64_t)1 << 20)
#define GiB ((uint64_t)1 << 30)
#define FEED_BUF (1u << 20)
#define MAX_FILES 4
/* Rounds of the item the goals are taken on, and of every other item (and
 * the fewest of any): past ITEM_SECS, as on a loaded machine where GNU tee
 * takes 8 s to four files, no round begins after the fewest. */
#define ROUNDS_GOAL 7
#define ROUNDS_MIN 3
#define ITEM_SECS 40.0
#define PS_TEE "psplice tee"
#define GNU_TEE "tee"

static const char *const file_names[MAX_FILES] = { "t1", "t2", "t3", "t4" };

/* The feeder: size bytes of one random buffer, vmspliced (no copy). */
static void feed(int fd, uint64_t size)
{
	static unsigned char *buf;
	uint64_t done = 0;
	struct iovec iov;
	ssize_t n;

	buf = aligned_alloc(4096, FEED_BUF);
	if (!buf)
		_exit(1);
	for (size_t i = 0; i < FEED_BUF; i++)
		buf[i] = (unsigned char)(random() >> 7);
	while (done < size) {
		iov.iov_base = buf + done % FEED_BUF;
		iov.iov_len = FEED_BUF - done % FEED_BUF;
		if (iov.iov_len > size - done)
			iov.iov_len = (size_t)(size - done);
		n = vmsplice(fd, &iov, 1, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			_exit(1);
		done += (uint64_t)n;
	}
	_exit(0);
}

static pid_t start(int in, const char *dir, char *const argv[])
{
	pid_t pid = fork();
	int null;

	if (pid)
		return pid;
	null = open("/dev/null", O_WRONLY);
	if (null < 0 || dup2(in, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0 ||
	    chdir(dir) < 0)
		_exit(126);
	execvp(argv[0], argv);
	_exit(127);
}

/* One run of argv on size bytes: wall seconds and the CPU seconds of the
 * tee process. 0, or the exit status. */
static int run_once(char *const argv[], const char *dir, uint64_t size, double *wall,
		    double *cpu)
{
	struct rusage ru = { 0 };
	pid_t feeder, tee;
	int p[2], st = 0, fst = 0;
	double t0;

	if (pipe2(p, O_CLOEXEC) < 0)
		return errno;
	feeder = fork();
	if (feeder == 0) {
		close(p[0]);
		feed(p[1], size);
	}
	close(p[1]);
	t0 = bench_now();
	tee = feeder < 0 ? -1 : start(p[0], dir, argv);
	close(p[0]);
	if (tee < 0 || wait4(tee, &st, 0, &ru) < 0)
		st = -1;
	*wall = bench_now() - t0;
	*cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	if (feeder > 0)
		waitpid(feeder, &fst, 0);
	if (st)
		return WIFEXITED(st) ? WEXITSTATUS(st) : st;
	return WIFEXITED(fst) && !WEXITSTATUS(fst) ? 0 : 125;
}

struct variant {
	const char *name;
	char *argv[MAX_FILES + 3];
	double wall[ROUNDS_GOAL], cpu[ROUNDS_GOAL]; /* each run's, in order */
	int runs, status;
};

/* psplice tee over GNU tee in each round both ran: speed and CPU. */
struct ratios {
	double speed[ROUNDS_GOAL], cpu[ROUNDS_GOAL];
	int n;
};

static void remove_files(const char *dir)
{
	char path[4200 + 8]; /* dir is at most 4200 bytes, the names 2 */

	for (int i = 0; i < MAX_FILES; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, file_names[i]);
		unlink(path);
	}
}

/* Run x once more unless it failed before; 1 when this run counts. */
static int run_variant(struct variant *x, const char *dir, uint64_t size)
{
	if (x->status)
		return 0;
	remove_files(dir);
	x->status = run_once(x->argv, dir, size, &x->wall[x->runs], &x->cpu[x->runs]);
	if (x->status)
		return 0;
	x->runs++;
	return 1;
}

/* One round: psplice tee (v[0]) first in even rounds, GNU tee (v[1]) in
 * odd ones, so that a load that comes or goes weighs on both alike over
 * the rounds. The round's ratios are kept when both ran. */
static void one_round(struct variant v[2], int round, const char *dir, uint64_t size,
		      struct ratios *q)
{
	const struct variant *ps = &v[0], *gnu = &v[1];
	int ran = run_variant(&v[round % 2], dir, size);
	double ps_wall, gnu_cpu;

	ran += run_variant(&v[1 - round % 2], dir, size);
	if (ran < 2)
		return;
	ps_wall = ps->wall[ps->runs - 1];
	gnu_cpu = gnu->cpu[gnu->runs - 1];
	if (ps_wall <= 0 || gnu_cpu <= 0)
		return;
	q->speed[q->n] = gnu->wall[gnu->runs - 1] / ps_wall;
	q->cpu[q->n] = ps->cpu[ps->runs - 1] / gnu_cpu;
	q->n++;
}

/* The median of n ratios, and in lo and hi the smallest and the largest. */
static double spread(const double *ratio, int n, double *lo, double *hi)
{
	double s[ROUNDS_GOAL], m;

	memcpy(s, ratio, (size_t)n * sizeof(*s));
	m = bench_median(s, n);
	*lo = s[0];
	*hi = s[n - 1];
	return m;
}

/* psplice tee's row says how far the rounds' ratios spread. */
static void ratios_note(const struct ratios *q, char *buf, size_t n)
{
	double lo, hi, clo, chi;

	if (!q->n) {
		snprintf(buf, n, "no round with both");
		return;
	}
	spread(q->speed, q->n, &lo, &hi);
	spread(q->cpu, q->n, &clo, &chi);
	snprintf(buf, n, "per round %.2f-%.2fx the speed, %.2f-%.2fx the CPU", lo, hi,
		 clo, chi);
}

static void report(const struct variant *x, const char *name, double gib, bool gnu,
		   const struct ratios *q)
{
	double wall[ROUNDS_GOAL], cpu[ROUNDS_GOAL], w;
	char note[256], rounds[96] = "";

	if (x->status && !x->runs) {
		bench_skip("tee", name, x->name, "exit status %d", x->status);
		return;
	}
	memcpy(wall, x->wall, sizeof(wall));
	memcpy(cpu, x->cpu, sizeof(cpu));
	w = bench_median(wall, x->runs);
	if (!gnu)
		ratios_note(q, rounds, sizeof(rounds));
	snprintf(note, sizeof(note), "%s%.4f s, median of %d%s; %s%sthe tee process only",
		 gnu ? "coreutils; " : "", w, x->runs, x->status ? " (then failed)" : "",
		 rounds, *rounds ? "; " : "");
	bench_row("tee", name, x->name, BENCH_GIBPS, gib / w, bench_median(cpu, x->runs) / gib,
		  gnu, note);
}

static void item(const struct bench_opts *o, const char *dir, int files, uint64_t size,
		 struct ratios *q)
{
	struct variant v[2] = { { .name = PS_TEE }, { .name = GNU_TEE } };
	double gib = (double)size / BENCH_GiB, t0 = bench_now();
	int rounds = files == MAX_FILES && !o->quick ? ROUNDS_GOAL : ROUNDS_MIN;
	char name[64];

	if (files)
		snprintf(name, sizeof(name), "%.0f MiB pipe -> %d file%s on tmpfs",
			 (double)size / MiB, files, files > 1 ? "s" : "");
	else
		snprintf(name, sizeof(name), "%.0f MiB pipe -> /dev/null", (double)size / MiB);
	v[0].argv[0] = (char *)o->self;
	v[0].argv[1] = "tee";
	v[1].argv[0] = "tee";
	for (int i = 0; i < files; i++) {
		v[0].argv[2 + i] = (char *)file_names[i];
		v[1].argv[1 + i] = (char *)file_names[i];
	}
	q->n = 0;
	for (int r = 0; r < rounds && (r < ROUNDS_MIN || bench_now() - t0 < ITEM_SECS); r++)
		one_round(v, r, dir, size, q);
	remove_files(dir);
	for (int i = 0; i < 2; i++)
		report(&v[i], name, gib, i == 1, q);
}

/* The goals: the median of the rounds' ratios, with the smallest and the
 * largest, on the four files item. */
static void targets(const char *item4, const struct ratios *q)
{
	static const char speed[] = "psplice tee vs tee, 4 files, speed";
	static const char cpu[] = "psplice tee vs tee, 4 files, CPU per GiB";
	double lo, hi, m;
	char why[160];

	if (!q->n) {
		snprintf(why, sizeof(why), "not measured: %s", item4);
		bench_target_missing(speed, 3.0, true, why);
		bench_target_missing(cpu, 0.3, false, why);
		return;
	}
	m = spread(q->speed, q->n, &lo, &hi);
	snprintf(why, sizeof(why), "median of %d rounds' %s over %s (min %.2f, max %.2f; %s)",
		 q->n, PS_TEE, GNU_TEE, lo, hi, item4);
	bench_target_ratio_of(speed, m, 3.0, true, why);
	m = spread(q->cpu, q->n, &lo, &hi);
	snprintf(why, sizeof(why), "median of %d rounds' CPU of %s over %s (min %.2f, max %.2f; %s)",
		 q->n, PS_TEE, GNU_TEE, lo, hi, item4);
	bench_target_ratio_of(cpu, m, 0.3, false, why);
}

/* A tmpfs of our own as root (empty, large enough), else /dev/shm. 1 when
 * mounted, 0 when not, -1 when there is none. */
static int tmpfs_dir(const struct bench_opts *o, uint64_t need, char *dir, size_t n)
{
	char opts[64];
	struct statfs s;

	if (o->root) {
		snprintf(dir, n, "%s/tee-tmpfs", o->dir);
		snprintf(opts, sizeof(opts), "size=%lluk,mode=0700",
			 (unsigned long long)(need >> 10));
		if ((mkdir(dir, 0700) == 0 || errno == EEXIST) &&
		    mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV, opts) == 0)
			return 1;
		rmdir(dir);
	}
	if (statfs("/dev/shm", &s) < 0 || (unsigned long)s.f_type != TMPFS_MAGIC ||
	    (uint64_t)s.f_bavail * (uint64_t)s.f_bsize < need)
		return -1;
	snprintf(dir, n, "/dev/shm/psplice-bench-tee.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

void bench_tee(const struct bench_opts *o)
{
	static const int files[] = { 0, 1, 2, 4 };
	uint64_t size = o->quick ? 256 * MiB : GiB;
	struct ratios q = { .n = 0 };
	char dir[4200], item4[64];
	int mounted;

	snprintf(item4, sizeof(item4), "%.0f MiB pipe -> 4 files on tmpfs",
		 (double)size / MiB);
	mounted = tmpfs_dir(o, MAX_FILES * size + 64 * MiB, dir, sizeof(dir));
	if (mounted < 0 || !bench_have("tee")) {
		for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
			char name[64];

			snprintf(name, sizeof(name), files[i] ? "%d file(s)" : "/dev/null",
				 files[i]);
			bench_skip("tee", name, PS_TEE, "%s", mounted < 0 ?
				   "no tmpfs with room (not root, /dev/shm too small)" :
				   "GNU tee not found");
		}
	} else {
		/* Each item's ratios replace the last's: the four files item
		 * is the last. */
		for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
			item(o, dir, files[i], size, &q);
		if (mounted)
			umount2(dir, MNT_DETACH);
		rmdir(dir);
	}
	targets(item4, &q);
}
