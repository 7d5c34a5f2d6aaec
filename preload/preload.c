/* The calls libpsplice-preload.so interposes. Each calls the real one
 * first, with the program's own arguments, and returns exactly what it
 * returned; the bookkeeping after it keeps errno. With PSPLICE_EXEC absent
 * or not understood (pl_conf.on false) nothing else happens. Built without
 * _FILE_OFFSET_BITS=64, so that both the off_t and the off64_t names can be
 * defined. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#include "psplice.h"
#include "preload.h"

struct pl_real pl_real;

/* glibc's fortified calls, which no header declares. */
ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);
ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen);
ssize_t __pread64_chk(int fd, void *buf, size_t n, off64_t off, size_t buflen);
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dir, const char *path, int flags);
int __openat64_2(int dir, const char *path, int flags);

/* Resolved once at load; a call made before the constructor ran (from
 * another library's constructor) resolves it then. */
#define REAL(name) ({ \
	if (!real_##name) \
		real_##name = (__typeof__(real_##name))dlsym(RTLD_NEXT, #name); \
	real_##name; })
/* Every call interposed, its type, name and arguments: those of every libc, */
#define CALLS_ANY(X) \
	X(ssize_t, write, (int, const void *, size_t)) \
	X(ssize_t, pwrite, (int, const void *, size_t, off_t)) \
	X(ssize_t, writev, (int, const struct iovec *, int)) \
	X(ssize_t, pwritev, (int, const struct iovec *, int, off_t)) \
	X(ssize_t, read, (int, void *, size_t)) \
	X(ssize_t, pread, (int, void *, size_t, off_t)) \
	X(ssize_t, readv, (int, const struct iovec *, int)) \
	X(ssize_t, preadv, (int, const struct iovec *, int, off_t)) \
	X(ssize_t, copy_file_range, (int, off64_t *, int, off64_t *, size_t, unsigned int)) \
	X(ssize_t, sendfile, (int, int, off_t *, size_t)) \
	X(ssize_t, splice, (int, off64_t *, int, off64_t *, size_t, unsigned int)) \
	X(int, open, (const char *, int, ...)) \
	X(int, openat, (int, const char *, int, ...)) \
	X(int, creat, (const char *, mode_t)) \
	X(int, close, (int)) \
	X(int, dup2, (int, int)) \
	X(int, dup3, (int, int, int)) \
	X(int, fsync, (int)) \
	X(int, fdatasync, (int)) \
	X(int, fstat, (int, struct stat *)) \
	X(int, fstatat, (int, const char *, struct stat *, int))
/* then glibc's other names of the calls: those of off64_t (a program built
 * with _FILE_OFFSET_BITS=64 calls them), the *v2 calls, and those that
 * _FORTIFY_SOURCE calls. musl has one name for each call (its headers
 * make open64 a macro for open) and none of the others. */
#ifdef __GLIBC__
#define CALLS_GLIBC(X) \
	X(ssize_t, pwrite64, (int, const void *, size_t, off64_t)) \
	X(ssize_t, pwritev64, (int, const struct iovec *, int, off64_t)) \
	X(ssize_t, pwritev2, (int, const struct iovec *, int, off_t, int)) \
	X(ssize_t, pwritev64v2, (int, const struct iovec *, int, off64_t, int)) \
	X(ssize_t, __read_chk, (int, void *, size_t, size_t)) \
	X(ssize_t, pread64, (int, void *, size_t, off64_t)) \
	X(ssize_t, __pread_chk, (int, void *, size_t, off_t, size_t)) \
	X(ssize_t, __pread64_chk, (int, void *, size_t, off64_t, size_t)) \
	X(ssize_t, preadv64, (int, const struct iovec *, int, off64_t)) \
	X(ssize_t, preadv2, (int, const struct iovec *, int, off_t, int)) \
	X(ssize_t, preadv64v2, (int, const struct iovec *, int, off64_t, int)) \
	X(ssize_t, sendfile64, (int, int, off64_t *, size_t)) \
	X(int, open64, (const char *, int, ...)) \
	X(int, openat64, (int, const char *, int, ...)) \
	X(int, __open_2, (const char *, int)) \
	X(int, __open64_2, (const char *, int)) \
	X(int, __openat_2, (int, const char *, int)) \
	X(int, __openat64_2, (int, const char *, int)) \
	X(int, creat64, (const char *, mode_t)) \
	X(int, fstat64, (int, struct stat64 *)) \
	X(int, fstatat64, (int, const char *, struct stat64 *, int))
#else
#define CALLS_GLIBC(X)
#endif
/* statx, where the libc has it (glibc 2.28, musl 1.2.5). */
#ifdef STATX_TYPE
#define CALLS_STATX(X) \
	X(int, statx, (int, const char *, int, unsigned int, struct statx *))
#else
#define CALLS_STATX(X)
#endif
#define CALLS(X) CALLS_ANY(X) CALLS_GLIBC(X) CALLS_STATX(X)

#define DECL(ret, name, args) static ret (*real_##name) args;
CALLS(DECL)

/* Where a call with an optional offset pointer started. */
#define AT(p) ((p) ? (int64_t)*(p) : -1)

/* After a write-side call; n is what the real call returned. */
static ssize_t wrote(int fd, int64_t off, ssize_t n)
{
	if (pl_conf.on && n > 0)
		pl_wrote(fd, off, n);
	return n;
}

static void will_read(int fd, int64_t want)
{
	if (pl_conf.on && pl_conf.read_behind)
		pl_will_read(fd, want);
}

static ssize_t was_read(int fd, int64_t off, ssize_t n, int64_t want)
{
	if (pl_conf.on && pl_conf.read_behind && n >= 0)
		pl_read(fd, off, n, want);
	return n;
}

PL_EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
	return wrote(fd, -1, REAL(write)(fd, buf, n));
}

