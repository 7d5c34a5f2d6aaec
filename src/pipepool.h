/* The pipe pool (pipepool.c): a pipe per thread, lent to a move; a pipe a
 * pair keeps while it holds bytes, within a budget; empty pipes for reuse;
 * and how a pipe is grown (ps__pipe_grow: as far as the limits allow, never
 * shrunk; returns its size). The thread's buffer and last result live there
 * too. */
#ifndef PS_PIPEPOOL_H
#define PS_PIPEPOOL_H

#include <fcntl.h>
#include <stdbool.h>

#include "compiler.h"
#include "endpoint-t.h"
#include "pipepool-t.h"
#include "psplice.h"

/* An end of one of the pool's pipes, as the paths take an fd (fl: O_RDONLY
 * | O_NONBLOCK for the read end, which never waits; O_WRONLY). */
static inline struct ps_endpoint ps_pipe_end(int fd, int fl)
{
	return (struct ps_endpoint){ .fd = fd, .kind = PS_K_PIPE, .fl = fl };
}

PS_HIDDEN size_t ps__pipe_grow(int fd, size_t want);
PS_HIDDEN int ps__pipe_get(struct ps_pipe **p);
PS_HIDDEN void ps__pipe_put(struct ps_pipe *p, bool dirty);
PS_HIDDEN struct ps_pipe *ps__pipe_keep(struct ps_pipe *p, bool always);
PS_HIDDEN void ps__pipe_back(struct ps_pipe *p);
PS_HIDDEN void ps__pipe_close(struct ps_pipe *p);
PS_HIDDEN bool ps__pipe_forked(const struct ps_pipe *p);
PS_HIDDEN bool ps__pipe_empty(const struct ps_pipe *p);
PS_HIDDEN size_t ps__pipe_read(int fd, unsigned char *buf, size_t n);
PS_HIDDEN unsigned char *ps__buf(size_t *size);
PS_HIDDEN unsigned char *ps__park_buf(size_t need);
PS_HIDDEN struct psplice_result *ps__last(void);

#endif
