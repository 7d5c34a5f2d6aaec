/* psplice: move bytes between any two file descriptors with the least copying
 * the kernel allows. See psplice(3). */
#ifndef PSPLICE_H
#define PSPLICE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library is built with -fvisibility=hidden: what this header declares
 * is what it exports (the version script names the same symbols). */
#ifdef __GNUC__
#pragma GCC visibility push(default)
#endif

#define PSPLICE_VERSION_MAJOR 0
#define PSPLICE_VERSION_MINOR 3
#define PSPLICE_VERSION_PATCH 0

/* Flags. The first three have the values of splice(2)'s SPLICE_F_*. */
#define PSPLICE_F_MOVE       0x01u  /* hint: move pages instead of copying */
#define PSPLICE_F_NONBLOCK   0x02u  /* do not block on pipes or socket input */
#define PSPLICE_F_MORE       0x04u  /* hint: more data follows (MSG_MORE) */
#define PSPLICE_F_NOFALLBACK 0x100u /* fail with EOPNOTSUPP rather than copy
                                       through user memory */
#define PSPLICE_F_REFLINK    0x200u /* try FICLONERANGE first (file to file) */
/* The caller keeps SIGPIPE ignored (SIG_IGN) and unblocked for as long as
 * it uses this call or pair: moves skip the SIGPIPE guard. EINVAL if SIGPIPE
 * is not ignored at the first call of a thread that makes the promise (a
 * one-shot call, a pair or a tee prepared); its later calls take it as
 * kept. */
#define PSPLICE_F_SIGPIPE_IGNORED 0x400u
/* A copy (psplice_copy, psplice_pair_copy) that a signal handler interrupts
 * returns -1 with EINTR and its totals, as a single step does, instead of
 * retrying: a caller whose handler only sets a flag (Python's, a server's)
 * gets to act on it. Tees refuse it (EINVAL). */
#define PSPLICE_F_EINTR      0x800u
/* Use exactly one mechanism (an enum psplice_method); EOPNOTSUPP if it does
 * not apply to this pair of fds. For tests and benchmarks. */
#define PSPLICE_F_ONLY(method) (((unsigned int)(method) & 0xfu) << 12)
#define PSPLICE_F_ONLY_MASK  0xf000u
/* Share extents or fail with EOPNOTSUPP; never copy. */
#define PSPLICE_F_REFLINK_ONLY (PSPLICE_F_REFLINK | PSPLICE_F_ONLY(PSPLICE_METHOD_CLONE))
/* The planning flags: those psplice_pair_new() takes; the others are each
 * move's. A caller that prepares a pair from one set of flags splits them
 * with it. */
#define PSPLICE_F_PLAN_MASK (PSPLICE_F_NOFALLBACK | PSPLICE_F_REFLINK | PSPLICE_F_ONLY_MASK | \
			     PSPLICE_F_SIGPIPE_IGNORED)

#define PSPLICE_TO_EOF UINT64_MAX

enum psplice_side { PSPLICE_SIDE_NONE, PSPLICE_SIDE_IN, PSPLICE_SIDE_OUT };

enum psplice_method {
	PSPLICE_METHOD_NONE,
	PSPLICE_METHOD_CLONE,           /* FICLONERANGE: extents shared */
	PSPLICE_METHOD_COPY_FILE_RANGE, /* copy_file_range(2) */
	PSPLICE_METHOD_SENDFILE,        /* sendfile(2) */
	PSPLICE_METHOD_SPLICE,          /* splice(2), one side a pipe */
	PSPLICE_METHOD_SPLICE_PIPE,     /* splice(2) through an internal pipe */
	/* Never produced: no path uses vmsplice(2), no result reports it, and
	 * PSPLICE_F_ONLY(PSPLICE_METHOD_VMSPLICE) fails with EOPNOTSUPP. It
	 * stays so that PSPLICE_METHOD_READWRITE keeps the number programs
	 * already built compare a result's method with, and so that sources
	 * that name it still build. */
	PSPLICE_METHOD_VMSPLICE,
	PSPLICE_METHOD_READWRITE        /* read/write through user memory */
};

struct psplice_result {
	uint64_t in_bytes;     /* taken from fd_in */
	uint64_t out_bytes;    /* delivered to fd_out */
	int error;             /* 0, or the errno that stopped the call */
	int side;              /* enum psplice_side: who failed, or who would block */
	int method;            /* enum psplice_method: the path that moved the bytes */
	const void *parked;    /* in_bytes - out_bytes undelivered bytes, or NULL; */
	size_t parked_len;     /* valid until this thread's next psplice call */
};

