/* psplice bench, group "exec": unchanged programs run plain, under nocache
 * (its LD_PRELOAD library) and under psplice exec --read-behind. Four jobs:
 * dd bs=1M copying a file of 4 GiB (256 MiB with --quick), tar xf of an
 * archive of that size holding four files, rsync -a of a tree of two of
 * those files (2 GiB), and rsync -a of a tree of 10,000 files of 32 KiB (1,000 with
 * --quick). The input (the file, the archive, the tree) is first read into
 * the cache, as another process would have it, and so is a file of 1 GiB
 * (128 MiB with --quick) no job touches. Measured, each against
 * plain in the same run: the output's own Dirty+Writeback at its peak
 * (cachestat(2) every 10 ms; for a tree the machine's /proc/meminfo above
 * its level at start), the page cache the output holds after, the time to
 * finish, the time until durable (finish, then sync -f of the filesystem),
 * and how much of the input and of the other file is still cached after. The small-file rsync,
 * short, is run seven rounds after one uncounted run: its rows keep the
 * best times, its target the median of each round's ratio. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "cachestat.h"

#define GROUP "exec"
#define MiB ((double)(1 << 20))
#define NFILES 4
#define SMALL ((uint64_t)32 << 10)
#define MAX_REPS 16

struct job {
	const char *dir;   /* the filesystem, for sync -f */
	char cmd[4096];    /* the command, with %s for the runner's prefix */
	char out[640];     /* what it writes: a file or a tree */
	char in[512];      /* what it reads, a file or a tree, cached by
	                      another process */
	bool own;          /* out is one file: its own dirty pages are sampled */
	double finish_goal; /* a target on the time to finish vs plain, or 0 */
	int reps;          /* rounds (0: one, at most MAX_REPS); the best
	                      times are kept */
};

struct result {
	double peak, growth, finish, durable;
	double in_kept, other_kept; /* % of the input, of the other's file */
	bool own;          /* peak is the output's own (cachestat) */
};

static atomic_bool sampling;
/* A file of 1 GiB another process had cached, which no job touches. */
static char other[512];
static double other_mib;

/* Cached, dirty+writeback bytes of path; -1 when it cannot be asked. */
static int cache_of(const char *path, double *cached, double *dirty)
{
	struct ps_cachestat c;
	double page = (double)sysconf(_SC_PAGESIZE);
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc;

	if (fd < 0)
		return -1;
	rc = ps_cachestat(fd, 0, 0, &c);
	close(fd);
	if (rc < 0)
		return -1;
	if (cached)
		*cached = (double)c.cache * page;
	if (dirty)
		*dirty = (double)(c.dirty + c.writeback) * page;
	return 0;
}

static double tree_sum;

static int add_file(const char *path, const struct stat *st, int type, struct FTW *f)
{
	double c;

	(void)st, (void)f;
	if (type == FTW_F && cache_of(path, &c, NULL) == 0)
		tree_sum += c;
	return 0;
}

/* The cached bytes of a file or of every file under a directory. */
static double cached_of(const char *path)
{
	tree_sum = 0;
	nftw(path, add_file, 16, FTW_PHYS);
	return tree_sum;
}

struct sampler {
	const struct job *job;
	double base, peak;
	bool own;
};

static void *sample(void *arg)
{
	struct sampler *s = arg;
	struct timespec t = { 0, 10 * 1000 * 1000 };
	double d;

	while (atomic_load(&sampling)) {
		if (s->own && cache_of(s->job->out, NULL, &d) == 0 && d > s->peak)
			s->peak = d;
		if (!s->own && (d = bench_meminfo_dirty() - s->base) > s->peak)
			s->peak = d;
		nanosleep(&t, NULL);
	}
	return NULL;
}

