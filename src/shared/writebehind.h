/* Write-behind (writebehind.c), the one part of the library's internals the
 * preload library uses: it keeps a writer's state in storage of its own. The
 * headers in this directory are all that programs of the tree beyond the
 * library may include of src/ (the Makefile gives them this directory
 * alone). */
#ifndef PS_WRITEBEHIND_H
#define PS_WRITEBEHIND_H

#include <stddef.h>
#include <stdint.h>

#include "../compiler.h"
#include "psplice.h"

/* Write-behind's state, which callers without malloc (the preload library)
 * keep in storage of their own: ps__wb_init and ps__wb_end are
 * psplice_wb_new and psplice_wb_finish without the allocation and its
 * errno (ps__wb_end returns 0 or the first error). */
struct psplice_wb {
	int fd, err;
	int level;                    /* the weakest level a settled chunk reached,
	                                 -1 before any */
	unsigned int flags;
	size_t chunk;
	int64_t run_start, run_end;   /* written, not yet submitted */
	int64_t prev_start, prev_end; /* submitted, not yet waited on */
	int64_t gone_start, gone_end; /* the last chunk dropped from the cache */
};
/* The largest folio the page cache holds a file in (PMD size on x86-64),
 * aligned to its size: POSIX_FADV_DONTNEED drops one only when the range
 * covers it whole. */
#define PS_FOLIO_MAX ((int64_t)2 << 20)
/* sync_file_range alone for each chunk: no lock, no allocation and no
 * fallback, so every step is async-signal-safe. */
#define PS_WB_RAW 0x80000000u
PS_HIDDEN void ps__wb_init(struct psplice_wb *wb, int fd, size_t chunk, unsigned int flags);
PS_HIDDEN int ps__wb_end(struct psplice_wb *wb, unsigned int sync_flags,
			 enum psplice_sync_level *achieved);

#endif
