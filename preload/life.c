/* The preload library's life: its settings (PSPLICE_EXEC) read and the
 * table of slots mapped at load, a new generation in a forked child, files
 * still open settled at exit, and the figures -v reports then. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "errname.h"
#include "preload.h"
#include "track.h"

int64_t pl_page;
atomic_ullong pl_st_files, pl_st_bytes, pl_st_peak, pl_st_errors, pl_dropped;
static int errfd = 2;  /* -v: stderr as it was at load (programs close it at exit) */

void pl_add_max(atomic_ullong *v, unsigned long long x)
{
	unsigned long long old = atomic_load(v);

	while (x > old && !atomic_compare_exchange_weak(v, &old, x))
		;
}

void pl_count_error(int fd, int err)
{
	char msg[160];
	int n;

	atomic_fetch_add(&pl_st_errors, 1);
	n = snprintf(msg, sizeof(msg), "psplice exec: fd %d: writeback error: %s\n",
		     fd, ps_errdesc(err) ? ps_errdesc(err) : "?");
	if (n > 0)
		(void)!pl_real.write(errfd, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1);
}

/* PSPLICE_EXEC=chunk=N,min=N,sync=none|data|full,read-behind=0|1,verbose=0|1
 * (bytes, any order, each optional). 1 when understood. */
static bool parse_num(const char *v, uint64_t *out)
{
	char *end;

	if (*v < '0' || *v > '9')
		return false;
	errno = 0;
	*out = strtoull(v, &end, 10);
	return !errno && (*end == ',' || !*end);
}

static bool parse_one(const char *kv, struct pl_conf *c)
{
	const char *v = strchr(kv, '=');
	size_t k = v ? (size_t)(v - kv) : 0;
	uint64_t n;

	if (!v++)
		return false;
	if (k == 4 && !strncmp(kv, "sync", k)) {
		c->sync = !strncmp(v, "none", 4) ? PL_SYNC_NONE : !strncmp(v, "data", 4) ?
			PL_SYNC_DATA : !strncmp(v, "full", 4) ? PL_SYNC_FULL : -1;
		return c->sync >= 0 && (v[4] == ',' || !v[4]);
	}
	if (!parse_num(v, &n))
		return false;
	if (k == 5 && !strncmp(kv, "chunk", k) && n >= 4096 && n <= ((uint64_t)1 << 40))
		c->chunk = n;
	else if (k == 3 && !strncmp(kv, "min", k))
		c->min_size = n;
	else if (k == 11 && !strncmp(kv, "read-behind", k) && n <= 1)
		c->read_behind = n;
	else if (k == 7 && !strncmp(kv, "verbose", k) && n <= 1)
		c->verbose = n;
	else
		return false;
	return true;
}

int pl_parse(const char *env, struct pl_conf *c)
{
	const char *p;
	int e = errno;

	*c = (struct pl_conf){ .chunk = PSPLICE_WB_CHUNK, .min_size = PSPLICE_WB_CHUNK };
	for (p = env; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : "")
		if (!parse_one(p, c))
			break;
	c->on = env && *env && !*p;
	errno = e;
	return c->on;
}

/* The child starts afresh: a slot of an older generation is reset on first
 * use, and a slot another thread held at fork is free again. */
static void in_child(void)
{
	int fd, h = atomic_load(&pl_hiwater);

	pl_gen++;
	for (fd = 0; fd <= h; fd++) {
		atomic_store(&pl_slots[fd].busy, 0);
		atomic_store(&pl_slots[fd].rgen, 0);
	}
	atomic_store(&pl_st_files, 0);
	atomic_store(&pl_st_bytes, 0);
	atomic_store(&pl_st_peak, 0);
	atomic_store(&pl_dropped, 0);
	atomic_store(&pl_st_errors, 0);
}

void pl_init(void)
{
	void *m;

	if (!pl_parse(getenv("PSPLICE_EXEC"), &pl_conf))
		return;
	pl_page = sysconf(_SC_PAGESIZE);
	m = mmap(NULL, PL_NSLOT * sizeof(struct slot), PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED || pthread_atfork(NULL, NULL, in_child) != 0) {
		pl_conf.on = false;
		return;
	}
	pl_slots = m;
	/* A number far from those a program expects the next open to get. */
	if (pl_conf.verbose && (errfd = fcntl(2, F_DUPFD_CLOEXEC, 512)) < 0)
		errfd = 2;
}

static void summary(void)
{
	char msg[256];
	int n;

	if (!atomic_load(&pl_st_files) && !atomic_load(&pl_dropped) && !atomic_load(&pl_st_errors))
		return;
	n = snprintf(msg, sizeof(msg), "psplice exec: pid %d: paced %llu file%s, %llu MiB "
		     "written, peak dirty+writeback %llu MiB; read-behind dropped %llu MiB; "
		     "%llu writeback error%s\n", (int)getpid(),
		     (unsigned long long)atomic_load(&pl_st_files),
		     atomic_load(&pl_st_files) == 1 ? "" : "s",
		     (unsigned long long)(atomic_load(&pl_st_bytes) >> 20),
		     (unsigned long long)(atomic_load(&pl_st_peak) >> 20),
		     (unsigned long long)(atomic_load(&pl_dropped) >> 20),
		     (unsigned long long)atomic_load(&pl_st_errors),
		     atomic_load(&pl_st_errors) == 1 ? "" : "s");
	if (n > 0)
		(void)!pl_real.write(errfd, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1);
}

/* At exit, files still open are settled as a close would. */
void pl_fini(void)
{
	int fd, h;

	if (!pl_slots)
		return;
	h = atomic_load(&pl_hiwater);
	for (fd = 0; fd <= h; fd++)
		pl_closing(fd);
	if (pl_conf.verbose)
		summary();
}
