/* PSPLICE_F_NONBLOCK into a socket left blocking (no O_NONBLOCK, which the
 * caller may not own: a socket on standard output): splice(2) and
 * sendfile(2) take no flag that reaches the socket, and wait for room for
 * all they are given. A move, a pair's move, a copy and a pair's pending
 * bytes are held to the room the socket's buffer has left: each returns
 * at once with what fitted, then EAGAIN on the output when it is full, and
 * every byte arrives once, in order. An alarm fails a call that waits. */
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "t.h"

#define SRC_SIZE (16u << 20)
#define ASK (8u << 20)

static int src;

/* A socket pair whose s[0] was filled, then its reader read all but an
 * eighth (a Unix socket polls writable only with three quarters of its
 * buffer free); the bytes it held are stream 2, whose count *held says. */
static void nearly_full(void (*make)(int[2]), int s[2], uint64_t *held)
{
	int fl;

	make(s);
	fl = fcntl(s[0], F_GETFL);
	T_OK(fcntl(s[0], F_SETFL, fl | O_NONBLOCK));
	*held = t_fill_full(s[0], 2);
	T_OK(fcntl(s[0], F_SETFL, fl));
	t_recv_check(s[1], 0, *held - *held / 8, 2);
}

/* The writer's room is only known once the reader's reads are accounted:
 * wait (bounded) until poll says the socket takes bytes. */
static void until_writable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };

	for (int i = 0; i < 1000 && poll(&p, 1, 0) == 0; i++)
		usleep(1000);
	T_EQ(poll(&p, 1, 0), 1);
}

/* One call of the shape named, from src at *off; what it moved. */
static uint64_t call(int shape, int out, int64_t *off, struct psplice_pair *p)
{
	struct psplice_result r;
	ssize_t n;

	switch (shape) {
	case 0: n = psplice_ex(src, off, out, NULL, ASK, PSPLICE_F_NONBLOCK, &r); break;
	case 1: n = psplice_pair_move(p, off, NULL, ASK, PSPLICE_F_NONBLOCK, &r); break;
	default:
		n = psplice_copy(src, off, out, NULL, ASK, PSPLICE_F_NONBLOCK, &r);
		T_EQ(n, -1);
		T_RESULT(r, EAGAIN, PSPLICE_SIDE_OUT, r.out_bytes, r.out_bytes);
		return r.out_bytes;
	}
	T_ASSERT(n > 0 && (size_t)n < ASK);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, (uint64_t)n, (uint64_t)n);
	return (uint64_t)n;
}

static void into(void (*make)(int[2]), int shape)
{
	struct psplice_pair *p = NULL;
	struct psplice_result r;
	uint64_t held, moved;
	int64_t off = 0;
	int s[2];

	nearly_full(make, s, &held);
	until_writable(s[0]);
	if (shape == 1)
		T_ASSERT((p = psplice_pair_new(src, s[0], 0)));
	alarm(10);
	moved = call(shape, s[0], &off, p);
	T_EQ(off, (int64_t)moved);
	/* Full now, or nearly: more of it says EAGAIN on the output, or
	 * moves what room the reader's pace left, never waits. */
	while (psplice_ex(src, &off, s[0], NULL, ASK, PSPLICE_F_NONBLOCK, &r) > 0)
		moved += r.out_bytes;
	T_RESULT(r, EAGAIN, PSPLICE_SIDE_OUT, 0, 0);
	alarm(0);
	T_EQ(off, (int64_t)moved);
	t_recv_check(s[1], held - held / 8, held / 8, 2);
	t_recv_check(s[1], 0, moved, 1);
	t_check_rest(s[1], moved, moved, 1);
	psplice_pair_free(p);
	close(s[0]);
	close(s[1]);
}

int main(int argc, char **argv)
{
	void (*kinds[])(int[2]) = { t_unix_pair, t_tcp_pair };

	t_dir(argc, argv);
	src = t_make_file(t_path("src"), SRC_SIZE, 1);
	for (int k = 0; k < 2; k++)
		for (int shape = 0; shape < 3; shape++)
			into(kinds[k], shape);
	return T_PASS;
}
