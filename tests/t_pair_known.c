/* psplice_pair_new_known(): a pair from fds the caller describes, made
 * without asking the kernel anything. It refuses a description that is no
 * kind and a negative fd, before anything; it takes a closed fd's number
 * (it asked nothing), and the kernel then refuses the move. Between TCP,
 * Unix sockets and pipes, each way round, its pair moves as the pair
 * psplice_pair_new() makes for the same fds: the same method, counts,
 * pending bytes, EAGAIN's side from an empty input and a full output, and
 * EPIPE when the reader has gone; every byte arrives once. */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include "t.h"

#define STREAM (256u << 10)

enum { K_TCP, K_UNIX, K_PIPE, N_KINDS };
static void (*const make[N_KINDS])(int[2]) = { t_tcp_pair, t_unix_pair, t_pipe };
static const unsigned int desc[N_KINDS] = { PSPLICE_FD_TCP, PSPLICE_FD_UNIX, PSPLICE_FD_PIPE };

static void refusals(void)
{
	int s[2];

	t_unix_pair(s);
	errno = 0;
	T_ASSERT(!psplice_pair_new_known(s[0], 0, s[1], PSPLICE_FD_UNIX, 0));
	T_EQ(errno, EINVAL);
	T_EQ(psplice_last()->side, PSPLICE_SIDE_IN);
	T_ASSERT(!psplice_pair_new_known(s[0], PSPLICE_FD_UNIX, s[1], 4, 0));
	T_EQ(errno, EINVAL);
	T_EQ(psplice_last()->side, PSPLICE_SIDE_OUT);
	T_ASSERT(!psplice_pair_new_known(s[0], PSPLICE_FD_UNIX | 0x200, s[1], PSPLICE_FD_UNIX, 0));
	T_EQ(errno, EINVAL);
	T_ASSERT(!psplice_pair_new_known(-1, PSPLICE_FD_TCP, s[1], PSPLICE_FD_UNIX, 0));
	T_EQ(errno, EBADF);
	T_EQ(psplice_last()->side, PSPLICE_SIDE_IN);
	T_ASSERT(!psplice_pair_new_known(s[0], PSPLICE_FD_UNIX, s[1], PSPLICE_FD_UNIX,
					 PSPLICE_F_NONBLOCK));
	T_EQ(errno, EINVAL);
	T_EQ(psplice_last()->side, PSPLICE_SIDE_NONE);
	close(s[0]);
	close(s[1]);
}

/* A fresh thread, SIGPIPE at its default: the promise is refused. */
static void *promise_run(void *arg)
{
	int *s = arg;

	signal(SIGPIPE, SIG_DFL);
	errno = 0;
	T_ASSERT(!psplice_pair_new_known(s[0], PSPLICE_FD_UNIX, s[1], PSPLICE_FD_UNIX,
					 PSPLICE_F_SIGPIPE_IGNORED));
	T_EQ(errno, EINVAL);
	return NULL;
}

/* Nothing is asked: a closed fd's number makes a pair, whose move the
 * kernel refuses (EBADF, the input's). */
static void asks_nothing(void)
{
	struct psplice_pair *p;
	struct psplice_result r;
	int s[2], gone;
	pthread_t th;

	t_unix_pair(s);
	T_EQ(pthread_create(&th, NULL, promise_run, s), 0);
	T_EQ(pthread_join(th, NULL), 0);
	/* A number well above any the library opens for its pipes. */
	gone = fcntl(s[0], F_DUPFD_CLOEXEC, 900);
	T_OK(gone);
	close(gone);
	T_ASSERT(!psplice_pair_new(gone, s[1], 0));
	T_EQ(errno, EBADF);
	T_ASSERT((p = psplice_pair_new_known(gone, PSPLICE_FD_UNIX, s[1], PSPLICE_FD_UNIX, 0)));
	T_ERRNO(psplice_pair_move(p, NULL, NULL, 4096, PSPLICE_F_NONBLOCK, &r), EBADF);
	T_EQ(r.side, PSPLICE_SIDE_IN);
	psplice_pair_free(p);
	close(s[0]);
	close(s[1]);
}

/* Fds of the kinds named, all O_NONBLOCK: in[0] read by the pair, in[1]
 * fed by the test; out[0] written by the pair, out[1] read by the test. */
struct rig {
	int in[2], out[2];
	struct psplice_pair *known, *asked;
};

