/* Fan-out (tee.c, tee_serve.c, tee_sink.c): what a tee and its sinks are,
 * and the one call from its public calls (tee.c) into its steps
 * (tee_serve.c, which serves each sink by tee_sink.c). */
#ifndef PS_TEE_H
#define PS_TEE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "call.h"
#include "compiler.h"
#include "endpoint-t.h"
#include "hold-t.h"
#include "pipepool-t.h"
#include "psplice.h"

/* The planning and the per-call flags a tee takes (call.h). */
#define TEE_PLAN_FLAGS (PS_PLAN_FLAGS & ~PS_PAIR_ONLY_FLAGS)
#define TEE_CALL_FLAGS (PS_CALL_FLAGS & ~PS_PAIR_ONLY_FLAGS)

struct sink {
	struct ps_endpoint ep;
	struct ps_hold hold;         /* pending: in its pipe, then in memory */
	struct ps_plan plan;         /* from a pipe to it, as a pair's */
	int error;                   /* what put it out, or 0 */
	bool nosplice;               /* splice(2) refuses it: write(2) from
	                                memory, no tee */
	bool tee;                    /* this step: served by tee or move */
	size_t from;                 /* this step: its share in memory starts
	                                there, or NO_SHARE */
	struct psplice_result *res;  /* this step's */
};

/* A tee has one lock, as a pair that holds has one (call.h): a step
 * reads the input once for every sink, and what it may take depends on
 * what every sink holds (hold_max), so the sinks' holds, the internal pipe
 * and the end of input are one state, which moves, copies, pending and
 * take lock whole. A lock per sink would only be taken inside this one. */
struct psplice_tee {
	pthread_mutex_t lock;
	struct ps_endpoint in;
	struct ps_pipe *src;  /* the input is spliced into it (kept from the
	                         pool); NULL until needed, or for a pipe input */
	bool rw;              /* the input takes no splice: read(2) */
	bool ended;
	struct ps_sigpolicy sig;  /* SIGPIPE around each step */
	size_t hold_max;
	unsigned int flags;   /* the planning flags */
	struct psplice_result *step_res, *total_res;
	size_t n;
	struct sink sink[];
};

/* tee_serve.c: one step of a tee, with SIGPIPE guarded: the step's bytes
 * to every live sink, each result in res[i], the step's in *last; and the
 * internal pipe given back when the tee is freed. tee.c calls these, and
 * tee_serve.c calls nothing of tee.c. */
PS_HIDDEN void ps__tee_step(struct psplice_tee *t, size_t len, unsigned int flags,
			    bool retry, struct psplice_result *res,
			    struct psplice_result *last);
PS_HIDDEN void ps__tee_put_src(struct ps_pipe *p);

#endif
