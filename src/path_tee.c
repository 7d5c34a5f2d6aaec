/* tee(2): the input pipe's pages duplicated into the output pipe, the
 * input keeping them. Fan-out (tee_sink.c) runs it for each sink but the
 * last, which takes the pages themselves by the splice path. */
#include <errno.h>

#include "accounting.h"
#include "path.h"
#include "psplice.h"
#include "sys.h"

/* Nothing is delivered to a sink here, only copied between two pipes: the
 * bytes count as taken, and the sink's own move counts them delivered. */
ssize_t ps__path_tee(struct ps_xfer *x)
{
	ssize_t n;

	if (x->in->kind != PS_K_PIPE || x->out->kind != PS_K_PIPE)
		return ps_not_here(EINVAL);
	do
		n = ps_tee(x->in->fd, x->out->fd, x->len, ps__splice_flags(x));
	while (n == -EINTR && x->retry_eintr);
	if (n < 0)
		return ps__fail(x, (int)-n, ps__blocked_side(x, (int)-n));
	x->res->in_bytes += (uint64_t)n;
	return n;
}
