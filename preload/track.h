/* The preload library's state per fd number (track.c), shared with the
 * read side (readbehind.c). Internal to libpsplice-preload.so. */
#ifndef PL_TRACK_H
#define PL_TRACK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "internal.h"

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
	int64_t rlo, rhi, rdone; /* first read, highest end, dropped up to */
	int64_t rsize;          /* the size when the reading began */
	uint8_t *before;        /* page cached before the first read (bit set);
	                           NULL: none was */
	size_t before_len;
};

extern int64_t pl_page;
extern atomic_ullong pl_dropped; /* bytes read-behind dropped, -v */

/* readbehind.c */
void pl_classify_reader(struct slot *s, int fd, int fl, const struct stat *st);
void pl_read_step(struct slot *s, int fd, const struct stat *st, int64_t off, int64_t n);
void pl_finish_reader(struct slot *s, int fd);
void pl_forget_reader(struct slot *s);

#endif
