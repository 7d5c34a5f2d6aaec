/* One transfer step (struct ps_xfer), as the planner hands it to a path and
 * the accounting and a pair's pending bytes see it. */
#ifndef PS_PATH_T_H
#define PS_PATH_T_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "endpoint-t.h"
#include "hold-t.h"
#include "psplice.h"

/* The most one syscall moves (the kernel's MAX_RW_COUNT, page aligned). */
#define PS_MAX_CHUNK ((size_t)0x7ffff000)

/* One transfer step, as the planner hands it to a path. */
struct ps_xfer {
	const struct ps_endpoint *in, *out;
	int64_t *off_in, *off_out;  /* NULL: use the file position */
	size_t len;                 /* > 0, <= PS_MAX_CHUNK */
	unsigned int flags;
	bool retry_eintr;           /* psplice_copy: retry EINTR, never park for it */
	struct psplice_result *res; /* the path adds to in_bytes/out_bytes */
	struct ps_hold *hold;       /* a pair's: undelivered bytes wait there,
	                               not parked; NULL for a one-shot call */
	bool raised;                /* a path met a gone reader and did not fail */
	unsigned char unsure;       /* PS_UNSURE_*: sides a one-shot call took from
	                               the thread's memory of its fds, which the
	                               first path's answer is to bear out */
	bool stale;                 /* it did not: nothing moved, the call must
	                               classify the fds and begin again */
};

#define PS_UNSURE_IN  1u
#define PS_UNSURE_OUT 2u

#endif
