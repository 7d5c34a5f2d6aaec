/* An output nobody reads any more: a pipe without a reader, a Unix socket
 * whose peer closed, a TCP connection whose peer closed or reset. The call
 * fails with EPIPE on the output side, the process is not killed, no SIGPIPE
 * is left pending, the caller's signal mask is as it was, and no byte is
 * lost.
 *
 * A TCP peer that closed with our data unread answers with a reset, which
 * the kernel reports as ECONNRESET to the first call that meets it, and as
 * EPIPE to every later one; sendfile(2) and splice(2) swallow it when they
 * had moved bytes before it came. So psplice reports EPIPE for an output
 * whose peer is gone, closed or reset alike; reading a reset connection is
 * still ECONNRESET, on the input side. */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "t.h"

#define FILE_SIZE 65536u
#define SMALL 1000u          /* bytes waiting in a source pipe or socket */
#define BIG (4u << 20)       /* a stream much larger than any buffer */
#define READ_FIRST 100000u   /* what the reader takes before it leaves */

static int src;              /* FILE_SIZE bytes of stream 1 */
static sigset_t mask0;       /* the caller's mask for the current round */
static volatile sig_atomic_t caught;

static void on_sigpipe(int sig)
{
	(void)sig;
	caught++;
}

/* After every call: no SIGPIPE reached us or waits for us, and the mask is
 * the caller's. */
static void check_signals(void)
{
	sigset_t now, pend;

	T_OK(sigprocmask(SIG_SETMASK, NULL, &now));
	for (int s = 1; s < NSIG; s++)
		if (sigismember(&now, s) != sigismember(&mask0, s))
			T_FAILED("signal %d: blocked %d, was %d", s,
				 sigismember(&now, s), sigismember(&mask0, s));
	T_OK(sigpending(&pend));
	T_EQ(sigismember(&pend, SIGPIPE), 0);
	T_EQ(caught, 0);
}

/* Wait (bounded) until fd reports one of events. */
static void wait_for(int fd, short events)
{
	struct pollfd p = { .fd = fd, .events = events };

	T_EQ(poll(&p, 1, 20000), 1);
	T_ASSERT(p.revents & events);
}

static void wait_queued(int fd, int n)
{
	for (int i = 0; i < 10000 && t_queued(fd) < n; i++)
		usleep(1000);
	T_EQ(t_queued(fd), n);
}

/* A pipe or socket holding SMALL bytes of stream 2. */
static void source(int fds[2], void (*make)(int[2]))
{
	make(fds);
	t_fill_fd(fds[1], SMALL, 2);
	wait_queued(fds[0], SMALL);
}

static void check_parked(const struct psplice_result *r, uint64_t soff)
{
	T_EQ_U(r->parked_len, r->in_bytes - r->out_bytes);
	T_ASSERT(r->parked_len == 0 || r->parked != NULL);
	T_ASSERT(t_check_buf(r->parked, r->parked_len, 2, soff));
}

/* fd (a pipe or socket end) still holds the stream from soff to SMALL. */
static void check_left(int fd, uint64_t soff)
{
	T_EQ(t_queued(fd), SMALL - soff);
	T_ASSERT(t_check_fd(fd, -1, SMALL - soff, 2, soff));
}

/* From the file, positional and through the position: nothing delivered,
 * offset and position where they were. */
static void from_file(int out, unsigned int flags)
{
	struct psplice_result r;
	int64_t oi = 10;

	T_EQ(lseek(src, 20, SEEK_SET), 20);
	T_ERRNO(psplice_ex(src, &oi, out, NULL, 4096, flags, &r), EPIPE);
	T_RESULT(r, EPIPE, PSPLICE_SIDE_OUT, 0, 0);
	T_EQ(r.parked_len, 0);
	check_signals();
	T_ERRNO(psplice_copy(src, NULL, out, NULL, PSPLICE_TO_EOF, flags, &r), EPIPE);
	T_RESULT(r, EPIPE, PSPLICE_SIDE_OUT, 0, 0);
	check_signals();
	T_ERRNO(psplice(src, &oi, out, NULL, 4096, flags), EPIPE);
	T_RESULT(*psplice_last(), EPIPE, PSPLICE_SIDE_OUT, 0, 0);
	check_signals();
	T_EQ(oi, 10);
	T_EQ(t_pos(src), 20);
}

