/* Fan-out (tee.c, tee_serve.c): what a tee and one step of it are, and
 * how a step's bytes reach each sink. */
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
#define NO_SHARE SIZE_MAX
/* A step's most without a pipe to size it by. */
#define TEE_RW_STEP ((size_t)256 << 10)

struct sink {
	struct ps_endpoint ep;
	struct ps_hold hold;         /* pending: in its pipe, then in memory */
	int error;                   /* what put it out, or 0 */
	bool nosplice;               /* splice(2) refuses it: write(2) */
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

/* One step's state. */
struct step {
	struct psplice_tee *t;
	unsigned int flags;    /* planning and per-call flags */
	bool retry;            /* a copy: retry EINTR */
	int fd;                /* the pipe that holds the step's bytes */
	size_t len;            /* the most to take */
	size_t k;              /* taken */
	bool known;            /* k is known: the bytes are in fd (or buf) */
	size_t consumed;       /* of them, moved out of fd already */
	bool need_buf;         /* some sink gets its share from memory */
	bool mem_only;         /* every sink does: the input is read(2) */
	int side;              /* of the step's error: who would block */
	unsigned char *buf;    /* the step's bytes, once read */
	struct ps_pipe *tp;    /* the thread's pipe, lent for a sink's tee */
	struct psplice_result *last;
};

static inline bool ps_tee_live(const struct sink *s)
{
	return !s->error;
}

/* tee_serve.c: the step's bytes to every live sink, through tee(2), the
 * move of the pages, or memory; a sink's pending bytes delivered; the
 * internal pipe an input is spliced into. */
PS_HIDDEN int ps__tee_serve(struct step *st);
PS_HIDDEN void ps__tee_deliver(const struct step *st, struct sink *s);
PS_HIDDEN struct ps_pipe *ps__tee_get_src(bool always);
PS_HIDDEN void ps__tee_put_src(struct ps_pipe *p);

#endif
