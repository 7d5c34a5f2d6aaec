/* One call on a pair of fds (call.c, planner.c, pair.c): the pair as
 * classified and planned, which a prepared pair keeps, and the state of a
 * call that runs its plan. */
#ifndef PS_CALL_H
#define PS_CALL_H

#include <pthread.h>

#include "compiler.h"
#include "endpoint-t.h"
#include "hold-t.h"
#include "path-t.h"
#include "sigpipe.h"

#define PS_PLAN_MAX 6

/* The ordered paths for a pair, and what the dispatch table says of them
 * that the call needs to know beforehand. */
struct ps_plan {
	int n;
	int method[PS_PLAN_MAX];
	bool sized;          /* a path needs the input's size of now */
	bool short_raises;   /* a path into a pipe may stop short with SIGPIPE
	                        raised */
};

/* Where a call is in its plan: the first path a step tries, and which paths
 * have moved bytes in this call. */
struct ps_plan_pos {
	int at;
	bool progress[PS_PLAN_MAX];
};

/* What can be known of two fds without knowing the call: their kinds and
 * flags, and the paths to try. Never a file's size: it changes between
 * moves, and a prepared pair keeps -1 in its place. */
struct psplice_pair {
	struct ps_endpoint in, out;
	struct ps_plan plan;
	unsigned int flags;  /* the planning flags */
	struct ps_sigpolicy sig;  /* SIGPIPE around each move */
	bool sized;          /* a move needs the input's size of now */
	bool short_raises;   /* a short move may have raised SIGPIPE */
	bool holds;          /* a prepared pair with a non-seekable input:
	                        what it takes and cannot deliver is pending */
	unsigned char unsure;  /* a one-shot call's sides recalled, not asked:
	                          PS_UNSURE_IN, PS_UNSURE_OUT (oneshot.c) */
	pthread_mutex_t lock;  /* moves on a pair that holds take turns */
	struct ps_hold hold;
};

/* Flags that shape the plan, and flags that only shape one move. Fan-out
 * takes both but for what only a pair's plan has a use for: a choice among
 * file-to-file paths, the hint to move pages (tee(2) copies them), and a
 * copy's return on EINTR (a tee's copy retries it). */
#define PS_PLAN_FLAGS PSPLICE_F_PLAN_MASK
#define PS_CALL_FLAGS (PSPLICE_F_MOVE | PSPLICE_F_NONBLOCK | PSPLICE_F_MORE | PSPLICE_F_EINTR)
#define PS_PAIR_ONLY_FLAGS (PSPLICE_F_REFLINK | PSPLICE_F_ONLY_MASK | PSPLICE_F_MOVE | \
			    PSPLICE_F_EINTR)

/* planner.c: the plan for a pair; one step through it. */
PS_HIDDEN void ps__plan_make(struct ps_plan *p, const struct ps_endpoint *in,
			     const struct ps_endpoint *out, unsigned int flags);
PS_HIDDEN void ps__plan_step(struct ps_xfer *x, const struct ps_plan *p,
			     struct ps_plan_pos *pos);

/* call.c: the checks, the pair's classification, a step and a copy on a
 * classified pair, and the result published. */
PS_HIDDEN int ps__fail_early(struct psplice_result *res, int err, int side);
PS_HIDDEN int ps__check_flags(unsigned int flags, unsigned int known,
			      struct psplice_result *res);
PS_HIDDEN int ps__check_enter(const void *obj, unsigned int flags, unsigned int known,
			      struct psplice_result *res);
PS_HIDDEN int ps__pair_init(struct psplice_pair *p, int fd_in, int fd_out,
			    unsigned int flags, struct psplice_result *res);
PS_HIDDEN void ps__pair_plan(struct psplice_pair *p, unsigned int flags);
PS_HIDDEN bool ps__call_step(struct psplice_pair *p, int64_t *off_in, int64_t *off_out,
			     size_t len, unsigned int flags, struct psplice_result *r);
PS_HIDDEN bool ps__call_copy(struct psplice_pair *p, int64_t *off_in, int64_t *off_out,
			     uint64_t len, unsigned int flags, struct psplice_result *r);
PS_HIDDEN void ps__publish(const struct psplice_result *r, struct psplice_result *res);
PS_HIDDEN int ps__reject(int err, int side);
PS_HIDDEN ssize_t ps__step_return(const struct psplice_result *r,
				  struct psplice_result *res);
PS_HIDDEN int ps__copy_return(const struct psplice_result *r, struct psplice_result *res);

#endif
