/* FICLONERANGE: the output shares the input's extents (btrfs, XFS with
 * reflink, bcachefs…). Offsets and length must be block aligned, except a
 * range that ends at the input's end of file. FICLONERANGE says 0 or an
 * error, never how much it shared, so the length is always given (never 0,
 * "to the end wherever it is by then"): the kernel shares all of it or
 * refuses (EINVAL). A refused range may have been shared in part; the next
 * path then copies it again from the input as it is. */
#include <errno.h>
#include <sys/stat.h>

#include "accounting.h"
#include "endpoint.h"
#include "path.h"
#include "psplice.h"
#include "sys.h"

static int64_t pos_of(int fd, const int64_t *off)
{
	return off ? *off : ps_lseek(fd, 0, SEEK_CUR);
}

/* A filesystem without reflinks refuses every file alike with
 * EOPNOTSUPP (ext4, tmpfs, XFS made without reflink; NFS and CIFS for a
 * server that cannot), as two filesystems refuse with EXDEV: remembered
 * (ps__refused), so that a tree of small files does not ask once a file
 * for nothing. */
static __thread struct ps_refusal refused;

/* Errnos that mean "no sharing for this pair": the next path copies. */
static bool clone_falls_back(int err)
{
	switch (err) {
	case EOPNOTSUPP: case EXDEV: case EINVAL: case ENOTTY: case ENOSYS:
	case EPERM: case EBADF: case ETXTBSY:
		return true;
	}
	return false;
}

/* The input's size and block size now. */
static int64_t size_now(int fd, int64_t *blk)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	*blk = st.st_blksize > 0 ? st.st_blksize : 4096;
	return st.st_size;
}

/* Shares [si, si + n) where n is what len allows up to the end: the kernel
 * shares a given range whole or refuses it (EINVAL), so the count is exact.
 * A range that ends at the end of file need not be aligned, and a writer
 * that appends meanwhile makes it refused: once more to the end the input
 * has now, then only the block-aligned part inside the file, which no
 * append can move. 0: the input ended at si. */
static int64_t clone_range(const struct ps_xfer *x, int64_t si, int64_t so, int64_t size)
{
	int64_t now, blk = 4096, n;
	int r;

	for (int tries = 0;; tries++) {
		n = size - si;
		if (x->len < (uint64_t)n)
			n = (int64_t)x->len;
		r = ps_clone_range(x->in->fd, (uint64_t)si, x->out->fd, (uint64_t)so,
				   (uint64_t)n);
		if (r == 0)
			return n;
		if (r != -EINVAL || tries == 2)
			return r;
		now = size_now(x->in->fd, &blk);
		if (now < 0 || now == size)
			return r;
		if (now <= si)
			return 0;
		size = now;
		if (tries == 1) /* the aligned part, not the moving end */
			size = si + ((size - si) / blk) * blk;
		if (size <= si)
			return r;
	}
}

/* The counts say what was shared, never what the sizes said before. */
ssize_t ps__path_clone(struct ps_xfer *x)
{
	int64_t si, so, size, n;

	if (x->in->kind != PS_K_FILE || x->out->kind != PS_K_FILE || ps__refused(&refused, x) ||
	    ps__append(x->out))
		return ps_not_here(EOPNOTSUPP);
	si = pos_of(x->in->fd, x->off_in);
	so = pos_of(x->out->fd, x->off_out);
	/* The size when the call began: a copy ends once it has shared that
	 * far (a clone refused because a writer moved the end may share a
	 * little past it), rather than chase a writer's appends. */
	size = ps__size(x->in);
	if (si < 0 || so < 0)
		return ps_not_here(EOPNOTSUPP);
	/* An empty file, or the end of one, has nothing to share: the end. */
	if ((size > 0 && si >= size) || (size <= 0 && ps__at_eof(x)))
		return 0;
	if (size <= 0)
		return ps_not_here(EOPNOTSUPP);
	n = clone_range(x, si, so, size);
	if (n == -EOPNOTSUPP)
		ps__refuse(&refused, x);
	ps__refuse_exdev(&refused, x, (int)-n);
	if (n < 0)
		return clone_falls_back((int)-n) ? ps_not_here((int)-n) :
		       ps__fail(x, (int)-n, ps__side_of(x, (int)-n));
	ps__moved(x, (uint64_t)n, (uint64_t)n, PSPLICE_METHOD_CLONE);
	if (x->off_in)
		*x->off_in = si + n;
	else
		(void)ps_lseek(x->in->fd, si + n, SEEK_SET);
	if (x->off_out)
		*x->off_out = so + n;
	else
		(void)ps_lseek(x->out->fd, so + n, SEEK_SET);
	return n;
}
