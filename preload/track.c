/* The preload library's state: one slot per fd number, in one table mapped
 * at load, so no call ever allocates with malloc (a signal handler may
 * write). A slot is taken with a try-lock around the bookkeeping, never
 * around the program's own call: a thread or signal handler that finds it
 * taken passes through untouched. Each slot remembers which file it
 * describes (device, inode, fork generation); a slot whose fd now names
 * another file (closed by fclose or close_range, which do not come through
 * here) starts afresh. Every step is a system call: async-signal-safe. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cachestat.h"
#include "preload.h"
#include "psplice.h"
#include "track.h"
#include "writebehind.h"

struct pl_conf pl_conf;
struct slot *pl_slots;
unsigned int pl_gen;
atomic_int pl_hiwater = -1;

static bool is_wb_error(int err)
{
	return err == EIO || err == ENOSPC || err == EDQUOT;
}

static void put(struct slot *s)
{
	atomic_store_explicit(&s->busy, 0, memory_order_release);
}

static void reset(struct slot *s, const struct stat *st)
{
	pl_forget_reader(s);
	*s = (struct slot){ .busy = 1, .gen = pl_gen, .known = true, .dev = st->st_dev,
			    .ino = st->st_ino };
}

static void raise_hiwater(int fd)
{
	int h = atomic_load_explicit(&pl_hiwater, memory_order_relaxed);

	while (fd > h && !atomic_compare_exchange_weak(&pl_hiwater, &h, fd))
		;
}

/* The slot of fd, taken, as it is: without an fstat it may still describe
 * a file fd named before (closed by fclose), so it serves only where that
 * costs nothing. NULL: pass through. */
static struct slot *peek(int fd)
{
	struct slot *s;

	if (!pl_slots || fd < 0 || fd >= PL_NSLOT)
		return NULL;
	s = &pl_slots[fd];
	if (atomic_exchange_explicit(&s->busy, 1, memory_order_acquire))
		return NULL;
	raise_hiwater(fd);
	return s;
}

/* s describes the file st says fd names now. */
static void adopt(struct slot *s, const struct stat *st)
{
	if (s->gen != pl_gen || (s->known && (s->dev != st->st_dev || s->ino != st->st_ino))) {
		reset(s, st);
	} else if (!s->known) {
		/* Opened since: what was counted is this file's. */
		s->known = true;
		s->dev = st->st_dev;
		s->ino = st->st_ino;
	}
}

/* The slot of fd, taken, for the file fd names now; NULL: pass through. */
static struct slot *get(int fd, struct stat *st)
{
	struct slot *s = peek(fd);

	if (!s)
		return NULL;
	if (fstat(fd, st) < 0) {
		put(s);
		return NULL;
	}
	adopt(s, st);
	return s;
}

static bool skipped(int fd)
{
	return pl_slots && fd >= 0 && fd < PL_NSLOT &&
	       atomic_load_explicit(&pl_slots[fd].skip, memory_order_relaxed) == pl_gen + 1;
}

/* Whatever fd named before is gone: its slot starts afresh. */
void pl_opened(int fd)
{
	struct slot *s;
	int e;

	if (skipped(fd))
		atomic_store_explicit(&pl_slots[fd].skip, 0, memory_order_relaxed);
	s = peek(fd);
	if (!s)
		return;
	e = errno;
	pl_forget_reader(s);
	*s = (struct slot){ .busy = 1, .gen = pl_gen };
	atomic_store_explicit(&s->rgen, 0, memory_order_relaxed);
	put(s);
	errno = e;
}

/* fn on the slot of fd, when it can be taken, with errno kept. A skipped
 * fd costs one load: not even an fstat. */
typedef void slot_fn(struct slot *s, int fd, const struct stat *st, int64_t off, int64_t n);
static void on_slot(int fd, slot_fn *fn, int64_t off, int64_t n)
{
	int e;
	struct slot *s;
	struct stat st;

	if (skipped(fd))
		return;
	e = errno;
	s = get(fd, &st);
	if (s) {
		fn(s, fd, &st, off, n);
		put(s);
	}
	errno = e;
}