static int run(const struct job *j, const char *prefix, struct result *r)
{
	const char *dir = j->dir;
	struct sampler s = { .job = j, .own = j->own };
	double in_size, other_size, wall;
	char cmd[8192];
	pthread_t th;
	int st;

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'; sync -f '%s'", j->out, dir);
	bench_sh(cmd, NULL, NULL);
	/* The input, cached by "another process": this one. */
	snprintf(cmd, sizeof(cmd), "find '%s' '%s' -type f -exec cat {} + >/dev/null",
		 j->in, other);
	bench_sh(cmd, NULL, NULL);
	if ((in_size = cached_of(j->in)) <= 0 || (other_size = cached_of(other)) <= 0)
		return -1;
	s.base = bench_meminfo_dirty();
	atomic_store(&sampling, true);
	if (pthread_create(&th, NULL, sample, &s) != 0)
		return -1;
	snprintf(cmd, sizeof(cmd), j->cmd, prefix);
	st = bench_sh(cmd, &r->finish, NULL);
	snprintf(cmd, sizeof(cmd), "sync -f '%s'", dir);
	bench_sh(cmd, &wall, NULL);
	atomic_store(&sampling, false);
	pthread_join(th, NULL);
	r->durable = r->finish + wall;
	r->peak = s.peak;
	r->own = s.own;
	r->growth = cached_of(j->out);
	r->in_kept = 100.0 * cached_of(j->in) / in_size;
	r->other_kept = 100.0 * cached_of(other) / other_size;
	return st == 0 ? 0 : -1;
}

static void add_rows(const char *label, const char *variant, const struct result *r,
		     bool base)
{
	char item[64], note[160];

	snprintf(note, sizeof(note), "still cached: the input %.2f %%, the other's file %.2f %%",
		 r->in_kept, r->other_kept);
	snprintf(item, sizeof(item), "%s: peak dirty", label);
	bench_row(GROUP, item, variant, BENCH_MIB, r->peak / MiB, -1, base,
		  r->own ? "the output's own Dirty+Writeback" :
		  "machine-wide Dirty+Writeback above the start");
	snprintf(item, sizeof(item), "%s: cache growth", label);
	bench_row(GROUP, item, variant, BENCH_MIB, r->growth / MiB, -1, base,
		  "the output's pages cached after");
	snprintf(item, sizeof(item), "%s: finish", label);
	bench_row(GROUP, item, variant, BENCH_SECS, r->finish, -1, base, note);
	snprintf(item, sizeof(item), "%s: durable", label);
	bench_row(GROUP, item, variant, BENCH_SECS, r->durable, -1, base,
		  "finish, then sync -f of the filesystem");
}

/* The many-small-files job has one target, its time: files under
 * --min-size are left alone, so nothing bounds their dirty pages. Its
 * runs are short and this machine's noise is not (one run of the same job
 * 2.5 s, the next 4.2 s): the target is the median over the rounds of
 * each round's exec time over the plain run just before it. */
static void finish_target(const char *label, double goal, const double *plain,
			  const double *ours, int n)
{
	char what[96], why[160];
	double r[MAX_REPS];
	int i, k = 0, len;

	len = snprintf(why, sizeof(why), "median of exec over plain, a round each:");
	for (i = 0; i < n; i++) {
		if (plain[i] <= 0 || ours[i] <= 0)
			continue;
		r[k] = ours[i] / plain[i];
		if (len > 0 && (size_t)len < sizeof(why))
			len += snprintf(why + len, sizeof(why) - (size_t)len, " %.2f", r[k]);
		k++;
	}
	snprintf(what, sizeof(what), "exec %s time to finish vs plain", label);
	if (!k) {
		bench_target_missing(what, goal, false, "not measured");
		return;
	}
	bench_sort(r, k);
	bench_target_ratio_of(what, k % 2 ? r[k / 2] : (r[k / 2 - 1] + r[k / 2]) / 2, goal,
			      false, why);
}

/* What the machine itself does to cache nobody touches, for the why. */
static const char *pageout(void)
{
	return bench_damon_pageout() ? "; DAMON pages out idle cache here" : "";
}

static void targets(const char *label, const struct result *ours, const struct result *plain)
{
	char item[64], what[96], why[160];

	snprintf(what, sizeof(what), "exec %s peak dirty, MiB", label);
	bench_target_value(what, ours->peak / MiB, 64, false,
			   ours->own ? "the output's own Dirty+Writeback" : "machine-wide");
	snprintf(what, sizeof(what), "exec %s other's file still cached, %%", label);
	snprintf(why, sizeof(why), "%.0f MiB, cached before the run, not touched by it; "
		 "plain kept %.2f %%%s", other_mib, plain ? plain->other_kept : 0, pageout());
	bench_target_value(what, ours->other_kept, 100, true, why);
	snprintf(what, sizeof(what), "exec %s input still cached, %%", label);
	snprintf(why, sizeof(why), "the input, cached by another process before the run; "
		 "plain kept %.2f %%%s", plain ? plain->in_kept : 0, pageout());
	bench_target_value(what, ours->in_kept, 100, true, why);
	snprintf(item, sizeof(item), "%s: durable", label);
	snprintf(what, sizeof(what), "exec %s time to durable vs plain", label);
	bench_target_ratio(what, GROUP, item, "psplice exec", "plain", false, 1.0, false);
}

