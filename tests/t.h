/* Tiny helpers shared by the test programs. Each test is a standalone
 * program: exit 0 pass, 1 fail, 77 skip; silent on pass. argv[1], when given,
 * is the directory to work in (default $PSPLICE_TEST_DIR, then /tmp). */
#ifndef T_H
#define T_H

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "psplice.h"
#include "errname.h"

#define T_PASS 0
#define T_FAIL 1
#define T_SKIP 77

#define T_FAILED(...) do { \
	fprintf(stderr, "%s:%d: ", __FILE__, __LINE__); \
	fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); t_fail(); } while (0)

#define T_ASSERT(e) do { if (!(e)) T_FAILED("assertion failed: %s", #e); } while (0)

#define T_EQ(a, b) do { \
	long long t_a_ = (long long)(a), t_b_ = (long long)(b); \
	if (t_a_ != t_b_) T_FAILED("%s == %s: %lld != %lld", #a, #b, t_a_, t_b_); \
	} while (0)

#define T_EQ_U(a, b) do { \
	unsigned long long t_a_ = (unsigned long long)(a), t_b_ = (unsigned long long)(b); \
	if (t_a_ != t_b_) T_FAILED("%s == %s: %llu != %llu", #a, #b, t_a_, t_b_); \
	} while (0)

#define T_ERRNO(call, err) do { \
	errno = 0; long long t_r_ = (long long)(call); int t_e_ = errno; \
	if (t_r_ != -1 || t_e_ != (err)) \
		T_FAILED("%s: want -1/%s, got %lld/%s", #call, ps_errname(err), t_r_, \
			 t_e_ ? ps_errname(t_e_) : "0"); } while (0)

#define T_OK(call) do { \
	errno = 0; long long t_r_ = (long long)(call); \
	if (t_r_ < 0) T_FAILED("%s: %lld (%s)", #call, t_r_, strerror(errno)); } while (0)

/* Assert every field of a result that a test cares about. */
#define T_RESULT(res, err_, side_, in_, out_) do { \
	T_EQ((res).error, (err_)); T_EQ((res).side, (side_)); \
	T_EQ_U((res).in_bytes, (in_)); T_EQ_U((res).out_bytes, (out_)); } while (0)

#define T_SKIP_IF(cond, ...) do { if (cond) { \
	printf("SKIP: "); printf(__VA_ARGS__); putchar('\n'); exit(T_SKIP); } } while (0)

void t_fail(void) __attribute__((noreturn));
/* The test's scratch directory (created, removed at exit). */
const char *t_dir(int argc, char **argv);
/* A scratch directory on tmpfs (/dev/shm, or a tmpfs mounted for the test). */
const char *t_tmpfs_dir(void);
/* A path inside the scratch directory; static storage, rotating. */
const char *t_path(const char *name);
/* The same inside dir. */
const char *t_path_in(const char *dir, const char *name);

/* The test byte stream: byte i of stream seed is t_byte(seed, i). */
uint8_t t_byte(uint32_t seed, uint64_t i);
void t_gen(uint32_t seed, uint64_t off, void *buf, size_t n);
/* Create path with size bytes of stream seed; returns an O_RDWR fd. */
int t_make_file(const char *path, uint64_t size, uint32_t seed);
/* Read n bytes from fd (at off, or from the position when off < 0) and
 * check they equal stream seed from stream offset soff; true if equal. */
bool t_check_fd(int fd, int64_t off, uint64_t n, uint32_t seed, uint64_t soff);
bool t_check_file(const char *path, uint64_t n, uint32_t seed);

/* Connected pairs: fds[0] and fds[1]. */
void t_tcp_pair(int fds[2]);
void t_unix_pair(int fds[2]);
void t_pipe(int fds[2]);
/* A pty in raw mode: *master, *slave. */
void t_pty(int *master, int *slave);

/* A child process writes n bytes of stream seed into fd then closes it;
 * the caller closes its own copy. Returns the pid. */
pid_t t_feed(int fd, uint64_t n, uint32_t seed);
/* A child process reads fd to EOF and checks the bytes are stream seed of
 * length n; t_wait returns true when the child said so. */
pid_t t_drain_check(int fd, uint64_t n, uint32_t seed);
bool t_wait(pid_t pid);
/* fork(), and in the child close other (a peer's end it must not hold
 * open) and arm alarm(secs): 0 in the child, the pid in the parent. */
pid_t t_fork_closing(int other, unsigned int secs);

bool t_root(void);
int64_t t_pos(int fd);
/* Open /dev/null until EMFILE (lower RLIMIT_NOFILE first); returns how many
 * were opened. t_unfill_fds closes them. */
int t_fill_fds(void);
void t_unfill_fds(void);

/* Write n bytes of stream seed (from stream offset 0) into fd from this
 * process; fd must have room for them (a pipe or socket buffer). */
