/* Write-behind benchmark: write SIZE bytes sequentially in 1 MiB writes, in
 * several ways, and measure what each costs the machine: dirty memory (peak
 * and mean Dirty+Writeback, sampled at 10 Hz), time until the data is durable
 * (start to the final fdatasync's return), the writer's p99 and max latency
 * per 1 MiB write, and the p99 latency of a victim doing a 4 KiB pwrite +
 * fdatasync every 10 ms on the same filesystem. Ratios are against the plain
 * variant of the same run; nothing here is asserted.
 *
 * usage: wb_bench [--quick] [--size BYTES] [--csv FILE] [DIR] */
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

#include "psplice.h"

#define MiB ((size_t)1 << 20)
#define WRITE_SIZE MiB
#ifndef RWF_DONTCACHE
#define RWF_DONTCACHE 0x00000080
#endif

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

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void sleep_ms(int ms)
{
	struct timespec t = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&t, &t) < 0 && errno == EINTR)
		;
}

/* Dirty + Writeback from /proc/meminfo, in MiB. */
static double dirty_mib(void)
{
	char line[256];
	double kb = 0, v;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Dirty: %lf", &v) == 1 || sscanf(line, "Writeback: %lf", &v) == 1)
			kb += v;
	fclose(f);
	return kb / 1024;
}

#ifndef __NR_cachestat
#define __NR_cachestat 451
#endif

struct cachestat_range { uint64_t off, len; };
struct cachestat { uint64_t cache, dirty, writeback, evicted, recently_evicted; };

/* The benchmark file's own Dirty+Writeback in MiB (cachestat(2), Linux 6.5+),
 * which other processes' writes cannot inflate; -1 where unavailable. */
static double own_dirty_mib(int fd)
{
	struct cachestat_range r = { 0, 0 };
	struct cachestat c;

	if (syscall(__NR_cachestat, fd, &r, &c, 0) < 0)
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
		t = now();
		if (pwrite(fd, buf, sizeof(buf), (off_t)(v->n % 256) * 4096) < 0 ||
		    fdatasync(fd) < 0)
			break;
		v->lat[v->n++] = (now() - t) * 1e3;
		sleep_ms(10);
	}
	close(fd);
	unlink(path);
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double p99(double *v, long n)
{
	if (n <= 0)
		return 0;
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return v[(long)((double)(n - 1) * 0.99)];
}

/* One 1 MiB write the variant's way; -1 and errno on error. */
static int write_one(const struct variant *var, int fd, const char *buf, off_t off,
		     struct psplice_wb *wb)
{
	struct iovec iov = { (void *)buf, WRITE_SIZE };
	ssize_t w;

