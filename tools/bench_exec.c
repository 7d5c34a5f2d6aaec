/* psplice bench, group "exec": unchanged programs run plain, under nocache
 * (its LD_PRELOAD library) and under psplice exec --read-behind. Two jobs:
 * dd bs=1M copying a file of 2 GiB (256 MiB with --quick), and tar xf of an
 * archive of that size holding four files. The input (the file, the
 * archive) is first read into the cache, as another process would have
 * it. Measured, each against plain in the same run: the output's own
 * Dirty+Writeback at its peak (cachestat(2) every 10 ms; for tar the
 * machine's /proc/meminfo above its level at start), the page cache the
 * output holds after, the time to finish, the time until durable (finish,
 * then sync -f of the filesystem), and how much of the input is still
 * cached after. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#define GROUP "exec"
#define MiB ((double)(1 << 20))
#define NFILES 4

#ifndef __NR_cachestat
#define __NR_cachestat 451
#endif

struct job {
	const char *name;  /* "dd", "tar xf" */
	const char *dir;   /* the filesystem, for sync -f */
	char cmd[4096];    /* the command, with %s for the runner's prefix */
	char out[NFILES][640]; /* what it writes */
	int nout;
	char in[512];      /* what it reads: another process's cached file */
};

struct result {
	double peak, growth, finish, durable, in_kept;
	bool own;          /* peak is the output's own (cachestat) */
};

static atomic_bool sampling;

/* Cached, dirty+writeback bytes of path; -1 when it cannot be asked. */
static int cache_of(const char *path, double *cached, double *dirty)
{
	struct { uint64_t off, len; } r = { 0, 0 };
	struct { uint64_t cache, dirty, writeback, evicted, recent; } c;
	double page = (double)sysconf(_SC_PAGESIZE);
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc;

	if (fd < 0)
		return -1;
	rc = (int)syscall(__NR_cachestat, fd, &r, &c, 0);
	close(fd);
	if (rc < 0)
		return -1;
	if (cached)
		*cached = (double)c.cache * page;
	if (dirty)
		*dirty = (double)(c.dirty + c.writeback) * page;
	return 0;
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
		if (s->own && cache_of(s->job->out[0], NULL, &d) == 0 && d > s->peak)
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
	struct sampler s = { .job = j, .own = j->nout == 1 };
	double in_size, c, wall;
	char cmd[8192];
	pthread_t th;
	int i, st;

	for (i = 0; i < j->nout; i++)
		unlink(j->out[i]);
	snprintf(cmd, sizeof(cmd), "sync -f '%s'", dir);
	bench_sh(cmd, NULL, NULL);
	/* The input, cached by "another process": this one. */
	snprintf(cmd, sizeof(cmd), "cat '%s' >/dev/null", j->in);
	bench_sh(cmd, NULL, NULL);
	if (cache_of(j->in, &in_size, NULL) < 0)
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
	r->growth = 0;
	for (i = 0; i < j->nout; i++)
		if (cache_of(j->out[i], &c, NULL) == 0)
			r->growth += c;
	if (cache_of(j->in, &c, NULL) < 0)
		return -1;
	r->in_kept = in_size > 0 ? 100.0 * c / in_size : 100;
	return st == 0 ? 0 : -1;
}

