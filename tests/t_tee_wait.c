/* Without PSPLICE_F_NONBLOCK a tee move delivers every byte to every sink
 * still in before it returns, also to an O_NONBLOCK sink whose share goes
 * through memory (no pipe may be kept: PSPLICE_MAX_PIPES=0): the move
 * waits for it rather than leave bytes pending. From a file into an
 * O_NONBLOCK pipe read by a child and a file. Found by the differential
 * fuzzer's model of fan-out (tests/fuzz/fz_tee.c). */
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
	printf("PASS: a blocking tee move waits for an O_NONBLOCK sink fed from memory\n");
	return T_PASS;
}