/* splice(2)'s signature, any pair of fds. Moves up to len bytes in one step.
 * Returns the bytes delivered to fd_out, 0 at end of input, or -1 and errno.
 * A NULL offset uses and advances the file position; a non-NULL offset is
 * positional (the file position is untouched) and is advanced by the bytes
 * delivered. When bytes were taken from a non-seekable fd_in and could not be
 * delivered, the call returns -1 even if some bytes were delivered: see
 * psplice_last() for the counts and the parked bytes. An output whose reader
 * is gone (a pipe without readers, a socket whose peer closed or reset the
 * connection) fails with EPIPE on the output side, and no SIGPIPE the call
 * raised reaches the caller or stays pending, even if SIGPIPE is blocked.
 * Any error, EINTR and EAGAIN included, may come with parked bytes: a loop
 * that calls again on EINTR must first take res->parked (psplice_last()). */
ssize_t psplice(int fd_in, int64_t *off_in, int fd_out, int64_t *off_out,
		size_t len, unsigned int flags);

/* The same, with the full result (res may be NULL). If a step delivered some
 * bytes and then failed with nothing parked, it returns the count and the
 * error is in res->error (as with write(2), the next call meets it again). */
ssize_t psplice_ex(int fd_in, int64_t *off_in, int fd_out, int64_t *off_out,
		   size_t len, unsigned int flags, struct psplice_result *res);

/* Loop until len bytes moved or end of input (len may be PSPLICE_TO_EOF);
 * retries EINTR (unless PSPLICE_F_EINTR) and short transfers; 0 on success,
 * -1 and errno on error, with res (may be NULL) holding the totals. */
int psplice_copy(int fd_in, int64_t *off_in, int fd_out, int64_t *off_out,
		 uint64_t len, unsigned int flags, struct psplice_result *res);

/* A prepared pair: fd_in and fd_out classified and the path planned once,
 * for many moves between the same two open files (a relay's connection, a
 * server sending one file in pieces). A move then costs the syscall of its
 * path and nothing more, except a file into itself, which reads its size on
 * each move. The pair holds what the fds were when it was prepared: after
 * dup2() over either fd, fcntl() changing O_APPEND, or changing O_NONBLOCK
 * when moves use PSPLICE_F_NONBLOCK, prepare a new one. Moves into a pipe or socket block SIGPIPE around the move as
 * psplice_ex does, unless the pair was prepared with
 * PSPLICE_F_SIGPIPE_IGNORED. Threads may share a pair.
 *
 * A pair whose input is not seekable (a socket, a pipe, a tty) never parks:
 * bytes it took and could not deliver are pending in the pair, in the
 * internal pipe they went through when it may keep one (no copy), else in
 * memory. The next move or copy delivers them first, and reads nothing more
 * until they are out; a move that delivered none of them says EAGAIN or the
 * output's error, with side PSPLICE_SIDE_OUT. Its result has parked_len 0;
 * pending after = pending before + in_bytes - out_bytes. Moves on such a
 * pair take turns (a lock). The pipes pairs keep come from a budget (half
 * of fs.pipe-user-pages-soft, or the environment's PSPLICE_MAX_PIPES);
 * past it, or without fds for a pipe, pending bytes wait in memory and
 * method says readwrite. */
struct psplice_pair;

/* Classify fd_in and fd_out and plan the path once. flags: the planning
 * flags (PSPLICE_F_REFLINK, PSPLICE_F_NOFALLBACK, PSPLICE_F_ONLY(m),
 * PSPLICE_F_SIGPIPE_IGNORED). NULL
 * and errno on error, the errors psplice() gives before any byte moves
 * (EBADF, EISDIR, EINVAL) or ENOMEM; psplice_last() then says which side. */
struct psplice_pair *psplice_pair_new(int fd_in, int fd_out, unsigned int flags);

/* What a caller knows an fd to be because it made it (accept(2),
 * socket(2) and connect(2), pipe(2)): one kind, with PSPLICE_FD_NONBLOCK
 * when it set O_NONBLOCK on it. For psplice_pair_new_known(). */
#define PSPLICE_FD_TCP      1u     /* a connected TCP socket (IPv4 or IPv6) */
#define PSPLICE_FD_UNIX     2u     /* a connected Unix stream socket */
#define PSPLICE_FD_PIPE     3u     /* a pipe: its read end as the input, its
                                      write end as the output */
#define PSPLICE_FD_NONBLOCK 0x100u /* the fd is O_NONBLOCK */

/* psplice_pair_new() for fds described by the caller (in, out: a
 * PSPLICE_FD_ kind, | PSPLICE_FD_NONBLOCK): nothing is asked of the kernel
 * (no fstat, getsockopt or fcntl), so a server preparing two pairs a
 * connection makes no system call for them. The description is the
 * caller's word, as PSPLICE_F_SIGPIPE_IGNORED is: the pair plans and waits
 * for the kinds described, and the kernel still refuses what an fd cannot
 * do. NULL and errno: EINVAL (flags, or a description that is none of the
 * kinds; psplice_last() says the side), EBADF (a negative fd), ENOMEM. */
