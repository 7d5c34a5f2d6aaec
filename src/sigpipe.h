/* The SIGPIPE guard (sigpipe.c): blocked around a call into a pipe or
 * socket, the one the call raised taken back. */
#ifndef PS_SIGPIPE_H
#define PS_SIGPIPE_H

#include <signal.h>
#include <stdbool.h>

#include "compiler.h"
#include "endpoint.h"

/* Writing into a pipe or socket without a reader raises SIGPIPE. */
static inline bool ps__raises_sigpipe(const struct ps_endpoint *out)
{
	return out->kind == PS_K_PIPE || ps_is_socket(out->kind);
}

struct ps_sigguard {
	sigset_t old;    /* the caller's mask */
	bool on;         /* SIGPIPE blocked by us */
	bool pending;    /* one was pending before: the caller's */
};
/* How moves keep SIGPIPE from the caller: blocked around each move
 * (guard), or, when the caller keeps it ignored, only a pending one taken
 * back after a move that met a gone reader (reap: a thread that blocks
 * SIGPIPE would keep it pending). Neither when no output raises it. */
struct ps_sigpolicy {
	bool guard, reap;
};
PS_HIDDEN bool ps__sigpipe_ignored(void);
PS_HIDDEN void ps__sigpipe_policy(struct ps_sigpolicy *sp, bool raises, unsigned int flags);
PS_HIDDEN void ps__sigpipe_end(struct ps_sigguard *g, const struct ps_sigpolicy *sp,
			       bool raised);
PS_HIDDEN void ps__sigpipe_block(struct ps_sigguard *g, bool on);
PS_HIDDEN void ps__sigpipe_restore(struct ps_sigguard *g, bool raised);
PS_HIDDEN void ps__sigpipe_reap(void);

#endif
