/* cachestat(2) (Linux 6.5), the part of the syscall layer (sys.h) that the
 * tests, the benchmark and the preload library call too: it needs nothing of
 * the library, so they include it alone. Returns 0 or -errno (-ENOSYS on
 * older kernels), as every wrapper of the layer. */
#ifndef PS_CACHESTAT_H
#define PS_CACHESTAT_H

#include <errno.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef __NR_cachestat
#define __NR_cachestat 451 /* one number on every architecture */
#endif

/* The kernel's struct cachestat, which older headers lack. */
struct ps_cachestat {
	uint64_t cache, dirty, writeback, evicted, recently_evicted;
};

/* Page cache state of [off, off + len) of fd (len 0: to end of file). */
static inline int ps_cachestat(int fd, uint64_t off, uint64_t len, struct ps_cachestat *cs)
{
	struct { uint64_t off, len; } range = { off, len };
	long r = syscall(__NR_cachestat, fd, &range, cs, 0u);

	return r < 0 ? -errno : (int)r;
}

#endif
