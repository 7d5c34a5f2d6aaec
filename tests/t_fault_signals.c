/* A signal storm: SIGALRM from an interval timer every 100 us, with a
 * handler installed with SA_RESTART and without it, during long transfers
 * through every mechanism (splice through the internal pipe, splice with a
 * pipe side, sendfile, copy_file_range, read/write), blocking and
 * non-blocking, as one psplice_copy, as a loop of psplice_ex steps and as
 * a loop of PSPLICE_F_NONBLOCK steps driven by poll(2). The peers are
 * other processes (a timer is not inherited) that feed or drain the
 * stream, the drainer slowly so that the transfer waits on it.
 *
 * Exact accounting, for every step: a seekable input takes back what was
 * not delivered (in_bytes == out_bytes); a stream's undelivered bytes are
 * parked (in_bytes == out_bytes + parked_len) and the caller delivers them
 * before the next step. In the end the drainer has read exactly the stream,
 * in order, each byte once; a file output holds exactly it; a file input's
 * position is at its end. No fd is left behind. */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "t.h"

#define SEED 31
#define N ((uint64_t)4 << 20)

enum mech { M_SPLICE_PIPE, M_SPLICE, M_SENDFILE, M_CFR, M_READWRITE, M_COUNT };
enum drive { D_COPY, D_STEPS, D_NONBLOCK, D_COUNT };

static const char *const mech_name[] = { "splice_pipe", "splice", "sendfile",
					 "copy_file_range", "readwrite" };
static const char *const drive_name[] = { "copy", "steps", "nonblock" };
static const int mech_method[] = { PSPLICE_METHOD_SPLICE_PIPE, PSPLICE_METHOD_SPLICE,
				   PSPLICE_METHOD_SENDFILE, PSPLICE_METHOD_COPY_FILE_RANGE,
				   PSPLICE_METHOD_READWRITE };

static volatile sig_atomic_t hits;
static int src; /* N bytes of stream SEED */

struct ends {
	int in, out;
	pid_t feeder, drainer;
	bool file_out;
};

static void on_alarm(int sig)
{
	(void)sig;
	hits++;
}

static void storm(bool on, bool restart)
{
	struct sigaction sa = { .sa_handler = on_alarm,
				.sa_flags = restart ? SA_RESTART : 0 };
	struct itimerval it = { { 0, on ? 100 : 0 }, { 0, on ? 100 : 0 } };

	if (on)
		T_OK(sigaction(SIGALRM, &sa, NULL));
	T_OK(setitimer(ITIMER_REAL, &it, NULL));
}

/* A reader that takes the stream in small pieces with pauses, so that the
 * writer fills the socket and waits on it, and checks every byte. */
static pid_t slow_drain(int fd, int other)
{
	static uint8_t buf[8192];
	uint64_t got = 0;
	pid_t pid = t_fork_closing(other, 100);
	ssize_t n;

	if (pid)
		return pid;
	for (unsigned int i = 0;; i++) {
		n = read(fd, buf, 1 + (i * 2654435761u) % sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (!t_check_buf(buf, (size_t)n, SEED, got)) {
			fprintf(stderr, "drain: wrong bytes at %" PRIu64 "\n", got);
			_exit(1);
		}
		got += (uint64_t)n;
		if (i % 32 == 0)
			usleep(200);
	}
	if (n < 0 || got != N) {
		fprintf(stderr, "drain: %" PRIu64 " bytes (%s), want %" PRIu64 "\n", got,
			n < 0 ? strerror(errno) : "EOF", N);
		_exit(1);
	}
	_exit(0);
}

static void big_sndbuf(int fd)
{
	int big = 1 << 20;

	T_OK(setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof(big)));
}

