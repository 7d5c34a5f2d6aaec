/* psplice bench, group "write-behind": write 8 GiB (1 GiB with --quick)
 * sequentially in 1 MiB writes, in several ways, and measure what each costs
 * the machine: peak dirty memory (the file's own Dirty+Writeback from
 * cachestat(2), else the machine's from /proc/meminfo, sampled at 10 Hz),
 * time until the data is durable (start to the final fdatasync's return), the
 * writer's p99 latency per 1 MiB write, and the p99 latency of a victim doing
 * a 4 KiB pwrite + fdatasync every 10 ms on the same filesystem. Ratios are
 * against plain writes + one fdatasync, in the same run. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "cachestat.h"
#include "psplice.h"

#define MiB ((size_t)1 << 20)
#define WRITE_SIZE MiB
#ifndef RWF_DONTCACHE
#define RWF_DONTCACHE 0x00000080
#endif

/* pwritev2 by its number: musl declares none. The kernel takes the offset
 * in two halves; a 64-bit one ignores the high half. */
static ssize_t wb_pwritev2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
	return syscall(SYS_pwritev2, fd, iov, cnt, (long)off, (long)((uint64_t)off >> 32), flags);
}

enum kind { PLAIN, WRITE_ONLY, WB, DONTCACHE, DIRECT };

struct variant {
	const char *name;
	enum kind kind;
	size_t chunk;
};

static const struct variant variants[] = {
	{ "plain+fdatasync", PLAIN, 0 },
	{ "sync_file_range WRITE", WRITE_ONLY, 0 },
	{ "write-behind 1MiB", WB, 1 * MiB },
	{ "write-behind 8MiB", WB, 8 * MiB },
	{ "write-behind 32MiB", WB, 32 * MiB },
	{ "RWF_DONTCACHE", DONTCACHE, 0 },
	{ "O_DIRECT", DIRECT, 0 },
};
#define NVARIANTS (sizeof(variants) / sizeof(variants[0]))

struct stats {
	double peak_dirty, mean_dirty; /* MiB, whole machine */
	double own_peak;               /* MiB, the benchmark file's own; -1: unknown */
	double durable_s, p99_ms, max_ms, victim_p99_ms;
	const char *skipped;
};

static atomic_bool running;
static const char *dir;

#define GROUP "write-behind"

static void sleep_ms(int ms)
{
	struct timespec t = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&t, &t) < 0 && errno == EINTR)
		;
}

/* Dirty + Writeback from /proc/meminfo, in MiB. */
static double dirty_mib(void)
{
	return bench_meminfo_dirty() / (1 << 20);
}

/* The benchmark file's own Dirty+Writeback in MiB (cachestat(2), Linux 6.5+),
 * which other processes' writes cannot inflate; -1 where unavailable. */
static double own_dirty_mib(int fd)
{
	struct ps_cachestat c;

	if (ps_cachestat(fd, 0, 0, &c) < 0)
		return -1;
	return (double)(c.dirty + c.writeback) * (double)sysconf(_SC_PAGESIZE) / (1 << 20);
}

struct sampler {
	int fd;
	double peak, sum, own_peak;
	long n;
};

static void *sample(void *arg)
{
	struct sampler *s = arg;
	double d;

	while (atomic_load(&running)) {
		d = own_dirty_mib(s->fd);
		if (d > s->own_peak || d < 0)
			s->own_peak = d;
		d = dirty_mib();
		if (d > s->peak)
			s->peak = d;
		s->sum += d;
		s->n++;
		sleep_ms(100);
	}
	return NULL;
}

struct victim {
	double lat[60000];
	long n;
};

