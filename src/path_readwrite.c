/* read/write (pread/pwrite with offsets) through a per-thread buffer: the
 * last resort, for pairs no kernel path takes. */
#include <errno.h>

#include "accounting.h"
#include "endpoint.h"
#include "path.h"
#include "pipepool.h"
#include "psplice.h"

ssize_t ps__path_readwrite(struct ps_xfer *x)
{
	size_t size, done;
	unsigned char *buf = ps__buf(&size);
	ssize_t n;

	if (x->flags & PSPLICE_F_NOFALLBACK)
		return ps_not_here(EOPNOTSUPP);
	/* The bytes are read before they are written: an output no write can
	 * reach is refused first, not met with bytes in hand. */
	if (!ps__writable(x->out))
		return ps__fail(x, EBADF, PSPLICE_SIDE_OUT);
	if (!buf)
		return ps__fail(x, ENOMEM, PSPLICE_SIDE_NONE);
	if (x->len < size)
		size = x->len;
	do
		n = ps__read_once(x, buf, size);
	while (n == -EINTR && x->retry_eintr);
	if (n <= 0)
		return n ? ps__fail(x, (int)-n, PSPLICE_SIDE_IN) : 0;
	x->res->in_bytes += (uint64_t)n;
	done = ps__write_all(x, buf, (size_t)n);
	if (done)
		x->res->method = PSPLICE_METHOD_READWRITE;
	ps__advance(x->off_in, done);
	if (done < (size_t)n && ps__give_back(x, buf + done, (size_t)n - done) < 0)
		ps__fail(x, ENOMEM, PSPLICE_SIDE_NONE);
	return ps__ran(x, done);
}