static void add_rows(const char *label, const char *variant, const struct result *r,
		     bool base)
{
	char item[64], note[160];

	snprintf(note, sizeof(note), "input still cached: %.0f %%", r->in_kept);
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

static void targets(const char *label, const struct result *ours)
{
	char item[64], what[96];

	snprintf(what, sizeof(what), "exec %s peak dirty, MiB", label);
	bench_target_value(what, ours->peak / MiB, 64, false,
			   ours->own ? "the output's own Dirty+Writeback" : "machine-wide");
	snprintf(what, sizeof(what), "exec %s other's file still cached, %%", label);
	bench_target_value(what, ours->in_kept, 100, true, "the input, cached before the run");
	snprintf(item, sizeof(item), "%s: durable", label);
	snprintf(what, sizeof(what), "exec %s time to durable vs plain", label);
	bench_target_ratio(what, GROUP, item, "psplice exec", "plain", false, 1.0, false);
}

static void measure(const struct job *j, const char *label, const char *self)
{
	struct variant { const char *name, *prefix; } vs[3] = {
		{ "plain", "" }, { "nocache", "nocache " }, { "psplice exec", NULL },
	};
	char ours[600];
	struct result r;
	int v;

	snprintf(ours, sizeof(ours), "'%s' exec --read-behind -- ", self);
	vs[2].prefix = ours;
	for (v = 0; v < 3; v++) {
		if (v == 1 && !bench_have("nocache")) {
			bench_skip(GROUP, label, vs[v].name, "nocache is not installed");
			continue;
		}
		memset(&r, 0, sizeof(r));
		if (run(j, vs[v].prefix, &r) < 0) {
			bench_skip(GROUP, label, vs[v].name, "the run failed");
			continue;
		}
		add_rows(label, vs[v].name, &r, v == 0);
		if (v == 2)
			targets(label, &r);
	}
}

/* The archive: NFILES files of size / NFILES, made once. */
static int make_tar(const char *dir, uint64_t size, char *tar, size_t n)
{
	char cmd[2048], path[512];
	int i;

	snprintf(tar, n, "%s/exec-tree.tar", dir);
	if (access(tar, R_OK) == 0)
		return 0;
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s/exec-tree'", dir);
	if (bench_sh(cmd, NULL, NULL) != 0)
		return -1;
	for (i = 0; i < NFILES; i++) {
		snprintf(path, sizeof(path), "%s/exec-tree/f%d", dir, i);
		if (bench_make_file(path, size / NFILES) < 0)
			return -1;
	}
	snprintf(cmd, sizeof(cmd), "tar cf '%s' -C '%s' exec-tree && rm -rf '%s/exec-tree'",
		 tar, dir, dir);
	return bench_sh(cmd, NULL, NULL) == 0 ? 0 : -1;
}

void bench_exec(const struct bench_opts *o)
{
	uint64_t size = o->quick ? (uint64_t)256 << 20 : (uint64_t)2 << 30;
	char label[64], out[512], tar[512];
	struct job dd = { .name = "dd", .dir = o->dir, .nout = 1 },
		tx = { .name = "tar xf", .dir = o->dir, .nout = NFILES };
	int i;

	snprintf(dd.in, sizeof(dd.in), "%s/exec-in", o->dir);
	snprintf(dd.out[0], sizeof(dd.out[0]), "%s/exec-out", o->dir);
	snprintf(label, sizeof(label), "dd bs=1M, %llu MiB", (unsigned long long)(size >> 20));
	if (bench_make_file(dd.in, size) < 0) {
		bench_skip(GROUP, label, "all", "cannot make the input: %s", strerror(errno));
	} else {
		snprintf(dd.cmd, sizeof(dd.cmd), "%%sdd if='%s' of='%s' bs=1M status=none",
			 dd.in, dd.out[0]);
		measure(&dd, label, o->self);
		unlink(dd.out[0]);
		unlink(dd.in);
	}
	snprintf(label, sizeof(label), "tar xf, %llu MiB", (unsigned long long)(size >> 20));
	if (make_tar(o->dir, size, tar, sizeof(tar)) < 0) {
		bench_skip(GROUP, label, "all", "cannot make the archive");
		return;
	}
	snprintf(out, sizeof(out), "%s/exec-x", o->dir);
	for (i = 0; i < NFILES; i++)
		snprintf(tx.out[i], sizeof(tx.out[i]), "%s/exec-tree/f%d", out, i);
	snprintf(tx.in, sizeof(tx.in), "%s", tar);
	snprintf(tx.cmd, sizeof(tx.cmd), "rm -rf '%s' && mkdir -p '%s' && %%star xf '%s' -C '%s'",
		 out, out, tar, out);
	measure(&tx, label, o->self);
	snprintf(tx.cmd, sizeof(tx.cmd), "rm -rf '%s' '%s'", out, tar);
	bench_sh(tx.cmd, NULL, NULL);
}
