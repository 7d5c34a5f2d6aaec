/* psplice cp --sparse=always: holes made out of zeros. SOURCE's data is
 * read (its own holes are skipped), in blocks of DST's st_blksize at
 * offsets that are multiples of it, as cp(1) looks for them; a block of
 * zeros is not written, so it stays a hole; the size is set at the end, so
 * that zeros at the end are a hole too. The bytes must be seen to be found
 * zero: this copy goes through user memory, as cp(1)'s does. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cp.h"
#include "progress.h"

/* Read at a time: a multiple of the block size. */
#define ZEROS_BUF ((size_t)128 << 10)

struct zeros {
	int in, out;
	struct psplice_wb *wb;
	struct cli_copy *c;
	char *buf;
	size_t blk, size;
	off_t end;  /* where reading ended early (-1: it did not) */
};

static bool all_zero(const char *p, size_t n)
{
	return !n || (!p[0] && !memcmp(p, p + 1, n - 1));
}

static int failed(struct zeros *z, int side)
{
	return cli_copy_fail(z->c, errno, side);
}

/* n bytes of buf to DST at off, all of them. */
static int put(struct zeros *z, const char *p, size_t n, off_t off)
{
	size_t done = 0;
	ssize_t w;

	while (done < n) {
		w = pwrite(z->out, p + done, n - done, off + (off_t)done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (w == 0)
				errno = EIO;
			return failed(z, PSPLICE_SIDE_OUT);
		}
		done += (size_t)w;
	}
	cli_copy_add(z->c, n, PSPLICE_METHOD_READWRITE);
	return cp_wb_wrote(z->wb, off, n, z->c);
}

/* What was read at off: its runs of blocks that are not all zeros. */
static int put_data(struct zeros *z, size_t len, off_t off)
{
	size_t at = 0, run = 0, n;

	while (at < len) {
		/* Up to the next multiple of the block size. */
		n = z->blk - (size_t)((off + (off_t)at) % (off_t)z->blk);
		if (n > len - at)
			n = len - at;
		if (!all_zero(z->buf + at, n)) {
			at += n;
			continue;
		}
		if (at > run && put(z, z->buf + run, at - run, off + (off_t)run) < 0)
			return -1;
		at += n;
		run = at;
	}
	if (at > run && put(z, z->buf + run, at - run, off + (off_t)run) < 0)
		return -1;
	return 0;
}

/* SOURCE's bytes from off to end. */
static int copy_range(struct zeros *z, off_t off, off_t end)
{
	size_t want;
	ssize_t r;

	while (off < end) {
		want = end - off < (off_t)z->size ? (size_t)(end - off) : z->size;
		r = pread(z->in, z->buf, want, off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return failed(z, PSPLICE_SIDE_IN);
		if (r > 0 && put_data(z, (size_t)r, off) < 0)
			return -1;
		cli_progress_add((uint64_t)r);
		off += r;
		/* It ended early: it shrank while it was copied. */
		if (r == 0) {
			z->end = off;
			return 1;
		}
	}
	return 0;
}

/* Each of SOURCE's data extents; a filesystem that cannot tell them has
 * one, the whole file. A file of size 0 may have content all the same
 * (procfs): it is read to its end. */
static int copy_extents(struct zeros *z, off_t size)
{
	off_t data = 0, hole;
	int rc;

	if (!size)
		return copy_range(z, 0, INT64_MAX) < 0 ? -1 : 0;
	for (;;) {
		data = lseek(z->in, data, SEEK_DATA);
		if (data < 0 && errno == ENXIO) /* no data after this offset */
			return 0;
		if (data < 0)
			return errno == EINVAL ? copy_range(z, 0, size) :
						 failed(z, PSPLICE_SIDE_IN);
		hole = lseek(z->in, data, SEEK_HOLE);
		if (hole < 0)
			return failed(z, PSPLICE_SIDE_IN);
		rc = copy_range(z, data, hole);
		if (rc)
			return rc < 0 ? -1 : 0;
		data = hole;
	}
}

int cp_copy_zeros(int in, int out, struct psplice_wb *wb, struct cli_copy *c)
{
	struct zeros z = { .in = in, .out = out, .wb = wb, .c = c, .end = -1 };
	struct stat si, so;
	int rc = -1;

	if (fstat(in, &si) < 0)
		return failed(&z, PSPLICE_SIDE_IN);
	if (fstat(out, &so) < 0)
		return failed(&z, PSPLICE_SIDE_OUT);
	z.blk = so.st_blksize > 0 ? (size_t)so.st_blksize : 4096;
	z.size = ZEROS_BUF / z.blk * z.blk;
	if (!z.size)
		z.size = z.blk;
	z.buf = malloc(z.size);
	if (!z.buf) {
		errno = ENOMEM;
		return failed(&z, PSPLICE_SIDE_OUT);
	}
	if (copy_extents(&z, si.st_size) < 0)
		goto out;
	/* The size SOURCE has now, in case it changed during the copy. */
	if (z.end < 0 && fstat(in, &si) < 0) {
		failed(&z, PSPLICE_SIDE_IN);
		goto out;
	}
	if (ftruncate(out, z.end < 0 ? si.st_size : z.end) < 0) {
		failed(&z, PSPLICE_SIDE_OUT);
		goto out;
	}
	rc = 0;
out:
	free(z.buf);
	return rc;
}
