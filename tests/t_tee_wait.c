/* Without PSPLICE_F_NONBLOCK a tee move delivers every byte to every sink
 * still in before it returns, also to an O_NONBLOCK sink whose share goes
 * through memory (no pipe may be kept: PSPLICE_MAX_PIPES=0): the move
 * waits for it rather than leave bytes pending. From a file into an
 * O_NONBLOCK pipe read by a child and a file. Found by the differential
 * fuzzer's model of fan-out (tests/fuzz/fz_tee.c). And a lone sink, a full
 * O_NONBLOCK pipe, fed from an input pipe by splice straight through: the
 * move waits for its reader rather than say EAGAIN. */
#include <fcntl.h>
#include <unistd.h>

#include "t.h"

#define SEED 27
#define SIZE (1u << 20)

/* A child reads the pipe to its end, slowly at first, and checks it. */
static pid_t drain(int p[2])
{
	pid_t pid = fork();
	char extra;

	T_OK(pid);
	if (pid)
		return pid;
	close(p[1]);
	alarm(60);
	usleep(100000);
	if (!t_check_fd(p[0], -1, SIZE, SEED, 0))
		_exit(1);
	_exit(read(p[0], &extra, 1) == 0 ? 0 : 2);
}

/* One sink, full, O_NONBLOCK; a child reads the filler, then the stream. */
static void lone_full_sink(void)
{
	static const char zero[4096];
	int in[2], p[2];
	size_t filler = 0, total;
	struct psplice_tee *t;
	char b[4096];
	ssize_t w, n;
	pid_t pid;

	t_pipe(in);
	t_pipe(p);
	T_OK(fcntl(p[1], F_SETFL, O_NONBLOCK));
	while ((w = write(p[1], zero, sizeof(zero))) > 0)
		filler += (size_t)w;
	t_fill_fd(in[1], 65536, SEED);
	pid = t_fork_closing(p[1], 60);
	if (!pid) {
		usleep(200000);
		for (; filler; filler -= (size_t)w)
			if ((w = read(p[0], b, filler < sizeof(b) ? filler : sizeof(b))) <= 0)
				_exit(2);
		_exit(t_check_fd(p[0], -1, 65536, SEED, 0) ? 0 : 1);
	}
	close(p[0]);
	t = psplice_tee_new(in[0], &p[1], 1, 0, 0);
	T_ASSERT(t);
	/* A move takes what one splice moves, as the reader makes room:
	 * never EAGAIN, and nothing left pending. */
	for (total = 0; total < 65536; total += (size_t)n) {
		n = psplice_tee_move(t, SIZE, 0, NULL);
		T_ASSERT(n > 0);
		T_EQ(psplice_tee_pending(t, 0), 0);
	}
	T_EQ_U(total, 65536);
	psplice_tee_free(t);
	T_ASSERT(t_wait(pid));
	t_close_pair(in);
	close(p[1]);
}

int main(int argc, char **argv)
{
	struct psplice_result res[2];
	struct psplice_tee *t;
	int in, out[2], p[2];
	ssize_t n;
	pid_t pid;

	t_dir(argc, argv);
	setenv("PSPLICE_MAX_PIPES", "0", 1);
	T_OK(t_make_file(t_path("in"), SIZE, SEED));
	in = open(t_path("in"), O_RDONLY | O_CLOEXEC);
	T_OK(in);
	out[1] = open(t_path("out"), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	T_OK(out[1]);
	t_pipe(p);
	T_OK(fcntl(p[1], F_SETFL, O_NONBLOCK));
	out[0] = p[1];
	pid = drain(p);
	close(p[0]);
	t = psplice_tee_new(in, out, 2, 0, 0);
	T_ASSERT(t);
	while ((n = psplice_tee_move(t, SIZE, 0, res)) > 0) {
		T_EQ(psplice_tee_pending(t, 0), 0);
		T_EQ(psplice_tee_pending(t, 1), 0);
		T_EQ_U(res[0].error, 0);
	}
	T_EQ(n, 0);
	psplice_tee_free(t);
	close(p[1]);
	T_ASSERT(t_wait(pid));
	T_ASSERT(t_check_fd(out[1], 0, SIZE, SEED, 0));
	lone_full_sink();
	printf("PASS: a blocking tee move waits for an O_NONBLOCK sink fed from memory\n");
	return T_PASS;
}
