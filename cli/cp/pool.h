/* psplice cp -j N: the threads of a tree's walk and its queue of
 * directories (pool.c). */
#ifndef CLI_CP_POOL_H
#define CLI_CP_POOL_H

#include <stdbool.h>

/* The directories a directory handed over, still to be copied; its own
 * attributes wait for them. Zeroed by the directory's walk; the pool's
 * lock guards it from then on. */
struct cp_kids {
	unsigned int pending;
	bool failed;
};

struct cp_pool;

/* threads workers (fewer if the system makes fewer) running tasks by run
 * (0, or -1 for a failure said), at most cap of them queued or running at
 * once. NULL: no memory. */
struct cp_pool *cp_pool_new(unsigned int threads, unsigned int cap, int (*run)(void *task));
/* The workers stopped, once every task has been waited for. */
void cp_pool_free(struct cp_pool *p);
/* Room for one more task? Then it is kept for the caller, who pushes a
 * task or gives the room back. */
bool cp_pool_reserve(struct cp_pool *p);
void cp_pool_unreserve(struct cp_pool *p);
/* A task, in the room reserved for it, that kids waits for. */
void cp_pool_push(struct cp_pool *p, void *task, struct cp_kids *kids);
/* Every task of kids done, running queued ones meanwhile. -1 if one
 * failed. */
int cp_pool_wait(struct cp_pool *p, struct cp_kids *kids);

#endif