/* From a pipe or socket: what was taken is parked, the rest still waits. */
static void from_stream(void (*make)(int[2]), int out, unsigned int flags)
{
	struct psplice_result r;
	int s[2];

	source(s, make);
	T_ERRNO(psplice_ex(s[0], NULL, out, NULL, SMALL, flags, &r), EPIPE);
	T_EQ(r.error, EPIPE);
	T_EQ(r.side, PSPLICE_SIDE_OUT);
	T_EQ(r.out_bytes, 0);
	T_ASSERT(r.in_bytes <= SMALL);
	check_signals();
	check_parked(&r, 0);
	check_parked(psplice_last(), 0);
	check_left(s[0], r.in_bytes);
	t_close_pair(s);

	source(s, make);
	T_ERRNO(psplice_copy(s[0], NULL, out, NULL, SMALL, flags, &r), EPIPE);
	T_RESULT(r, EPIPE, PSPLICE_SIDE_OUT, r.in_bytes, 0);
	check_signals();
	check_parked(&r, 0);
	check_left(s[0], r.in_bytes);
	t_close_pair(s);
}

static const unsigned int only_rw = PSPLICE_F_ONLY(PSPLICE_METHOD_READWRITE);

/* Every kind of source into a fresh dead output each time. */
static void all_sources(int (*dead)(void))
{
	int out;

	out = dead();
	from_file(out, 0);
	close(out);
	out = dead();
	from_file(out, only_rw);
	close(out);
	out = dead();
	from_stream(t_pipe, out, 0);
	close(out);
	out = dead();
	from_stream(t_pipe, out, only_rw);
	close(out);
	out = dead();
	from_stream(t_unix_pair, out, 0);
	close(out);
	out = dead();
	from_stream(t_tcp_pair, out, 0);
	close(out);
}

static int readerless_pipe(void)
{
	int p[2];

	t_pipe(p);
	close(p[0]);
	return p[1];
}

static int unix_closed(void)
{
	int u[2];

	t_unix_pair(u);
	close(u[1]);
	return u[0];
}

/* The peer closed and our last write met its close: the RST came back
 * while we were in CLOSE_WAIT, which the kernel reports as EPIPE. */
static int tcp_closed(void)
{
	char b = 'x';
	int t[2];

	t_tcp_pair(t);
	close(t[1]);
	wait_for(t[0], POLLIN);
	T_EQ(read(t[0], &b, 1), 0);
	T_EQ(send(t[0], &b, 1, MSG_NOSIGNAL), 1);
	wait_for(t[0], POLLERR | POLLHUP);
	return t[0];
}

/* The peer closed with our data unread: it answers with a reset at once. */
static int tcp_reset(void)
{
	char b = 'x';
	int t[2];

	t_tcp_pair(t);
	T_EQ(send(t[0], &b, 1, MSG_NOSIGNAL), 1);
	wait_queued(t[1], 1);
	close(t[1]);
	wait_for(t[0], POLLERR | POLLHUP);
	return t[0];
}

/* Reading a connection the peer reset is the input's ECONNRESET; after it
 * the connection reads as ended. */
