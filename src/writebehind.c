/* Write-behind: keep a long sequential write from filling memory with dirty
 * pages. Each full chunk is submitted for writeback as soon as it is written;
 * the chunk before it, which has had a chunk's time to reach the disk, is
 * waited on and then dropped from the page cache. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "internal.h"
#include "sys.h"

#define WB_DEFAULT_CHUNK ((size_t)8 << 20)

struct psplice_wb {
	int fd, err;
	int level;                    /* the weakest level a settled chunk reached,
	                                 -1 before any */
	unsigned int flags;
	size_t chunk;
	int64_t run_start, run_end;   /* written, not yet submitted */
	int64_t prev_start, prev_end; /* submitted, not yet waited on */
};

struct psplice_wb *psplice_wb_new(int fd, size_t chunk, unsigned int flags)
{
	struct psplice_wb *wb;
	struct stat st;

	if (fstat(fd, &st) < 0)
		return NULL;
	if (flags & ~PSPLICE_WB_KEEP_CACHE) {
		errno = EINVAL;
		return NULL;
	}
	if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
		errno = ESPIPE;
		return NULL;
	}
	wb = calloc(1, sizeof(*wb));
	if (!wb)
		return NULL;
	wb->fd = fd;
	wb->flags = flags;
	wb->chunk = chunk ? chunk : WB_DEFAULT_CHUNK;
	wb->level = -1;
	return wb;
}

static int fail(struct psplice_wb *wb, int err)
{
	if (!wb->err)
		wb->err = err;
	errno = wb->err;
	return -1;
}

/* Wait for the previous chunk and drop it from the cache. */
static int settle_prev(struct psplice_wb *wb)
{
	int64_t len = wb->prev_end - wb->prev_start;
	enum psplice_sync_level level;

	if (len <= 0)
		return 0;
	if (psplice_sync(wb->fd, wb->prev_start, len, PSPLICE_SYNC_WAIT_BEFORE |
			 PSPLICE_SYNC_WRITE | PSPLICE_SYNC_WAIT_AFTER, &level) < 0)
		return -errno;
	if (wb->level < 0 || (int)level < wb->level)
		wb->level = (int)level;
	if (!(wb->flags & PSPLICE_WB_KEEP_CACHE))
		(void)posix_fadvise(wb->fd, wb->prev_start, len, POSIX_FADV_DONTNEED);
	wb->prev_start = wb->prev_end = 0;
	return 0;
}

/* Start writeback of [start, end), then settle the chunk before it. */
static int submit(struct psplice_wb *wb, int64_t start, int64_t end)
{
	int r;

	if (psplice_sync(wb->fd, start, end - start, PSPLICE_SYNC_WRITE, NULL) < 0)
		return -errno;
	r = settle_prev(wb);
	wb->prev_start = start;
	wb->prev_end = end;
	return r;
}

int psplice_wb_wrote(struct psplice_wb *wb, int64_t offset, size_t len)
{
	int r = 0;

	if (wb->err)
		return fail(wb, wb->err);
	if (offset < 0 || len > (uint64_t)(INT64_MAX - offset))
		return fail(wb, EINVAL);
	/* A write that does not continue the run ends it: what was written
	 * so far goes out as a (short) chunk of its own. */
	if (offset != wb->run_end && wb->run_end > wb->run_start) {
		r = submit(wb, wb->run_start, wb->run_end);
		wb->run_start = wb->run_end = offset;
	} else if (wb->run_end == wb->run_start) {
		wb->run_start = wb->run_end = offset;
	}
	wb->run_end = offset + (int64_t)len;
	while (!r && wb->run_end - wb->run_start >= (int64_t)wb->chunk) {
		r = submit(wb, wb->run_start, wb->run_start + (int64_t)wb->chunk);
		wb->run_start += (int64_t)wb->chunk;
	}
	return r < 0 ? fail(wb, -r) : 0;
}

int psplice_wb_finish(struct psplice_wb *wb, unsigned int sync_flags,
		      enum psplice_sync_level *achieved)
{
	int r = 0, err;

	if (achieved)
		*achieved = PSPLICE_LEVEL_NONE;
	if (!wb->err && wb->run_end > wb->run_start)
		r = submit(wb, wb->run_start, wb->run_end);
	if (!r && !wb->err)
		r = settle_prev(wb);
	if (r < 0 && !wb->err)
		wb->err = -r;
	if (!wb->err && sync_flags &&
	    psplice_sync(wb->fd, 0, 0, sync_flags, achieved) < 0)
		wb->err = errno;
	else if (!wb->err && !sync_flags && achieved && wb->level > 0)
		*achieved = (enum psplice_sync_level)wb->level;
	err = wb->err;
	free(wb);
	if (err) {
		errno = err;
		return -1;
	}
	return 0;
}
