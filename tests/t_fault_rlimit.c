/* RLIMIT_NOFILE so low that the internal pipe cannot be made: the limit
 * itself, set to the fds already open plus one, so pipe2(2) fails with
 * EMFILE as it would in a server at its limit. Every entry point that
 * needs a pipe (a one-shot step and copy, a prepared pair, a tee) still
 * moves every byte, in order, through user memory, or, with
 * PSPLICE_F_NOFALLBACK, fails with EMFILE before a byte moves. Entry points
 * that need no pipe (sendfile, copy_file_range, splice with a pipe side)
 * take their fast path as before. No fd is left behind: the count of
 * /proc/self/fd is the same before and after. Each case runs in a fresh
 * child, whose thread has no internal pipe yet. */
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "t.h"

#define SEED 21
#define N 300000u

static int src; /* N bytes of stream SEED */

/* The fds open now, plus `spare` free slots, is all this process may have:
 * the limit is set at the number of the free slot past those. */
static void limit_to(int spare)
{
	struct rlimit rl;
	int fd = 0;

	for (int free_slots = 0;; fd++)
		if (fcntl(fd, F_GETFD) < 0 && free_slots++ == spare)
			break;
	T_OK(getrlimit(RLIMIT_NOFILE, &rl));
	rl.rlim_cur = (rlim_t)fd;
	T_OK(setrlimit(RLIMIT_NOFILE, &rl));
}

static void unlimit(void)
{
	struct rlimit rl;

	T_OK(getrlimit(RLIMIT_NOFILE, &rl));
	rl.rlim_cur = rl.rlim_max < 4096 ? rl.rlim_max : 4096;
	T_OK(setrlimit(RLIMIT_NOFILE, &rl));
}

static void recv_check(int fd, uint64_t n, uint64_t soff)
{
	uint8_t *buf = malloc(n ? n : 1);

	T_ASSERT(buf);
	T_EQ(recv(fd, buf, n, MSG_DONTWAIT | MSG_WAITALL), (ssize_t)n);
	T_ASSERT(t_check_buf(buf, n, SEED, soff));
	T_EQ(recv(fd, buf, 1, MSG_DONTWAIT), -1);
	free(buf);
}

static void big_bufs(int fd)
{
	int big = 1 << 20;

	T_OK(setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof(big)));
	T_OK(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big)));
}

/* A stream source holding N bytes, and a sink with room for them. */
static void streams(int u[2], int d[2])
{
	t_unix_pair(u);
	t_unix_pair(d);
	big_bufs(u[1]);
	big_bufs(d[0]);
	t_fill_fd(u[1], N, SEED);
	close(u[1]);
}

