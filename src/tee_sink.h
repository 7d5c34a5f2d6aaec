/* One step of a tee, sink by sink (tee_sink.c): the step's state, which
 * tee_serve.c makes and runs, and how the step's bytes reach one sink, by
 * tee(2) from the step's pipe, by the move of the pages themselves (the
 * last sink), or from one copy in memory, the sink's pending bytes first.
 * tee_serve.c calls these; tee_sink.c calls nothing of tee_serve.c or
 * tee.c. */
#ifndef PS_TEE_SINK_H
#define PS_TEE_SINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "compiler.h"
#include "path-t.h"
#include "tee.h"

/* A sink's share of this step does not come from memory. */
#define NO_SHARE SIZE_MAX

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

/* A sink not yet put out by a failure for good. */
PS_HIDDEN bool ps__sink_live(const struct sink *s);
/* The step's input as a step's transfer, for filling the step's pipe. */
PS_HIDDEN struct ps_xfer ps__step_input_x(const struct step *st);
/* The pipe that holds the step's bytes: the caller's input, or the
 * internal pipe it was spliced into (described in *tmp). */
PS_HIDDEN const struct ps_endpoint *ps__step_in(const struct step *st,
						struct ps_endpoint *tmp);
/* One path of the dispatch table between the step's pipes and a sink:
 * what it moved, or -errno; *side the side its error was put on. */
PS_HIDDEN ssize_t ps__step_run_path(struct ps_xfer *x, int method, int *side);
/* Deliver what sink s holds: all of it, or until it would block or fails. */
PS_HIDDEN void ps__sink_deliver(const struct step *st, struct sink *s);
/* n bytes of sink s's share from memory, written now or held. */
PS_HIDDEN void ps__sink_serve_memory(const struct step *st, struct sink *s,
				     const unsigned char *b, size_t n);
/* The step's bytes to sink s by tee(2) through the thread's pipe; the
 * first out of an input pipe sizes the step. 0, or -errno: the step's
 * error, the input's or a pipe it could not get before its size was known. */
PS_HIDDEN int ps__sink_serve_tee(struct step *st, struct sink *s);
/* The last sink takes the pages themselves, out of the step's pipe; what
 * it does not take is its pending. 0, or -errno: the step's error, the
 * input's or a wait that would block, before the step's size was known. */
PS_HIDDEN int ps__sink_serve_move(struct step *st, struct sink *s);

#endif
