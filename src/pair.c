/* Prepared pairs: psplice_pair_new classifies and plans once, its moves and
 * copies run on that (call.c), one at a time; a pair with a non-seekable
 * input keeps what it took and could not deliver as pending (hold.c). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>

#include "call.h"
#include "endpoint.h"
#include "hold.h"
#include "pipepool.h"
#include "psplice.h"

/* A pair outlives the call that prepared it: forget the sizes, which change
 * between moves, and say which moves must read the input's again: those
 * of a file into itself, whose ranges are checked against its size, and
 * clone's. Two files apart need none (a move's end of file asks). */
static void forget_sizes(struct psplice_pair *p)
{
	bool same = p->in.kind == PS_K_FILE && p->out.kind == PS_K_FILE &&
		    p->in.dev == p->out.dev && p->in.ino == p->out.ino;

	if (p->in.seekable)
		p->in.size = -1;
	if (p->out.seekable)
		p->out.size = -1;
	p->sized = same || p->plan.sized;
}

static struct psplice_pair *pair_refused(const struct psplice_result *r)
{
	ps__copy_return(r, NULL);
	return NULL;
}

/* The pair p describes, on the heap, for many moves. */
static struct psplice_pair *pair_kept(struct psplice_pair *p, bool hold,
				       struct psplice_result *r)
{
	struct psplice_pair *pp;
	int bad;

	/* Ask for the flags now: moves never change a pair threads share. */
	if ((bad = ps__unusable(&p->in, &p->out))) {
		ps__fail_early(r, EBADF, bad);
		return pair_refused(r);
	}
	forget_sizes(p);
	pp = malloc(sizeof(*pp));
	if (!pp) {
		ps__fail_early(r, ENOMEM, PSPLICE_SIDE_NONE);
		return pair_refused(r);
	}
	*pp = *p;
	/* Bytes taken from a non-seekable input exist nowhere else. */
	pp->holds = hold && !pp->in.seekable;
	if (pp->holds) {
		pp->hold = (struct ps_hold){ .pipe = NULL };
		pthread_mutex_init(&pp->lock, NULL);
	}
	return pp;
}

static struct psplice_pair *pair_new(int fd_in, int fd_out, unsigned int flags,
				      bool hold)
{
	struct psplice_result r = { 0 };
	struct psplice_pair p;

	if (ps__check_flags(flags, PS_PLAN_FLAGS, &r) < 0 ||
	    ps__pair_init(&p, fd_in, fd_out, flags, &r) < 0)
		return pair_refused(&r);
	return pair_kept(&p, hold, &r);
}

/* An fd as its caller describes it (psplice_pair_new_known): the kind and
 * the flags said, nothing asked of the kernel. */
static int described(int fd, unsigned int d, bool input, struct ps_endpoint *ep,
		     struct psplice_result *r)
{
	static const int kinds[] = {
		[PSPLICE_FD_TCP] = PS_K_TCP, [PSPLICE_FD_UNIX] = PS_K_UNIX,
		[PSPLICE_FD_PIPE] = PS_K_PIPE,
	};
	unsigned int kind = d & ~PSPLICE_FD_NONBLOCK;
	int side = input ? PSPLICE_SIDE_IN : PSPLICE_SIDE_OUT, mode = O_RDWR;

	if (kind < PSPLICE_FD_TCP || kind > PSPLICE_FD_PIPE)
		return ps__fail_early(r, EINVAL, side);
	if (fd < 0)
		return ps__fail_early(r, EBADF, side);
	if (kind == PSPLICE_FD_PIPE)
		mode = input ? O_RDONLY : O_WRONLY;
	*ep = (struct ps_endpoint){ .fd = fd, .kind = kinds[kind], .size = 0,
				   .fl = mode | (d & PSPLICE_FD_NONBLOCK ? O_NONBLOCK : 0) };
	return 0;
}

__attribute__((visibility("default")))
struct psplice_pair *psplice_pair_new_known(int fd_in, unsigned int in, int fd_out,
					    unsigned int out, unsigned int flags)
{
	struct psplice_result r = { 0 };
	struct psplice_pair p;

	if (ps__check_flags(flags, PS_PLAN_FLAGS, &r) < 0 ||
	    described(fd_in, in, true, &p.in, &r) < 0 ||
	    described(fd_out, out, false, &p.out, &r) < 0)
		return pair_refused(&r);
	ps__pair_plan(&p, flags);
	return pair_kept(&p, true, &r);
}

