/* FICLONERANGE: the output shares the input's extents (btrfs, XFS with
 * reflink, bcachefs…). Offsets and length must be block aligned, except a
 * range that ends at the input's end of file. FICLONERANGE says 0 or an
 * error, never how much it shared: with length 0 ("to end of file") the
 * output's new end tells, and with a given length the kernel shares all of
 * it or refuses (EINVAL), where a refused range may be shared in part; the
 * next path then copies the range again from the input as it is. */
#include <errno.h>

#include "internal.h"
#include "sys.h"

static int64_t pos_of(int fd, const int64_t *off)
{
	return off ? *off : ps_lseek(fd, 0, SEEK_CUR);
}

#define CLONE_TRIES 8

static bool not_here(int r)
{
	return r == -EOPNOTSUPP || r == -EXDEV || r == -EINVAL || r == -ENOTTY ||
	       r == -ENOSYS || r == -EPERM || r == -EBADF || r == -ETXTBSY;
}

/* A clone to the input's end of file, into an output that ends at or
 * before so: length 0 asks the kernel for "to the end", wherever a writer
 * has moved it by then, and the output then ends exactly where the shared
 * range does, which tells its length. */
static int64_t clone_to_end(const struct ps_xfer *x, int64_t si, int64_t so)
{
	int64_t end;
	int r = ps_clone_range(x->in->fd, (uint64_t)si, x->out->fd, (uint64_t)so, 0);

	if (r < 0)
		return r;
	end = ps__size_now(x->out->fd, x->out->kind);
	return end < so ? -EIO : end - so;
}

/* A given range, which must be aligned unless it ends at the input's end.
 * If the input's end moves meanwhile, the kernel refuses a range that no
 * longer ends there (EINVAL): again to the end it has now, a few times. */
static int64_t clone_range(const struct ps_xfer *x, int64_t si, int64_t so, int64_t size)
{
	int64_t now;
	uint64_t n;
	int r;

	for (int tries = 0;; tries++) {
		n = (uint64_t)(size - si);
		if (x->len < n)
			n = x->len;
		r = ps_clone_range(x->in->fd, (uint64_t)si, x->out->fd, (uint64_t)so, n);
		if (r == 0)
			return (int64_t)n;
		if (r != -EINVAL || tries == CLONE_TRIES)
			return r;
		now = ps__size_now(x->in->fd, x->in->kind);
		if (now == size)
			return r;
		size = now;
		if (size <= si)
			return 0;
	}
}

/* The counts say what was shared, never what the sizes said before. */
int ps__path_clone(struct ps_xfer *x)
{
	int64_t si, so, size, n;

	if (x->in->kind != PS_K_FILE || x->out->kind != PS_K_FILE || x->out->append)
		return ps__next(x, EOPNOTSUPP);
	si = pos_of(x->in->fd, x->off_in);
	so = pos_of(x->out->fd, x->off_out);
	/* The size when the call began. A clone to the end shares up to the
	 * end as it is when the clone runs, and a copy then ends there: the
	 * rest of a file that grew would start at an unaligned offset, where
	 * nothing can be shared. */
	size = ps__size(x->in);
	if (si < 0 || so < 0)
		return ps__next(x, EOPNOTSUPP);
	/* An empty file, or the end of one, has nothing to share: the end. */
	if ((size > 0 && si >= size) || (size <= 0 && ps__at_eof(x)))
		return 0;
	if (size <= 0)
		return ps__next(x, EOPNOTSUPP);
	if (x->len >= (uint64_t)(size - si) &&
	    ps__size_now(x->out->fd, x->out->kind) <= so)
		n = clone_to_end(x, si, so);
	else
		n = clone_range(x, si, so, size);
	if (n < 0) {
		if (not_here((int)n))
			return ps__next(x, (int)-n);
		ps__fail(x, (int)-n, ps__side_of(x, (int)-n));
		return 0;
	}
	ps__moved(x, (uint64_t)n, (uint64_t)n, PSPLICE_METHOD_CLONE);
	if (x->off_in)
		*x->off_in = si + n;
	else
		(void)ps_lseek(x->in->fd, si + n, SEEK_SET);
	if (x->off_out)
		*x->off_out = so + n;
	else
		(void)ps_lseek(x->out->fd, so + n, SEEK_SET);
	return 0;
}
