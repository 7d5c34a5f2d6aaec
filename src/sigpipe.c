/* The SIGPIPE guard every move into a pipe or socket shares (the planner's
 * calls and the fan-out's steps). Splicing into a socket or a pipe without
 * a reader raises SIGPIPE, and splice(2) has no MSG_NOSIGNAL: block it
 * around the call, and take back the one the call raised. */
#include <signal.h>
#include <time.h>

#include "psplice.h"
#include "sigpipe.h"

/* The caller's promise that SIGPIPE is ignored is checked where it is made
 * (a pair or tee is prepared, a one-shot call begins): moves then trust it.
 * It is a syscall (sigaction), as much as a small move or a pair's whole
 * setup costs: a thread's first call that makes the promise checks it,
 * the thread's later ones take it as kept. */
bool ps__sigpipe_ignored(void)
{
	static __thread bool kept;
	struct sigaction sa;

	if (!kept)
		kept = sigaction(SIGPIPE, NULL, &sa) == 0 && !(sa.sa_flags & SA_SIGINFO) &&
		       sa.sa_handler == SIG_IGN;
	return kept;
}

/* raises: an output of the pair or tee may raise SIGPIPE; flags: the
 * planning flags, checked already. */
void ps__sigpipe_policy(struct ps_sigpolicy *sp, bool raises, unsigned int flags)
{
	sp->guard = raises && !(flags & PSPLICE_F_SIGPIPE_IGNORED);
	sp->reap = raises && !sp->guard;
}

void ps__sigpipe_block(struct ps_sigguard *g, bool on)
{
	sigset_t set;

	g->on = on;
	if (!on)
		return;
	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &set, &g->old);
	/* While SIGPIPE was unblocked none can be pending for this thread: it
	 * would have been delivered. Ask the kernel only when it was blocked. */
	g->pending = sigismember(&g->old, SIGPIPE) && sigpending(&set) == 0 &&
		     sigismember(&set, SIGPIPE);
}

/* The kernel never discards a signal the thread blocks, ignored or not: a
 * move without the guard that met a gone reader takes back the SIGPIPE it
 * may have left pending, as a guarded move does. Only failed moves pay. */
void ps__sigpipe_reap(void)
{
	struct timespec zero = { 0, 0 };
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	while (sigtimedwait(&set, NULL, &zero) == SIGPIPE)
		;
}

/* raised: the call may have raised one. A SIGPIPE pending before the call
 * is the caller's. One the call raised is taken back even when the caller
 * blocks SIGPIPE: it would be delivered the moment the caller unblocks it. */
void ps__sigpipe_restore(struct ps_sigguard *g, bool raised)
{
	if (!g->on)
		return;
	if (raised && !g->pending)
		ps__sigpipe_reap();
	pthread_sigmask(SIG_SETMASK, &g->old, NULL);
}

/* The end of a guarded or reaped move, or of a tee's step: raised says the
 * move may have raised SIGPIPE. */
void ps__sigpipe_end(struct ps_sigguard *g, const struct ps_sigpolicy *sp, bool raised)
{
	if (g->on)
		ps__sigpipe_restore(g, raised);
	else if (sp->reap && raised)
		ps__sigpipe_reap();
}