struct psplice_pair *psplice_pair_new_known(int fd_in, unsigned int in, int fd_out,
					    unsigned int out, unsigned int flags);

/* psplice_ex() on the pair: the same return, offsets, result, parked bytes
 * and psplice_last(). flags adds the per-call flags (PSPLICE_F_NONBLOCK,
 * PSPLICE_F_MORE, PSPLICE_F_MOVE); any other is EINVAL. */
ssize_t psplice_pair_move(struct psplice_pair *p, int64_t *off_in, int64_t *off_out,
			  size_t len, unsigned int flags, struct psplice_result *res);

/* psplice_copy() on the pair: the same contract, without classifying the
 * fds again. A pair's pending bytes are delivered first and count in
 * out_bytes and len. */
int psplice_pair_copy(struct psplice_pair *p, int64_t *off_in, int64_t *off_out,
		      uint64_t len, unsigned int flags, struct psplice_result *res);

/* The bytes the pair holds pending (0 for a pair with a seekable input). */
size_t psplice_pair_pending(struct psplice_pair *p);

/* Hand up to len pending bytes, the oldest first, to buf: they are no longer
 * the pair's. Returns how many. */
size_t psplice_pair_take(struct psplice_pair *p, void *buf, size_t len);

/* Free the pair (NULL is fine); the fds stay open. Pending bytes are handed
 * back, never dropped: psplice_last() then holds them as parked bytes
 * (in_bytes = parked_len), or says ENOMEM. */
void psplice_pair_free(struct psplice_pair *p);

/* Fan-out: one input to n outputs ("sinks"), as tee(1). Bytes reach each
 * sink through tee(2), which duplicates a pipe's pages without copying
 * them: from the input itself when it is a pipe, else from an internal pipe
 * the input is spliced into; the last sink takes the pages themselves. A
 * sink splice(2) cannot write to (an O_APPEND file) gets write(2) from one
 * copy of the step's bytes; an input splice cannot read (a tty) is read(2).
 *
 * Each sink has its own result: res[i].in_bytes are the bytes of the stream
 * taken for sink i, out_bytes those delivered, error and side its failure,
 * method the path. A sink that fails (EPIPE, ENOSPC, ...) is out: later
 * moves skip it, its result says the error again, and the other sinks go
 * on; what it took and did not deliver stays pending. A sink that takes
 * less than it was given keeps the rest pending (in the pipe it went
 * through, or in memory) and gets them first on the next move; with
 * PSPLICE_F_NONBLOCK, sinks with no room (a blocking socket, tty or device
 * is polled first, as a pair's output is, and a socket's step held to its
 * room; a large write into a tty or device may still wait) may so fall
 * behind the others by up to hold_max bytes (plus one step), after which
 * the tee reads nothing more and says EAGAIN, side out, in the result of
 * each sink holding it back.
 * Nothing taken is dropped: pending bytes go out, or are handed back by
 * psplice_tee_take(). Without NONBLOCK a move delivers everything to every
 * sink still in before it returns. */
struct psplice_tee;

/* The most sinks one tee takes. */
#define PSPLICE_TEE_MAX 1024

/* Classify fd_in and the n fds_out once (1 <= n <= PSPLICE_TEE_MAX; an fd
 * may appear more than once). hold_max: see above (0: a sink that falls
 * behind stops the input at once). flags: PSPLICE_F_NOFALLBACK (no
 * read/write for the input, EOPNOTSUPP), PSPLICE_F_SIGPIPE_IGNORED. NULL
 * and errno on error (EBADF, EISDIR, EINVAL, ENOMEM; psplice_last() says
 * the side). Moves on one tee take turns (a lock). */
struct psplice_tee *psplice_tee_new(int fd_in, const int *fds_out, size_t n,
				    size_t hold_max, unsigned int flags);

/* One step: take up to len bytes from the input (at most a pipe's worth)
 * and deliver them, after any pending bytes, to every sink still in. res
 * (may be NULL) is an array of the tee's n results, filled for this step.
 * Returns the bytes taken from the input; 0 at its end, once nothing is
 * pending; -1 and errno: EAGAIN (PSPLICE_F_NONBLOCK; psplice_last()->side
 * says whether the input is empty or a sink holds it back), EINTR, the
 * input's error (side in), or, when no sink is left, the first sink's
 * error (side out). flags: PSPLICE_F_NONBLOCK, PSPLICE_F_MORE. */
ssize_t psplice_tee_move(struct psplice_tee *t, size_t len, unsigned int flags,
			 struct psplice_result *res);

/* Steps until len bytes were taken (PSPLICE_TO_EOF: the end of input), or
 * the input fails or no sink is left; retries EINTR. res (may be NULL): n
 * results, the totals of the copy per sink. 0 when every sink got every
 * byte; -1 and errno, the input's error or else the first sink's, when any
 * failed (the other sinks were still served to the end). */