static void *victim(void *arg)
{
	struct victim *v = arg;
	char path[4096], buf[4096];
	int fd;
	double t;

	snprintf(path, sizeof(path), "%s/victim", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return NULL;
	memset(buf, 'v', sizeof(buf));
	while (atomic_load(&running) && v->n < (long)(sizeof(v->lat) / sizeof(v->lat[0]))) {
		t = bench_now();
		if (pwrite(fd, buf, sizeof(buf), (off_t)(v->n % 256) * 4096) < 0 ||
		    fdatasync(fd) < 0)
			break;
		v->lat[v->n++] = (bench_now() - t) * 1e3;
		sleep_ms(10);
	}
	close(fd);
	unlink(path);
	return NULL;
}

static double p99(double *v, long n)
{
	if (n <= 0)
		return 0;
	bench_sort(v, (int)n);
	return v[(long)((double)(n - 1) * 0.99)];
}

/* One 1 MiB write the variant's way; -1 and errno on error. */
static int write_one(const struct variant *var, int fd, const char *buf, off_t off,
		     struct psplice_wb *wb)
{
	struct iovec iov = { (void *)buf, WRITE_SIZE };
	ssize_t w;

	if (var->kind == DONTCACHE)
		w = wb_pwritev2(fd, &iov, 1, off, RWF_DONTCACHE);
	else
		w = pwrite(fd, buf, WRITE_SIZE, off);
	if (w != (ssize_t)WRITE_SIZE)
		return w < 0 ? -1 : (errno = EIO, -1);
	if (var->kind == WRITE_ONLY)
		return psplice_sync(fd, off, (int64_t)WRITE_SIZE, PSPLICE_SYNC_WRITE, NULL);
	if (var->kind == WB)
		return psplice_wb_wrote(wb, off, WRITE_SIZE);
	return 0;
}

static int start_threads(pthread_t *ts, pthread_t *tv, struct sampler *smp,
			 struct victim *vic)
{
	atomic_store(&running, true);
	if (pthread_create(ts, NULL, sample, smp) != 0) {
		atomic_store(&running, false);
		return -1;
	}
	if (pthread_create(tv, NULL, victim, vic) != 0) {
		atomic_store(&running, false);
		pthread_join(*ts, NULL);
		return -1;
	}
	return 0;
}

/* The writes, each timed into lat, then the file made durable: 0, or -1
 * (st->skipped says why when a write failed). */
static int write_all(const struct variant *var, int fd, const char *buf, long nwrites,
		     double *lat, struct psplice_wb **wb, struct stats *st)
{
	double t0 = bench_now(), t;
	long i;
	int rc;

	for (i = 0; i < nwrites; i++) {
		t = bench_now();
		if (write_one(var, fd, buf, (off_t)i * (off_t)WRITE_SIZE, *wb) < 0) {
			st->skipped = errno == EOPNOTSUPP || errno == EINVAL ?
				      "not supported by this kernel or filesystem" : strerror(errno);
			return -1;
		}
		lat[i] = (bench_now() - t) * 1e3;
	}
	if (*wb) {
		rc = psplice_wb_finish(*wb, PSPLICE_SYNC_DATA, NULL);
		*wb = NULL;
	} else {
		rc = fdatasync(fd);
	}
	st->durable_s = bench_now() - t0;
	return rc;
}

/* The figures of a run that made its file durable. */
static void collect(struct stats *st, const struct sampler *smp, double *lat, long nwrites,
		    struct victim *vic)
{
	st->peak_dirty = smp->peak;
	st->own_peak = smp->own_peak;
	st->mean_dirty = smp->n ? smp->sum / (double)smp->n : 0;
	st->p99_ms = p99(lat, nwrites);
	st->max_ms = lat[nwrites - 1];
	st->victim_p99_ms = p99(vic->lat, vic->n);
}

static int run(const struct variant *var, uint64_t size, const char *buf, struct stats *st)
{
	long nwrites = (long)(size / WRITE_SIZE);
	double *lat = calloc((size_t)nwrites, sizeof(double));
	struct sampler smp = { 0 };
	struct victim *vic = calloc(1, sizeof(*vic));
	struct psplice_wb *wb = NULL;
	pthread_t ts, tv;
	char path[4096];
	int fd, rc = -1;

	snprintf(path, sizeof(path), "%s/wb-bench.dat", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC |
		  (var->kind == DIRECT ? O_DIRECT : 0), 0644);
	if (fd < 0 || !lat || !vic)
		goto out;
	if (var->kind == WB && !(wb = psplice_wb_new(fd, var->chunk, 0)))
		goto out;
	smp.fd = fd;
	sync();
	if (start_threads(&ts, &tv, &smp, vic) < 0) {
		st->skipped = "cannot start the sampling and victim threads";
		goto out;
	}
	rc = write_all(var, fd, buf, nwrites, lat, &wb, st);
	atomic_store(&running, false);
	pthread_join(ts, NULL);
	pthread_join(tv, NULL);
	if (rc == 0)
		collect(st, &smp, lat, nwrites, vic);
out:
	if (wb)
		psplice_wb_finish(wb, 0, NULL);
	if (fd >= 0)
		close(fd);
	unlink(path);
	free(lat);
	free(vic);
	return rc;
}

/* The quick subset: the baseline and the default. */
static bool in_quick(const struct variant *v)
{
	return v->kind == PLAIN || (v->kind == WB && v->chunk == 8 * MiB);
}

static void add_rows(const struct variant *var, const struct stats *s, const char *size)
{
	char item[64], note[120];
	bool base = var->kind == PLAIN;

	if (s->skipped) {
		bench_skip(GROUP, size, var->name, "%s", s->skipped);
		return;
	}
	snprintf(item, sizeof(item), "%s: peak dirty", size);
	snprintf(note, sizeof(note), "%s; machine-wide peak %.0f MiB",
		 s->own_peak >= 0 ? "the file's own" : "machine-wide", s->peak_dirty);
	bench_row(GROUP, item, var->name, BENCH_MIB,
		  s->own_peak >= 0 ? s->own_peak : s->peak_dirty, -1, base, note);
	snprintf(item, sizeof(item), "%s: time to durable", size);
	bench_row(GROUP, item, var->name, BENCH_SECS, s->durable_s, -1, base,
		  "first write to the final fdatasync's return");
	snprintf(item, sizeof(item), "%s: victim fsync p99", size);
	bench_row(GROUP, item, var->name, BENCH_MS, s->victim_p99_ms, -1, base,
		  "4 KiB pwrite + fdatasync every 10 ms");
	snprintf(item, sizeof(item), "%s: write p99", size);
	bench_row(GROUP, item, var->name, BENCH_MS, s->p99_ms, -1, base, "per 1 MiB write");
}

static void targets(const char *size)
{
	const struct bench_row *r;
	char item[64];

	snprintf(item, sizeof(item), "%s: peak dirty", size);
	r = bench_find(GROUP, item, "write-behind 8MiB");
	if (r)
		bench_target_value("write-behind peak dirty, MiB", r->value, 64, false,
				   "the file's own Dirty+Writeback (8 MiB chunks)");
	else
		bench_target_missing("write-behind peak dirty, MiB", 64, false, "not measured");
	snprintf(item, sizeof(item), "%s: time to durable", size);
	bench_target_ratio("write-behind time to durable vs plain", GROUP, item,
			   "write-behind 8MiB", "plain+fdatasync", false, 1.0, false);
	snprintf(item, sizeof(item), "%s: victim fsync p99", size);
	bench_target_ratio("write-behind victim fsync p99 vs plain", GROUP, item,
			   "write-behind 8MiB", "plain+fdatasync", false, 0.5, false);
}

void bench_writebehind(const struct bench_opts *o)
{
	uint64_t size = o->quick ? (uint64_t)1 << 30 : (uint64_t)8 << 30;
	char label[32];
	struct stats st;
	char *buf;
	size_t v;

	dir = o->dir;
	snprintf(label, sizeof(label), "%llu GiB", (unsigned long long)(size >> 30));
	if (posix_memalign((void **)&buf, 4096, WRITE_SIZE)) {
		bench_skip(GROUP, label, "all", "no memory");
		return;
	}
	for (v = 0; v < WRITE_SIZE; v++)
		buf[v] = (char)(v * 131 + 7);
	for (v = 0; v < NVARIANTS; v++) {
		if (o->quick && !in_quick(&variants[v]))
			continue;
		memset(&st, 0, sizeof(st));
		if (run(&variants[v], size, buf, &st) < 0 && !st.skipped)
			st.skipped = strerror(errno);
		add_rows(&variants[v], &st, label);
	}
	targets(label);
	free(buf);
}
