/* SPLICE_F_MORE (and sendfile's own "more follows" when it is
 * asked for more than the file holds) corks a TCP socket like TCP_CORK:
 * a last chunk that keeps the hint waits ~200 ms for more data. psplice
 * sets the hint only when the caller asks: right after a call without it
 * returns, nothing sits unsent on a TCP_NODELAY socket (SIOCOUTQNSD).
 * The MORE cases prove the measure would see it. Payloads stay far below
 * loopback's initial windows, so only corking can hold bytes back.
 * Seen in golang/go#10948 (SPLICE_F_MORE made a proxy wait 200 ms). */
#include <fcntl.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "t.h"

#define SEED 15
#define SIZE 1000
#define HEAD 600

static int src_fd;

static int unsent(int fd)
{
	int n = -1;

	T_OK(ioctl(fd, SIOCOUTQNSD, &n));
	return n;
}

static void tcp_nodelay_pair(int s[2])
{
	int one = 1;

	t_tcp_pair(s);
	T_OK(setsockopt(s[0], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)));
}

/* The receiver has exactly n bytes of the stream from soff, now. */
static void received(int fd, uint64_t n, uint64_t soff)
{
	T_ASSERT(t_check_fd(fd, -1, n, SEED, soff));
}

/* Without the hint, whole file by every shape of call and path. */
static void no_hint(unsigned int flags, bool step, int method)
{
	struct psplice_result r;
	int64_t oi = 0;
	int s[2];

	tcp_nodelay_pair(s);
	if (step) {
		/* Asked for far more than the file holds. */
		T_EQ(psplice_ex(src_fd, &oi, s[0], NULL, 1 << 20, flags, &r), SIZE);
	} else {
		T_EQ(psplice_copy(src_fd, &oi, s[0], NULL, PSPLICE_TO_EOF, flags, &r), 0);
		T_RESULT(r, 0, PSPLICE_SIDE_NONE, SIZE, SIZE);
	}
	T_EQ(r.method, method);
	T_EQ(unsent(s[0]), 0);
	received(s[1], SIZE, 0);
	close(s[0]);
	close(s[1]);
}

/* From a socket, through the internal pipe. */
static void socket_source(void)
{
	struct psplice_result r;
	int s[2], u[2];

	tcp_nodelay_pair(s);
	t_unix_pair(u);
	t_fill_fd(u[1], SIZE, SEED);
	close(u[1]);
	T_EQ(psplice_copy(u[0], NULL, s[0], NULL, PSPLICE_TO_EOF, 0, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, SIZE, SIZE);
	T_EQ(r.method, PSPLICE_METHOD_SPLICE_PIPE);
	T_EQ(unsent(s[0]), 0);
	received(s[1], SIZE, 0);
	close(u[0]);
	close(s[0]);
	close(s[1]);
}

/* The caller's pattern: MORE on every chunk but the last. The hinted chunk
 * is held back; the last one, without the hint, pushes everything out. */
static void hint_then_last(unsigned int only)
{
	struct psplice_result r;
	int64_t oi = 0;
	int s[2];

	tcp_nodelay_pair(s);
	T_EQ(psplice_copy(src_fd, &oi, s[0], NULL, HEAD, PSPLICE_F_MORE | only, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, HEAD, HEAD);
	T_EQ(unsent(s[0]), HEAD);
	T_EQ(psplice_copy(src_fd, &oi, s[0], NULL, PSPLICE_TO_EOF, only, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, SIZE - HEAD, SIZE - HEAD);
	T_EQ(unsent(s[0]), 0);
	received(s[1], SIZE, 0);
	close(s[0]);
	close(s[1]);
}

/* The hint kept on the final chunk: the bytes wait. */
static void hint_on_last(void)
{
	struct psplice_result r;
	int64_t oi = 0;
	int s[2];

	tcp_nodelay_pair(s);
	T_EQ(psplice_copy(src_fd, &oi, s[0], NULL, PSPLICE_TO_EOF, PSPLICE_F_MORE, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, SIZE, SIZE);
	T_EQ(unsent(s[0]), SIZE);
	/* Closing sends what was held. */
	close(s[0]);
	received(s[1], SIZE, 0);
	close(s[1]);
}

int main(int argc, char **argv)
{
	t_dir(argc, argv);
	alarm(55);
	src_fd = t_make_file(t_path("src"), SIZE, SEED);
	no_hint(0, false, PSPLICE_METHOD_SENDFILE);
	no_hint(0, true, PSPLICE_METHOD_SENDFILE);
	no_hint(PSPLICE_F_ONLY(PSPLICE_METHOD_SPLICE_PIPE), false, PSPLICE_METHOD_SPLICE_PIPE);
	no_hint(PSPLICE_F_ONLY(PSPLICE_METHOD_READWRITE), false, PSPLICE_METHOD_READWRITE);
	socket_source();
	hint_then_last(0);
	hint_then_last(PSPLICE_F_ONLY(PSPLICE_METHOD_READWRITE));
	hint_on_last();
	close(src_fd);
	return T_PASS;
}
