/* A prepared pair's pending bytes: taken from a non-seekable input, not yet
 * delivered. They are the next bytes of the stream, so a move delivers them
 * before it reads more; they stay in the pipe the move used (no copy), or in
 * memory when the pair may not keep a pipe. The pair's lock is held. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "accounting.h"
#include "hold.h"
#include "path.h"
#include "pipepool.h"
#include "psplice.h"

size_t ps__held(const struct ps_hold *h)
{
	return h->in_pipe + (h->len - h->off);
}

/* Keep n bytes in memory, after what is there. */
int ps__hold_bytes(struct ps_hold *h, const void *buf, size_t n)
{
	unsigned char *b;
	size_t cap;

	if (h->off == h->len)
		h->off = h->len = 0;
	if (h->len + n > h->cap) {
		cap = h->len + n;
		b = realloc(h->buf, cap);
		if (!b)
			return -ENOMEM;
		h->buf = b;
		h->cap = cap;
	}
	memcpy(h->buf + h->len, buf, n);
	h->len += n;
	return 0;
}

/* The move's pipe p holds the n bytes the output did not take: the pair
 * keeps the pipe, if the pool lets it. */
bool ps__hold_pipe(struct ps_xfer *x, struct ps_pipe *p, size_t n)
{
	struct ps_hold *h = x->hold;

	if (!h || x->in->seekable || h->pipe || h->len > h->off)
		return false;
	h->pipe = ps__pipe_keep(p, x->flags & PSPLICE_F_NOFALLBACK);
	if (!h->pipe)
		return false;
	h->in_pipe = n;
	return true;
}

/* Read n bytes out of the kept pipe, which holds at least that many. */
static size_t pipe_read(struct ps_hold *h, unsigned char *buf, size_t n)
{
	size_t got = ps__pipe_read(h->pipe->r, buf, n);

	h->in_pipe -= got;
	return got;
}

/* The pipe is empty: back to the pool. A pipe that failed to give up all
 * it should hold is closed, not reused. */
static void pipe_done(struct ps_hold *h)
{
	if (h->in_pipe)
		ps__pipe_close(h->pipe);
	else
		ps__pipe_back(h->pipe);
	h->pipe = NULL;
	h->in_pipe = 0;
}

/* The output takes no splices after all: what the pipe holds goes to
 * memory, in front of what memory holds already (a tee's sink can hold
 * both: the pipe's are the older), for write(2) to deliver. */
static int pipe_to_memory(struct ps_hold *h)
{
	size_t n = h->in_pipe, mem = h->len - h->off, got;
	unsigned char *b = malloc(n + mem);

	if (!b)
		return -ENOMEM;
	got = pipe_read(h, b, n);
	if (mem)
		memcpy(b + got, h->buf + h->off, mem);
	free(h->buf);
	h->buf = b;
	h->off = 0;
	h->len = got + mem;
	h->cap = n + mem;
	pipe_done(h);
	return got == n ? 0 : -EIO;
}

/* Why the splice path stopped delivering a kept pipe: its error, a
 * refusal after bytes went out (EINVAL), or EIO for a 0 from a pipe that
 * holds more. */
static int delivery_error(const struct psplice_result *r, ssize_t m)
{
	if (r->error)
		return r->error;
	if (ps_is_not_here(m) && ps_why_not_here(m) > 0)
		return ps_why_not_here(m);
	return EIO;
}

/* The kept pipe to the output by the splice path (a pipe on one side), up
 * to x->len bytes: delivered, not taken (they were, by the move that held
 * them). When splice refuses the output, they stay pending, moved to
 * memory for write(2); any failure is the output's. */
static void from_pipe(struct ps_xfer *x, struct ps_hold *h)
{
	struct ps_endpoint in = ps_pipe_end(h->pipe->r, O_RDONLY | O_NONBLOCK);
	struct psplice_result r = { 0 };
	struct ps_xfer px = { .in = &in, .out = x->out, .off_out = x->off_out,
			      .len = h->in_pipe < x->len ? h->in_pipe : x->len,
			      .flags = x->flags, .retry_eintr = x->retry_eintr, .res = &r };
	ssize_t m;
	int err;

	while (px.len) {
		m = ps__path_run(&px, PSPLICE_METHOD_SPLICE);
		if (ps_is_not_here(m) && !r.out_bytes) {
			if (x->flags & PSPLICE_F_NOFALLBACK) {
				ps__fail(x, EOPNOTSUPP, PSPLICE_SIDE_OUT);
				return;
			}
			err = pipe_to_memory(h);
			if (err < 0)
				ps__fail(x, -err, PSPLICE_SIDE_OUT);
			return;
		}
		if (m <= 0) {
			ps__fail(x, delivery_error(&r, m), PSPLICE_SIDE_OUT);
			break;
		}
		px.len -= (size_t)m;
		h->in_pipe -= (size_t)m;
		x->res->out_bytes += (uint64_t)m;
		x->res->method = PSPLICE_METHOD_SPLICE_PIPE;
	}
	if (!h->in_pipe)
		pipe_done(h);
}

/* Deliver up to x->len pending bytes, and nothing else: the next move reads
 * more. A failure is the output's, and the bytes stay pending. */
void ps__deliver_held(struct ps_xfer *x)
{
	struct ps_hold *h = x->hold;
	size_t n, done;

	if (h->pipe)
		from_pipe(x, h);
	if (h->pipe || h->off == h->len || x->res->error)
		return;
	/* Bytes in memory go out by write(2) alone. */
	if (x->flags & PSPLICE_F_NOFALLBACK) {
		ps__fail(x, EOPNOTSUPP, PSPLICE_SIDE_OUT);
		return;
	}
	n = h->len - h->off;
	if (n > x->len)
		n = x->len;
	done = ps__write_all(x, h->buf + h->off, n);
	if (done)
		x->res->method = PSPLICE_METHOD_READWRITE;
	h->off += done;
	/* An idle pair holds no memory. */
	if (h->off == h->len) {
		free(h->buf);
		h->buf = NULL;
		h->off = h->len = h->cap = 0;
	}
}

/* Hand up to len pending bytes to the caller, in order. */
size_t ps__hold_take(struct ps_hold *h, void *buf, size_t len)
{
	unsigned char *b = buf;
	size_t n = 0, k;

	if (h->pipe) {
		k = h->in_pipe < len ? h->in_pipe : len;
		n = pipe_read(h, b, k);
		if (n < k) {
			pipe_done(h);
			return n;
		}
		if (!h->in_pipe)
			pipe_done(h);
		if (h->pipe)
			return n;
	}
	k = h->len - h->off;
	if (k > len - n)
		k = len - n;
	if (!k)
		return n;
	memcpy(b + n, h->buf + h->off, k);
	h->off += k;
	return n + k;
}

/* Pending bytes in a pipe kept before a fork may be the other process's:
 * they are left to it. */
size_t ps__held_here(const struct ps_hold *h)
{
	return h->pipe && ps__pipe_forked(h->pipe) ? h->len - h->off : ps__held(h);
}

void ps__hold_release(struct ps_hold *h)
{
	if (h->pipe) {
		ps__pipe_close(h->pipe);
		h->pipe = NULL;
	}
	free(h->buf);
	h->buf = NULL;
	h->off = h->len = h->cap = h->in_pipe = 0;
}
