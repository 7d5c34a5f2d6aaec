/* Fan-out, the public calls: a tee prepared (its input and sinks
 * classified, its flags checked, its SIGPIPE policy), its moves and
 * copies as steps (tee_serve.c) under its one lock, a sink's pending bytes
 * counted and taken, and the tee freed. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "endpoint.h"
#include "hold.h"
#include "pipepool.h"
#include "psplice.h"
#include "sigpipe.h"
#include "tee.h"

static int classify_all(struct psplice_tee *t, int fd_in, const int *fds_out)
{
	/* Each sink's plan is a pair's from a pipe, the step's, which has no
	 * fd yet: a plan is made from the endpoints' kinds alone. */
	struct ps_endpoint pipe = ps_pipe_end(-1, O_RDONLY | O_NONBLOCK);
	bool raises = false;
	struct sink *s;

	if (ps__classify(fd_in, &t->in) < 0)
		return ps__reject(EBADF, PSPLICE_SIDE_IN);
	if (t->in.kind == PS_K_DIR)
		return ps__reject(EISDIR, PSPLICE_SIDE_IN);
	if (!ps__readable(&t->in))
		return ps__reject(EBADF, PSPLICE_SIDE_IN);
	for (size_t i = 0; i < t->n; i++) {
		s = &t->sink[i];
		if (ps__classify(fds_out[i], &s->ep) < 0 || !ps__writable(&s->ep))
			return ps__reject(EBADF, PSPLICE_SIDE_OUT);
		/* splice(2) refuses an O_APPEND output before a byte moves. */
		s->nosplice = s->ep.kind != PS_K_PIPE && ps__append(&s->ep);
		ps__plan_make(&s->plan, &pipe, &s->ep, t->flags);
		raises |= ps__raises_sigpipe(&s->ep);
	}
	ps__sigpipe_policy(&t->sig, raises, t->flags);
	return 0;
}

static void tee_release(struct psplice_tee *t)
{
	for (size_t i = 0; i < t->n; i++)
		ps__hold_release(&t->sink[i].hold);
	ps__tee_put_src(t->src);
	pthread_mutex_destroy(&t->lock);
	free(t->step_res);
	free(t);
}

struct psplice_tee *psplice_tee_new(int fd_in, const int *fds_out, size_t n,
				    size_t hold_max, unsigned int flags)
{
	struct psplice_result r = { 0 };
	struct psplice_tee *t;

	if (!fds_out || !n || n > PSPLICE_TEE_MAX)
		ps__fail_early(&r, EINVAL, PSPLICE_SIDE_NONE);
	if (r.error || ps__check_flags(flags, TEE_PLAN_FLAGS, &r) < 0) {
		ps__copy_return(&r, NULL);
		return NULL;
	}
	t = calloc(1, sizeof(*t) + n * sizeof(t->sink[0]));
	if (!t || !(t->step_res = calloc(2 * n, sizeof(*t->step_res)))) {
		free(t);
		ps__reject(ENOMEM, PSPLICE_SIDE_NONE);
		return NULL;
	}
	t->total_res = t->step_res + n;
	t->n = n;
	t->hold_max = hold_max;
	t->flags = flags;
	pthread_mutex_init(&t->lock, NULL);
	if (classify_all(t, fd_in, fds_out) < 0) {
		int err = errno;

		tee_release(t);
		errno = err;
		return NULL;
	}
	return t;
}

/* A move or copy on a tee: refused (published), or the tee locked for
 * it. */
static bool tee_enter(struct psplice_tee *t, unsigned int flags)
{
	struct psplice_result r = { 0 };

	if (ps__check_enter(t, flags, TEE_CALL_FLAGS, &r) < 0) {
		ps__copy_return(&r, NULL);
		return false;
	}
	pthread_mutex_lock(&t->lock);
	return true;
}

ssize_t psplice_tee_move(struct psplice_tee *t, size_t len, unsigned int flags,
			 struct psplice_result *res)
{
	struct psplice_result last = { 0 };