PL_EXPORT ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
	return wrote(fd, off, REAL(pwrite)(fd, buf, n, off));
}

PL_EXPORT ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
	return wrote(fd, -1, REAL(writev)(fd, iov, cnt));
}

PL_EXPORT ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
	return wrote(fd, off, REAL(pwritev)(fd, iov, cnt, off));
}


PL_EXPORT ssize_t read(int fd, void *buf, size_t n)
{
	will_read(fd, (int64_t)n);
	return was_read(fd, -1, REAL(read)(fd, buf, n), (int64_t)n);
}


PL_EXPORT ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
	will_read(fd, (int64_t)n);
	return was_read(fd, off, REAL(pread)(fd, buf, n, off), (int64_t)n);
}

PL_EXPORT ssize_t readv(int fd, const struct iovec *iov, int cnt)
{
	will_read(fd, -1);
	return was_read(fd, -1, REAL(readv)(fd, iov, cnt), -1);
}

PL_EXPORT ssize_t preadv(int fd, const struct iovec *iov, int cnt, off_t off)
{
	will_read(fd, -1);
	return was_read(fd, off, REAL(preadv)(fd, iov, cnt, off), -1);
}

/* The copy calls: the input side is a read, the output side a write. The
 * offsets are taken before the call, which advances them. */
static ssize_t moved(int in, int64_t off_in, int out, int64_t off_out, size_t len, ssize_t n)
{
	was_read(in, off_in, n, (int64_t)len);
	return wrote(out, off_out, n);
}

PL_EXPORT ssize_t copy_file_range(int in, off64_t *off_in, int out, off64_t *off_out,
				  size_t len, unsigned int flags)
{
	int64_t a = AT(off_in), b = AT(off_out);

	will_read(in, (int64_t)len);
	return moved(in, a, out, b, len,
		     REAL(copy_file_range)(in, off_in, out, off_out, len, flags));
}

PL_EXPORT ssize_t sendfile(int out, int in, off_t *off, size_t len)
{
	int64_t a = AT(off);

	will_read(in, (int64_t)len);
	return moved(in, a, out, -1, len, REAL(sendfile)(out, in, off, len));
}

PL_EXPORT ssize_t splice(int in, off64_t *off_in, int out, off64_t *off_out, size_t len,
			 unsigned int flags)
{
	int64_t a = AT(off_in), b = AT(off_out);

	will_read(in, (int64_t)len);
	return moved(in, a, out, b, len, REAL(splice)(in, off_in, out, off_out, len, flags));
}

/* An open: the fd number is new, whatever was skipped on it before. The
 * mode is there only with O_CREAT or O_TMPFILE. */
static int opened(int fd)
{
	if (pl_conf.on && fd >= 0)
		pl_opened(fd);
	return fd;
}