/* Write side ----------------------------------------------------------- */

static void classify_writer(struct slot *s, int fl, const struct stat *st)
{
	/* O_DIRECT writes bypass the page cache: nothing to bound. */
	s->wstate = W_IGNORED;
	if (S_ISREG(st->st_mode) && fl >= 0 && !(fl & O_DIRECT) &&
	    (fl & O_ACCMODE) != O_RDONLY) {
		s->wstate = W_WRITER;
		s->append = fl & O_APPEND;
		s->wfirst = -1;
	}
}

/* Write-behind failed: stop pacing; a writeback error the wait took from
 * the file description is kept for the program's fsync. */
static void stop_pacing(struct slot *s, int err)
{
	s->paced = false;
	s->wstate = W_IGNORED;
	if (is_wb_error(err))
		s->err = err;
}

static void sample(struct slot *s, int fd)
{
	struct ps_cachestat cs;

	if (!pl_conf.verbose || s->wend - s->sampled < (int64_t)pl_conf.chunk / 2)
		return;
	s->sampled = s->wend;
	if (ps_cachestat(fd, 0, 0, &cs) == 0)
		pl_add_max(&pl_st_peak, (cs.dirty + cs.writeback) * (uint64_t)pl_page);
}

static void feed(struct slot *s, int fd, int64_t off, int64_t len)
{
	atomic_fetch_add(&pl_st_bytes, (unsigned long long)len);
	if (psplice_wb_wrote(&s->wb, off, (size_t)len) < 0)
		stop_pacing(s, errno);
	else
		sample(s, fd);
}

/* Writes that go forward are paced once the file passes the minimum size;
 * a write that goes back (a header rewritten, a database) ends pacing. */
static void wrote(struct slot *s, int fd, int64_t off, int64_t n)
{
	if (s->wfirst < 0) {
		s->wfirst = off;
	} else if (off < s->wend) {
		if (s->paced)
			stop_pacing(s, ps__wb_end(&s->wb, 0, NULL));
		s->wstate = W_IGNORED;
		return;
	}
	s->wend = off + n;
	if (s->paced) {
		feed(s, fd, off, n);
	} else if ((uint64_t)(s->wend - s->wfirst) >= pl_conf.min_size) {
		ps__wb_init(&s->wb, fd, pl_conf.chunk, PS_WB_RAW);
		s->paced = s->big = true;
		atomic_fetch_add(&pl_st_files, 1);
		feed(s, fd, s->wfirst, s->wend - s->wfirst);
	}
}

static void classify(struct slot *s, int fd, const struct stat *st, bool writing);

/* The bytes counted before the writer was judged are taken to be the ones
 * just before this write: a forward writer's. */
static void write_step(struct slot *s, int fd, const struct stat *st, int64_t off, int64_t n)
{
	int64_t seen = s->wseen;

	s->wseen = 0;
	classify(s, fd, st, true);
	if (s->wstate != W_WRITER)
		return;
	/* O_APPEND writes land at the end whatever the offset said. */
	if (s->append)
		off = st->st_size - n;
	else if (off < 0)
		off = lseek(fd, 0, SEEK_CUR) - n;
	if (off >= seen)
		wrote(s, fd, off - seen, n + seen);
	else if (off >= 0)
		wrote(s, fd, off, n);
}

/* Counted without a system call while the writes since the open stay below
 * the minimum size: true. */
static bool counted(int fd, int64_t n)
{
	struct slot *s = peek(fd);
	bool small;

	if (!s)
		return true;
	small = s->gen == pl_gen && s->wstate == W_UNKNOWN &&
		(uint64_t)(s->wseen + n) < pl_conf.min_size;
	if (small)
		s->wseen += n;
	put(s);
	return small;
}