static void open_ends(enum mech m, struct ends *e)
{
	int a[2], b[2];

	*e = (struct ends){ .feeder = -1, .drainer = -1 };
	if (m == M_SPLICE_PIPE || m == M_READWRITE || m == M_SPLICE) {
		if (m == M_SPLICE)
			t_pipe(a);
		else
			t_unix_pair(a);
		if (m != M_SPLICE)
			big_sndbuf(a[1]);
		e->feeder = t_feed(a[1], N, SEED);
		close(a[1]);
		e->in = a[0];
	} else {
		e->in = src;
		T_OK(lseek(src, 0, SEEK_SET));
	}
	if (m == M_CFR) {
		e->out = open(t_path("out"), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		T_OK(e->out);
		e->file_out = true;
	} else {
		t_unix_pair(b);
		e->drainer = slow_drain(b[1], b[0]);
		close(b[1]);
		e->out = b[0];
	}
}

static void close_ends(struct ends *e)
{
	if (e->file_out) {
		T_ASSERT(t_check_fd(e->out, 0, N, SEED, 0));
		T_EQ(lseek(e->out, 0, SEEK_END), (off_t)N);
	}
	if (e->in == src)
		T_EQ(t_pos(src), (int64_t)N);
	close(e->out);
	if (e->drainer > 0)
		T_ASSERT(t_wait(e->drainer));
	if (e->feeder > 0) {
		T_ASSERT(t_wait(e->feeder));
		close(e->in);
	}
}

/* The caller's share of the contract: deliver the parked bytes itself. */
static void put_all(int fd, const uint8_t *buf, size_t n)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	ssize_t w;

	while (n) {
		w = write(fd, buf, n);
		if (w < 0 && errno == EAGAIN) {
			(void)poll(&p, 1, 1000);
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		T_ASSERT(w > 0);
		buf += w;
		n -= (size_t)w;
	}
}

static void wait_side(const struct ends *e, int side)
{
	struct pollfd p = { .fd = side == PSPLICE_SIDE_IN ? e->in : e->out,
			    .events = side == PSPLICE_SIDE_IN ? POLLIN : POLLOUT };

	T_ASSERT(side == PSPLICE_SIDE_IN || side == PSPLICE_SIDE_OUT);
	(void)poll(&p, 1, 1000); /* EINTR is fine: the step asks again */
}

static uint64_t steps(const struct ends *e, unsigned int flags, bool nonblock,
		      uint64_t *eintr)
{
	struct psplice_result r;
	uint64_t done = 0;
	ssize_t n;

	for (long i = 0; done < N && i < 10000000; i++) {
		n = psplice_ex(e->in, NULL, e->out, NULL, (size_t)(N - done), flags, &r);
		if (e->in == src)
			T_EQ_U(r.in_bytes, r.out_bytes);
		else
			T_EQ_U(r.in_bytes, r.out_bytes + r.parked_len);
		if (n > 0)
			T_EQ_U((uint64_t)n, r.out_bytes);
		done += r.out_bytes;
		if (r.parked_len) {
			put_all(e->out, r.parked, r.parked_len);
			done += r.parked_len;
		}
		if (n == 0 && !r.error)
			break; /* early end of input: done says it */
		if (r.error == EINTR)
			(*eintr)++;
		else if (r.error == EAGAIN && nonblock)
			wait_side(e, r.side);
		else if (r.error)
			T_FAILED("%s: %s on side %s", psplice_method_name(r.method),
				 strerror(r.error), psplice_side_name(r.side));
	}
	return done;
}

static void one_case(enum mech m, enum drive d, bool restart)
{
	unsigned int flags = m == M_READWRITE ? PSPLICE_F_ONLY(PSPLICE_METHOD_READWRITE) : 0;
	struct psplice_result r;
	uint64_t eintr = 0, done;
	struct ends e;
	int before = t_count_fds();
	sig_atomic_t h0 = hits;

	open_ends(m, &e);
	if (d == D_NONBLOCK) {
		flags |= PSPLICE_F_NONBLOCK;
		t_set_nonblock(e.out, true);
		if (e.in != src)
			t_set_nonblock(e.in, true);
	}
	storm(true, restart);
	if (d == D_COPY) {
		T_EQ(psplice_copy(e.in, NULL, e.out, NULL, N, flags, &r), 0);
		done = r.out_bytes;
		T_RESULT(r, 0, PSPLICE_SIDE_NONE, N, N);
		T_EQ(r.method, mech_method[m]);
	} else {
		done = steps(&e, flags, d == D_NONBLOCK, &eintr);
	}
	storm(false, restart);
	if (done != N || hits == h0)
		T_FAILED("%s %s %s: %" PRIu64 " bytes of %" PRIu64 ", %d signals, %" PRIu64
			 " EINTR", mech_name[m], drive_name[d],
			 restart ? "SA_RESTART" : "no SA_RESTART", done, N,
			 (int)(hits - h0), eintr);
	if (getenv("T_VERBOSE"))
		fprintf(stderr, "%s %s %s: %d signals, %" PRIu64 " EINTR\n", mech_name[m],
			drive_name[d], restart ? "SA_RESTART" : "plain", (int)(hits - h0), eintr);
	/* With SA_RESTART a blocking call that moved nothing restarts. */
	if (restart && d == D_STEPS)
		T_EQ_U(eintr, 0);
	close_ends(&e);
	T_EQ(t_count_fds(), before);
}

int main(int argc, char **argv)
{
	struct psplice_result r;
	int warm[2];

	t_dir(argc, argv);
	src = t_make_file(t_path("src"), N, SEED);
	/* This thread's internal pipe, made once, before the fds are counted. */
	t_unix_pair(warm);
	T_OK(psplice_copy(src, &(int64_t){ 0 }, warm[0], NULL, 1, PSPLICE_F_ONLY(
				  PSPLICE_METHOD_SPLICE_PIPE), &r));
	t_close_pair(warm);
	for (int restart = 0; restart < 2; restart++)
		for (int m = 0; m < M_COUNT; m++)
			for (int d = 0; d < D_COUNT; d++)
				one_case((enum mech)m, (enum drive)d, restart);
	close(src);
	return T_PASS;
}
