/* The preload library's state per fd number (track.c), shared with the
 * read side (readbehind.c). Internal to libpsplice-preload.so. */
#ifndef PL_TRACK_H
#define PL_TRACK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "writebehind.h"

enum { W_UNKNOWN, W_IGNORED, W_WRITER };
enum { R_UNKNOWN, R_IGNORED, R_READER };

struct slot {
	atomic_int busy;
	atomic_uint rgen;       /* generation + 1 once the reader side is known */
	atomic_uint skip;       /* generation + 1: nothing to follow on this fd
	                           (a pipe, a socket, a small file read) until it
	                           is closed or opened again */
	unsigned int gen;
	bool known;             /* dev and ino are the file's (not after an open) */
	dev_t dev;
	ino_t ino;
	int wstate, rstate;
	bool append, paced;
	bool big;               /* reached the minimum size: synced by --sync */
	int err;                /* a writeback error the program has not seen */
	int64_t wfirst, wend;   /* what was written, forward only */
	int64_t wseen;          /* written since the open, before the writer
	                           side is judged: a file is judged (fstat,
	                           fcntl, lseek) only once it reaches the
	                           minimum size, so a small one costs nothing */
	int64_t sampled;        /* wend at the last cachestat, -v */
	struct psplice_wb wb;
	bool stated;            /* the program's own fstat since the open said
	                           smode and ssize: the reader is judged by it */
	mode_t smode;
	int64_t ssize;
	bool rcounted;          /* a read was seen and not judged: the next
	                           one is (a small file read in one call costs
	                           nothing) */
	int64_t rlo, rhi, rdone; /* first read, highest end, dropped up to */
	int64_t rsize;          /* the size when the reading began */
	uint8_t *before;        /* page cached before the first read (bit set);
	                           NULL: none was */
	size_t before_len;
};

#define PL_NSLOT 65536           /* fds past this pass through */

/* track.c: one slot per fd number; a forked child's generation is new. */
extern struct slot *pl_slots;
extern unsigned int pl_gen;
extern atomic_int pl_hiwater;   /* the highest fd number seen */

/* life.c */
extern int64_t pl_page;
/* -v: files paced, bytes written to them, the peak of one's dirty and
 * writeback bytes, writeback errors, bytes read-behind dropped. */
extern atomic_ullong pl_st_files, pl_st_bytes, pl_st_peak, pl_st_errors, pl_dropped;
void pl_add_max(atomic_ullong *v, unsigned long long x);
/* A writeback error the program did not see: counted and told on stderr. */
void pl_count_error(int fd, int err);

/* memfs.c: fd, whose fstat said dev, is on tmpfs, ramfs or hugetlbfs. At
 * most one fstatfs per filesystem, none for a block device's. */
bool pl_memory_only(int fd, dev_t dev);

/* readbehind.c */
void pl_classify_reader(struct slot *s, int fd, int fl, const struct stat *st);
void pl_read_step(struct slot *s, int fd, const struct stat *st, int64_t off, int64_t n);
void pl_finish_reader(struct slot *s, int fd);
void pl_forget_reader(struct slot *s);

#endif
