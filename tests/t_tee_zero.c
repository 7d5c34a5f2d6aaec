/* psplice_tee_move with len 0 takes nothing and is not the end of input:
 * from a pipe, a Unix socket and a file, into one sink and into two (the
 * single sink splices straight through, two go by tee(2)), the next move
 * still takes the input's bytes and every sink gets them. Found by the
 * differential fuzzer's model of fan-out (tests/fuzz/fz_tee.c). */
#include <fcntl.h>
#include <unistd.h>

#include "t.h"

#define SEED 26
#define SIZE 5000u

enum { IN_PIPE, IN_UNIX, IN_FILE, IN_N };

static int input(int kind, int *writer)
{
	int fds[2];

	*writer = -1;
	if (kind == IN_FILE) {
		T_OK(t_make_file(t_path("in"), SIZE, SEED));
		return open(t_path("in"), O_RDONLY | O_CLOEXEC);
	}
	if (kind == IN_PIPE)
		t_pipe(fds);
	else
		t_unix_pair(fds);
	*writer = fds[1];
	return fds[0];
}

static void one(int kind, size_t n)
{
	int in, writer, p[2][2], out[2];
	struct psplice_result res[2];
	struct psplice_tee *t;
	unsigned char buf[SIZE];

	in = input(kind, &writer);
	T_OK(in);
	if (writer >= 0) {
		t_gen(SEED, 0, buf, SIZE);
		T_EQ(write(writer, buf, SIZE), (ssize_t)SIZE);
		close(writer);
	}
	for (size_t i = 0; i < n; i++) {
		t_pipe(p[i]);
		out[i] = p[i][1];
	}
	t = psplice_tee_new(in, out, n, 0, 0);
	T_ASSERT(t);
	T_EQ(psplice_tee_move(t, 0, 0, res), 0);
	T_EQ(psplice_tee_move(t, SIZE, 0, res), (ssize_t)SIZE);
	for (size_t i = 0; i < n; i++) {
		T_EQ_U(res[i].out_bytes, SIZE);
		T_ASSERT(t_check_fd(p[i][0], -1, SIZE, SEED, 0));
		close(p[i][0]);
		close(p[i][1]);
	}
	psplice_tee_free(t);
	close(in);
}

int main(int argc, char **argv)
{
	t_dir(argc, argv);
	for (int kind = 0; kind < IN_N; kind++)
		for (size_t n = 1; n <= 2; n++)
			one(kind, n);
	printf("PASS: a zero-length tee move is no end of input\n");
	return T_PASS;
}
