/* psplice cp -r -j N: the threads that walk a tree together. A walk that
 * meets a directory while the pool has room hands it over as a task
 * instead of walking into it; a worker takes it, or the directory above
 * it does while it waits for its subdirectories to be copied (a
 * directory's own mode and times are set only after all it holds). */
#include <pthread.h>
#include <stdlib.h>

#include "compat.h"
#include "pool.h"

struct cp_pool {
	pthread_mutex_t lock;
	pthread_cond_t cond; /* a task queued, or a directory's last one done */
	int (*run)(void *task);
	/* The queue: a ring of cap tasks and who waits for each. */
	void **tasks;
	struct cp_kids **owners;
	unsigned int cap, head, queued;
	unsigned int inflight; /* reserved: queued, being made or running */
	bool stop;
	pthread_t *threads;
	unsigned int n_threads;
};

/* The oldest task queued, run without the lock, its end told to the
 * directory that waits for it. Called with the lock held. */
static void run_one(struct cp_pool *p)
{
	void *task = p->tasks[p->head];
	struct cp_kids *kids = p->owners[p->head];
	int rc;

	p->head = (p->head + 1) % p->cap;
	p->queued--;
	pthread_mutex_unlock(&p->lock);
	rc = p->run(task);
	pthread_mutex_lock(&p->lock);
	if (rc < 0)
		kids->failed = true;
	p->inflight--;
	/* Only the directory waiting for its last task has reason to wake
	 * (and, once the queue has held more tasks than threads, none). */
	if (!--kids->pending)
		pthread_cond_broadcast(&p->cond);
}

static void *worker(void *arg)
{
	struct cp_pool *p = arg;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		if (p->queued)
			run_one(p);
		else if (p->stop)
			break;
		else
			pthread_cond_wait(&p->cond, &p->lock);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

struct cp_pool *cp_pool_new(unsigned int threads, unsigned int cap, int (*run)(void *task))
{
	struct cp_pool *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->run = run;
	p->cap = cap;
	p->tasks = calloc(cap, sizeof(*p->tasks));
	p->owners = calloc(cap, sizeof(*p->owners));
	p->threads = calloc(threads, sizeof(*p->threads));
	if (!p->tasks || !p->owners || !p->threads) {
		cp_pool_free(p);
		return NULL;
	}
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	/* A thread that cannot be made leaves fewer helpers: the walk that
	 * waits for a task runs it itself, so none is ever stranded. */
	while (p->n_threads < threads &&
	       cli_thread_create(&p->threads[p->n_threads], worker, p) == 0)
		p->n_threads++;
	return p;
}

void cp_pool_free(struct cp_pool *p)
{
	unsigned int i;

	if (!p)
		return;
	if (p->threads && p->tasks && p->owners) {
		pthread_mutex_lock(&p->lock);
		p->stop = true;
		pthread_cond_broadcast(&p->cond);
		pthread_mutex_unlock(&p->lock);
		for (i = 0; i < p->n_threads; i++)
			pthread_join(p->threads[i], NULL);
		pthread_cond_destroy(&p->cond);
		pthread_mutex_destroy(&p->lock);
	}
	free(p->threads);
	free(p->owners);
	free(p->tasks);
	free(p);
}

bool cp_pool_reserve(struct cp_pool *p)
{
	bool room;

	pthread_mutex_lock(&p->lock);
	room = p->inflight < p->cap;
	if (room)
		p->inflight++;
	pthread_mutex_unlock(&p->lock);
	return room;
}

void cp_pool_unreserve(struct cp_pool *p)
{
	pthread_mutex_lock(&p->lock);
	p->inflight--;
	pthread_mutex_unlock(&p->lock);
}

void cp_pool_push(struct cp_pool *p, void *task, struct cp_kids *kids)
{
	unsigned int at;

	pthread_mutex_lock(&p->lock);
	/* Reserved: never more queued than cap. */
	at = (p->head + p->queued) % p->cap;
	p->tasks[at] = task;
	p->owners[at] = kids;
	p->queued++;
	kids->pending++;
	/* One thread to take it: a worker, or a walk waiting for its own
	 * tasks, which runs any meanwhile. */
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

int cp_pool_wait(struct cp_pool *p, struct cp_kids *kids)
{
	bool failed;

	pthread_mutex_lock(&p->lock);
	/* Waiting idle would leave a thread fewer for the tasks queued, its
	 * own among them: it runs them meanwhile. */
	while (kids->pending) {
		if (p->queued)
			run_one(p);
		else
			pthread_cond_wait(&p->cond, &p->lock);
	}
	failed = kids->failed;
	pthread_mutex_unlock(&p->lock);
	return failed ? -1 : 0;
}
