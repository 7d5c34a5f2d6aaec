/* Per-thread state: the internal pipe, the copy buffer, the parked bytes and
 * the last result, freed when the thread exits. And the pipes pairs keep:
 * a move lends the thread's pipe; when the output leaves bytes in it, the
 * pair keeps that pipe (the thread makes or reuses another) until it is
 * empty again. Kept pipes are counted against a budget, so that a thousand
 * stalled connections do not hold a thousand pipes of 1 MiB (every pipe
 * page counts against the user's pipe-user-pages-soft, every fd against
 * RLIMIT_NOFILE): past it, a pair holds its bytes in memory. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "pipepool.h"
#include "psplice.h"
#include "sys.h"

/* A bigger pipe moves more per pair of splices and holds more socket
 * fragments (16 skb fragments fill a default 64 KiB pipe at ~23 KiB). */
#define PS_PIPE_SIZE (1u << 20)
#define PS_BUF_SIZE (256u << 10)
#define PS_SPARE_MAX 4        /* empty pipes kept for reuse */
#define PS_KEEP_MIN 4
#define PS_KEEP_MAX 1024

/* Empty pipes a pair gave back while its thread had a pipe already. */
static struct {
	pthread_mutex_t lock;
	struct ps_pipe pipe[PS_SPARE_MAX];
	int n;
} spare = { .lock = PTHREAD_MUTEX_INITIALIZER };

static atomic_int kept;        /* pipes pairs hold now */
static atomic_uint fork_gen;   /* fork() calls so far, parent and child alike */
static int keep_max = -1;      /* the budget, set once */
static pthread_once_t keep_once = PTHREAD_ONCE_INIT;

struct ps_tls {
	struct ps_pipe pipe;
	bool have_pipe, pipe_busy;
	bool pipe_forked;  /* in a child, a pipe in use at fork(): drop it */
	unsigned char *buf, *park;
	size_t park_cap;
	struct psplice_result last;
};

static __thread struct ps_tls *tls;
static pthread_key_t tls_key;
static pthread_once_t tls_once = PTHREAD_ONCE_INIT;

/* Close the thread's pipe; the next that needs one makes another. */
static void pipe_drop(struct ps_tls *t)
{
	close(t->pipe.r);
	close(t->pipe.w);
	t->have_pipe = false;
	t->pipe_forked = false;
}

static void tls_free(void *p)
{
	struct ps_tls *t = p;

	/* A later destructor of this thread (a pair freed there) must not
	 * find the freed state: it makes a new one, freed in turn. */
	tls = NULL;
	if (t->have_pipe)
		pipe_drop(t);
	free(t->buf);
	free(t->park);
	free(t);
}

/* A child of fork() has copies of the forking thread's pipe fds, and they
 * name the parent's pipe: a move in each process would mix their streams.
 * The child closes its copies and makes a pipe of its own when it needs
 * one. (Other threads' pipes are not used in the child: those threads are
 * not there.) */
static void tls_forked(void)
{
	if (!tls || !tls->have_pipe)
		return;
	/* fork() from a signal handler that interrupted a move: the move
	 * still holds the pipe, and drops it when done. */
	if (tls->pipe_busy) {
		tls->pipe_forked = true;
		return;
	}
	pipe_drop(tls);
}

/* The spare pipes are shared by the parent and the child after fork():
 * the child forgets its copies. A pipe a pair keeps is the pair's: like a
 * FILE, a pair is used on one side of a fork only. */
static void spares_forked(void)
{
	pthread_mutex_init(&spare.lock, NULL);
	while (spare.n > 0) {
		spare.n--;
		close(spare.pipe[spare.n].r);
		close(spare.pipe[spare.n].w);
	}
}

static void forked(void)
{
	tls_forked();
	spares_forked();
}

/* A pipe a pair kept before a fork is in both processes: see
 * ps__pipe_forked. */
static void forking(void)
{
	atomic_fetch_add(&fork_gen, 1);
}

