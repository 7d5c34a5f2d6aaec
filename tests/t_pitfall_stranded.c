/* Socket to socket goes through an internal pipe; when the
 * output fails, the bytes already taken from the input sit in that pipe.
 * gVisor, Go and HAProxy drop them. psplice hands them back: delivered
 * bytes, then parked bytes, then what the input still holds, is the whole
 * stream, in order, once.
 * Seen in google/gvisor#565 (bytes taken from a pipe lost when the
 * output fails). */
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "t.h"

#define SEED 12
#define N 50000
#define BIG 400000

struct taken {
	uint8_t *buf;
	uint64_t len;
};

/* parked is only valid until this thread's next call: keep a copy. */
static void take_parked(const struct psplice_result *r, struct taken *t)
{
	T_EQ_U(r->parked_len, r->in_bytes - r->out_bytes);
	T_ASSERT(r->parked_len == 0 || r->parked != NULL);
	t->buf = realloc(t->buf, t->len + r->parked_len + 1);
	memcpy(t->buf + t->len, r->parked, r->parked_len);
	t->len += r->parked_len;
}

/* Append everything fd still holds (its writer is closed) to t. */
static void take_rest(int fd, struct taken *t)
{
	ssize_t n;

	for (int i = 0; i < 10000; i++) {
		t->buf = realloc(t->buf, t->len + 65536);
		n = read(fd, t->buf + t->len, 65536);
		if (n <= 0)
			return;
		t->len += (uint64_t)n;
	}
	T_FAILED("fd %d never reached its end", fd);
}

static void source(int a[2], uint64_t n)
{
	int big = 1 << 20;

	t_unix_pair(a);
	T_OK(setsockopt(a[1], SOL_SOCKET, SO_SNDBUF, &big, sizeof(big)));
	t_fill_fd(a[1], n, SEED);
	close(a[1]);
}

/* The output's peer is gone: nothing delivered, all taken bytes parked. */
static void peer_closed(bool loop)
{
	struct psplice_result r;
	struct taken t = { NULL, 0 };
	int a[2], b[2];

	source(a, N);
	t_unix_pair(b);
	close(b[1]);
	if (loop) {
		T_EQ(psplice_copy(a[0], NULL, b[0], NULL, N, 0, &r), -1);
	} else {
		T_EQ(psplice_ex(a[0], NULL, b[0], NULL, N, 0, &r), -1);
		T_EQ(errno, EPIPE);
		T_EQ(psplice_last()->parked_len, r.parked_len);
	}
	T_EQ(r.error, EPIPE);
	T_EQ(r.side, PSPLICE_SIDE_OUT);
	T_EQ_U(r.out_bytes, 0);
	T_ASSERT(r.in_bytes > 0);
	take_parked(&r, &t);
	take_rest(a[0], &t);
	T_EQ_U(t.len, N);
	T_ASSERT(t_check_buf(t.buf, N, SEED, 0));
	free(t.buf);
	close(a[0]);
	close(b[0]);
}

/* The output takes part and then would block: delivered, parked and left
 * over make the stream; the caller can deliver the parked bytes later. */
static void output_full(void)
{
	struct psplice_result r;
	struct taken t = { NULL, 0 };
	int a[2], b[2], small = 4096;
	uint8_t *park;
	size_t plen;

	source(a, BIG);
	t_unix_pair(b);
	T_OK(setsockopt(b[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)));
	T_OK(fcntl(b[0], F_SETFL, O_NONBLOCK));
	T_EQ(psplice_copy(a[0], NULL, b[0], NULL, BIG, PSPLICE_F_NONBLOCK, &r), -1);
	T_EQ(r.error, EAGAIN);
	T_EQ(r.side, PSPLICE_SIDE_OUT);
	T_ASSERT(r.out_bytes > 0);
	T_ASSERT(r.in_bytes > r.out_bytes);
	plen = r.parked_len;
	park = malloc(plen);
	memcpy(park, r.parked, plen);

	/* What the output got. */
	close(b[0]);
	take_rest(b[1], &t);
	T_EQ_U(t.len, r.out_bytes);
	t.buf = realloc(t.buf, t.len + plen);
	memcpy(t.buf + t.len, park, plen);
	t.len += plen;
	take_rest(a[0], &t);
	T_EQ_U(t.len, BIG);
	T_ASSERT(t_check_buf(t.buf, BIG, SEED, 0));
	free(park);
	free(t.buf);
	close(a[0]);
	close(b[1]);
}

int main(int argc, char **argv)
{
	t_dir(argc, argv);
	alarm(55);
	/* Default SIGPIPE disposition: a raised one would kill the test. */
	peer_closed(false);
	peer_closed(true);
	output_full();
	return T_PASS;
}
