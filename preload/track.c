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

#include "internal.h"
#include "preload.h"
#include "sys.h"
#include "track.h"

#define PL_NSLOT 65536           /* fds past this pass through */

struct pl_conf pl_conf;
static struct slot *slots;
static unsigned int gen;
static atomic_int hiwater = -1;
int64_t pl_page;
static int errfd = 2;  /* -v: stderr as it was at load (programs close it at exit) */
static atomic_ullong st_files, st_bytes, st_peak, st_errors;
atomic_ullong pl_dropped;

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
	*s = (struct slot){ .busy = 1, .gen = gen, .known = true, .dev = st->st_dev,
			    .ino = st->st_ino };
}

static void raise_hiwater(int fd)
{
	int h = atomic_load_explicit(&hiwater, memory_order_relaxed);

	while (fd > h && !atomic_compare_exchange_weak(&hiwater, &h, fd))
		;
}

/* The slot of fd, taken, as it is: without an fstat it may still describe
 * a file fd named before (closed by fclose), so it serves only where that
 * costs nothing. NULL: pass through. */
static struct slot *peek(int fd)
{
	struct slot *s;

	if (!slots || fd < 0 || fd >= PL_NSLOT)
		return NULL;
	s = &slots[fd];
	if (atomic_exchange_explicit(&s->busy, 1, memory_order_acquire))
		return NULL;
	raise_hiwater(fd);
	return s;
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
	if (s->gen != gen || (s->known && (s->dev != st->st_dev || s->ino != st->st_ino))) {
		reset(s, st);
	} else if (!s->known) {
		/* Opened since: what was counted is this file's. */
		s->known = true;
		s->dev = st->st_dev;
		s->ino = st->st_ino;
	}
	return s;
}

static bool skipped(int fd)
{
	return slots && fd >= 0 && fd < PL_NSLOT &&
	       atomic_load_explicit(&slots[fd].skip, memory_order_relaxed) == gen + 1;
}