static void tls_key_init(void)
{
	(void)pthread_key_create(&tls_key, tls_free);
	(void)pthread_atfork(forking, NULL, forked);
}

static struct ps_tls *tls_get(void)
{
	static struct ps_tls fallback; /* only if malloc fails: keeps last valid */

	if (tls)
		return tls;
	pthread_once(&tls_once, tls_key_init);
	tls = calloc(1, sizeof(*tls));
	if (!tls)
		return &fallback;
	pthread_setspecific(tls_key, tls);
	return tls;
}

struct psplice_result *ps__last(void)
{
	return &tls_get()->last;
}

/* Grow pipe fd to want bytes where the limits allow, never shrink it, and
 * return its size: past fs.pipe-max-size or the user's pipe pages
 * (pipe-user-pages-soft) the kernel says EPERM, which is no error here: the
 * pipe keeps the size it has. */
size_t ps__pipe_grow(int fd, size_t want)
{
	int sz = fcntl(fd, F_GETPIPE_SZ), r;

	if (sz >= 0 && (size_t)sz < want) {
		r = fcntl(fd, F_SETPIPE_SZ, (int)want);
		if (r > 0)
			sz = r;
	}
	return sz > 0 ? (size_t)sz : 4096;
}

static int pipe_new(struct ps_pipe *p)
{
	int fds[2], err;

	/* Only the read end is non-blocking, so that draining a pipe never
	 * waits. splice(2) into a pipe whose write end is O_NONBLOCK acts as
	 * SPLICE_F_NONBLOCK, and a Unix socket input then says EAGAIN instead
	 * of waiting for data the caller asked to wait for. */
	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	p->r = fds[0];
	p->w = fds[1];
	if (fcntl(p->r, F_SETFL, O_NONBLOCK) < 0) {
		err = -errno;
		close(p->r);
		close(p->w);
		return err;
	}
	p->size = ps__pipe_grow(p->w, PS_PIPE_SIZE);
	return 0;
}

static bool spare_get(struct ps_pipe *p)
{
	bool got = false;

	pthread_mutex_lock(&spare.lock);
	if (spare.n > 0) {
		*p = spare.pipe[--spare.n];
		got = true;
	}
	pthread_mutex_unlock(&spare.lock);
	return got;
}

int ps__pipe_get(struct ps_pipe **pp)
{
	struct ps_tls *t = tls_get();
	int r;

	if (t->pipe_busy)
		return -EBUSY;
	if (!t->have_pipe) {
		if (!spare_get(&t->pipe)) {
			r = pipe_new(&t->pipe);
			if (r < 0)
				return r;
		}
		t->have_pipe = true;
	}
	t->pipe_busy = true;
	*pp = &t->pipe;
	return 0;
}

/* A pipe that may still hold bytes is closed rather than reused. */
void ps__pipe_put(struct ps_pipe *p, bool dirty)
{
	struct ps_tls *t = tls_get();

	t->pipe_busy = false;
	if ((dirty || t->pipe_forked) && t->have_pipe && p == &t->pipe)
		pipe_drop(t);
}

/* The budget: half the pipe pages a user may have before new pipes shrink
 * to two pages (fs.pipe-user-pages-soft), in pipes of our size; the
 * environment's PSPLICE_MAX_PIPES when set (0: pairs never keep a pipe). */
static void keep_init(void)
{
	const char *env = getenv("PSPLICE_MAX_PIPES");
	long pages = 16384;
	char *end;
	FILE *f;

	if (env && *env) {
		long v = strtol(env, &end, 10);

		if (!*end && v >= 0) {
			keep_max = v > PS_KEEP_MAX ? PS_KEEP_MAX : (int)v;
			return;
		}
	}
	f = fopen("/proc/sys/fs/pipe-user-pages-soft", "re");
	if (f) {
		if (fscanf(f, "%ld", &pages) != 1)
			pages = 16384;
		fclose(f);
	}
	if (pages <= 0) /* no limit */
		pages = (long)PS_KEEP_MAX * 2 * (PS_PIPE_SIZE / 4096);
	keep_max = (int)(pages / 2 / (PS_PIPE_SIZE / 4096));
	if (keep_max < PS_KEEP_MIN)
		keep_max = PS_KEEP_MIN;
	if (keep_max > PS_KEEP_MAX)
		keep_max = PS_KEEP_MAX;
}

