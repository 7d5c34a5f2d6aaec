/* libpsplice-preload.so: write-behind and read-behind for programs that were
 * never changed. preload.c holds the interposed calls, track.c the state
 * kept per fd number and what is done with it, readbehind.c the read side. */
#ifndef PL_PRELOAD_H
#define PL_PRELOAD_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define PL_EXPORT __attribute__((visibility("default")))

/* PSPLICE_EXEC, parsed once at load; on is false when it is absent or
 * anything in it is not understood, and then every call passes through. */
enum { PL_SYNC_NONE, PL_SYNC_DATA, PL_SYNC_FULL };
struct pl_conf {
	bool on, read_behind, verbose;
	int sync;          /* PL_SYNC_* at close */
	uint64_t chunk;    /* write-behind chunk, bytes */
	uint64_t min_size; /* files smaller than this are left alone */
};
extern struct pl_conf pl_conf;

/* The real calls, resolved at load (or on first use, before the
 * constructor ran). */
struct pl_real {
	int (*close)(int);
	int (*fsync)(int);
	int (*fdatasync)(int);
	ssize_t (*write)(int, const void *, size_t);
};
extern struct pl_real pl_real;

int pl_parse(const char *env, struct pl_conf *c);
void pl_init(void);
void pl_fini(void);

/* After a call wrote n > 0 bytes to fd at off (-1: at the file position,
 * which the call advanced). errno is kept. */
void pl_wrote(int fd, int64_t off, ssize_t n);
/* Before a read of up to want bytes from fd (-1: not known before the
 * call), and after it read n >= 0 bytes at off. */
void pl_will_read(int fd, int64_t want);
void pl_read(int fd, int64_t off, ssize_t n, int64_t want);
/* The program's own fstat of fd succeeded and said this. errno is kept. */
void pl_stated(int fd, mode_t mode, int64_t size, dev_t dev, ino_t ino);
/* fd was just opened: whatever its number named before is gone. */
void pl_opened(int fd);
/* Before fd is closed (or replaced by dup2/dup3). errno is kept. */
void pl_closing(int fd);
/* After the program's fsync/fdatasync on fd returned r: a writeback error
 * the library's own wait took from the file description is reported here,
 * where the kernel would have reported it. Sets errno when it fails. */
int pl_synced(int fd, int r);

#endif
