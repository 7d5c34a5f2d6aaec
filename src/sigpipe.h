/* The SIGPIPE guard (sigpipe.c): blocked around a call into a pipe or
 * socket, the one the call raised taken back. */
#ifndef PS_SIGPIPE_H
#define PS_SIGPIPE_H

#include <signal.h>
#include <stdbool.h>

#include "compiler.h"

struct ps_sigguard {
	sigset_t old;    /* the caller's mask */
	bool on;         /* SIGPIPE blocked by us */
	bool pending;    /* one was pending before: the caller's */
};
PS_HIDDEN bool ps__sigpipe_ignored(void);
PS_HIDDEN void ps__sigpipe_block(struct ps_sigguard *g, bool on);
PS_HIDDEN void ps__sigpipe_restore(struct ps_sigguard *g, bool raised);
PS_HIDDEN void ps__sigpipe_reap(void);

#endif
