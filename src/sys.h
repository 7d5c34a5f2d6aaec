/* The thin syscall layer: one static inline per raw call, each returning the
 * result or -errno. The only file that names syscall() or __NR_*, with
 * shared/cachestat.h, the one wrapper it shares beyond the library. */
#ifndef PS_SYS_H
#define PS_SYS_H

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/sendfile.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shared/cachestat.h"

#ifndef __NR_copy_file_range
#if defined(__x86_64__)
#define __NR_copy_file_range 326
#elif defined(__aarch64__)
#define __NR_copy_file_range 285
#endif
#endif

#ifndef F_SETPIPE_SZ
#define F_SETPIPE_SZ 1031
#define F_GETPIPE_SZ 1032
#endif

static inline long ps_ret(long r)
{
	return r < 0 ? -errno : r;
}

static inline ssize_t ps_splice(int in, int64_t *off_in, int out, int64_t *off_out,
				size_t len, unsigned int flags)
{
	return ps_ret(splice(in, (loff_t *)off_in, out, (loff_t *)off_out, len, flags));
}

/* Called directly, not through glibc: glibc 2.41/2.42's wrapper corrupted
 * ranges over 2 GiB, and older ones emulated the call in user space. */
static inline ssize_t ps_copy_file_range(int in, int64_t *off_in, int out,
					 int64_t *off_out, size_t len)
{
#ifdef __NR_copy_file_range
	return ps_ret(syscall(__NR_copy_file_range, in, off_in, out, off_out, len, 0u));
#else
	(void)in; (void)off_in; (void)out; (void)off_out; (void)len;
	return -ENOSYS;
#endif
}

static inline ssize_t ps_tee(int in, int out, size_t len, unsigned int flags)
{
	return ps_ret(tee(in, out, len, flags));
}

static inline ssize_t ps_sendfile(int out, int in, int64_t *off, size_t len)
{
	return ps_ret(sendfile(out, in, (off_t *)off, len));
}

static inline int ps_clone_range(int in, uint64_t off_in, int out, uint64_t off_out,
				 uint64_t len)
{
	struct file_clone_range r = { .src_fd = in, .src_offset = off_in,
				      .src_length = len, .dest_offset = off_out };
	return (int)ps_ret(ioctl(out, FICLONERANGE, &r));
}

static inline ssize_t ps_read(int fd, void *buf, size_t n)
{
	return ps_ret(read(fd, buf, n));
}

static inline ssize_t ps_pread(int fd, void *buf, size_t n, int64_t off)
{
	return ps_ret(pread(fd, buf, n, off));
}

static inline ssize_t ps_write(int fd, const void *buf, size_t n)
{
	return ps_ret(write(fd, buf, n));
}

static inline ssize_t ps_pwrite(int fd, const void *buf, size_t n, int64_t off)
{
	return ps_ret(pwrite(fd, buf, n, off));
}

static inline int64_t ps_lseek(int fd, int64_t off, int whence)
{
	return ps_ret(lseek(fd, off, whence));
}

static inline int ps_sync_file_range(int fd, int64_t off, int64_t n, unsigned int flags)
{
#if __SIZEOF_LONG__ == 8 && defined(__NR_sync_file_range2)
	/* ARM and PowerPC put flags second, to keep the 64-bit arguments in
	 * aligned register pairs. */
	return (int)ps_ret(syscall(__NR_sync_file_range2, fd, flags, off, n));
#elif __SIZEOF_LONG__ == 8 && defined(__NR_sync_file_range)
	return (int)ps_ret(syscall(__NR_sync_file_range, fd, off, n, flags));
#else
	/* On 32-bit machines each 64-bit argument is split into a register pair
	 * in an order only the C library's wrapper knows. */
	return (int)ps_ret(sync_file_range(fd, off, n, flags));
#endif
}

#endif
