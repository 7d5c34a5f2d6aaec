/* A step's accounting, as the paths share it: counts, error attribution,
 * the end of a file input, giving back bytes that were taken but not
 * delivered, and the user-space read and write. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>

#include "accounting.h"
#include "endpoint.h"
#include "hold.h"
#include "pipepool.h"
#include "psplice.h"
#include "sys.h"

int ps__fail(struct ps_xfer *x, int err, int side)
{
	/* A peer that reset the connection is as gone as one that closed it.
	 * The kernel says ECONNRESET only to the first call that meets the
	 * reset, and sendfile or splice swallow it when they had moved bytes
	 * before; which of the two a caller saw would depend on the path. */
	if (err == ECONNRESET && side == PSPLICE_SIDE_OUT)
		err = EPIPE;
	/* The kernel refused an fd that no move can use, which nobody looked
	 * for before (an O_WRONLY input, an O_PATH fd): ask now whose it is. A
	 * two-sided call's EBADF may be either fd's; a splice from a pipe's
	 * write end is the input's, not the other side's. */
	if (err == EBADF) {
		int bad = ps__unusable(x->in, x->out);

		if (bad)
			side = bad;
	}
	if (!x->res->error) {
		x->res->error = err;
		x->res->side = side;
	}
	return -x->res->error;
}

ssize_t ps__ran(const struct ps_xfer *x, size_t n)
{
	return x->res->error ? -x->res->error : (ssize_t)n;
}

void ps__advance(int64_t *off, uint64_t n)
{
	if (off)
		*off += (int64_t)n;
}

void ps__moved(struct ps_xfer *x, uint64_t in, uint64_t out, int method)
{
	x->res->in_bytes += in;
	x->res->out_bytes += out;
	if (out)
		x->res->method = method;
}

unsigned int ps__splice_flags(const struct ps_xfer *x)
{
	return x->flags & (PSPLICE_F_MOVE | PSPLICE_F_NONBLOCK | PSPLICE_F_MORE);
}

static int64_t in_pos(const struct ps_xfer *x)
{
	return x->off_in ? *x->off_in : ps_lseek(x->in->fd, 0, SEEK_CUR);
}

/* Whether a seekable input has no byte at the offset a step reads from.
 * copy_file_range and sendfile return 0 both at end of file and on procfs,
 * sysfs and other files whose st_size says nothing of their content (0, or
 * 4096 for 23 bytes), and refuse offsets past the filesystem's largest
 * file (EOVERFLOW) where pread(2) answers 0. Past the size is the end.
 * Short of it, "no" lets a later path read, and read/write meets the end
 * (or the content) itself. Only where no such path follows (NOFALLBACK, a
 * forced path) does a one-byte pread tell: an empty file is at its end, a
 * /proc file is not. A read may consume (a tracing pipe) or wait, so it is
 * asked only then. */
static bool at_eof(const struct ps_xfer *x, bool may_read)
{
	int64_t pos, size;
	unsigned char b;

	if (!x->in->seekable)
		return false;
	pos = in_pos(x);
	size = ps__size(x->in);
	if (pos < 0)
		return false;
	if (size > 0 && pos >= size)
		return true;
	return may_read && ps_pread(x->in->fd, &b, 1, pos) == 0;
}

bool ps__at_eof(const struct ps_xfer *x)
{
	return at_eof(x, x->flags & (PSPLICE_F_NOFALLBACK | PSPLICE_F_ONLY_MASK));
}

/* The same, for a caller with no path left to ask: read if need be. */
bool ps__input_ended(const struct ps_xfer *x)
{
	return at_eof(x, true);
}

/* The kernel looks for a pipe's reader and room before it reads the file
 * (splice, sendfile): EPIPE or EAGAIN from a file at its end is the end of
 * input all the same, reader or room or not, as it is into a socket. The
 * SIGPIPE an EPIPE sent is taken back as for a failed move. */
