/* Internal types shared by the planner, the paths and the pool. */
#ifndef PS_INTERNAL_H
#define PS_INTERNAL_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "psplice.h"

#define PS_HIDDEN __attribute__((visibility("hidden")))
#define PS_STR_(x) #x
#define PS_STR(x) PS_STR_(x)

/* The most one syscall moves (the kernel's MAX_RW_COUNT, page aligned). */
#define PS_MAX_CHUNK ((size_t)0x7ffff000)

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

enum ps_kind {
	PS_K_FILE, PS_K_BLOCK, PS_K_PIPE, PS_K_TCP, PS_K_UNIX, PS_K_SOCK,
	PS_K_CHR, PS_K_TTY, PS_K_DIR, PS_K_OTHER
};

/* What fstat says of an fd, and its F_GETFL flags once asked: the kernel
 * refuses an fd not open for the direction a call needs (EBADF) and an
 * O_APPEND output (EINVAL, EBADF) by itself, before a byte moves, so most
 * moves never need the flags. Read them through ps__fl() and the helpers
 * below, which ask on first use; a prepared pair asks when it is made. */
struct ps_endpoint {
	int fd;
	int kind;          /* enum ps_kind */
	int fl;            /* F_GETFL, or PS_FL_UNASKED */
	dev_t dev;
	ino_t ino;
	int64_t size;      /* st_size for files and block devices, else 0; -1
	                      in a prepared pair: not known, ps__size asks */
	bool seekable;
};

#define PS_FL_UNASKED (-1)

struct ps_pipe {
	int r, w;
	size_t size;
	unsigned int gen;  /* kept by a pair: the fork generation then */
};

/* What a prepared pair with a non-seekable input took and could not deliver
 * yet: its pending bytes, exactly the next bytes of the stream, which its
 * next move delivers before it reads more. They wait in the internal pipe
 * the move used, which the pair keeps until it is empty, or, when no pipe
 * may be kept, in memory. */
struct ps_hold {
	pthread_mutex_t lock;    /* moves on one pair take turns */
	struct ps_pipe *pipe;    /* kept while it holds in_pipe bytes */
	size_t in_pipe;
	unsigned char *buf;      /* or pending in buf[off, len) */
	size_t off, len, cap;
};

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
};

static inline bool ps_is_socket(int kind)
{
	return kind == PS_K_TCP || kind == PS_K_UNIX || kind == PS_K_SOCK;
}

PS_HIDDEN int ps__classify(int fd, struct ps_endpoint *ep);
PS_HIDDEN int ps__fl(const struct ps_endpoint *ep);
PS_HIDDEN bool ps__readable(const struct ps_endpoint *ep);
PS_HIDDEN bool ps__writable(const struct ps_endpoint *ep);
PS_HIDDEN bool ps__append(const struct ps_endpoint *ep);
PS_HIDDEN bool ps__nonblock(const struct ps_endpoint *ep);
PS_HIDDEN int ps__unusable(const struct ps_endpoint *in, const struct ps_endpoint *out);

/* Whether the flags are known to say O_APPEND, without asking: for paths
 * whose syscall refuses an O_APPEND output itself. */
static inline bool ps_known_append(const struct ps_endpoint *ep)
{
	return ep->fl != PS_FL_UNASKED && ps__append(ep);
}

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

PS_HIDDEN int64_t ps__size_now(int fd, int kind);
PS_HIDDEN int64_t ps__size(const struct ps_endpoint *ep);

/* The paths (path_*.c), one per mechanism, each returning as above. */
PS_HIDDEN ssize_t ps__path_clone(struct ps_xfer *x);
PS_HIDDEN ssize_t ps__path_cfr(struct ps_xfer *x);
PS_HIDDEN ssize_t ps__path_sendfile(struct ps_xfer *x);
PS_HIDDEN ssize_t ps__path_splice(struct ps_xfer *x);
PS_HIDDEN ssize_t ps__path_splice_pipe(struct ps_xfer *x);
PS_HIDDEN ssize_t ps__path_readwrite(struct ps_xfer *x);
/* splice(2) refused the pair before a byte moved (path_splice.c): the
 * internal pipe, a pair's and a tee's pending bytes fall back on it too. */