/* The thread's pipe p, lent to a move, holds bytes the output did not take:
 * a pair keeps it, if the budget allows (or always), and the thread forgets
 * it. NULL when the pair must hold the bytes otherwise. */
struct ps_pipe *ps__pipe_keep(struct ps_pipe *p, bool always)
{
	struct ps_tls *t = tls_get();
	struct ps_pipe *k;
	int n;

	pthread_once(&keep_once, keep_init);
	if (p != &t->pipe || t->pipe_forked)
		return NULL;
	/* PSPLICE_F_NOFALLBACK: memory is no place for bytes that must not go
	 * out by write(2); the budget gives way. */
	n = atomic_fetch_add(&kept, 1);
	if ((n >= keep_max && !always) || !(k = malloc(sizeof(*k)))) {
		atomic_fetch_sub(&kept, 1);
		return NULL;
	}
	*k = *p;
	k->gen = atomic_load(&fork_gen);
	t->have_pipe = false;
	t->pipe_busy = false;
	return k;
}

/* A kept pipe is empty again: the thread's pipe if it has none, a spare,
 * or closed. */
void ps__pipe_back(struct ps_pipe *p)
{
	struct ps_tls *t = tls_get();

	/* The other process of a fork may still use its copy. */
	if (ps__pipe_forked(p)) {
		ps__pipe_close(p);
		return;
	}
	atomic_fetch_sub(&kept, 1);
	if (!t->have_pipe) {
		t->pipe = *p;
		t->have_pipe = true;
		free(p);
		return;
	}
	pthread_mutex_lock(&spare.lock);
	if (spare.n < PS_SPARE_MAX) {
		spare.pipe[spare.n++] = *p;
		pthread_mutex_unlock(&spare.lock);
		free(p);
		return;
	}
	pthread_mutex_unlock(&spare.lock);
	close(p->r);
	close(p->w);
	free(p);
}

/* Kept before a fork(): the pipe is in the other process too, in its copy
 * of the pair. A pair is used on one side of a fork only, and the side that
 * does not use it must not take its bytes: it closes its fds and no more. */
bool ps__pipe_forked(const struct ps_pipe *p)
{
	return p->gen != atomic_load(&fork_gen);
}

/* Whether a pipe holds no byte: one that may is closed, not reused. */
bool ps__pipe_empty(const struct ps_pipe *p)
{
	int q = 0;

	return ioctl(p->r, FIONREAD, &q) == 0 && q == 0;
}

/* Read n bytes that a pipe holds (so no read waits, whatever its flags):
 * how many it gave, fewer only if it held fewer or failed. */
size_t ps__pipe_read(int fd, unsigned char *buf, size_t n)
{
	size_t got = 0;
	ssize_t r;

	while (got < n) {
		r = ps_read(fd, buf + got, n - got);
		if (r == -EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	return got;
}

/* A kept pipe that may still hold bytes is closed, never reused. */
void ps__pipe_close(struct ps_pipe *p)
{
	atomic_fetch_sub(&kept, 1);
	close(p->r);
	close(p->w);
	free(p);
}

unsigned char *ps__buf(size_t *size)
{
	struct ps_tls *t = tls_get();

	/* Page aligned, so that O_DIRECT fds can use it at aligned offsets. */
	if (!t->buf)
		t->buf = aligned_alloc(4096, PS_BUF_SIZE);
	*size = t->buf ? PS_BUF_SIZE : 0;
	return t->buf;
}

unsigned char *ps__park_buf(size_t need)
{
	struct ps_tls *t = tls_get();
	unsigned char *p;

	if (need > t->park_cap) {
		p = realloc(t->park, need);
		if (!p)
			return NULL;
		t->park = p;
		t->park_cap = need;
	}
	return t->park;
}