void pl_wrote(int fd, int64_t off, ssize_t n)
{
	if (!skipped(fd) && !counted(fd, n))
		on_slot(fd, write_step, off, n);
}

/* Close: settle what is in flight and drop it; with --sync, make a file
 * that reached the minimum size durable (paced to the end or not). */
static void finish_writer(struct slot *s, int fd)
{
	int err, r;

	if (s->paced) {
		err = ps__wb_end(&s->wb, 0, NULL);
		if (err)
			stop_pacing(s, err);
		s->paced = false;
	}
	if (s->big && pl_conf.sync != PL_SYNC_NONE) {
		r = pl_conf.sync == PL_SYNC_FULL ? pl_real.fsync(fd) : pl_real.fdatasync(fd);
		/* The first error is the one told. */
		if (r < 0 && is_wb_error(errno) && !s->err)
			s->err = errno;
	}
	if (s->err)
		pl_count_error(fd, s->err);
	s->err = 0;
	s->big = false;
	s->wstate = W_UNKNOWN;
}

int pl_synced(int fd, int r)
{
	int e = errno;
	struct slot *s;
	struct stat st;

	s = get(fd, &st);
	if (s) {
		if (s->err && r == 0) {
			e = s->err;
			r = -1;
		}
		if (r < 0)
			s->err = 0;
		put(s);
	}
	errno = e;
	return r;
}

/* Both sides ------------------------------------------------------------ */

/* A file in memory only: neither side is followed, and fd is skipped. */
static void in_memory(struct slot *s)
{
	s->wstate = W_IGNORED;
	s->rstate = R_IGNORED;
	atomic_store_explicit(&s->rgen, pl_gen + 1, memory_order_relaxed);
	atomic_store_explicit(&s->skip, pl_gen + 1, memory_order_relaxed);
}

/* The reader side is judged at the first read or write that sees fd, the
 * writer side at the write that takes it past the minimum size; an fd with
 * nothing to follow on either side is skipped from then on. The flags and
 * the filesystem are asked for only when a side could be followed. */
static void classify(struct slot *s, int fd, const struct stat *st, bool writing)
{
	bool rd = pl_conf.read_behind && s->rstate == R_UNKNOWN;
	bool wr = writing && s->wstate == W_UNKNOWN;
	bool big = S_ISREG(st->st_mode) && st->st_size > 0 &&
		   (uint64_t)st->st_size >= pl_conf.min_size;
	int fl;

	if (S_ISREG(st->st_mode) && (wr || (rd && big)) && pl_memory_only(fd, st->st_dev)) {
		in_memory(s);
		return;
	}
	fl = wr || (rd && big) ? fcntl(fd, F_GETFL) : 0;
	if (wr)
		classify_writer(s, fl, st);
	if (rd) {
		pl_classify_reader(s, fd, fl, st);
		atomic_store_explicit(&s->rgen, pl_gen + 1, memory_order_relaxed);
	}
	if (s->wstate == W_IGNORED && (!pl_conf.read_behind || s->rstate == R_IGNORED))
		atomic_store_explicit(&s->skip, pl_gen + 1, memory_order_relaxed);
}

static void read_first(struct slot *s, int fd, const struct stat *st, int64_t off, int64_t n)
{
	(void)off, (void)n;
	classify(s, fd, st, false);
}

void pl_stated(int fd, mode_t mode, int64_t size, dev_t dev, ino_t ino)
{
	struct stat st = { .st_mode = mode, .st_size = size, .st_dev = dev, .st_ino = ino };
	struct slot *s;
	int e = errno;

	if (skipped(fd) || !(s = peek(fd)))
		return;
	adopt(s, &st);
	if (s->rstate == R_UNKNOWN) {
		s->stated = true;
		s->smode = mode;
		s->ssize = size;
	}
	put(s);
	errno = e;
}

/* Before the first read since the open: judged by what the program's own
 * fstat said, or, when it asks for less than the minimum size, counted
 * after the call and not judged before it. True: nothing more to do. */
