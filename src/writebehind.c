/* Write-behind: keep a long sequential write from filling memory with dirty
 * pages. Each full chunk is submitted for writeback as soon as it is written;
 * the chunk before it, which has had a chunk's time to reach the disk, is
 * waited on and then dropped from the page cache. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "psplice.h"
#include "shared/writebehind.h"
#include "sys.h"

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
	wb = malloc(sizeof(*wb));
	if (!wb)
		return NULL;
	ps__wb_init(wb, fd, chunk, flags);
	return wb;
}

void ps__wb_init(struct psplice_wb *wb, int fd, size_t chunk, unsigned int flags)
{
	*wb = (struct psplice_wb){ .fd = fd, .flags = flags, .level = -1,
		.chunk = chunk ? chunk : PSPLICE_WB_CHUNK };
}

/* One range call: through psplice_sync, or, for PS_WB_RAW, sync_file_range
 * alone (no lock, no allocation, no fallback: async-signal-safe). */
static int wb_range(struct psplice_wb *wb, int64_t off, int64_t len, unsigned int flags,
		    enum psplice_sync_level *level)
{
	int r;

	if (!(wb->flags & PS_WB_RAW))
		return psplice_sync(wb->fd, off, len, flags, level) < 0 ? -errno : 0;
	r = ps_sync_file_range(wb->fd, off, len, flags);
	if (level)
		*level = r < 0 ? PSPLICE_LEVEL_NONE : (flags & PSPLICE_SYNC_WAIT_AFTER) ?
			PSPLICE_LEVEL_WRITTEN : PSPLICE_LEVEL_SUBMITTED;
	return r;
}

static int fail(struct psplice_wb *wb, int err)
{
	if (!wb->err)
		wb->err = err;
	errno = wb->err;
	return -1;
}

/* Drop the previous chunk's pages. The kernel drops whole pages (whole
 * folios, up to 2 MiB) only: one this chunk shares with the chunk dropped
 * just before it (a run that began off a page boundary) is taken from
 * there, within that chunk, as far back as a 2 MiB folio would need. */
static void drop(struct psplice_wb *wb)
{
	int64_t from = wb->prev_start, back = from & ~(PS_FOLIO_MAX - 1);

	if (from == wb->gone_end && from > wb->gone_start)
		from = back > wb->gone_start ? back : wb->gone_start;
	(void)posix_fadvise(wb->fd, from, wb->prev_end - from, POSIX_FADV_DONTNEED);
	wb->gone_start = wb->prev_start;
	wb->gone_end = wb->prev_end;
}

/* Wait for the previous chunk and drop it from the cache. */
static int settle_prev(struct psplice_wb *wb)
{
	int64_t len = wb->prev_end - wb->prev_start;
	enum psplice_sync_level level;
	int r;

	if (len <= 0)
		return 0;
	r = wb_range(wb, wb->prev_start, len, PSPLICE_SYNC_WAIT_BEFORE |
		     PSPLICE_SYNC_WRITE | PSPLICE_SYNC_WAIT_AFTER, &level);
	if (r < 0)
		return r;
	if (wb->level < 0 || (int)level < wb->level)
		wb->level = (int)level;
	if (!(wb->flags & PSPLICE_WB_KEEP_CACHE))
		drop(wb);
	wb->prev_start = wb->prev_end = 0;
	return 0;
}

/* Start writeback of [start, end), then settle the chunk before it. */
static int submit(struct psplice_wb *wb, int64_t start, int64_t end)
{
	int r;

	r = wb_range(wb, start, end - start, PSPLICE_SYNC_WRITE, NULL);
	if (r < 0)
		return r;
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
	int err = ps__wb_end(wb, sync_flags, achieved);

	free(wb);
	if (err) {
		errno = err;
		return -1;
	}
	return 0;
}

int ps__wb_end(struct psplice_wb *wb, unsigned int sync_flags,
	       enum psplice_sync_level *achieved)
{
	int r = 0;

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
	return wb->err;
}