/* Whatever fd named before is gone: its slot starts afresh. */
void pl_opened(int fd)
{
	struct slot *s;
	int e;

	if (skipped(fd))
		atomic_store_explicit(&slots[fd].skip, 0, memory_order_relaxed);
	s = peek(fd);
	if (!s)
		return;
	e = errno;
	pl_forget_reader(s);
	*s = (struct slot){ .busy = 1, .gen = gen };
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

static void add_max(atomic_ullong *v, unsigned long long x)
{
	unsigned long long old = atomic_load(v);

	while (x > old && !atomic_compare_exchange_weak(v, &old, x))
		;
}

static void count_error(int fd, int err)
{
	char msg[160];
	int n;

	atomic_fetch_add(&st_errors, 1);
	n = snprintf(msg, sizeof(msg), "psplice exec: fd %d: writeback error: %s\n",
		     fd, strerrordesc_np(err) ? strerrordesc_np(err) : "?");
	if (n > 0)
		(void)!pl_real.write(errfd, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1);
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
		add_max(&st_peak, (cs.dirty + cs.writeback) * (uint64_t)pl_page);
}

static void feed(struct slot *s, int fd, int64_t off, int64_t len)
{
	atomic_fetch_add(&st_bytes, (unsigned long long)len);
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
		atomic_fetch_add(&st_files, 1);
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
	small = s->gen == gen && s->wstate == W_UNKNOWN &&
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
		count_error(fd, s->err);
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

/* The reader side is judged at the first read or write that sees fd, the
 * writer side at the write that takes it past the minimum size; an fd with
 * nothing to follow on either side is skipped from then on. The flags are
 * asked for only when a side could be followed. */
static void classify(struct slot *s, int fd, const struct stat *st, bool writing)
{
	bool rd = pl_conf.read_behind && s->rstate == R_UNKNOWN;
	bool wr = writing && s->wstate == W_UNKNOWN;
	bool big = S_ISREG(st->st_mode) && st->st_size > 0 &&
		   (uint64_t)st->st_size >= pl_conf.min_size;
	int fl = wr || (rd && big) ? fcntl(fd, F_GETFL) : 0;

	if (wr)
		classify_writer(s, fl, st);
	if (rd) {
		pl_classify_reader(s, fd, fl, st);
		atomic_store_explicit(&s->rgen, gen + 1, memory_order_relaxed);
	}
	if (s->wstate == W_IGNORED && (!pl_conf.read_behind || s->rstate == R_IGNORED))
		atomic_store_explicit(&s->skip, gen + 1, memory_order_relaxed);
}

static void read_first(struct slot *s, int fd, const struct stat *st, int64_t off, int64_t n)
{
	(void)off, (void)n;
	classify(s, fd, st, false);
}

/* The first read of a file is seen before it is made; later ones skip
 * even the fstat. */
void pl_will_read(int fd)
{
	if (fd >= 0 && fd < PL_NSLOT && slots &&
	    atomic_load_explicit(&slots[fd].rgen, memory_order_relaxed) != gen + 1)
		on_slot(fd, read_first, 0, 0);
}

/* The reader side is judged and not followed: nothing to do, no fstat. */
static bool unfollowed(int fd)
{
	struct slot *s = peek(fd);
	bool no;

	if (!s)
		return true;
	no = s->gen == gen && s->rstate == R_IGNORED;
	put(s);
	return no;
}

void pl_read(int fd, int64_t off, ssize_t n)
{
	if (!skipped(fd) && !unfollowed(fd))
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

	if (!slots || fd < 0 || fd >= PL_NSLOT)
		return true;
	s = &slots[fd];
	if (atomic_exchange_explicit(&s->busy, 1, memory_order_acquire))
		return true;
	idle = s->gen != gen || (!s->paced && !s->big && !s->err && s->rstate != R_READER);
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

/* Load, fork, exit ----------------------------------------------------- */

/* The child starts afresh: a slot of an older generation is reset on first
 * use, and a slot another thread held at fork is free again. */
static void in_child(void)
{
	int fd, h = atomic_load(&hiwater);

	gen++;
	for (fd = 0; fd <= h; fd++) {
		atomic_store(&slots[fd].busy, 0);
		atomic_store(&slots[fd].rgen, 0);
	}
	atomic_store(&st_files, 0);
	atomic_store(&st_bytes, 0);
	atomic_store(&st_peak, 0);
	atomic_store(&pl_dropped, 0);
	atomic_store(&st_errors, 0);
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
	slots = m;
	/* A number far from those a program expects the next open to get. */
	if (pl_conf.verbose && (errfd = fcntl(2, F_DUPFD_CLOEXEC, 512)) < 0)
		errfd = 2;
}

static void summary(void)
{
	char msg[256];
	int n;

	if (!atomic_load(&st_files) && !atomic_load(&pl_dropped) && !atomic_load(&st_errors))
		return;
	n = snprintf(msg, sizeof(msg), "psplice exec: pid %d: paced %llu file%s, %llu MiB "
		     "written, peak dirty+writeback %llu MiB; read-behind dropped %llu MiB; "
		     "%llu writeback error%s\n", (int)getpid(),
		     (unsigned long long)atomic_load(&st_files),
		     atomic_load(&st_files) == 1 ? "" : "s",
		     (unsigned long long)(atomic_load(&st_bytes) >> 20),
		     (unsigned long long)(atomic_load(&st_peak) >> 20),
		     (unsigned long long)(atomic_load(&pl_dropped) >> 20),
		     (unsigned long long)atomic_load(&st_errors),
		     atomic_load(&st_errors) == 1 ? "" : "s");
	if (n > 0)
		(void)!pl_real.write(errfd, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1);
}

/* At exit, files still open are settled as a close would. */
void pl_fini(void)
{
	int fd, h;

	if (!slots)
		return;
	h = atomic_load(&hiwater);
	for (fd = 0; fd <= h; fd++)
		pl_closing(fd);
	if (pl_conf.verbose)
		summary();
}