PS_HIDDEN bool ps__splice_refused(ssize_t r);

/* Shared by the paths (accounting.c). ps__fail returns the step's error as
 * -errno, and ps__ran n, or that error if a helper recorded one. */
PS_HIDDEN int ps__fail(struct ps_xfer *x, int err, int side);
PS_HIDDEN ssize_t ps__ran(const struct ps_xfer *x, size_t n);
PS_HIDDEN int ps__side_of(const struct ps_xfer *x, int err);
PS_HIDDEN int ps__blocked_side(const struct ps_xfer *x);
PS_HIDDEN void ps__advance(int64_t *off, uint64_t n);
PS_HIDDEN bool ps__at_eof(const struct ps_xfer *x);
PS_HIDDEN bool ps__input_ended(const struct ps_xfer *x);
PS_HIDDEN bool ps__ended_anyway(struct ps_xfer *x, int err);
PS_HIDDEN void ps__moved(struct ps_xfer *x, uint64_t in, uint64_t out, int method);
PS_HIDDEN unsigned int ps__splice_flags(const struct ps_xfer *x);
PS_HIDDEN int ps__give_back(struct ps_xfer *x, const void *buf, size_t n);
PS_HIDDEN size_t ps__write_all(struct ps_xfer *x, const unsigned char *buf, size_t n);
PS_HIDDEN ssize_t ps__read_once(struct ps_xfer *x, unsigned char *buf, size_t n);

/* The SIGPIPE guard (sigpipe.c). */
struct ps_sigguard {
	sigset_t old;    /* the caller's mask */
	bool on;         /* SIGPIPE blocked by us */
	bool pending;    /* one was pending before: the caller's */
};
PS_HIDDEN bool ps__sigpipe_ignored(void);
PS_HIDDEN void ps__sigpipe_block(struct ps_sigguard *g, bool on);
PS_HIDDEN void ps__sigpipe_restore(struct ps_sigguard *g, bool raised);
PS_HIDDEN void ps__sigpipe_reap(void);

/* A pair's pending bytes (hold.c). */
PS_HIDDEN size_t ps__held(const struct ps_hold *h);
PS_HIDDEN size_t ps__held_here(const struct ps_hold *h);
PS_HIDDEN int ps__hold_bytes(struct ps_hold *h, const void *buf, size_t n);
PS_HIDDEN bool ps__hold_pipe(struct ps_xfer *x, struct ps_pipe *p, size_t n);
PS_HIDDEN void ps__deliver_held(struct ps_xfer *x);
PS_HIDDEN size_t ps__hold_take(struct ps_hold *h, void *buf, size_t len);
PS_HIDDEN void ps__hold_release(struct ps_hold *h);

/* The pipe pool (pipepool.c): a pipe per thread, lent to a move; a pipe a
 * pair keeps while it holds bytes, within a budget; empty pipes for reuse;
 * and how a pipe is grown (ps__pipe_grow: as far as the limits allow, never
 * shrunk; returns its size). */
PS_HIDDEN size_t ps__pipe_grow(int fd, size_t want);
PS_HIDDEN int ps__pipe_get(struct ps_pipe **p);
PS_HIDDEN void ps__pipe_put(struct ps_pipe *p, bool dirty);
PS_HIDDEN struct ps_pipe *ps__pipe_keep(struct ps_pipe *p, bool always);
PS_HIDDEN void ps__pipe_back(struct ps_pipe *p);
PS_HIDDEN void ps__pipe_close(struct ps_pipe *p);
PS_HIDDEN bool ps__pipe_forked(const struct ps_pipe *p);
PS_HIDDEN unsigned char *ps__buf(size_t *size);
PS_HIDDEN unsigned char *ps__park_buf(size_t need);
PS_HIDDEN struct psplice_result *ps__last(void);

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