/* Socket to socket and socket to file need a pipe: user memory it is. */
static void one_shot(void *arg)
{
	struct psplice_result r;
	int u[2], d[2], out, p[2], before;
	ssize_t n;

	(void)arg;
	streams(u, d);
	out = open(t_path("oneshot"), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	T_OK(out);
	before = t_count_fds();
	limit_to(1);
	T_ERRNO(pipe(p), EMFILE);

	/* Forbidden to copy through memory: EMFILE, nothing taken. */
	T_EQ(psplice_copy(u[0], NULL, d[0], NULL, N, PSPLICE_F_NOFALLBACK, &r), -1);
	T_RESULT(r, EMFILE, PSPLICE_SIDE_NONE, 0, 0);
	T_ERRNO(psplice(u[0], NULL, out, NULL, N, PSPLICE_F_NOFALLBACK), EMFILE);
	T_EQ_U(psplice_last()->in_bytes, 0);

	/* A step, a copy of a length, a copy to end of input. */
	n = psplice_ex(u[0], NULL, d[0], NULL, 1000, 0, &r);
	T_EQ(n, 1000);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, 1000, 1000);
	T_EQ(r.method, PSPLICE_METHOD_READWRITE);
	T_EQ(psplice_copy(u[0], NULL, d[0], NULL, N / 2 - 1000, 0, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, N / 2 - 1000, N / 2 - 1000);
	T_EQ(r.method, PSPLICE_METHOD_READWRITE);
	T_EQ(psplice_copy(u[0], NULL, out, NULL, PSPLICE_TO_EOF, 0, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, N - N / 2, N - N / 2);
	T_EQ(r.method, PSPLICE_METHOD_READWRITE);
	T_EQ(r.parked_len, 0);

	recv_check(d[1], N / 2, 0);
	T_ASSERT(t_check_fd(out, 0, N - N / 2, SEED, N / 2));
	T_EQ(t_count_fds(), before);
	unlimit();
	T_EQ(t_count_fds(), before);
	close(out);
	t_close_pair(d);
	close(u[0]);
}

/* Paths that need no pipe of ours are not affected. */
static void no_pipe_needed(void *arg)
{
	struct psplice_result r;
	int d[2], p[2], out, before;

	(void)arg;
	t_unix_pair(d);
	big_bufs(d[0]);
	t_pipe(p);
	T_OK(fcntl(p[1], F_SETPIPE_SZ, 1 << 20));
	out = open(t_path("nopipe"), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	T_OK(out);
	before = t_count_fds();
	limit_to(0);
	T_EQ(psplice_copy(src, &(int64_t){ 0 }, out, NULL, N, 0, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, N, N);
	T_EQ(r.method, PSPLICE_METHOD_COPY_FILE_RANGE);
	T_EQ(psplice_copy(src, &(int64_t){ 0 }, d[0], NULL, N, 0, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, N, N);
	T_EQ(r.method, PSPLICE_METHOD_SENDFILE);
	T_EQ(psplice_copy(src, &(int64_t){ 0 }, p[1], NULL, N, 0, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, N, N);
	T_EQ(r.method, PSPLICE_METHOD_SPLICE);
	unlimit();
	T_EQ(t_count_fds(), before);
	T_ASSERT(t_check_fd(out, 0, N, SEED, 0));
	recv_check(d[1], N, 0);
	T_ASSERT(t_check_fd(p[0], -1, N, SEED, 0));
	close(out);
	t_close_pair(d);
	t_close_pair(p);
}

/* A prepared pair made before the limit bit, and one made after: the
 * moves go through memory, and what the output cannot take is pending in
 * memory, never lost. */
static void pairs(void *arg)
{
	struct psplice_result r;
	struct psplice_pair *early, *late;
	int u[2], d[2], small[2], before;
	uint64_t got = 0;
	uint8_t *buf = malloc(N);
	ssize_t n;

	(void)arg;
	T_ASSERT(buf);
	streams(u, d);
	t_unix_pair(small);
	early = psplice_pair_new(u[0], d[0], 0);
	T_ASSERT(early);
	before = t_count_fds();
	limit_to(0);
	late = psplice_pair_new(u[0], small[0], 0);
	T_ASSERT(late);
	T_EQ(psplice_pair_copy(early, NULL, NULL, N / 3, 0, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, N / 3, N / 3);
	T_EQ(r.method, PSPLICE_METHOD_READWRITE);

	/* Into a sink that fills: pending bytes wait in memory. */
	t_set_nonblock(small[0], true);
	for (int i = 0; i < 100000; i++) {
		n = psplice_pair_move(late, NULL, NULL, 65536, PSPLICE_F_NONBLOCK, &r);
		T_EQ(r.parked_len, 0);
		if (n == 0 && !psplice_pair_pending(late))
			break;
		if (n <= 0) {
			T_EQ(errno, EAGAIN);
			T_EQ(r.side, PSPLICE_SIDE_OUT);
			n = recv(small[1], buf + got, N - got, MSG_DONTWAIT);
			T_ASSERT(n > 0);
			got += (uint64_t)n;
		}
	}
	while ((n = recv(small[1], buf + got, N - got, MSG_DONTWAIT)) > 0)
		got += (uint64_t)n;
	T_EQ_U(got, N - N / 3);
	T_ASSERT(t_check_buf(buf, got, SEED, N / 3));
	T_EQ(psplice_pair_pending(late), 0);
	psplice_pair_free(late);
	psplice_pair_free(early);
	unlimit();
	T_EQ(t_count_fds(), before);
	recv_check(d[1], N / 3, 0);
	t_close_pair(d);
	t_close_pair(small);
	close(u[0]);
	free(buf);
}

/* A tee whose input is a socket needs a pipe to tee from. */
static void fan_out(void *arg)
{
	struct psplice_result r[2];
	int u[2], a[2], b[2], outs[2], before, rc;

	(void)arg;
	t_unix_pair(u);
	big_bufs(u[1]);
	t_unix_pair(a);
	t_unix_pair(b);
	big_bufs(a[0]);
	big_bufs(b[0]);
	t_fill_fd(u[1], N / 2, SEED);
	close(u[1]);
	outs[0] = a[0];
	outs[1] = b[0];
	before = t_count_fds();
	limit_to(0);
	rc = psplice_tee(u[0], outs, 2, PSPLICE_TO_EOF, 0, r);
	if (rc < 0) {
		/* Refused before a byte moved, and it says why. */
		T_EQ(errno, EMFILE);
		T_EQ_U(r[0].in_bytes + r[1].in_bytes, 0);
		T_ASSERT(psplice_tee(u[0], outs, 2, PSPLICE_TO_EOF,
				     PSPLICE_F_NOFALLBACK, r) < 0);
		unlimit();
		T_EQ(psplice_tee(u[0], outs, 2, PSPLICE_TO_EOF, 0, r), 0);
	}
	for (int i = 0; i < 2; i++)
		T_RESULT(r[i], 0, PSPLICE_SIDE_NONE, N / 2, N / 2);
	unlimit();
	recv_check(a[1], N / 2, 0);
	recv_check(b[1], N / 2, 0);
	t_close_pair(a);
	t_close_pair(b);
	close(u[0]);
	/* A pipe made once the limit was lifted is this thread's to keep. */
	T_ASSERT(t_count_fds() <= before - 5 + 2);
}

int main(int argc, char **argv)
{
	t_dir(argc, argv);
	src = t_make_file(t_path("src"), N, SEED);
	T_EQ(t_child(one_shot, NULL), T_PASS);
	T_EQ(t_child(no_pipe_needed, NULL), T_PASS);
	T_EQ(t_child(pairs, NULL), T_PASS);
	T_EQ(t_child(fan_out, NULL), T_PASS);
	close(src);
	return T_PASS;
}
