/* Lines queued for an fd and written by a thread of their own, as
 * HAProxy's log rings are: a relay worker that says a line copies it into
 * memory and goes back to its connections, whatever the reader of its
 * standard error or log file does. A reader that stops reading (a pipe
 * nobody drains, a stopped pager) holds this queue's thread alone; the
 * lines that no longer fit are dropped and counted, and once the reader
 * takes lines again the log says how many were dropped, where they were.
 * It calls no other file of cli/: out.c, which every file calls, calls it. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "outq.h"

/* A line in the ring: its length, then its bytes. gap: lines dropped
 * just before it, said before it is written. */
struct entry {
	uint64_t len, gap;
};

struct outq {
	atomic_int fd;                 /* -1: no queue here */
	pthread_mutex_t lock;
	pthread_cond_t more, written;  /* lines or a stop for the thread; lines written */
	pthread_t thread;
	pthread_t owner;               /* the thread that started it */
	char *ring;
	char *out;                     /* the thread's lines being written */
	uint64_t head, tail;           /* bytes ever queued and taken: tail <= head */
	uint64_t done;                 /* and written: done <= tail */
	uint64_t unsaid;               /* lines dropped since the last one queued */
	bool on;                       /* the thread takes lines */
	bool busy;                     /* it writes lines taken */
	bool stop;
	bool stalled;                  /* the owner's line waited OWNER_WAIT_MS in vain */
	atomic_uint_fast64_t dropped;  /* since the process began */
};

/* Standard error and one log file. */
#define QUEUES 2
/* How long the owner's line waits for its write, until the ring empties. */
#define OWNER_WAIT_MS 1000
static struct outq queues[QUEUES] = {
	{ .fd = -1, .lock = PTHREAD_MUTEX_INITIALIZER },
	{ .fd = -1, .lock = PTHREAD_MUTEX_INITIALIZER },
};
static atomic_bool write_failed;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

bool cli_write_whole(int fd, const char *buf, size_t len)
{
	ssize_t n;

	while (len) {
		n = write(fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		buf += n;
		len -= (size_t)n;
	}
	return true;
}

/* n bytes into the ring at byte position pos, round its end. */
static void ring_in(struct outq *q, uint64_t pos, const void *p, size_t n)
{
	size_t at = (size_t)(pos % CLI_OUTQ_SIZE), first = CLI_OUTQ_SIZE - at;

	if (first > n)
		first = n;
	memcpy(q->ring + at, p, first);
	memcpy(q->ring, (const char *)p + first, n - first);
}

/* n bytes out of the ring from byte position pos. */
static void ring_out(const struct outq *q, uint64_t pos, void *p, size_t n)
{
	size_t at = (size_t)(pos % CLI_OUTQ_SIZE), first = CLI_OUTQ_SIZE - at;

	if (first > n)
		first = n;
	memcpy(p, q->ring + at, first);
	memcpy((char *)p + first, q->ring, n - first);
}

static void queue(struct outq *q, const char *buf, size_t len)
{
	struct entry e = { .len = len, .gap = q->unsaid };

	if (q->head - q->tail + sizeof(e) + len > CLI_OUTQ_SIZE) {
		q->unsaid++;
		atomic_fetch_add_explicit(&q->dropped, 1, memory_order_relaxed);
		return;
	}
	/* The thread waits only on an empty ring: a line behind others
	 * is taken with them, unwoken. */
	if (q->head == q->tail)
		pthread_cond_signal(&q->more);
	ring_in(q, q->head, &e, sizeof(e));
	ring_in(q, q->head + sizeof(e), buf, len);
	q->head += sizeof(e) + len;
	q->unsaid = 0;
}

/* The time ms from now on CLOCK_MONOTONIC, the queues' conditions' clock. */
static struct timespec after_ms(int64_t ms)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	t.tv_sec += (time_t)(ms / 1000);
	t.tv_nsec += (long)(ms % 1000) * 1000000;
	if (t.tv_nsec >= 1000000000) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000;
	}
	return t;
}

