/* The paths (path_*.c), one per mechanism, and the one convention they
 * return in. */
#ifndef PS_PATH_H
#define PS_PATH_H

#include <stdbool.h>
#include <sys/types.h>

#include "compiler.h"
#include "path-t.h"
#include "psplice.h"

/* What a path returns, the one convention of every path:
 *   n >= 0            it ran: n bytes delivered (0: the end of input);
 *                     x->res holds the counts
 *   -errno            it failed: the error and its side are in x->res
 *                     (ps__fail), with what moved before it
 *   ps_not_here(why)  nothing moved; the planner tries the next path. why
 *                     is the errno that said "not here", PS_WHY_NONE when
 *                     there is nothing to report (a range the path leaves
 *                     to the next), or PS_WHY_ZERO: the call returned 0
 *                     where the file seemed to have more (/proc and sysfs
 *                     files, or a file cut and grown again since).
 * -errno never reaches PS_NOT_HERE_BASE. */
#define PS_NOT_HERE_BASE 8192
#define PS_WHY_NONE 0
#define PS_WHY_ZERO (-1)

static inline ssize_t ps_not_here(int why)
{
	return -(PS_NOT_HERE_BASE + 1 + why);
}

static inline bool ps_is_not_here(ssize_t r)
{
	return r <= -PS_NOT_HERE_BASE;
}

static inline int ps_why_not_here(ssize_t r)
{
	return (int)(-r - PS_NOT_HERE_BASE - 1);
}

PS_HIDDEN ssize_t ps__path_clone(struct ps_xfer *x);
PS_HIDDEN ssize_t ps__path_cfr(struct ps_xfer *x);
PS_HIDDEN ssize_t ps__path_sendfile(struct ps_xfer *x);
PS_HIDDEN ssize_t ps__path_splice(struct ps_xfer *x);
PS_HIDDEN ssize_t ps__path_splice_pipe(struct ps_xfer *x);
PS_HIDDEN ssize_t ps__path_readwrite(struct ps_xfer *x);
/* tee(2), pipe to pipe, for fan-out alone: no plan of a pair holds it, and
 * PSPLICE_F_ONLY cannot name it (it is no public method). */
#define PS_PATH_TEE (PSPLICE_METHOD_READWRITE + 1)
PS_HIDDEN ssize_t ps__path_tee(struct ps_xfer *x);
/* One path of the dispatch table (planner.c) by its method, outside any
 * plan: a kept pipe's bytes to the output, fan-out's input step and its
 * tees. */
PS_HIDDEN ssize_t ps__path_run(struct ps_xfer *x, int method);
/* splice(2) refused the pair before a byte moved (path_splice.c): the
 * internal-pipe path, and fan-out's input step (a tee's input splice will
 * not read is read(2) from then on), ask it too. */
PS_HIDDEN bool ps__splice_refused(ssize_t r);

/* A pair of filesystems a path cannot serve, whatever the files: the last
 * such pair, kept per path and per thread, is not asked again, where a
 * tree of small files would ask once a file for nothing. Refusals that may
 * differ from file to file (a range, EINVAL) are never kept. Should a
 * filesystem go and another be mounted under its device number, files
 * between the two go by a later path, byte for byte the same. */
struct ps_refusal {
	dev_t in, out;
	bool set;
};
PS_HIDDEN bool ps__refused(const struct ps_refusal *r, const struct ps_xfer *x);
PS_HIDDEN void ps__refuse(struct ps_refusal *r, const struct ps_xfer *x);
/* EXDEV between two devices: two filesystems, which stay two. (One
 * filesystem on two mounts answered EXDEV before Linux 5.18, for two
 * mounts of it, not for its files: one device is never kept.) */
PS_HIDDEN void ps__refuse_exdev(struct ps_refusal *r, const struct ps_xfer *x, int err);

#endif
