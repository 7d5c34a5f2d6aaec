/* splice(2) directly, when one side already is a pipe. */
#include <errno.h>
#include <poll.h>

#include "accounting.h"
#include "endpoint.h"
#include "path.h"
#include "psplice.h"
#include "sys.h"

/* splice(2) takes no such pair (an fd without splice support, an O_APPEND
 * output): refused before a byte moves, the next path may try. */
bool ps__splice_refused(ssize_t r)
{
	return r == -EINVAL || r == -ENOSYS || r == -EOPNOTSUPP;
}

static int side_of(const struct ps_xfer *x, int err)
{
	if (err == EAGAIN || err == EINTR)
		return ps__blocked_side(x, err);
	if (err == EPIPE)
		return PSPLICE_SIDE_OUT;
	/* Otherwise the non-pipe side failed; between two pipes only a
	 * missing reader (EPIPE) is the output's. */
	return x->out->kind == PS_K_PIPE ? PSPLICE_SIDE_IN : PSPLICE_SIDE_OUT;
}

/* splice(2) from a socket, tty or other device into a pipe waits for input
 * inside the kernel holding the pipe's lock. Until a byte arrives, anyone
 * else who touches that pipe sleeps uninterruptibly: its reader, even for
 * bytes already in it (seen from an idle Unix socket on Linux 6.18), and a
 * process that closes an end of it or exits.
 * A blocking call waits here instead, in poll(2), which holds no lock and
 * also wakes when the pipe's last reader leaves (POLLERR). SPLICE_F_NONBLOCK
 * would not do: TCP and ttys ignore it on the input. A call not meant to
 * wait is left as it was: with PSPLICE_F_NONBLOCK the input has been polled
 * (nonblock_side), and an O_NONBLOCK end asks splice not to wait. */
static bool waits_holding_pipe(const struct ps_xfer *x)
{
	const struct ps_endpoint *in = x->in, *out = x->out;

	return out->kind == PS_K_PIPE && in->kind != PS_K_PIPE && !in->seekable &&
	       !(x->flags & PSPLICE_F_NONBLOCK) && !ps__nonblock(in) && !ps__nonblock(out);
}

static int wait_input(const struct ps_xfer *x)
{
	struct pollfd p[2] = { { .fd = x->in->fd, .events = POLLIN },
			       { .fd = x->out->fd, .events = 0 } };

	if (!waits_holding_pipe(x))
		return 0;
	/* Should poll itself fail, splice waits as it always did. */
	return ps_ret(poll(p, 2, -1)) == -EINTR ? -EINTR : 0;
}

ssize_t ps__path_splice(struct ps_xfer *x)
{
	int64_t oi = x->off_in ? *x->off_in : 0, oo = x->off_out ? *x->off_out : 0;
	size_t len = x->len < PS_MAX_CHUNK ? x->len : PS_MAX_CHUNK;
	ssize_t n;

	if (x->in->kind != PS_K_PIPE && x->out->kind != PS_K_PIPE)
		return ps_not_here(EINVAL);
	/* splice refuses an O_APPEND output itself (EINVAL, before a byte
	 * moves, as splice(2) documents), unless it is a pipe: ask only if
	 * the flags are known. */
	if (x->out->kind != PS_K_PIPE && ps_known_append(x->out))
		return ps_not_here(EINVAL);
	for (;;) {
		n = wait_input(x);
		if (!n)
			n = ps_splice(x->in->fd, x->off_in ? &oi : NULL, x->out->fd,
				      x->off_out ? &oo : NULL, len, ps__splice_flags(x));
		if (n != -EINTR || !x->retry_eintr)
			break;
	}
	if (n < 0) {
		if (ps__splice_refused(n))
			return ps_not_here((int)-n);
		if (ps__ended_anyway(x, (int)-n))
			return 0;
		return ps__fail(x, (int)-n, side_of(x, (int)-n));
	}
	if (n == 0 && x->in->seekable && !ps__at_eof(x))
		return ps_not_here(PS_WHY_ZERO);
	ps__moved(x, (uint64_t)n, (uint64_t)n, PSPLICE_METHOD_SPLICE);
	ps__advance(x->off_in, (uint64_t)n);
	ps__advance(x->off_out, (uint64_t)n);
	return n;
}
