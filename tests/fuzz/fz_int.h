/* What the fuzzer's files share inside. */
#ifndef FZ_INT_H
#define FZ_INT_H

#include <pthread.h>
#include <limits.h>

#include "fz.h"

struct fz_end {
	int kind, fd, peer;  /* peer: the other end of a stream, the thread's */
	char path[PATH_MAX]; /* a file's, to remove */
	pthread_t th;
	bool th_on;
	/* A source's bytes, and how they are fed. */
	uint32_t seed;
	uint64_t size;
	bool slow;
	/* A sink's reader: what it read, how, and whether it went away. */
	int mode;
	uint64_t after;
	uint8_t *got;
	size_t got_len, got_cap;
	bool dead;
	bool go;             /* FZ_STALL: read from now on */
};

void fz_gen(uint32_t seed, bool zero, uint64_t off, uint8_t *buf, size_t n);
int fz_fill(int fd, uint32_t seed, uint64_t size);
int fz_source_open(struct fz_end *e, const char *disk, const char *tmpfs);
int fz_sink_open(struct fz_end *e, const char *disk, const char *tmpfs);
void fz_sink_settle(struct fz_end *e);
void fz_sink_release(struct fz_end *e);
void fz_sink_wait(struct fz_end *e, uint64_t n);
void fz_end_close(struct fz_end *e);
size_t fz_read_rest(int fd, uint8_t *buf, size_t n);
/* An FZ_SWAP (fz_swap.c): 0, or -1 with why. */
int fz_swap(int num, bool input, int kind, const char *tmpfs, char *why, size_t n);
/* A run's first sequence: SIGPIPE counted by on_sigpipe, and two scratch
 * buffers of size bytes each (the process ends if there is no memory). */
void fz_once(void (*on_sigpipe)(int), size_t size, uint8_t **a, uint8_t **b);

#endif
