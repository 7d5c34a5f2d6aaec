/* With NONBLOCK, EAGAIN must say which side would block
 * (an event loop waits on the input's readability or the output's
 * writability, and waiting on the wrong one loses the edge), and a loop
 * call must return it rather than spin. A pipe is full when its slots are,
 * not its bytes: 16 small socket fragments fill a 64 KiB pipe.
 * Seen in sozu-proxy/sozu#1323 (EAGAIN from a pipe whose slots are full
 * taken for a drained socket), h2o/h2o#3075 (a hot loop on a full pipe),
 * golang/go#75304 and golang/go#59041 (busy loops). */
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "t.h"

#define SEED 13
#define FRAG 100
#define NFRAG 40

/* Socket to a full pipe: the output would block; the input keeps its bytes. */
static void pipe_full(void)
{
	struct psplice_result r;
	int s[2], p[2];
	uint8_t buf[4096];

	t_unix_pair(s);
	t_fill_fd(s[1], 4096, SEED);
	t_pipe(p);
	T_OK(fcntl(p[1], F_SETFL, O_NONBLOCK));
	T_ASSERT(t_fill_full(p[1], SEED) > 0);
	T_ERRNO(psplice_ex(s[0], NULL, p[1], NULL, 4096, PSPLICE_F_NONBLOCK, &r), EAGAIN);
	T_RESULT(r, EAGAIN, PSPLICE_SIDE_OUT, 0, 0);
	T_EQ(psplice_copy(s[0], NULL, p[1], NULL, 4096, PSPLICE_F_NONBLOCK, &r), -1);
	T_RESULT(r, EAGAIN, PSPLICE_SIDE_OUT, 0, 0);
	T_EQ(recv(s[0], buf, sizeof(buf), MSG_DONTWAIT), 4096);
	T_ASSERT(t_check_buf(buf, 4096, SEED, 0));
	close(s[0]);
	close(s[1]);
	close(p[0]);
	close(p[1]);
}

/* An empty socket into a pipe with room: the input would block. */
static void socket_empty(void)
{
	struct psplice_result r;
	int s[2], p[2];

	t_unix_pair(s);
	t_pipe(p);
	T_ERRNO(psplice_ex(s[0], NULL, p[1], NULL, 4096, PSPLICE_F_NONBLOCK, &r), EAGAIN);
	T_RESULT(r, EAGAIN, PSPLICE_SIDE_IN, 0, 0);
	T_EQ(psplice_copy(s[0], NULL, p[1], NULL, PSPLICE_TO_EOF, PSPLICE_F_NONBLOCK, &r), -1);
	T_RESULT(r, EAGAIN, PSPLICE_SIDE_IN, 0, 0);
	close(s[0]);
	close(s[1]);
	close(p[0]);
	close(p[1]);
}

/* Each write to a Unix socket is its own fragment, and each fragment takes
 * a pipe slot: the pipe fills far below its byte size, and EAGAIN must
 * still name the output. Nothing is lost either way. */
static void fragments(void)
{
	uint8_t got[NFRAG * FRAG], chunk[FRAG];
	struct psplice_result r;
	uint64_t moved;
	int s[2], p[2], i;
	ssize_t n;

	t_unix_pair(s);
	for (i = 0; i < NFRAG; i++) {
		t_gen(SEED, (uint64_t)i * FRAG, chunk, FRAG);
		T_EQ(write(s[1], chunk, FRAG), FRAG);
	}
	t_pipe(p);
	T_EQ(fcntl(p[1], F_GETPIPE_SZ), 65536);
	T_EQ(psplice_copy(s[0], NULL, p[1], NULL, NFRAG * FRAG, PSPLICE_F_NONBLOCK, &r), -1);
	T_EQ(r.error, EAGAIN);
	T_EQ(r.side, PSPLICE_SIDE_OUT);
	moved = r.out_bytes;
	T_ASSERT(moved > 0 && moved < NFRAG * FRAG);
	T_EQ_U(r.in_bytes, moved);
	T_EQ(r.parked_len, 0);
	T_EQ(read(p[0], got, sizeof(got)), (ssize_t)moved);
	n = recv(s[0], got + moved, sizeof(got) - moved, MSG_DONTWAIT);
	T_EQ(n, (ssize_t)(NFRAG * FRAG - moved));
	T_ASSERT(t_check_buf(got, sizeof(got), SEED, 0));
	close(s[0]);
	close(s[1]);
	close(p[0]);
	close(p[1]);
}

/* A loop call meets an empty input: it returns EAGAIN, having moved what
 * there was, instead of asking again and again. */
static void no_busy_loop(void)
{
	struct psplice_result r;
	int p[2], s[2], out;

	out = open(t_path("out"), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	T_OK(out);
	/* A blocking pipe, told not to block. */
	t_pipe(p);
	T_EQ(psplice_copy(p[0], NULL, out, NULL, PSPLICE_TO_EOF, PSPLICE_F_NONBLOCK, &r), -1);
	T_EQ(errno, EAGAIN);
	T_RESULT(r, EAGAIN, PSPLICE_SIDE_IN, 0, 0);
	t_fill_fd(p[1], 1000, SEED);
	T_EQ(psplice_copy(p[0], NULL, out, NULL, PSPLICE_TO_EOF, PSPLICE_F_NONBLOCK, &r), -1);
	T_RESULT(r, EAGAIN, PSPLICE_SIDE_IN, 1000, 1000);
	T_ASSERT(t_check_file(t_path("out"), 1000, SEED));

	/* A non-blocking pipe, and no flag: the fd says it. */
	T_OK(fcntl(p[0], F_SETFL, O_NONBLOCK));
	T_EQ(psplice_copy(p[0], NULL, out, NULL, PSPLICE_TO_EOF, 0, &r), -1);
	T_RESULT(r, EAGAIN, PSPLICE_SIDE_IN, 0, 0);
	close(p[0]);
	close(p[1]);

	/* A socket into a file goes through the internal pipe. */
	t_unix_pair(s);
	T_EQ(psplice_copy(s[0], NULL, out, NULL, PSPLICE_TO_EOF, PSPLICE_F_NONBLOCK, &r), -1);
	T_RESULT(r, EAGAIN, PSPLICE_SIDE_IN, 0, 0);
	T_OK(fcntl(s[0], F_SETFL, O_NONBLOCK));
	T_EQ(psplice_copy(s[0], NULL, out, NULL, PSPLICE_TO_EOF, 0, &r), -1);
	T_RESULT(r, EAGAIN, PSPLICE_SIDE_IN, 0, 0);
	close(s[0]);
	close(s[1]);
	close(out);
}

int main(int argc, char **argv)
{
	t_dir(argc, argv);
	/* A spinning call never returns: the alarm ends the test instead. */
	alarm(30);
	pipe_full();
	socket_empty();
	fragments();
	no_busy_loop();
	return T_PASS;
}