static void rig_make(struct rig *g, int ki, int ko)
{
	int fds[2], i;

	make[ki](g->in);
	make[ko](fds);
	/* A pipe is written at [1]: the pair writes its write end. */
	g->out[0] = ko == K_PIPE ? fds[1] : fds[0];
	g->out[1] = ko == K_PIPE ? fds[0] : fds[1];
	for (i = 0; i < 2; i++) {
		T_OK(fcntl(g->in[i], F_SETFL, fcntl(g->in[i], F_GETFL) | O_NONBLOCK));
		T_OK(fcntl(g->out[i], F_SETFL, fcntl(g->out[i], F_GETFL) | O_NONBLOCK));
	}
	g->known = psplice_pair_new_known(g->in[0], desc[ki] | PSPLICE_FD_NONBLOCK, g->out[0],
					  desc[ko] | PSPLICE_FD_NONBLOCK, 0);
	g->asked = psplice_pair_new(g->in[0], g->out[0], 0);
	T_ASSERT(g->known && g->asked);
}

static void rig_free(struct rig *g)
{
	psplice_pair_free(g->known);
	psplice_pair_free(g->asked);
	for (int i = 0; i < 2; i++) {
		close(g->in[i]);
		close(g->out[i]);
	}
}

/* Moves by each pair in turn, a pair with pending bytes until it has
 * none (they go out before any other byte of the stream); the known
 * pair's method is the asked pair's. What was delivered. */
static uint64_t turns(struct rig *g, uint64_t *fed, uint64_t *got, int *method)
{
	static uint8_t buf[1 << 16];
	struct psplice_pair *p = g->known;
	struct psplice_result r;
	static bool other;
	ssize_t n;

	if (*fed < STREAM) {
		t_gen(1, *fed, buf, sizeof(buf));
		n = write(g->in[1], buf, STREAM - *fed < sizeof(buf) ? STREAM - *fed : sizeof(buf));
		if (n > 0)
			*fed += (uint64_t)n;
	}
	if (psplice_pair_pending(g->asked) || (other && !psplice_pair_pending(g->known)))
		p = g->asked;
	other = !other;
	if (psplice_pair_move(p, NULL, NULL, 8192, PSPLICE_F_NONBLOCK, &r) < 0)
		T_EQ(r.error, EAGAIN);
	if (r.out_bytes && *method)
		T_EQ(r.method, *method);
	if (r.out_bytes)
		*method = r.method;
	n = read(g->out[1], buf, sizeof(buf));
	if (n > 0) {
		T_ASSERT(t_check_buf(buf, (size_t)n, 1, *got));
		*got += (uint64_t)n;
	}
	return r.out_bytes + (n > 0 ? (uint64_t)n : 0);
}

static void alike(int ki, int ko)
{
	uint64_t fed = 0, got = 0;
	struct psplice_result r;
	int idle = 0, method = 0;
	struct rig g;

	rig_make(&g, ki, ko);
	while (got < STREAM && idle < 100000)
		idle = turns(&g, &fed, &got, &method) ? 0 : idle + 1;
	T_ASSERT(method != PSPLICE_METHOD_NONE);
	T_EQ_U(got, STREAM);
	T_EQ(psplice_pair_pending(g.known) + psplice_pair_pending(g.asked), 0);
	/* The input empty: EAGAIN on the input, from both. */
	T_ERRNO(psplice_pair_move(g.known, NULL, NULL, 4096, PSPLICE_F_NONBLOCK, &r), EAGAIN);
	T_EQ(r.side, PSPLICE_SIDE_IN);
	/* The reader gone: EPIPE on the output, what was taken pending. A
	 * TCP peer's reset comes back after the first write. */
	close(g.out[1]);
	g.out[1] = dup(g.out[0]);
	for (int i = 0; i < 1000; i++) {
		T_OK(write(g.in[1], "x", 1));
		if (psplice_pair_copy(g.known, NULL, NULL, 1, PSPLICE_F_NONBLOCK, &r) < 0)
			break;
		usleep(1000);
	}
	T_RESULT(r, EPIPE, PSPLICE_SIDE_OUT, r.in_bytes, 0);
	T_EQ(psplice_pair_pending(g.known), r.in_bytes);
	rig_free(&g);
}

int main(int argc, char **argv)
{
	t_dir(argc, argv);
	signal(SIGPIPE, SIG_IGN);
	refusals();
	asks_nothing();
	for (int ki = 0; ki < N_KINDS; ki++)
		for (int ko = 0; ko < N_KINDS; ko++)
			alike(ki, ko);
	return T_PASS;
}