/* r, merged with a later run of the same variant: the best times, the
 * worst of the rest. */
static void merge(struct result *r, const struct result *x)
{
	r->peak = x->peak > r->peak ? x->peak : r->peak;
	r->growth = x->growth > r->growth ? x->growth : r->growth;
	r->finish = x->finish < r->finish ? x->finish : r->finish;
	r->durable = x->durable < r->durable ? x->durable : r->durable;
	r->in_kept = x->in_kept < r->in_kept ? x->in_kept : r->in_kept;
	r->other_kept = x->other_kept < r->other_kept ? x->other_kept : r->other_kept;
}

static void report(const struct job *j, const char *label, const struct result *r,
		   const int *runs, const double fin[][MAX_REPS], int rounds)
{
	static const char *const names[3] = { "plain", "nocache", "psplice exec" };
	int v;

	for (v = 0; v < 3; v++) {
		if (v == 1 && !bench_have("nocache"))
			bench_skip(GROUP, label, names[v], "nocache is not installed");
		else if (!runs[v])
			bench_skip(GROUP, label, names[v], "the run failed");
		else
			add_rows(label, names[v], &r[v], v == 0);
	}
	if (!runs[2])
		return;
	if (j->finish_goal > 0)
		finish_target(label, j->finish_goal, fin[0], fin[2], rounds);
	else
		targets(label, &r[2], runs[0] ? &r[0] : NULL);
}

/* The variants in turn, j->reps rounds of them (one a round, so the
 * machine's load weighs on each alike). */
static void measure(const struct job *j, const char *label, const char *self)
{
	const char *prefix[3] = { "", "nocache ", NULL };
	char ours[600];
	struct result r[3], x;
	double fin[3][MAX_REPS] = { { 0 } };
	int v, i, runs[3] = { 0 }, failed[3] = { 0 };
	int rounds = j->reps < 1 ? 1 : j->reps > MAX_REPS ? MAX_REPS : j->reps;

	snprintf(ours, sizeof(ours), "'%s' exec --read-behind -- ", self);
	prefix[2] = ours;
	/* Rounds: a first run, not counted, so that every counted one follows
	 * the deletion of an earlier output (the first plain rsync of a fresh
	 * tree of 10,000 files took 1.0 s, every later one 2.5-4.2 s). */
	if (rounds > 1)
		run(j, prefix[0], &x);
	for (i = 0; i < rounds; i++) {
		for (v = 0; v < 3; v++) {
			if ((v == 1 && !bench_have("nocache")) || failed[v])
				continue;
			memset(&x, 0, sizeof(x));
			if (run(j, prefix[v], &x) < 0) {
				failed[v] = 1;
				continue;
			}
			fin[v][i] = x.finish;
			if (runs[v]++)
				merge(&r[v], &x);
			else
				r[v] = x;
		}
	}
	for (v = 0; v < 3; v++)
		if (failed[v])
			runs[v] = 0;
	report(j, label, r, runs, fin, rounds);
}

/* The tree: NFILES files of size / NFILES, and the archive of it. */
static int make_tree(const char *dir, uint64_t size, char *tree, size_t n)
{
	char cmd[2048], path[700];
	int i;

	snprintf(tree, n, "%s/exec-tree", dir);
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", tree);
	if (bench_sh(cmd, NULL, NULL) != 0)
		return -1;
	for (i = 0; i < NFILES; i++) {
		snprintf(path, sizeof(path), "%s/f%d", tree, i);
		if (bench_make_file(path, size / NFILES) < 0)
			return -1;
	}
	snprintf(cmd, sizeof(cmd), "tar cf '%s.tar' -C '%s' exec-tree", tree, dir);
	return bench_sh(cmd, NULL, NULL) == 0 ? 0 : -1;
}

/* nfiles files of SMALL bytes under dir/exec-small: one file, split. */
static int make_small(const char *dir, int nfiles, char *tree, size_t n)
{
	char cmd[4096];

	snprintf(tree, n, "%s/exec-small", dir);
	snprintf(cmd, sizeof(cmd), "%s.in", tree);
	if (bench_make_file(cmd, (uint64_t)nfiles * SMALL) < 0)
		return -1;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' && mkdir '%s' && "
		 "split -b %llu -a 5 '%s.in' '%s/s' && rm '%s.in'", tree, tree,
		 (unsigned long long)SMALL, tree, tree, tree);
	return bench_sh(cmd, NULL, NULL) == 0 ? 0 : -1;
}