bool ps__ended_anyway(struct ps_xfer *x, int err)
{
	if ((err != EPIPE && err != EAGAIN) || !ps__input_ended(x))
		return false;
	x->raised |= err == EPIPE;
	return true;
}

/* Which side a two-sided call (copy_file_range, sendfile) failed on. Errors
 * that only writing produces are the output's; for the rest, read one byte
 * of the input where the call read: if that fails too, the input failed. */
int ps__side_of(const struct ps_xfer *x, int err)
{
	unsigned char b;
	int64_t pos;

	switch (err) {
	case EPIPE: case ENOSPC: case EDQUOT: case EFBIG: case EROFS:
	case ETXTBSY: case ECONNRESET: case ENOTCONN: case EAGAIN:
		return PSPLICE_SIDE_OUT;
	}
	if (!x->in->seekable)
		return PSPLICE_SIDE_IN;
	pos = in_pos(x);
	if (pos < 0 || ps_pread(x->in->fd, &b, 1, pos) < 0)
		return PSPLICE_SIDE_IN;
	return PSPLICE_SIDE_OUT;
}

/* Whether the input could be the side that said EAGAIN. SPLICE_F_NONBLOCK
 * makes the pipe operations nonblocking, not the file (splice(2)): a pipe
 * and a Unix socket honour it, but a tty, /dev/zero or /dev/random read
 * with the fd's own O_NONBLOCK only, and a blocking one that the flag asked
 * about was polled ready before the call (nonblock_side). A file or block
 * device never says it. Sockets keep the poll: TCP and Unix differ. Asking
 * for O_NONBLOCK costs no call here: the fd's flags were asked before the
 * move (in the wait or poll before splice, or when a pair or tee was made). */
static bool input_may_refuse(const struct ps_endpoint *in)
{
	if (in->seekable)
		return false;
	return in->kind == PS_K_PIPE || ps_is_socket(in->kind) || ps__nonblock(in);
}

/* After EAGAIN or EINTR (err) from a call that could have waited on either
 * side: the side that is not ready is the one that would block. An input
 * that could not have said EAGAIN, or a file or block device, which never
 * makes a call wait, leaves the output, whatever a poll racing with the
 * output's reader says. When both are ready by the time we look, either
 * answer wakes an event loop at once. */
int ps__blocked_side(const struct ps_xfer *x, int err)
{
	struct pollfd p[2] = { { .fd = x->in->fd, .events = POLLIN },
			       { .fd = x->out->fd, .events = POLLOUT } };

	if (x->in->seekable || (err == EAGAIN && !input_may_refuse(x->in)))
		return PSPLICE_SIDE_OUT;
	if (x->out->seekable || poll(p, 2, 0) < 0)
		return PSPLICE_SIDE_IN;
	if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR)))
		return PSPLICE_SIDE_IN;
	if (!(p[1].revents & (POLLOUT | POLLERR | POLLHUP)))
		return PSPLICE_SIDE_OUT;
	return PSPLICE_SIDE_IN;
}

/* n bytes were taken from the input and not delivered. A seekable input
 * takes them back (its offset or position ends just past the last delivered
 * byte); a non-seekable one cannot: a prepared pair holds them as pending,
 * a one-shot call parks them for the caller. */
int ps__give_back(struct ps_xfer *x, const void *buf, size_t n)
{
	struct psplice_result *res = x->res;
	unsigned char *park;
	int64_t r;

	if (!n)
		return 0;
	if (x->in->seekable) {
		if (!x->off_in) {
			r = ps_lseek(x->in->fd, -(int64_t)n, SEEK_CUR);
			if (r < 0)
				return (int)r;
		}
		res->in_bytes -= n;
		return 0;
	}
	if (x->hold)
		return ps__hold_bytes(x->hold, buf, n);
	park = ps__park_buf(res->parked_len + n);
	if (!park)
		return -ENOMEM;
	/* buf may already lie inside the parked buffer. */
	memmove(park + res->parked_len, buf, n);
	res->parked = park;
	res->parked_len += n;
	return 0;
}

