/* Sixteen threads on one prepared pair and one fd.
 * - A pair from one file fd to another, shared: each thread copies its own
 *   stripes of the file with positional offsets, by psplice_pair_copy or
 *   psplice_pair_move steps, in pieces of varied sizes; half the threads
 *   also make one-shot psplice_copy calls on the same two fds. The output
 *   must equal the input, and neither fd's file position may move.
 * - A pair from a socket to a socket, shared: the sixteen threads move
 *   until the end of input; moves take turns, so the reader gets the
 *   stream in order, each byte once, and the totals add up.
 * No fd is left behind (each thread's internal pipe goes with it). */
#include <fcntl.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include "t.h"

#define THREADS 16
#define SEED 61
#define STRIPE ((uint64_t)256 << 10)
#define STRIPES 4                     /* per thread */
#define SIZE ((uint64_t)THREADS * STRIPES * STRIPE)
#define STREAM ((uint64_t)16 << 20)
#define POS 12345                     /* both file positions, untouched */

struct shared {
	struct psplice_pair *pair;
	int in, out;
	uint64_t moved[THREADS];
	pthread_barrier_t go;
};

struct worker {
	struct shared *s;
	int id;
};

/* Stripe k of thread id is stripe id + k * THREADS of the file. */
static void copy_stripe(struct worker *w, int k)
{
	struct shared *s = w->s;
	int64_t base = (int64_t)((uint64_t)(w->id + k * THREADS) * STRIPE);
	int64_t oi = base, oo = base;
	struct psplice_result r;
	size_t piece = 1 + (size_t)(w->id * 7919 + k * 104729) % 70000;
	ssize_t n;

	if (k == 1 && w->id % 2) {
		/* A one-shot call on the pair's own fds. */
		T_EQ(psplice_copy(s->in, &oi, s->out, &oo, STRIPE, 0, &r), 0);
		T_EQ_U(r.out_bytes, STRIPE);
	} else if (k % 2) {
		T_EQ(psplice_pair_copy(s->pair, &oi, &oo, STRIPE, 0, &r), 0);
		T_EQ_U(r.out_bytes, STRIPE);
	} else {
		while (oi < base + (int64_t)STRIPE) {
			n = psplice_pair_move(s->pair, &oi, &oo, piece < (uint64_t)(base +
					      (int64_t)STRIPE - oi) ? piece :
					      (size_t)(base + (int64_t)STRIPE - oi), 0, &r);
			T_ASSERT(n > 0);
			T_EQ_U((uint64_t)n, r.out_bytes);
		}
	}
	T_EQ(oi, base + (int64_t)STRIPE);
	T_EQ(oo, base + (int64_t)STRIPE);
	s->moved[w->id] += STRIPE;
}

static void *file_worker(void *arg)
{
	struct worker *w = arg;
	int rc = pthread_barrier_wait(&w->s->go);

	T_ASSERT(rc == 0 || rc == PTHREAD_BARRIER_SERIAL_THREAD);
	for (int k = 0; k < STRIPES; k++)
		copy_stripe(w, k);
	return NULL;
}

/* Run fn in THREADS threads on s; the bytes they moved, in all. */
static uint64_t run_threads(struct shared *s, void *(*fn)(void *))
{
	struct worker w[THREADS];
	pthread_t tid[THREADS];
	uint64_t total = 0;

	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ .s = s, .id = i };
		T_EQ(pthread_create(&tid[i], NULL, fn, &w[i]), 0);
	}
	for (int i = 0; i < THREADS; i++) {
		T_EQ(pthread_join(tid[i], NULL), 0);
		total += s->moved[i];
	}
	return total;
}

static void file_pair(void)
{
	struct shared s = { 0 };

	s.in = t_make_file(t_path("src"), SIZE, SEED);
	s.out = open(t_path("dst"), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	T_OK(s.out);
	T_OK(lseek(s.in, POS, SEEK_SET));
	T_OK(lseek(s.out, POS, SEEK_SET));
	s.pair = psplice_pair_new(s.in, s.out, 0);
	T_ASSERT(s.pair);
	T_EQ(pthread_barrier_init(&s.go, NULL, THREADS), 0);
	T_EQ_U(run_threads(&s, file_worker), SIZE);
	T_EQ(t_pos(s.in), POS);
	T_EQ(t_pos(s.out), POS);
	T_EQ(lseek(s.out, 0, SEEK_END), (off_t)SIZE);
	T_ASSERT(t_check_fd(s.out, 0, SIZE, SEED, 0));
	psplice_pair_free(s.pair);
	pthread_barrier_destroy(&s.go);
	close(s.in);
	close(s.out);
}

static void *stream_worker(void *arg)
{
	struct worker *w = arg;
	struct psplice_result r;
	size_t piece = 1 + (size_t)(w->id * 7919) % 100000;
	ssize_t n;

	for (long i = 0; i < 10000000; i++) {
		n = psplice_pair_move(w->s->pair, NULL, NULL, piece, 0, &r);
		T_EQ(r.parked_len, 0);
		if (n == 0)
			break;
		if (n < 0)
			T_FAILED("thread %d: %s on side %s", w->id, strerror(r.error),
				 psplice_side_name(r.side));
		w->s->moved[w->id] += (uint64_t)n;
	}
	return NULL;
}

static void stream_pair(void)
{
	struct shared s = { 0 };
	int u[2], d[2];
	pid_t feed, drain;

	t_unix_pair(u);
	t_unix_pair(d);
	feed = t_feed(u[1], STREAM, SEED);
	close(u[1]);
	drain = t_drain_check(d[1], STREAM, SEED);
	close(d[1]);
	s.pair = psplice_pair_new(u[0], d[0], 0);
	T_ASSERT(s.pair);
	T_EQ_U(run_threads(&s, stream_worker), STREAM);
	T_EQ(psplice_pair_pending(s.pair), 0);
	psplice_pair_free(s.pair);
	T_EQ(psplice_last()->parked_len, 0);
	/* The drainer's copy of d[0], from the fork, would keep it open. */
	T_OK(shutdown(d[0], SHUT_WR));
	close(d[0]);
	close(u[0]);
	T_ASSERT(t_wait(feed));
	T_ASSERT(t_wait(drain));
}

int main(int argc, char **argv)
{
	int before;

	t_dir(argc, argv);
	alarm(300);
	before = t_count_fds();
	file_pair();
	stream_pair();
	T_EQ(t_count_fds(), before);
	return T_PASS;
}
