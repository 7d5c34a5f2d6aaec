/* splice(2) through the thread's internal pipe: input -> pipe -> output, for
 * pairs where neither side is a pipe (socket to socket, socket to file, …). */
#include <errno.h>
#include <sys/ioctl.h>

#include "accounting.h"
#include "endpoint.h"
#include "hold.h"
#include "path.h"
#include "pipepool.h"
#include "psplice.h"
#include "sys.h"

/* Read the n bytes left in the pipe into a buffer: they are handed back
 * (parked, or discarded after rewinding a seekable input) or written out by
 * write(2). The pipe holds exactly those bytes, so the reads do not wait. */
static unsigned char *drain(struct ps_pipe *p, size_t n)
{
	unsigned char *buf = ps__park_buf(n);

	return buf && ps__pipe_read(p->r, buf, n) == n ? buf : NULL;
}

/* The output takes no splices (EINVAL on the first one): move what the pipe
 * holds with write(2) instead, unless that is forbidden. */
static size_t write_through(struct ps_xfer *x, struct ps_pipe *p, size_t n,
			    unsigned char **left, int64_t *oo)
{
	unsigned char *buf;
	size_t done;

	if (x->flags & PSPLICE_F_NOFALLBACK) {
		ps__fail(x, EOPNOTSUPP, PSPLICE_SIDE_OUT);
		return 0;
	}
	buf = drain(p, n);
	if (!buf) {
		ps__fail(x, EIO, PSPLICE_SIDE_NONE);
		return 0;
	}
	done = ps__write_all(x, buf, n);
	if (done)
		x->res->method = PSPLICE_METHOD_READWRITE;
	*left = buf + done;
	if (x->off_out)
		*oo = *x->off_out;
	return done;
}

static size_t pipe_out(struct ps_xfer *x, struct ps_pipe *p, size_t n,
		       unsigned char **left, int64_t *oo)
{
	size_t moved = 0;
	ssize_t m;

	while (moved < n) {
		m = ps_splice(p->r, NULL, x->out->fd, x->off_out ? oo : NULL,
			      n - moved, ps__splice_flags(x));
		if (m == -EINTR && x->retry_eintr)
			continue;
		if (m < 0 && moved == 0 && ps__splice_refused(m))
			return write_through(x, p, n, left, oo);
		if (m <= 0) {
			ps__fail(x, m ? (int)-m : EIO, PSPLICE_SIDE_OUT);
			break;
		}
		moved += (size_t)m;
		x->res->out_bytes += (uint64_t)m;
		x->res->method = PSPLICE_METHOD_SPLICE_PIPE;
	}
	return moved;
}

/* The output took less than the pipe held: a pair keeps the pipe, and its
 * next move splices the rest out; otherwise the rest is given back. A pipe
 * that could not be drained is dropped, not reused. */
static ssize_t rest_back(struct ps_xfer *x, struct ps_pipe *p, unsigned char *left,
			 size_t rest, size_t moved)
{
	if (!left && ps__hold_pipe(x, p, rest))
		return ps__ran(x, moved);
	if (!left)
		left = drain(p, rest);
	if (!left || ps__give_back(x, left, rest) < 0) {
		ps__pipe_put(p, true);
		return ps__fail(x, EIO, PSPLICE_SIDE_NONE);
	}
	ps__pipe_put(p, false);
	return ps__ran(x, moved);
}

ssize_t ps__path_splice_pipe(struct ps_xfer *x)
{
	int64_t oi = x->off_in ? *x->off_in : 0, oo = x->off_out ? *x->off_out : 0;
	unsigned char *left = NULL;
	struct ps_pipe *p;
	size_t moved, len;
	ssize_t n;
	int r;

	if (x->in->kind == PS_K_PIPE || x->out->kind == PS_K_PIPE || ps__append(x->out))
		return ps_not_here(EINVAL);
	/* The bytes are taken before the output is written: an output no
	 * write can reach is refused first, not met with bytes in hand. */
	if (!ps__writable(x->out))
		return ps__fail(x, EBADF, PSPLICE_SIDE_OUT);
	r = ps__pipe_get(&p);
	if (r < 0)
		return ps_not_here(-r);
	len = x->len < p->size ? x->len : p->size;
	n = ps_splice(x->in->fd, x->off_in ? &oi : NULL, p->w, NULL, len,
		      ps__splice_flags(x) & ~PSPLICE_F_MORE);
	if (n < 0 || (n == 0 && x->in->seekable && !ps__at_eof(x))) {
		ps__pipe_put(p, false);
		if (n == 0)
			return ps_not_here(PS_WHY_ZERO);
		return ps__splice_refused(n) ? ps_not_here((int)-n) :
		       ps__fail(x, (int)-n, PSPLICE_SIDE_IN);
	}
	x->res->in_bytes += (uint64_t)n;
	moved = pipe_out(x, p, (size_t)n, &left, &oo);
	ps__advance(x->off_in, moved);
	if (x->off_out)
		*x->off_out = oo;
	if (moved < (size_t)n)
		return rest_back(x, p, left, (size_t)n - moved, moved);
	ps__pipe_put(p, false);
	return ps__ran(x, moved);
}
