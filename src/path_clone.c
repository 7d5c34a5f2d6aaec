/* FICLONERANGE: the output shares the input's extents (btrfs, XFS with
 * reflink, bcachefs…). Offsets and length must be block aligned, except a
 * range that ends at the input's end of file. */
#include <errno.h>

#include "internal.h"
#include "sys.h"

static int64_t pos_of(int fd, const int64_t *off)
{
	return off ? *off : ps_lseek(fd, 0, SEEK_CUR);
}

static bool not_here(int r)
{
	return r == -EOPNOTSUPP || r == -EXDEV || r == -EINVAL || r == -ENOTTY ||
	       r == -ENOSYS || r == -EPERM || r == -EBADF || r == -ETXTBSY;
}

/* The length is always given, never 0 ("to end of file"): with 0 the
 * kernel clones to wherever the end is by then, and does not say where.
 * A given range that ends at the end of file it shares whole, and one that
 * no longer does (the input grew or shrank meanwhile) it refuses, or
 * shares in part and refuses (EINVAL); the next path then copies the range
 * again from the input as it is. */
int ps__path_clone(struct ps_xfer *x)
{
	int64_t si, so, size;
	uint64_t n;
	int r;

	if (x->in->kind != PS_K_FILE || x->out->kind != PS_K_FILE || x->out->append)
		return ps__next(x, EOPNOTSUPP);
	si = pos_of(x->in->fd, x->off_in);
	so = pos_of(x->out->fd, x->off_out);
	/* The size of now: a copy to end of file goes on while the input
	 * grows, as it does by the other paths, which read until they meet
	 * the end. */
	size = ps__size_now(x->in->fd, x->in->kind);
	if (si < 0 || so < 0)
		return ps__next(x, EOPNOTSUPP);
	/* An empty file, or the end of one, has nothing to share: the end. */
	if ((size > 0 && si >= size) || (size <= 0 && ps__at_eof(x)))
		return 0;
	if (size <= 0)
		return ps__next(x, EOPNOTSUPP);
	n = (uint64_t)(size - si);
	if (x->len < n)
		n = x->len; /* a partial range: must be aligned */
	r = ps_clone_range(x->in->fd, (uint64_t)si, x->out->fd, (uint64_t)so, n);
	if (r < 0) {
		if (not_here(r))
			return ps__next(x, -r);
		ps__fail(x, -r, ps__side_of(x, -r));
		return 0;
	}
	ps__moved(x, n, n, PSPLICE_METHOD_CLONE);
	if (x->off_in)
		*x->off_in = si + (int64_t)n;
	else
		(void)ps_lseek(x->in->fd, si + (int64_t)n, SEEK_SET);
	if (x->off_out)
		*x->off_out = so + (int64_t)n;
	else
		(void)ps_lseek(x->out->fd, so + (int64_t)n, SEEK_SET);
	return 0;
}