void t_fill_fd(int fd, uint64_t n, uint32_t seed);
/* Write stream seed into the non-blocking fd until it would block (at most
 * 1 GiB); returns how many bytes went in. */
uint64_t t_fill_full(int fd, uint32_t seed);
/* What a socket still holds, without waiting, is exactly stream seed from
 * offset from to offset total (a test assertion). */
void t_check_rest(int fd, uint64_t from, uint64_t total, uint32_t seed);
/* Read n bytes from the socket fd, waiting for them: they are stream seed
 * from offset from (a test assertion). */
void t_recv_check(int fd, uint64_t from, uint64_t n, uint32_t seed);
/* True if buf holds n bytes of stream seed from stream offset soff. */
bool t_check_buf(const void *buf, size_t n, uint32_t seed, uint64_t soff);
/* Mount a tmpfs with the mount option size=SIZE (e.g. "1m") on a new
 * directory NAME in the scratch directory, in a mount namespace of this
 * test's own; unmounted at exit. NULL and errno when it cannot. */
const char *t_mount_tmpfs(const char *name, const char *size);

/* In the calling process (fork first: it cannot be undone), make syscall nr
 * fail with err: every call, or when argi >= 0 only the calls whose argument
 * argi equals argval. Filters stack. 0, or -1 and errno. */
int t_seccomp_errno(long nr, int err, int argi, uint64_t argval);
/* The same, but a call of syscall nr kills the process (SIGSYS): proof that
 * code run after it never makes that call. */
int t_seccomp_kill(long nr);
/* Running under valgrind, whose own syscalls seccomp filters would refuse. */
bool t_under_valgrind(void);
/* Run fn(arg) in a forked child and return its exit status (T_PASS, T_FAIL,
 * T_SKIP); a child killed by a signal is reported and counts as T_FAIL. */
int t_child(void (*fn)(void *), void *arg);
/* The number of open fds of this process (entries of /proc/self/fd). */
int t_count_fds(void);

/* Page-cache state of fd's pages in [off, off + len) (len 0: to the end of
 * the file), counted in pages by cachestat(2) (Linux 6.5). 0, or -1 and
 * errno (ENOSYS on older kernels). */
struct t_cache {
	uint64_t cached, dirty, writeback;
};
int t_cachestat(int fd, uint64_t off, uint64_t len, struct t_cache *c);
/* Bytes of fd still dirty, and so not yet counted by the disk; without
 * cachestat, if_unknown (every byte just written: the stricter assertion). */
uint64_t t_dirty_bytes(int fd, uint64_t if_unknown);
/* The first size bytes of fd written again, the same bytes, while fewer than
 * want of them are dirty (writeback, or another test's sync, took them
 * before a test could measure), up to five times; the dirty bytes then. */
uint64_t t_keep_dirty(int fd, uint64_t size, uint64_t want);
/* Nothing of fd dirty or under writeback (where cachestat can tell). */
void t_assert_settled(int fd);
/* The block-layer statistics file of the disk holding fd's file
 * (/sys/block/DISK/stat; the whole disk for a partition), written into buf;
 * NULL when the file's device has none (tmpfs, overlayfs, btrfs). */
const char *t_disk_stat(int fd, char *buf, size_t n);
/* Sectors (512 bytes) written to that disk since boot: field 7 of the
 * statistics file; -1 when it cannot be read. */
int64_t t_sectors_written(const char *stat_path);

/* Attach the file open as img_fd to a free loop device that detaches itself
 * once its last user is gone (LO_FLAGS_AUTOCLEAR); the device's path goes
 * in path. Returns an O_RDWR fd on the device, or -1 and errno (ENOENT:
 * no loop support). */
int t_loop_attach(int img_fd, char *path, size_t n);
/* A filesystem made by the shell command `MKFS DEVICE` (e.g. "mkfs.ext4
 * -q -F") on a loop device over an image of size bytes in the scratch
 * directory, mounted as t_mount(name, device, fstype, opts) does; the loop
 * device detaches once unmounted. Skips the test when there are no loop
 * devices; fails it when mkfs or the mount fails. */
const char *t_mkfs_mount(const char *name, uint64_t size, const char *mkfs,
			 const char *fstype, const char *opts);
/* mount(2) source of type fstype with options opts on a new directory NAME
 * in the scratch directory, in this test's own mount namespace (as
 * t_mount_tmpfs); unmounted at exit, last mounted first. NULL and errno. */
const char *t_mount(const char *name, const char *source, const char *fstype,
		    const char *opts);

/* Bytes waiting to be read in a pipe or socket (FIONREAD). */
int t_queued(int fd);
void t_set_nonblock(int fd, bool on);
void t_close_pair(int fds[2]);

#endif