	if (!tee_enter(t, flags))
		return -1;
	ps__tee_step(t, len, flags, false, res ? res : t->step_res, &last);
	pthread_mutex_unlock(&t->lock);
	if (ps__copy_return(&last, NULL) < 0)
		return -1;
	return (ssize_t)last.in_bytes;
}

static bool transient(int err)
{
	return err == EAGAIN || err == EINTR;
}

/* A step's results into the copy's. A sink's error in the totals is its
 * first, but a failure for good outweighs an earlier EAGAIN or EINTR: the
 * copy's own error is that one. */
static void add_step(struct psplice_result *total, const struct psplice_result *r, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		total[i].in_bytes += r[i].in_bytes;
		total[i].out_bytes += r[i].out_bytes;
		if (r[i].out_bytes)
			total[i].method = r[i].method;
		if (r[i].error && (!total[i].error ||
				   (transient(total[i].error) && !transient(r[i].error)))) {
			total[i].error = r[i].error;
			total[i].side = r[i].side;
		}
	}
}

static void tee_copy(struct psplice_tee *t, uint64_t len, unsigned int flags,
		     struct psplice_result *total, struct psplice_result *last)
{
	struct psplice_result r;
	uint64_t taken = 0;
	size_t i;

	memset(total, 0, t->n * sizeof(*total));
	while (len == PSPLICE_TO_EOF || taken < len) {
		r = (struct psplice_result){ 0 };
		ps__tee_step(t, len - taken > SIZE_MAX ? SIZE_MAX : (size_t)(len - taken), flags,
			 true, t->step_res, &r);
		add_step(total, t->step_res, t->n);
		taken += r.in_bytes;
		if (r.error || !r.in_bytes) {
			*last = r;
			break;
		}
	}
	last->in_bytes = taken;
	last->out_bytes = taken;
	for (i = 0; i < t->n; i++)
		if (total[i].out_bytes < last->out_bytes)
			last->out_bytes = total[i].out_bytes;
	if (last->error)
		return;
	for (i = 0; i < t->n; i++)
		if (total[i].error) {
			last->error = total[i].error;
			last->side = PSPLICE_SIDE_OUT;
			return;
		}
}

int psplice_tee_copy(struct psplice_tee *t, uint64_t len, unsigned int flags,
		     struct psplice_result *res)
{
	struct psplice_result last = { 0 };

	if (!tee_enter(t, flags))
		return -1;
	tee_copy(t, len, flags, res ? res : t->total_res, &last);
	pthread_mutex_unlock(&t->lock);
	return ps__copy_return(&last, NULL);
}

size_t psplice_tee_pending(struct psplice_tee *t, size_t i)
{
	size_t n;

	if (!t || i >= t->n)
		return 0;
	pthread_mutex_lock(&t->lock);
	n = ps__held(&t->sink[i].hold);
	pthread_mutex_unlock(&t->lock);
	return n;
}

size_t psplice_tee_take(struct psplice_tee *t, size_t i, void *buf, size_t len)
{
	size_t n;

	if (!t || i >= t->n || !buf)
		return 0;
	pthread_mutex_lock(&t->lock);
	n = ps__hold_take(&t->sink[i].hold, buf, len);
	pthread_mutex_unlock(&t->lock);
	return n;
}

void psplice_tee_free(struct psplice_tee *t)
{
	if (t)
		tee_release(t);
}

int psplice_tee(int fd_in, const int *fds_out, size_t n, uint64_t len,
		unsigned int flags, struct psplice_result *res)
{
	struct psplice_result res0 = { 0 };
	struct psplice_tee *t;
	int r;

	/* One call blocks: PSPLICE_F_NONBLOCK is refused. */
	if (ps__check_flags(flags, TEE_PLAN_FLAGS | (TEE_CALL_FLAGS & ~PSPLICE_F_NONBLOCK),
			    &res0) < 0)
		return ps__copy_return(&res0, NULL);
	t = psplice_tee_new(fd_in, fds_out, n, 0, flags & TEE_PLAN_FLAGS);
	if (!t)
		return -1;
	r = psplice_tee_copy(t, len, flags & PSPLICE_F_MORE, res);
	psplice_tee_free(t);
	return r;
}