/* A blocking fd used with PSPLICE_F_NONBLOCK (sockets take MSG_DONTWAIT):
 * it is polled before each read or write. */
static bool polled(const struct ps_endpoint *ep, unsigned int flags)
{
	return (flags & PSPLICE_F_NONBLOCK) && !ep->seekable && !ps_is_socket(ep->kind) &&
	       !ps__nonblock(ep);
}

/* A blocking fd used with PSPLICE_F_NONBLOCK: do not wait for it. */
static bool would_block(const struct ps_endpoint *ep, unsigned int flags, short ev)
{
	struct pollfd p = { .fd = ep->fd, .events = ev };

	if (!polled(ep, flags))
		return false;
	return poll(&p, 1, 0) == 0;
}

/* send(2) and recv(2) flags for the step's: no waiting with NONBLOCK. */
static int msg_flags(unsigned int flags, int fl)
{
	return flags & PSPLICE_F_NONBLOCK ? fl | MSG_DONTWAIT : fl;
}

static ssize_t write_once(struct ps_xfer *x, const unsigned char *buf, size_t n)
{
	const struct ps_endpoint *out = x->out;
	int more = x->flags & PSPLICE_F_MORE ? MSG_MORE : 0;

	if (would_block(out, x->flags, POLLOUT))
		return -EAGAIN;
	/* Ready is room for PIPE_BUF bytes (a pipe's POLLOUT), not for n: a
	 * larger write into a blocking pipe would wait for its reader. */
	if (polled(out, x->flags) && n > PIPE_BUF)
		n = PIPE_BUF;
	if (x->off_out)
		return ps_pwrite(out->fd, buf, n, *x->off_out);
	if (ps_is_socket(out->kind))
		return ps_ret(send(out->fd, buf, n, msg_flags(x->flags, MSG_NOSIGNAL | more)));
	return ps_write(out->fd, buf, n);
}

/* Write n bytes; returns how many were delivered, the error (if any) is
 * recorded against the output. A single step gives up on EINTR, parking
 * what it took, so that a signal still ends a wait on a stalled output. */
size_t ps__write_all(struct ps_xfer *x, const unsigned char *buf, size_t n)
{
	size_t done = 0;
	ssize_t w;

	while (done < n) {
		w = write_once(x, buf + done, n - done);
		if (w == -EINTR && x->retry_eintr)
			continue;
		if (w <= 0) {
			ps__fail(x, w ? (int)-w : EIO, PSPLICE_SIDE_OUT);
			break;
		}
		done += (size_t)w;
		x->res->out_bytes += (uint64_t)w;
		ps__advance(x->off_out, (uint64_t)w);
	}
	return done;
}

/* Read once from the input into buf (at most n bytes). */
ssize_t ps__read_once(struct ps_xfer *x, unsigned char *buf, size_t n)
{
	const struct ps_endpoint *in = x->in;

	if (would_block(in, x->flags, POLLIN))
		return -EAGAIN;
	if (x->off_in)
		return ps_pread(in->fd, buf, n, *x->off_in);
	if (ps_is_socket(in->kind))
		return ps_ret(recv(in->fd, buf, n, msg_flags(x->flags, 0)));
	return ps_read(in->fd, buf, n);
}

/* Wait until an output takes bytes: a blocking move whose pipe would not
 * wait (the pool's read ends are O_NONBLOCK, and splice(2) out of one says
 * EAGAIN) waits here instead. 0, or -errno. */
int ps__wait_out(const struct ps_endpoint *ep, bool retry_eintr)
{
	struct pollfd p = { .fd = ep->fd, .events = POLLOUT };
	int r;

	do
		r = (int)ps_ret(poll(&p, 1, -1));
	while (r == -EINTR && retry_eintr);
	return r < 0 ? r : 0;
}