int psplice_tee_copy(struct psplice_tee *t, uint64_t len, unsigned int flags,
		     struct psplice_result *res);

/* The bytes pending for sink i (0 for i out of range). */
size_t psplice_tee_pending(struct psplice_tee *t, size_t i);

/* Hand up to len of sink i's pending bytes, the oldest first, to buf: they
 * are no longer the tee's. Returns how many. */
size_t psplice_tee_take(struct psplice_tee *t, size_t i, void *buf, size_t len);

/* Free the tee (NULL is fine); the fds stay open. Pending bytes still
 * there are dropped: take them first to keep them. Each sink holds a part
 * of the stream of its own, which one result cannot hand back as
 * psplice_pair_free() does. */
void psplice_tee_free(struct psplice_tee *t);

/* One call: psplice_tee_new(fd_in, fds_out, n, 0, flags & (planning
 * flags)), psplice_tee_copy(len, flags & PSPLICE_F_MORE), free. Blocking:
 * PSPLICE_F_NONBLOCK is EINVAL. */
int psplice_tee(int fd_in, const int *fds_out, size_t n, uint64_t len,
		unsigned int flags, struct psplice_result *res);

/* The result of this thread's last psplice call (never NULL). */
const struct psplice_result *psplice_last(void);

/* "clone", "copy_file_range", … ; "none"; "?" for an unknown value. */
const char *psplice_method_name(int method);
/* "none", "in", "out"; "?" for an unknown value. */
const char *psplice_side_name(int side);
/* "MAJOR.MINOR.PATCH" of the library that is running. */
const char *psplice_version(void);

/* Range sync. The first three flags have the values of sync_file_range(2)'s
 * SYNC_FILE_RANGE_*; they start or wait for writeback of a range, which by
 * itself makes nothing durable: it neither flushes the device's cache nor
 * writes the metadata needed to find the data. See psplice_sync(3). */
#define PSPLICE_SYNC_WAIT_BEFORE 1u  /* wait for writeback already under way */
#define PSPLICE_SYNC_WRITE       2u  /* start writeback of dirty pages */
#define PSPLICE_SYNC_WAIT_AFTER  4u  /* wait for that writeback to finish */
#define PSPLICE_SYNC_DATA        8u  /* data durable: the data and the metadata
                                        needed to read it back (fdatasync class) */
#define PSPLICE_SYNC_METADATA   16u  /* file durable: all metadata too (fsync class) */

/* What a sync call truly achieved, weakest to strongest. */
enum psplice_sync_level {
	PSPLICE_LEVEL_NONE,
	PSPLICE_LEVEL_SUBMITTED,    /* writeback started */
	PSPLICE_LEVEL_WRITTEN,      /* handed to the device; may sit in its cache */
	PSPLICE_LEVEL_DATA_DURABLE, /* fdatasync returned 0 */
	PSPLICE_LEVEL_FILE_DURABLE  /* fsync returned 0 */
};

/* sync_file_range(2) semantics on [offset, offset + nbytes); nbytes = 0 means
 * to end of file. DATA and METADATA apply to the whole file. 0 on success, -1
 * and errno on error; *achieved (may be NULL) says what truly happened. A
 * writeback error seen once on an fd is reported by every later call on it. */
int psplice_sync(int fd, int64_t offset, int64_t nbytes, unsigned int flags,
		 enum psplice_sync_level *achieved);

/* "none", "submitted", "written", "data-durable", "file-durable"; "?". */
const char *psplice_sync_level_name(int level);

/* Write-behind for long sequential writers: after each write, tell it what
 * was written; it starts writeback of each full chunk, waits for the chunk
 * before it and drops that chunk from the page cache, so dirty memory stays
 * bounded by a few chunks. */
struct psplice_wb;
#define PSPLICE_WB_KEEP_CACHE 1u /* do not drop written chunks from the cache */
#define PSPLICE_WB_CHUNK ((size_t)8 << 20) /* the chunk when 0 is given */
/* chunk 0 means PSPLICE_WB_CHUNK. NULL and errno on error. */
struct psplice_wb *psplice_wb_new(int fd, size_t chunk, unsigned int flags);
/* After each write of [offset, offset + len). 0, or -1 and errno (the first
 * writeback error, reported again by every later call). */
int psplice_wb_wrote(struct psplice_wb *wb, int64_t offset, size_t len);
/* Write back what is left, then psplice_sync(fd, 0, 0, sync_flags, achieved)
 * when sync_flags is not 0; frees wb. 0, or -1 and errno (the first error). */
int psplice_wb_finish(struct psplice_wb *wb, unsigned int sync_flags,
		      enum psplice_sync_level *achieved);

#ifdef __GNUC__
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif

#endif
