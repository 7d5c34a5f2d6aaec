/* With PSPLICE_F_NONBLOCK a tee move does not wait for a sink that is a
 * pipe, even a blocking one whose share goes through memory (no pipe may
 * be kept: PSPLICE_MAX_PIPES=0) and whose reader reads nothing: the move
 * returns, the pipe holds what fitted, the rest is pending, and the other
 * sink has every byte the move took. Before, write(2) of the whole share
 * into the full pipe waited for a reader that never came (here, alarm(20)
 * ends the test). Found by the differential fuzzer's model of fan-out
 * (tests/fuzz/fz_tee.c). */
#include <fcntl.h>
#include <unistd.h>

#include "t.h"

#define SEED 28
#define SIZE (1u << 20)

int main(int argc, char **argv)
{
	struct psplice_result res[2];
	struct psplice_tee *t;
	int in, out[2], p[2];
	ssize_t n;

	t_dir(argc, argv);
	setenv("PSPLICE_MAX_PIPES", "0", 1);
	T_OK(t_make_file(t_path("in"), SIZE, SEED));
	in = open(t_path("in"), O_RDONLY | O_CLOEXEC);
	T_OK(in);
	t_pipe(p);
	out[0] = p[1];
	out[1] = open(t_path("out"), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	T_OK(out[1]);
	t = psplice_tee_new(in, out, 2, SIZE, 0);
	T_ASSERT(t);
	alarm(20);
	n = psplice_tee_move(t, SIZE, PSPLICE_F_NONBLOCK, res);
	alarm(0);
	T_ASSERT(n > 0);
	T_EQ_U(res[1].out_bytes, (uint64_t)n);
	T_EQ_U(res[0].in_bytes, (uint64_t)n);
	T_EQ_U(psplice_tee_pending(t, 0), (uint64_t)n - res[0].out_bytes);
	T_ASSERT(psplice_tee_pending(t, 0) > 0);
	T_ASSERT(t_check_fd(p[0], -1, res[0].out_bytes, SEED, 0));
	T_ASSERT(t_check_fd(out[1], 0, (uint64_t)n, SEED, 0));
	psplice_tee_free(t);
	printf("PASS: a non-blocking tee move does not wait for a blocking pipe sink\n");
	return T_PASS;
}