/* The owner's lines (a relay's main thread: a drain begun, a takeover)
 * are written before it goes on, so that they come before what other
 * processes say of what it does next, as they did when it wrote them
 * itself. A reader that does not take one within OWNER_WAIT_MS is
 * stalled: until the ring empties, the owner's lines wait no more. */
static void wait_line(struct outq *q, uint64_t pos)
{
	struct timespec until = after_ms(OWNER_WAIT_MS);

	while (q->on && q->done < pos && !q->stalled)
		if (pthread_cond_timedwait(&q->written, &q->lock, &until) == ETIMEDOUT)
			q->stalled = true;
}

bool cli_outq_put(int fd, const char *buf, size_t len)
{
	struct outq *q;
	bool taken = false;
	int i;

	for (i = 0; i < QUEUES && !taken; i++) {
		q = &queues[i];
		if (atomic_load_explicit(&q->fd, memory_order_acquire) != fd)
			continue;
		pthread_mutex_lock(&q->lock);
		/* Checked again under the lock: the thread may have ended. */
		taken = q->on && atomic_load_explicit(&q->fd, memory_order_relaxed) == fd;
		if (taken)
			queue(q, buf, len);
		if (taken && pthread_equal(pthread_self(), q->owner))
			wait_line(q, q->head);
		pthread_mutex_unlock(&q->lock);
	}
	return taken;
}

/* "psplice: N log lines dropped" into out at *used, when it fits. */
static void say_gap(uint64_t gap, char *out, size_t *used)
{
	int n = snprintf(out + *used, PIPE_BUF - *used,
			 "psplice: %llu log line%s dropped: the reader did not keep up\n",
			 (unsigned long long)gap, gap == 1 ? "" : "s");

	if (n > 0 && (size_t)n < PIPE_BUF - *used)
		*used += (size_t)n;
}

/* Whole lines from the ring into out, PIPE_BUF bytes at most unless one
 * line is longer: a write of a pipe that size is never mixed with another
 * writer's, so that the lines stay whole however many processes share
 * the reader. The count of lines dropped goes where they were. */
static size_t take(struct outq *q, char *out)
{
	size_t used = 0;
	struct entry e;

	while (q->tail != q->head) {
		ring_out(q, q->tail, &e, sizeof(e));
		if (used && used + e.len + (e.gap ? 80 : 0) > PIPE_BUF)
			break;
		if (e.gap)
			say_gap(e.gap, out, &used);
		ring_out(q, q->tail + sizeof(e), out + used, (size_t)e.len);
		used += (size_t)e.len;
		q->tail += sizeof(e) + e.len;
	}
	/* Dropped after every line queued: said once those are written. */
	if (q->tail == q->head && q->unsaid && used + 80 <= PIPE_BUF) {
		say_gap(q->unsaid, out, &used);
		q->unsaid = 0;
	}
	return used;
}

/* The queue's thread: lines taken under the lock, written without it. */
static void *writer(void *arg)
{
	struct outq *q = arg;
	uint64_t taken;
	size_t n;

	pthread_mutex_lock(&q->lock);
	for (;;) {
		while (q->tail == q->head && !q->unsaid && !q->stop) {
			q->busy = false;
			pthread_cond_broadcast(&q->written);
			pthread_cond_wait(&q->more, &q->lock);
		}
		if (q->tail == q->head && !q->unsaid)
			break;
		n = take(q, q->out);
		taken = q->tail;
		q->busy = true;
		pthread_mutex_unlock(&q->lock);
		if (!cli_write_whole(atomic_load(&q->fd), q->out, n))
			atomic_store(&write_failed, true);
		pthread_mutex_lock(&q->lock);
		q->done = taken;
		if (q->done == q->head)
			q->stalled = false;
		pthread_cond_broadcast(&q->written);
	}
	/* Stopped with everything written: the lines after it are the
	 * callers' to write. */
	q->on = false;
	q->busy = false;
	pthread_cond_broadcast(&q->written);
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

/* A forked child (a reload's, before its exec) has no queue threads: it
 * writes its lines itself. The locks may be held by threads it has not. */
static void forked(void)
{
	int i;

	for (i = 0; i < QUEUES; i++)
		atomic_store(&queues[i].fd, -1);
}

/* Once: the child's handler, and the lines still queued written at
 * exit(3) (the command's own end stops the queues before). */
static void once_init(void)
{
	pthread_atfork(NULL, NULL, forked);
	atexit(cli_outq_stop);
}

static int conds_init(struct outq *q)
{
	pthread_condattr_t a;
	int err;

	if ((err = pthread_condattr_init(&a)))
		return -err;
	err = pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	if (!err && !(err = pthread_cond_init(&q->more, &a)) &&
	    (err = pthread_cond_init(&q->written, &a)))
		pthread_cond_destroy(&q->more);
	pthread_condattr_destroy(&a);
	return -err;
}

/* The thread, every signal blocked: the process's signals are the main
 * thread's, and a write to a reader gone is EPIPE here, not SIGPIPE. */
static int spawn(struct outq *q)
{
	sigset_t all, old;
	int err;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&q->thread, NULL, writer, q);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return -err;
}

