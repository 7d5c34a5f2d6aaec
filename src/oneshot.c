/* The one-shot calls, psplice_ex, psplice and psplice_copy: a pair made on
 * the stack for one call (call.c). Classifying an fd costs a syscall
 * (fstat), as much as a 4 KiB move does, and a server that answers each
 * request with one call pays it on every call. So a call takes a side from
 * the thread's memory of what the fd was (ps__recall, endpoint.c) without
 * asking, where the first path's own answer bears that side out: the
 * kernel takes only regular files for copy_file_range and clone, and a
 * splice only with a pipe. Every other side is asked (fstat). An answer
 * such a path also gives for an fd of another kind (EINVAL, ESPIPE, "not
 * here"...) makes the call begin again on the fds as they are now
 * (borne_out, planner.c), before a byte has moved: an fd closed and opened
 * again as another kind between two calls is moved as a fresh call would
 * move it. */
#include "call.h"
#include "endpoint.h"
#include "psplice.h"

#define KNOWN_FLAGS (PS_PLAN_FLAGS | PS_CALL_FLAGS)

/* The sides of a pair of recalled kinds that the answer of its first path
 * bears out (PS_UNSURE_*); the others are asked. */
static unsigned int borne_by(int method, const struct ps_endpoint *in,
			     const struct ps_endpoint *out)
{
	switch (method) {
	case PSPLICE_METHOD_CLONE:
	case PSPLICE_METHOD_COPY_FILE_RANGE:
		if (in->kind == PS_K_FILE && out->kind == PS_K_FILE)
			return PS_UNSURE_IN | PS_UNSURE_OUT;
		return 0;
	case PSPLICE_METHOD_SPLICE:
		/* The other side asked and no pipe, the pipe is the one. */
		if ((in->kind == PS_K_PIPE) == (out->kind == PS_K_PIPE))
			return 0;
		return in->kind == PS_K_PIPE ? PS_UNSURE_IN : PS_UNSURE_OUT;
	}
	/* sendfile reads /dev/zero and /dev/urandom too, at an offset or
	 * not (Linux 6.18), where a file's fd may have gone: its answer
	 * vouches for neither side. */
	return 0;
}

/* A side asked: the inode it was, with its size and kind of now. */
static bool asked_same(struct ps_endpoint *ep)
{
	struct ps_endpoint now;

	if (ps__classify(ep->fd, &now) < 0 || now.dev != ep->dev || now.ino != ep->ino)
		return false;
	*ep = now;
	return true;
}

/* The pair from the thread's memory of both fds, the sides the first path
 * will not bear out asked. false: the call classifies both anew, as when a
 * file is copied onto itself (its ranges are checked against its size). */
static bool recalled(struct psplice_pair *p, int fd_in, int fd_out, unsigned int flags)
{
	unsigned int borne;

	if (!ps__recall(fd_in, &p->in) || !ps__recall(fd_out, &p->out) ||
	    p->in.kind == PS_K_DIR || (p->in.dev == p->out.dev && p->in.ino == p->out.ino))
		return false;
	ps__pair_plan(p, flags);
	borne = borne_by(p->plan.method[0], &p->in, &p->out);
	if ((!(borne & PS_UNSURE_IN) && !asked_same(&p->in)) ||
	    (!(borne & PS_UNSURE_OUT) && !asked_same(&p->out)))
		return false;
	p->unsure = (unsigned char)borne;
	/* Clone measures the input as it is now; a recalled one has no size. */
	p->sized = p->plan.sized && (borne & PS_UNSURE_IN);
	return true;
}

/* A call of no bytes makes no syscall that could bear a recalled side out,
 * and a copy to the end of input measures the file positions and may copy
 * a file into itself: both classify both fds. */
static void oneshot(int fd_in, int64_t *off_in, int fd_out, int64_t *off_out, uint64_t len,
		    bool copy, unsigned int flags, struct psplice_result *r)
{
	unsigned int plan = flags & PS_PLAN_FLAGS, call = flags & PS_CALL_FLAGS;
	struct psplice_pair p;

	if (ps__check_flags(flags, KNOWN_FLAGS, r) < 0)
		return;
	if (len && !(copy && len == PSPLICE_TO_EOF) && recalled(&p, fd_in, fd_out, plan) &&
	    !(copy ? ps__call_copy(&p, off_in, off_out, len, call, r) :
		     ps__call_step(&p, off_in, off_out, (size_t)len, call, r)))
		return;
	if (ps__pair_init(&p, fd_in, fd_out, plan, r) < 0)
		return;
	if (copy)
		ps__call_copy(&p, off_in, off_out, len, call, r);
	else
		ps__call_step(&p, off_in, off_out, (size_t)len, call, r);
}

ssize_t psplice_ex(int fd_in, int64_t *off_in, int fd_out, int64_t *off_out,
		   size_t len, unsigned int flags, struct psplice_result *res)
{
	struct psplice_result r = { 0 };

	oneshot(fd_in, off_in, fd_out, off_out, len > PS_MAX_CHUNK ? PS_MAX_CHUNK : len, false,
		flags, &r);
	return ps__step_return(&r, res);
}

ssize_t psplice(int fd_in, int64_t *off_in, int fd_out, int64_t *off_out,
		size_t len, unsigned int flags)
{
	return psplice_ex(fd_in, off_in, fd_out, off_out, len, flags, NULL);
}

int psplice_copy(int fd_in, int64_t *off_in, int fd_out, int64_t *off_out,
		 uint64_t len, unsigned int flags, struct psplice_result *res)
{
	struct psplice_result r = { 0 };

	oneshot(fd_in, off_in, fd_out, off_out, len, true, flags, &r);
	return ps__copy_return(&r, res);
}