#define MODE(flags) ({ \
	mode_t m_ = 0; \
	va_list ap_; \
	if ((flags) & O_CREAT || ((flags) & O_TMPFILE) == O_TMPFILE) { \
		va_start(ap_, flags); \
		m_ = (mode_t)va_arg(ap_, int); \
		va_end(ap_); \
	} \
	m_; })

PL_EXPORT int open(const char *path, int flags, ...)
{
	return opened(REAL(open)(path, flags, MODE(flags)));
}

PL_EXPORT int openat(int dir, const char *path, int flags, ...)
{
	return opened(REAL(openat)(dir, path, flags, MODE(flags)));
}

PL_EXPORT int creat(const char *path, mode_t mode)
{
	return opened(REAL(creat)(path, mode));
}

PL_EXPORT int close(int fd)
{
	if (pl_conf.on)
		pl_closing(fd);
	return REAL(close)(fd);
}

/* dup2 and dup3 close the fd they replace. */
PL_EXPORT int dup2(int old, int fd)
{
	if (pl_conf.on && old != fd)
		pl_closing(fd);
	return REAL(dup2)(old, fd);
}

PL_EXPORT int dup3(int old, int fd, int flags)
{
	if (pl_conf.on && old != fd)
		pl_closing(fd);
	return REAL(dup3)(old, fd, flags);
}

PL_EXPORT int fsync(int fd)
{
	int r = REAL(fsync)(fd);

	return pl_conf.on ? pl_synced(fd, r) : r;
}

PL_EXPORT int fdatasync(int fd)
{
	int r = REAL(fdatasync)(fd);

	return pl_conf.on ? pl_synced(fd, r) : r;
}

/* The program's own fstat of an fd: what it says is kept for the first
 * read, which then needs no fstat of the library's own. */
static bool following_stat(int r)
{
	return r == 0 && pl_conf.on && pl_conf.read_behind;
}

/* r is the real call's result, taken before: *st is read only after it,
 * and only when it succeeded. */
#define STATED(fd, r, st) ({ \
	if (following_stat(r)) \
		pl_stated(fd, (st)->st_mode, (st)->st_size, (st)->st_dev, (st)->st_ino); \
	r; })
/* fstatat of "" (or, since Linux 6.11, NULL) with AT_EMPTY_PATH: the fd
 * itself. The headers say path is never NULL; the kernel allows it. */
static bool of_fd(const char *path, int flags)
{
	__asm__("" : "+r"(path));
	return (flags & AT_EMPTY_PATH) && (!path || !*path);
}

PL_EXPORT int fstat(int fd, struct stat *st)
{
	int r = REAL(fstat)(fd, st);

	return STATED(fd, r, st);
}

PL_EXPORT int fstatat(int dir, const char *path, struct stat *st, int flags)
{
	int r = REAL(fstatat)(dir, path, st, flags);

	return following_stat(r) && of_fd(path, flags) ? STATED(dir, r, st) : r;
}

#ifdef STATX_TYPE
PL_EXPORT int statx(int dir, const char *path, int flags, unsigned int mask, struct statx *x)
{
	int r = REAL(statx)(dir, path, flags, mask, x);
	unsigned int need = STATX_TYPE | STATX_SIZE | STATX_INO;

	if (following_stat(r) && of_fd(path, flags) && (x->stx_mask & need) == need)
		pl_stated(dir, x->stx_mode, (int64_t)x->stx_size,
			  makedev(x->stx_dev_major, x->stx_dev_minor), x->stx_ino);
	return r;
}
#endif

/* glibc's other names (CALLS_GLIBC). */
#ifdef __GLIBC__
PL_EXPORT ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t off)
{
	return wrote(fd, off, REAL(pwrite64)(fd, buf, n, off));
}

PL_EXPORT ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off64_t off)
{
	return wrote(fd, off, REAL(pwritev64)(fd, iov, cnt, off));
}

/* RWF_APPEND with an offset writes at the end and says nothing of where:
 * that one call is not followed (O_APPEND files are, by their size). */
static ssize_t wrote_v2(int fd, off64_t off, int flags, ssize_t n)
{
	if (off != -1 && (flags & RWF_APPEND))
		return n;
	return wrote(fd, off, n);
}

PL_EXPORT ssize_t pwritev2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
	return wrote_v2(fd, off, flags, REAL(pwritev2)(fd, iov, cnt, off, flags));
}