static bool judged_free(int fd, int64_t want)
{
	struct slot *s = peek(fd);
	struct stat st = { 0 };
	bool done;
	int e = errno;

	if (!s)
		return true;
	done = s->gen == pl_gen && s->rstate == R_UNKNOWN && (s->stated || !s->rcounted);
	if (done && s->stated) {
		st.st_mode = s->smode;
		st.st_size = s->ssize;
		st.st_dev = s->dev;
		st.st_ino = s->ino;
		classify(s, fd, &st, false);
		errno = e;
	} else if (done && want >= 0 && (uint64_t)want >= pl_conf.min_size) {
		done = false;
	}
	put(s);
	return done;
}

/* The reader side is judged before a read: the first one when it asks for
 * the minimum size or more, else the second, so that a file read in one
 * call (rsync's, /dev/urandom's few bytes) costs no system call; what the
 * first read brought in is then taken for cached before, and kept. Once
 * judged, reads skip even the fstat. */
void pl_will_read(int fd, int64_t want)
{
	if (fd >= 0 && fd < PL_NSLOT && pl_slots &&
	    atomic_load_explicit(&pl_slots[fd].rgen, memory_order_relaxed) != pl_gen + 1 &&
	    !judged_free(fd, want))
		on_slot(fd, read_first, 0, 0);
}

/* The first read, not judged: counted. From the start (or the file
 * position: the first read since the open), short of what it asked for and
 * of the minimum size, it reached the end of a small file (or a pipe's
 * bytes): nothing to follow, and later reads need no fstat. */
static bool counted_read(int fd, int64_t off, ssize_t n, int64_t want)
{
	struct slot *s = peek(fd);
	bool first;

	if (!s)
		return true;
	first = s->gen == pl_gen && s->rstate == R_UNKNOWN && !s->rcounted;
	if (first) {
		s->rcounted = true;
		if ((off == 0 || off == -1) && want > n && (uint64_t)n < pl_conf.min_size) {
			s->rstate = R_IGNORED;
			atomic_store_explicit(&s->rgen, pl_gen + 1, memory_order_relaxed);
		}
	}
	put(s);
	return first;
}

/* The reader side is judged and not followed: nothing to do, no fstat. */
static bool unfollowed(int fd)
{
	struct slot *s = peek(fd);
	bool no;

	if (!s)
		return true;
	no = s->gen == pl_gen && s->rstate == R_IGNORED;
	put(s);
	return no;
}

void pl_read(int fd, int64_t off, ssize_t n, int64_t want)
{
	if (!skipped(fd) && !counted_read(fd, off, n, want) && n > 0 && !unfollowed(fd))
		on_slot(fd, pl_read_step, off, n);
}

static void finish(struct slot *s, int fd, const struct stat *st, int64_t off, int64_t n)
{
	(void)st, (void)off, (void)n;
	finish_writer(s, fd);
	pl_finish_reader(s, fd);
}

/* A slot with nothing to settle (a small file written, another process's
 * slot) is forgotten at close without an fstat: true. False: settle it. */
static bool forget_idle(int fd)
{
	struct slot *s;
	bool idle;
	int e;

	if (!pl_slots || fd < 0 || fd >= PL_NSLOT)
		return true;
	s = &pl_slots[fd];
	if (atomic_exchange_explicit(&s->busy, 1, memory_order_acquire))
		return true;
	idle = s->gen != pl_gen || (!s->paced && !s->big && !s->err && s->rstate != R_READER);
	if (idle) {
		e = errno;
		pl_forget_reader(s);
		errno = e;
		s->wstate = W_UNKNOWN;
		s->wseen = 0;
		atomic_store_explicit(&s->rgen, 0, memory_order_relaxed);
	}
	put(s);
	return idle;
}

void pl_closing(int fd)
{
	if (skipped(fd))
		pl_opened(fd);
	else if (!forget_idle(fd))
		on_slot(fd, finish, 0, 0);
}