/* Run j as label, then remove its output. */
static void job(struct job *j, const char *label, const char *self)
{
	char cmd[1024];

	measure(j, label, self);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", j->out);
	bench_sh(cmd, NULL, NULL);
}

/* rsync -a of the tree in to dir/exec-r. */
static void rsync_job(const struct bench_opts *o, const char *in, const char *label,
		      double finish_goal, int reps)
{
	struct job j = { .dir = o->dir, .finish_goal = finish_goal, .reps = reps };

	if (!bench_have("rsync")) {
		bench_skip(GROUP, label, "all", "rsync is not installed");
		return;
	}
	snprintf(j.in, sizeof(j.in), "%s", in);
	snprintf(j.out, sizeof(j.out), "%s/exec-r", o->dir);
	snprintf(j.cmd, sizeof(j.cmd), "%%srsync -a '%s/' '%s/'", in, j.out);
	job(&j, label, o->self);
}

static void dd_job(const struct bench_opts *o, uint64_t size)
{
	struct job dd = { .dir = o->dir, .own = true };
	char label[64];

	snprintf(dd.in, sizeof(dd.in), "%s/exec-in", o->dir);
	snprintf(dd.out, sizeof(dd.out), "%s/exec-out", o->dir);
	snprintf(label, sizeof(label), "dd bs=1M, %llu MiB", (unsigned long long)(size >> 20));
	if (bench_make_file(dd.in, size) < 0) {
		bench_skip(GROUP, label, "all", "cannot make the input: %s", strerror(errno));
		return;
	}
	snprintf(dd.cmd, sizeof(dd.cmd), "%%sdd if='%s' of='%s' bs=1M status=none", dd.in,
		 dd.out);
	job(&dd, label, o->self);
	unlink(dd.in);
}

/* tar xf of the archive of the tree, then rsync -a of half the tree. */
static void tree_jobs(const struct bench_opts *o, uint64_t size)
{
	struct job tx = { .dir = o->dir };
	char label[64], tree[400], cmd[1024];

	snprintf(label, sizeof(label), "tar xf, %llu MiB", (unsigned long long)(size >> 20));
	if (make_tree(o->dir, size, tree, sizeof(tree)) < 0) {
		bench_skip(GROUP, label, "all", "cannot make the tree and its archive");
	} else {
		snprintf(tx.in, sizeof(tx.in), "%s.tar", tree);
		snprintf(tx.out, sizeof(tx.out), "%s/exec-x", o->dir);
		snprintf(tx.cmd, sizeof(tx.cmd), "mkdir -p '%s' && %%star xf '%s' -C '%s'",
			 tx.out, tx.in, tx.out);
		job(&tx, label, o->self);
		/* Half the tree: two of its four files. */
		snprintf(cmd, sizeof(cmd), "rm -f '%s/f0' '%s/f1'", tree, tree);
		bench_sh(cmd, NULL, NULL);
		snprintf(label, sizeof(label), "rsync, %d files, %llu MiB", NFILES / 2,
			 (unsigned long long)(size >> 21));
		rsync_job(o, tree, label, 0, 1);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s.tar'", tree, tree);
	bench_sh(cmd, NULL, NULL);
}

static void small_job(const struct bench_opts *o, int nsmall)
{
	char label[64], tree[400], cmd[1024];

	snprintf(label, sizeof(label), "rsync, %d files of %llu KiB", nsmall,
		 (unsigned long long)(SMALL >> 10));
	if (make_small(o->dir, nsmall, tree, sizeof(tree)) < 0)
		bench_skip(GROUP, label, "all", "cannot make the files");
	else
		/* Short runs: seven rounds. */
		rsync_job(o, tree, label, 1.05, 7);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tree);
	bench_sh(cmd, NULL, NULL);
}

void bench_exec(const struct bench_opts *o)
{
	uint64_t size = o->quick ? (uint64_t)256 << 20 : (uint64_t)4 << 30;

	snprintf(other, sizeof(other), "%s/exec-other", o->dir);
	other_mib = o->quick ? 128 : 1024;
	if (bench_make_file(other, (uint64_t)other_mib << 20) < 0) {
		bench_skip(GROUP, "all", "all", "cannot make the other's file: %s",
			   strerror(errno));
		return;
	}
	dd_job(o, size);
	tree_jobs(o, size);
	small_job(o, o->quick ? 1000 : 10000);
	unlink(other);
}