	if (var->kind == DONTCACHE)
		w = pwritev2(fd, &iov, 1, off, RWF_DONTCACHE);
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

static int run(const struct variant *var, uint64_t size, const char *buf, struct stats *st)
{
	long nwrites = (long)(size / WRITE_SIZE), i;
	double *lat = calloc((size_t)nwrites, sizeof(double)), t0, t;
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
	atomic_store(&running, true);
	pthread_create(&ts, NULL, sample, &smp);
	pthread_create(&tv, NULL, victim, vic);
	t0 = now();
	for (i = 0; i < nwrites; i++) {
		t = now();
		if (write_one(var, fd, buf, (off_t)i * (off_t)WRITE_SIZE, wb) < 0) {
			st->skipped = errno == EOPNOTSUPP || errno == EINVAL ?
				      "not supported by this kernel or filesystem" : strerror(errno);
			break;
		}
		lat[i] = (now() - t) * 1e3;
	}
	if (!st->skipped) {
		if (wb) {
			rc = psplice_wb_finish(wb, PSPLICE_SYNC_DATA, NULL);
			wb = NULL;
		} else {
			rc = fdatasync(fd);
		}
		st->durable_s = now() - t0;
	}
	atomic_store(&running, false);
	pthread_join(ts, NULL);
	pthread_join(tv, NULL);
	if (rc == 0) {
		st->peak_dirty = smp.peak;
		st->own_peak = smp.own_peak;
		st->mean_dirty = smp.n ? smp.sum / (double)smp.n : 0;
		st->p99_ms = p99(lat, nwrites);
		st->max_ms = lat[nwrites - 1];
		st->victim_p99_ms = p99(vic->lat, vic->n);
	}
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

static double ratio(double a, double b)
{
	return b > 0 ? a / b : 0;
}

int main(int argc, char **argv)
{
	uint64_t size = (uint64_t)8 << 30;
	const char *csv = "bench/results/wb.csv";
	struct stats st[NVARIANTS] = { 0 };
	FILE *out;
	char *buf;
	size_t v;
	int i;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick"))
			size = (uint64_t)1 << 30;
		else if (!strcmp(argv[i], "--size") && i + 1 < argc)
			size = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--csv") && i + 1 < argc)
			csv = argv[++i];
		else
			dir = argv[i];
	}
	if (!dir)
		dir = ".";
	size -= size % WRITE_SIZE;
	if (size < 16 * MiB || posix_memalign((void **)&buf, 4096, WRITE_SIZE)) {
		fprintf(stderr, "wb_bench: size too small or no memory\n");
		return 1;
	}
	for (v = 0; v < WRITE_SIZE; v++)
		buf[v] = (char)(v * 131 + 7);
	printf("write-behind: %llu MiB in 1 MiB writes to %s, one variant at a time\n",
	       (unsigned long long)(size >> 20), dir);
	for (v = 0; v < NVARIANTS; v++) {
		if (run(&variants[v], size, buf, &st[v]) < 0 && !st[v].skipped)
			st[v].skipped = strerror(errno);
		fprintf(stderr, "  %s done\n", variants[v].name);
	}
	printf("\n%-22s %9s %9s %9s %9s %8s %8s %8s | %7s %7s %7s\n", "variant", "peak MiB",
	       "file's", "mean MiB", "durable s", "p99 ms", "max ms", "vic p99", "durable",
	       "vic p99", "peak");
	printf("%-22s %9s %9s %9s %9s %8s %8s %8s | %7s %7s %7s\n", "", "dirty", "peak MiB",
	       "dirty", "", "write", "write", "ms", "x plain", "x plain", "<=64MiB");
	out = fopen(csv, "w");
	if (out)
		fprintf(out, "variant,size_bytes,peak_dirty_mib,file_peak_dirty_mib,mean_dirty_mib,durable_s,"
			     "write_p99_ms,write_max_ms,victim_p99_ms,durable_x_plain,"
			     "victim_p99_x_plain\n");
	for (v = 0; v < NVARIANTS; v++) {
		struct stats *s = &st[v];

		if (s->skipped) {
			printf("%-22s skipped: %s\n", variants[v].name, s->skipped);
			continue;
		}
		printf("%-22s %9.1f %9.1f %9.1f %9.2f %8.2f %8.2f %8.2f | %6.2fx %6.2fx %7s\n",
		       variants[v].name, s->peak_dirty, s->own_peak, s->mean_dirty, s->durable_s, s->p99_ms,
		       s->max_ms, s->victim_p99_ms, ratio(s->durable_s, st[0].durable_s),
		       ratio(s->victim_p99_ms, st[0].victim_p99_ms),
		       s->peak_dirty <= 64 ? "yes" : "no");
		if (out)
			fprintf(out, "%s,%llu,%.1f,%.1f,%.1f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f\n",
				variants[v].name, (unsigned long long)size, s->peak_dirty, s->own_peak,
				s->mean_dirty, s->durable_s, s->p99_ms, s->max_ms,
				s->victim_p99_ms, ratio(s->durable_s, st[0].durable_s),
				ratio(s->victim_p99_ms, st[0].victim_p99_ms));
	}
	if (out) {
		fclose(out);
		printf("\nCSV: %s\n", csv);
	}
	printf("targets for write-behind: peak dirty <= 64 MiB, durable <= 1.0x plain, "
	       "victim p99 <= 0.5x plain\n");
	free(buf);
	return 0;
}
