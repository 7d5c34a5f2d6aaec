/* A pair's pending bytes (hold.c), which a prepared pair and each sink of a
 * tee keep. A hold has no lock of its own: the object that keeps it (the
 * pair, the tee) has one lock for everything it keeps, holds included. */
#ifndef PS_HOLD_T_H
#define PS_HOLD_T_H

#include <stddef.h>

#include "pipepool-t.h"

/* What a prepared pair with a non-seekable input took and could not deliver
 * yet: its pending bytes, exactly the next bytes of the stream, which its
 * next move delivers before it reads more. They wait in the internal pipe
 * the move used, which the pair keeps until it is empty, or, when no pipe
 * may be kept, in memory. */
struct ps_hold {
	struct ps_pipe *pipe;    /* kept while it holds in_pipe bytes */
	size_t in_pipe;
	unsigned char *buf;      /* or pending in buf[off, len) */
	size_t off, len, cap;
};

#endif
