/* splice(2) directly, when one side already is a pipe. */
#include <errno.h>

#include "internal.h"
#include "sys.h"

static int side_of(const struct ps_xfer *x, int err)
{
	if (err == EAGAIN || err == EINTR)
		return ps__blocked_side(x);
	if (err == EPIPE)
		return PSPLICE_SIDE_OUT;
	/* Otherwise the non-pipe side failed; between two pipes only a
	 * missing reader (EPIPE) is the output's. */
	return x->out->kind == PS_K_PIPE ? PSPLICE_SIDE_IN : PSPLICE_SIDE_OUT;
}

int ps__path_splice(struct ps_xfer *x)
{
	int64_t oi = x->off_in ? *x->off_in : 0, oo = x->off_out ? *x->off_out : 0;
	size_t len = x->len < PS_MAX_CHUNK ? x->len : PS_MAX_CHUNK;
	ssize_t n;

	if (x->in->kind != PS_K_PIPE && x->out->kind != PS_K_PIPE)
		return ps__next(x, EINVAL);
	/* splice refuses an O_APPEND output itself (EINVAL, before a byte
	 * moves), unless it is a pipe: ask only if the flags are known. */
	if (x->out->kind != PS_K_PIPE && ps_known_append(x->out))
		return ps__next(x, EINVAL);
	for (;;) {
		n = ps_splice(x->in->fd, x->off_in ? &oi : NULL, x->out->fd,
			      x->off_out ? &oo : NULL, len, ps__splice_flags(x));
		if (n != -EINTR || !x->retry_eintr)
			break;
	}
	if (n < 0) {
		if (n == -EINVAL || n == -ENOSYS || n == -EOPNOTSUPP)
			return ps__next(x, (int)-n);
		ps__fail(x, (int)-n, side_of(x, (int)-n));
		return 0;
	}
	if (n == 0 && x->in->seekable && !ps__at_eof(x))
		return ps__next(x, 0);
	ps__moved(x, (uint64_t)n, (uint64_t)n, PSPLICE_METHOD_SPLICE);
	ps__advance(x->off_in, (uint64_t)n);
	ps__advance(x->off_out, (uint64_t)n);
	return 0;
}