PL_EXPORT ssize_t pwritev64v2(int fd, const struct iovec *iov, int cnt, off64_t off, int flags)
{
	return wrote_v2(fd, off, flags, REAL(pwritev64v2)(fd, iov, cnt, off, flags));
}

/* _FORTIFY_SOURCE builds call these for buffers of known size. */
PL_EXPORT ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen)
{
	will_read(fd, (int64_t)n);
	return was_read(fd, -1, REAL(__read_chk)(fd, buf, n, buflen), (int64_t)n);
}

PL_EXPORT ssize_t pread64(int fd, void *buf, size_t n, off64_t off)
{
	will_read(fd, (int64_t)n);
	return was_read(fd, off, REAL(pread64)(fd, buf, n, off), (int64_t)n);
}

PL_EXPORT ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen)
{
	will_read(fd, (int64_t)n);
	return was_read(fd, off, REAL(__pread_chk)(fd, buf, n, off, buflen), (int64_t)n);
}

PL_EXPORT ssize_t __pread64_chk(int fd, void *buf, size_t n, off64_t off, size_t buflen)
{
	will_read(fd, (int64_t)n);
	return was_read(fd, off, REAL(__pread64_chk)(fd, buf, n, off, buflen), (int64_t)n);
}

PL_EXPORT ssize_t preadv64(int fd, const struct iovec *iov, int cnt, off64_t off)
{
	will_read(fd, -1);
	return was_read(fd, off, REAL(preadv64)(fd, iov, cnt, off), -1);
}

PL_EXPORT ssize_t preadv2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
	will_read(fd, -1);
	return was_read(fd, off, REAL(preadv2)(fd, iov, cnt, off, flags), -1);
}

PL_EXPORT ssize_t preadv64v2(int fd, const struct iovec *iov, int cnt, off64_t off, int flags)
{
	will_read(fd, -1);
	return was_read(fd, off, REAL(preadv64v2)(fd, iov, cnt, off, flags), -1);
}

PL_EXPORT ssize_t sendfile64(int out, int in, off64_t *off, size_t len)
{
	int64_t a = AT(off);

	will_read(in, (int64_t)len);
	return moved(in, a, out, -1, len, REAL(sendfile64)(out, in, off, len));
}

PL_EXPORT int open64(const char *path, int flags, ...)
{
	return opened(REAL(open64)(path, flags, MODE(flags)));
}

PL_EXPORT int openat64(int dir, const char *path, int flags, ...)
{
	return opened(REAL(openat64)(dir, path, flags, MODE(flags)));
}

PL_EXPORT int __open_2(const char *path, int flags)
{
	return opened(REAL(__open_2)(path, flags));
}

PL_EXPORT int __open64_2(const char *path, int flags)
{
	return opened(REAL(__open64_2)(path, flags));
}

PL_EXPORT int __openat_2(int dir, const char *path, int flags)
{
	return opened(REAL(__openat_2)(dir, path, flags));
}

PL_EXPORT int __openat64_2(int dir, const char *path, int flags)
{
	return opened(REAL(__openat64_2)(dir, path, flags));
}

PL_EXPORT int creat64(const char *path, mode_t mode)
{
	return opened(REAL(creat64)(path, mode));
}

PL_EXPORT int fstat64(int fd, struct stat64 *st)
{
	int r = REAL(fstat64)(fd, st);

	return STATED(fd, r, st);
}

PL_EXPORT int fstatat64(int dir, const char *path, struct stat64 *st, int flags)
{
	int r = REAL(fstatat64)(dir, path, st, flags);

	return following_stat(r) && of_fd(path, flags) ? STATED(dir, r, st) : r;
}
#endif

#define RESOLVE(ret, name, args) (void)REAL(name);

/* Every real call is resolved here, once: dlsym may allocate, and a first
 * call could come from a signal handler. */
__attribute__((constructor)) static void load(void)
{
	CALLS(RESOLVE)
	pl_real.write = REAL(write);
	pl_real.close = REAL(close);
	pl_real.fsync = REAL(fsync);
	pl_real.fdatasync = REAL(fdatasync);
	if (pl_real.write && pl_real.close && pl_real.fsync && pl_real.fdatasync)
		pl_init();
}

__attribute__((destructor)) static void unload(void)
{
	if (pl_conf.on)
		pl_fini();
}