static void release(struct outq *q)
{
	free(q->ring);
	free(q->out);
	q->ring = q->out = NULL;
}

static int open_queue(struct outq *q, int fd)
{
	int err;

	/* A line as long as the ring, and a count of drops before it. */
	q->ring = malloc(CLI_OUTQ_SIZE);
	q->out = malloc(CLI_OUTQ_SIZE + PIPE_BUF);
	if (!q->ring || !q->out) {
		release(q);
		return -ENOMEM;
	}
	if ((err = conds_init(q)) < 0) {
		release(q);
		return err;
	}
	q->head = q->tail = q->done = q->unsaid = 0;
	q->stop = q->busy = q->stalled = false;
	q->owner = pthread_self();
	q->on = true;
	atomic_store(&q->fd, fd);
	if ((err = spawn(q)) < 0) {
		atomic_store(&q->fd, -1);
		q->on = false;
		pthread_cond_destroy(&q->more);
		pthread_cond_destroy(&q->written);
		release(q);
	}
	return err;
}

/* Started and stopped by one thread, the main one: only cli_outq_put
 * runs beside them. */
int cli_outq_start(int fd)
{
	int i;

	pthread_once(&init_once, once_init);
	for (i = 0; i < QUEUES; i++)
		if (atomic_load(&queues[i].fd) == fd)
			return 0;
	for (i = 0; i < QUEUES; i++)
		if (atomic_load(&queues[i].fd) < 0)
			return open_queue(&queues[i], fd);
	return -EBUSY;
}

/* Until q's lines are written, or until the time deadline of
 * CLOCK_MONOTONIC (NULL: no limit). */
static void wait_written(struct outq *q, const struct timespec *deadline)
{
	pthread_mutex_lock(&q->lock);
	while (q->on && (q->tail != q->head || q->unsaid || q->busy))
		if (!deadline)
			pthread_cond_wait(&q->written, &q->lock);
		else if (pthread_cond_timedwait(&q->written, &q->lock, deadline) == ETIMEDOUT)
			break;
	pthread_mutex_unlock(&q->lock);
}

void cli_outq_flush(int64_t ms)
{
	struct timespec t = after_ms(ms < 0 ? 0 : ms);
	int i;

	for (i = 0; i < QUEUES; i++)
		if (atomic_load(&queues[i].fd) >= 0)
			wait_written(&queues[i], ms < 0 ? NULL : &t);
}

void cli_outq_stop(void)
{
	struct outq *q;
	int i;

	for (i = 0; i < QUEUES; i++) {
		q = &queues[i];
		if (atomic_load(&q->fd) < 0)
			continue;
		pthread_mutex_lock(&q->lock);
		q->stop = true;
		pthread_cond_signal(&q->more);
		pthread_mutex_unlock(&q->lock);
		pthread_join(q->thread, NULL);
		atomic_store(&q->fd, -1);
		pthread_cond_destroy(&q->more);
		pthread_cond_destroy(&q->written);
		release(q);
	}
}

uint64_t cli_outq_dropped(void)
{
	uint64_t n = 0;
	int i;

	for (i = 0; i < QUEUES; i++)
		n += atomic_load_explicit(&queues[i].dropped, memory_order_relaxed);
	return n;
}

bool cli_outq_failed(void)
{
	return atomic_load(&write_failed);
}