/* .symver as a directive: clang, which builds the fuzzers, has no symver
 * attribute. */
__asm__(".symver ps__pair_new_0_2, psplice_pair_new@@PSPLICE_0.2");
__attribute__((visibility("default")))
struct psplice_pair *ps__pair_new_0_2(int fd_in, int fd_out, unsigned int flags);
struct psplice_pair *ps__pair_new_0_2(int fd_in, int fd_out, unsigned int flags)
{
	return pair_new(fd_in, fd_out, flags, true);
}

/* Programs built against 0.1 were promised parked bytes from a pair's
 * moves, as from psplice_ex: their pairs never hold bytes pending. */
__asm__(".symver ps__pair_new_0_1, psplice_pair_new@PSPLICE_0.1");
__attribute__((visibility("default")))
struct psplice_pair *ps__pair_new_0_1(int fd_in, int fd_out, unsigned int flags);
struct psplice_pair *ps__pair_new_0_1(int fd_in, int fd_out, unsigned int flags)
{
	return pair_new(fd_in, fd_out, flags, false);
}

static void pair_lock(struct psplice_pair *p)
{
	if (p->holds)
		pthread_mutex_lock(&p->lock);
}

static void pair_unlock(struct psplice_pair *p)
{
	if (p->holds)
		pthread_mutex_unlock(&p->lock);
}

/* A move or copy on a pair: refused (r says why), or the pair locked for
 * it. */
static bool pair_enter(struct psplice_pair *p, unsigned int flags, struct psplice_result *r)
{
	if (ps__check_enter(p, flags, PS_CALL_FLAGS, r) < 0)
		return false;
	pair_lock(p);
	return true;
}

ssize_t psplice_pair_move(struct psplice_pair *p, int64_t *off_in, int64_t *off_out,
			  size_t len, unsigned int flags, struct psplice_result *res)
{
	struct psplice_result r = { 0 };

	if (len > PS_MAX_CHUNK)
		len = PS_MAX_CHUNK;
	if (pair_enter(p, flags, &r)) {
		ps__call_step(p, off_in, off_out, len, flags, &r);
		pair_unlock(p);
	}
	return ps__step_return(&r, res);
}

int psplice_pair_copy(struct psplice_pair *p, int64_t *off_in, int64_t *off_out,
		      uint64_t len, unsigned int flags, struct psplice_result *res)
{
	struct psplice_result r = { 0 };

	if (pair_enter(p, flags, &r)) {
		ps__call_copy(p, off_in, off_out, len, flags, &r);
		pair_unlock(p);
	}
	return ps__copy_return(&r, res);
}

size_t psplice_pair_pending(struct psplice_pair *p)
{
	size_t n;

	if (!p || !p->holds)
		return 0;
	pair_lock(p);
	n = ps__held(&p->hold);
	pair_unlock(p);
	return n;
}

size_t psplice_pair_take(struct psplice_pair *p, void *buf, size_t len)
{
	size_t n;

	if (!p || !p->holds || !buf)
		return 0;
	pair_lock(p);
	n = ps__hold_take(&p->hold, buf, len);
	pair_unlock(p);
	return n;
}

/* Pending bytes are handed back as a one-shot call hands back what it
 * could not deliver: parked, in psplice_last(). Those in a pipe kept
 * before a fork() are left to the process that uses the pair. */
static void hand_back(struct psplice_pair *p)
{
	struct psplice_result r = { 0 };
	size_t n = ps__held_here(&p->hold);
	unsigned char *buf;

	if (!n)
		return;
	r.in_bytes = n;
	buf = ps__park_buf(n);
	if (!buf) {
		ps__fail_early(&r, ENOMEM, PSPLICE_SIDE_NONE);
	} else {
		r.parked = buf;
		r.parked_len = ps__hold_take(&p->hold, buf, n);
		if (r.parked_len < n)
			ps__fail_early(&r, EIO, PSPLICE_SIDE_NONE);
	}
	ps__publish(&r, NULL);
}

void psplice_pair_free(struct psplice_pair *p)
{
	if (p && p->holds) {
		hand_back(p);
		ps__hold_release(&p->hold);
		pthread_mutex_destroy(&p->lock);
	}
	free(p);
}
