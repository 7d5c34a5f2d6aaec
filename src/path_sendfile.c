/* sendfile(2): a file (anything with splice_read) to any fd, one call. */
#include <errno.h>

#include "accounting.h"
#include "endpoint.h"
#include "path.h"
#include "psplice.h"
#include "sys.h"

/* Errnos that mean "sendfile takes no such pair": before a byte moves. */
static bool sendfile_falls_back(int err)
{
	return err == EINVAL || err == ENOSYS || err == EOPNOTSUPP;
}

ssize_t ps__path_sendfile(struct ps_xfer *x)
{
	int64_t oi = x->off_in ? *x->off_in : 0;
	size_t len = x->len < PS_MAX_CHUNK ? x->len : PS_MAX_CHUNK;
	ssize_t n;

	/* sendfile writes at the output's file position only, cannot carry
	 * SPLICE_F_MORE, and refuses O_APPEND outputs: itself (EINVAL, before
	 * a byte moves; rust-lang/rust#82417) unless the flags are known
	 * already. */
	if (!x->in->seekable || ps_known_append(x->out) || x->off_out ||
	    (x->flags & PSPLICE_F_MORE))
		return ps_not_here(EINVAL);
	n = ps_sendfile(x->out->fd, x->in->fd, x->off_in ? &oi : NULL, len);
	if (n < 0) {
		/* EOVERFLOW: the offset is past the largest file of the input's
		 * or the output's filesystem (2 GiB for a tty: seen with a pty
		 * on Linux 6.18), checked before a byte moves. Past the
		 * input's end that is the end, as pread(2) says; short of it,
		 * another path may reach it. */
		if (n == -EOVERFLOW)
			return ps__at_eof(x) ? 0 : ps_not_here(EOVERFLOW);
		if (sendfile_falls_back((int)-n))
			return ps_not_here((int)-n);
		if (ps__ended_anyway(x, (int)-n))
			return 0;
		return ps__fail(x, (int)-n, n == -EINTR ? ps__blocked_side(x, EINTR) :
					    ps__side_of(x, (int)-n));
	}
	if (n == 0)
		return ps__at_eof(x) ? 0 : ps_not_here(PS_WHY_ZERO);
	ps__moved(x, (uint64_t)n, (uint64_t)n, PSPLICE_METHOD_SENDFILE);
	ps__advance(x->off_in, (uint64_t)n);
	return n;
}
