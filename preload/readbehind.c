/* Read-behind: a file read once, going forward, has the pages it read
 * dropped from the page cache as the reading goes on, all but those that
 * were cached before its first read. */
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cachestat.h"
#include "preload.h"
#include "track.h"
#include "writebehind.h"

#define PL_BITMAP_MAX ((size_t)64 << 20) /* pages of files past 2 TiB: left alone */

void pl_forget_reader(struct slot *s)
{
	if (s->before)
		munmap(s->before, s->before_len);
	s->before = NULL;
	s->rstate = R_UNKNOWN;
	s->rcounted = s->stated = false;
}

static bool bit(const struct slot *s, int64_t pg)
{
	return s->before[pg / 8] & (1u << (pg % 8));
}

/* Which pages were cached before the first read: whole blocks when
 * cachestat says none or all of a block is, page by page otherwise. */
static int snapshot(struct slot *s, int fd, int64_t pages)
{
	const int64_t blk = 256;
	struct ps_cachestat cs, pc;
	int64_t b, p, n;

	s->before_len = (size_t)((pages + 7) / 8 + pl_page - 1) / (size_t)pl_page * (size_t)pl_page;
	if (s->before_len > PL_BITMAP_MAX)
		return -1;
	s->before = mmap(NULL, s->before_len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (s->before == MAP_FAILED) {
		s->before = NULL;
		return -1;
	}
	for (b = 0; b < pages; b += blk) {
		n = pages - b < blk ? pages - b : blk;
		if (ps_cachestat(fd, (uint64_t)(b * pl_page), (uint64_t)(n * pl_page), &cs) < 0)
			return -1;
		for (p = b; p < b + n && cs.cache; p++)
			if (cs.cache == (uint64_t)n ||
			    (ps_cachestat(fd, (uint64_t)(p * pl_page), (uint64_t)pl_page, &pc) == 0 &&
			     pc.cache))
				s->before[p / 8] |= (uint8_t)(1u << (p % 8));
	}
	return 0;
}

void pl_classify_reader(struct slot *s, int fd, int fl, const struct stat *st)
{
	struct ps_cachestat cs;

	s->rstate = R_IGNORED;
	if (!S_ISREG(st->st_mode) || fl < 0 || (fl & O_DIRECT) ||
	    (fl & O_ACCMODE) == O_WRONLY || st->st_size <= 0 ||
	    (uint64_t)st->st_size < pl_conf.min_size)
		return;
	if (ps_cachestat(fd, 0, 0, &cs) < 0)
		return;
	if (cs.cache && snapshot(s, fd, (st->st_size + pl_page - 1) / pl_page) < 0) {
		pl_forget_reader(s);
		s->rstate = R_IGNORED;
		return;
	}
	s->rstate = R_READER;
	s->rsize = st->st_size;
	s->rlo = -1;
}

static void advise(int fd, int64_t a, int64_t b)
{
	if (b > a && posix_fadvise(fd, a, b - a, POSIX_FADV_DONTNEED) == 0)
		atomic_fetch_add(&pl_dropped, (unsigned long long)(b - a));
}

/* Drop the pages of [a, b) that were not cached before the first read;
 * pages past the size it had then are another writer's. */
static void drop(struct slot *s, int fd, int64_t a, int64_t b)
{
	int64_t p, q, end;

	end = (s->rsize + pl_page - 1) / pl_page;
	b = (b + pl_page - 1) / pl_page < end ? (b + pl_page - 1) / pl_page : end;
	a /= pl_page;
	if (!s->before) {
		advise(fd, a * pl_page, b * pl_page);
		return;
	}
	for (p = a; p < b; p = q) {
		while (p < b && bit(s, p))
			p++;
		for (q = p; q < b && !bit(s, q); q++)
			;
		advise(fd, p * pl_page, q * pl_page);
	}
}

static void was_read(struct slot *s, int fd, int64_t off, int64_t n)
{
	int64_t to;

	if (s->rlo < 0) {
		s->rlo = off;
		s->rdone = off / pl_page * pl_page;
	} else if (off < s->rdone) {
		/* Read again: not a read-once reader; what is cached stays. */
		s->rstate = R_IGNORED;
		return;
	}
	if (off + n > s->rhi)
		s->rhi = off + n;
	/* The page cache holds a file in folios of up to 2 MiB, aligned to
	 * their size, and drops a folio only when the range covers it whole:
	 * a range that ends inside one would leave it behind for good. */
	to = s->rhi / PS_FOLIO_MAX * PS_FOLIO_MAX;
	if (to - s->rdone >= (int64_t)pl_conf.chunk) {
		drop(s, fd, s->rdone, to);
		s->rdone = to;
	}
}

void pl_read_step(struct slot *s, int fd, const struct stat *st, int64_t off, int64_t n)
{
	(void)st;
	if (s->rstate == R_READER) {
		if (off < 0)
			off = lseek(fd, 0, SEEK_CUR) - n;
		if (off >= 0)
			was_read(s, fd, off, n);
	} else if (s->rstate == R_UNKNOWN) {
		/* fd names a file whose first read was not seen. */
		s->rstate = R_IGNORED;
	}
}

void pl_finish_reader(struct slot *s, int fd)
{
	if (s->rstate == R_READER && s->rlo >= 0)
		drop(s, fd, s->rdone, s->rsize);
	pl_forget_reader(s);
	atomic_store_explicit(&s->rgen, 0, memory_order_relaxed);
}