static void reset_input(unsigned int flags)
{
	struct psplice_result r;
	int in = tcp_reset(), out;

	out = open(t_path("reset"), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	T_OK(out);
	T_ERRNO(psplice_ex(in, NULL, out, NULL, 4096, flags, &r), ECONNRESET);
	T_RESULT(r, ECONNRESET, PSPLICE_SIDE_IN, 0, 0);
	T_EQ(r.parked_len, 0);
	check_signals();
	T_EQ(psplice_copy(in, NULL, out, NULL, PSPLICE_TO_EOF, flags, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, 0, 0);
	T_EQ(t_pos(out), 0);
	close(in);
	close(out);
}

static void round_of_closed_outputs(void)
{
	all_sources(readerless_pipe);
	all_sources(unix_closed);
	all_sources(tcp_closed);
	all_sources(tcp_reset);
	reset_input(0);
	reset_input(only_rw);
}

/* A child reads the first READ_FIRST bytes, checks them and leaves with more
 * unread (waiting until there is some, so that a TCP peer resets). */
static pid_t reader(int fd)
{
	pid_t pid = fork();

	T_OK(pid);
	if (pid)
		return pid;
	if (!t_check_fd(fd, -1, READ_FIRST, 1, 0))
		_exit(1);
	for (int i = 0; i < 10000 && t_queued(fd) == 0; i++)
		usleep(1000);
	_exit(t_queued(fd) > 0 ? 0 : 2);
}

static int sink(void (*make)(int[2]), pid_t *pid)
{
	int s[2], small = 65536;

	make(s);
	/* Small buffers, so the writer is still at it when the reader goes. */
	T_OK(setsockopt(s[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)));
	T_OK(setsockopt(s[1], SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)));
	*pid = reader(s[1]);
	close(s[1]);
	return s[0];
}

/* Mid-stream from the file: in and out agree and the offset or position is
 * just past the last byte the socket took. */
static void mid_file(void (*make)(int[2]), bool positional)
{
	struct psplice_result r;
	int64_t oi = 0, *poi = positional ? &oi : NULL;
	pid_t pid;
	int out = sink(make, &pid), in = t_make_file(t_path("big"), BIG, 1);

	T_ERRNO(psplice_copy(in, poi, out, NULL, PSPLICE_TO_EOF, 0, &r), EPIPE);
	T_ASSERT(t_wait(pid));
	check_signals();
	T_EQ(r.error, EPIPE);
	T_EQ(r.side, PSPLICE_SIDE_OUT);
	T_EQ_U(r.in_bytes, r.out_bytes);
	T_ASSERT(r.out_bytes >= READ_FIRST && r.out_bytes < BIG);
	T_EQ(r.parked_len, 0);
	T_EQ_U(positional ? oi : t_pos(in), r.out_bytes);
	if (positional)
		T_EQ(t_pos(in), 0);
	close(in);
	close(out);
}

/* Mid-stream from a pipe or socket fed by a child: what was delivered,
 * what came back parked and what is still in the source add up to the
 * stream, in order. */
static void mid_stream(void (*make_out)(int[2]), void (*make_in)(int[2]))
{
	struct psplice_result r;
	pid_t rpid, fpid;
	int out = sink(make_out, &rpid), s[2];
	uint64_t in;
	char b;

	make_in(s);
	fpid = t_feed(s[1], BIG, 1);
	close(s[1]);
	T_ERRNO(psplice_copy(s[0], NULL, out, NULL, PSPLICE_TO_EOF, 0, &r), EPIPE);
	T_ASSERT(t_wait(rpid));
	check_signals();
	T_EQ(r.error, EPIPE);
	T_EQ(r.side, PSPLICE_SIDE_OUT);
	T_ASSERT(r.out_bytes >= READ_FIRST && r.in_bytes < BIG);
	T_EQ_U(r.parked_len, r.in_bytes - r.out_bytes);
	in = r.in_bytes;
	T_ASSERT(r.parked_len == 0 || t_check_buf(r.parked, r.parked_len, 1, r.out_bytes));
	T_ASSERT(t_check_fd(s[0], -1, BIG - in, 1, in));
	T_EQ(read(s[0], &b, 1), 0);
	T_ASSERT(t_wait(fpid));
	close(s[0]);
	close(out);
}

static void round_of_mid_streams(void)
{
	mid_file(t_unix_pair, true);
	mid_file(t_unix_pair, false);
	mid_file(t_tcp_pair, true);
	mid_file(t_tcp_pair, false);
	mid_stream(t_unix_pair, t_pipe);
	mid_stream(t_unix_pair, t_unix_pair);
	mid_stream(t_tcp_pair, t_pipe);
	mid_stream(t_tcp_pair, t_unix_pair);
}

static void set_round(void (*handler)(int), bool block)
{
	struct sigaction sa = { .sa_handler = handler };
	sigset_t set;

	T_OK(sigaction(SIGPIPE, &sa, NULL));
	sigemptyset(&set);
	if (block) {
		/* An unrelated signal too, to see the whole mask comes back. */
		sigaddset(&set, SIGPIPE);
		sigaddset(&set, SIGUSR2);
	}
	T_OK(sigprocmask(SIG_SETMASK, &set, NULL));
	mask0 = set;
	caught = 0;
}

/* A SIGPIPE the caller had pending before the call is the caller's: it is
 * still pending afterwards. */
static void caller_pending(void)
{
	struct timespec zero = { 0, 0 };
	sigset_t set, pend;
	int out = readerless_pipe();

	set_round(SIG_DFL, true);
	T_OK(raise(SIGPIPE));
	T_ERRNO(psplice(src, NULL, out, NULL, 4096, 0), EPIPE);
	T_OK(sigpending(&pend));
	T_EQ(sigismember(&pend, SIGPIPE), 1);
	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	T_EQ(sigtimedwait(&set, NULL, &zero), SIGPIPE);
	check_signals();
	close(out);
}

int main(int argc, char **argv)
{
	t_dir(argc, argv);
	src = t_make_file(t_path("src"), FILE_SIZE, 1);

	set_round(SIG_DFL, false);
	round_of_closed_outputs();
	round_of_mid_streams();

	set_round(on_sigpipe, false);
	round_of_closed_outputs();

	set_round(SIG_DFL, true);
	round_of_closed_outputs();
	round_of_mid_streams();

	caller_pending();
	return T_PASS;
}
