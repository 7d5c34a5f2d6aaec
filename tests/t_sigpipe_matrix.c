/* SIGPIPE never reaches the caller nor stays pending, by any route: each
 * disposition (default, ignored, a handler, each of them blocked, and one
 * already pending) against each path into a pipe or a socket, through each
 * entry (psplice_ex, psplice_copy, a prepared pair, a pair prepared under
 * another disposition, a pair with PSPLICE_F_SIGPIPE_IGNORED), with the
 * reader leaving after a random number of bytes, at once included. The
 * reader checks the bytes it took. Each case runs in a child of its own, so
 * a SIGPIPE that got through kills only that case, and t_child says so. */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "t.h"

#define SRC_SIZE (16u << 20)

enum disp { D_DEFAULT, D_IGNORED, D_HANDLER, D_BLOCKED, D_IGN_BLOCKED,
	    D_HANDLER_BLOCKED, D_PENDING, D_COUNT };
enum shape { S_EX, S_COPY, S_PAIR, S_PAIR_SWITCHED, S_PAIR_FLAG, S_COUNT };
enum out { O_FILE_PIPE, O_PIPE_PIPE, O_UNIX_PIPE, O_FILE_UNIX, O_FILE_TCP,
	   O_UNIX_UNIX, O_TCP_TCP, O_FILE_UNIX_MORE, O_FILE_PIPE_RW, O_FILE_UNIX_RW,
	   O_COUNT };

static const char *const disp_name[] = { "default", "ignored", "handler", "blocked",
					 "ignored+blocked", "handler+blocked", "pending" };
static const char *const shape_name[] = { "psplice_ex", "psplice_copy", "pair",
					  "pair prepared while ignored", "pair flagged" };
static const char *const out_name[] = {
	"file->pipe", "pipe->pipe", "unix->pipe", "file->unix", "file->tcp",
	"unix->unix", "tcp->tcp", "file->unix MORE", "file->pipe readwrite",
	"file->unix readwrite"
};

struct tcase {
	int disp, shape, out;
	uint64_t keep;      /* the reader takes this many bytes, then leaves */
	bool nonblock;
	int src;            /* the source file */
};

static volatile sig_atomic_t handled;

static void on_sigpipe(int sig)
{
	(void)sig;
	handled++;
}

static void set_disp(int d)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	signal(SIGPIPE, d == D_IGNORED || d == D_IGN_BLOCKED ? SIG_IGN :
			d == D_HANDLER || d == D_HANDLER_BLOCKED ? on_sigpipe : SIG_DFL);
	if (d == D_BLOCKED || d == D_IGN_BLOCKED || d == D_HANDLER_BLOCKED ||
	    d == D_PENDING)
		T_OK(sigprocmask(SIG_BLOCK, &set, NULL));
	if (d == D_PENDING)
		T_OK(raise(SIGPIPE));
}

static bool sigpipe_pending(void)
{
	sigset_t set;

	T_OK(sigpending(&set));
	return sigismember(&set, SIGPIPE);
}

/* In a child: close every fd but fd, so that the ends it does not use
 * close when their owners close them. */
static void only_fd(int fd)
{
	for (int i = 3; i < 1024; i++)
		if (i != fd)
			close(i);
}

/* Fork a helper that uses fd alone, with SIGPIPE as given; 0 in it. */
static pid_t helper(int fd, void (*on_pipe)(int))
{
	pid_t pid = fork();

	T_OK(pid);
	if (pid)
		return pid;
	only_fd(fd);
	signal(SIGPIPE, on_pipe);
	return 0;
}

/* A process that takes keep bytes of stream 7 from fd, checks them, and
 * leaves (closing fd). */
static pid_t reader(int fd, uint64_t keep)
{
	static unsigned char buf[65536];
	pid_t pid = helper(fd, SIG_DFL);
	uint64_t got = 0;
	ssize_t n;

	if (pid)
		return pid;
	t_set_nonblock(fd, false);
	while (got < keep) {
		n = read(fd, buf, keep - got < sizeof(buf) ? keep - got : sizeof(buf));
		if (n <= 0)
			_exit(2);
		if (!t_check_buf(buf, (size_t)n, 7, got))
			_exit(3);
		got += (uint64_t)n;
	}
	_exit(0);
}

/* A process that writes stream 7 into fd until the reader is gone. */
static pid_t feeder(int fd)
{
	static unsigned char buf[65536];
	pid_t pid = helper(fd, SIG_IGN);
	uint64_t off = 0;
	ssize_t n;

	if (pid)
		return pid;
	for (;;) {
		t_gen(7, off, buf, sizeof(buf));
		for (size_t done = 0; done < sizeof(buf); done += (size_t)n) {
			n = write(fd, buf + done, sizeof(buf) - done);
			if (n <= 0)
				_exit(0);
		}
		off += sizeof(buf);
	}
}

struct ends {
	int in, out;        /* what psplice moves between */
	int peer;           /* the reader's end of out */
	int feed;           /* the feeder's end of in, or -1 */
	unsigned int flags;
};

static void connect_ends(const struct tcase *tc, struct ends *e)
{
	void (*make_out)(int[2]) = t_unix_pair, (*make_in)(int[2]) = NULL;
	int a[2], b[2];

	e->feed = -1;
	e->flags = 0;
	switch (tc->out) {
	case O_FILE_PIPE: case O_PIPE_PIPE: case O_UNIX_PIPE: case O_FILE_PIPE_RW:
		make_out = t_pipe;
		break;
	case O_FILE_TCP: case O_TCP_TCP:
		make_out = t_tcp_pair;
		break;
	}
	/* A pipe is written at [1] and read at [0]; psplice writes into a
	 * socket pair's [0] and reads from its [0] on the input side. */
	make_out(b);
	e->out = make_out == t_pipe ? b[1] : b[0];
	e->peer = make_out == t_pipe ? b[0] : b[1];
	switch (tc->out) {
	case O_PIPE_PIPE:
		make_in = t_pipe;
		break;
	case O_UNIX_PIPE: case O_UNIX_UNIX:
		make_in = t_unix_pair;
		break;
	case O_TCP_TCP:
		make_in = t_tcp_pair;
		break;
	}
	if (make_in) {
		make_in(a);
		e->in = a[0];
		e->feed = a[1];
	} else {
		e->in = dup(tc->src);
		T_OK(e->in);
	}
	if (tc->out == O_FILE_PIPE_RW || tc->out == O_FILE_UNIX_RW)
		e->flags = PSPLICE_F_ONLY(PSPLICE_METHOD_READWRITE);
	if (tc->out == O_FILE_UNIX_MORE)
		e->flags = PSPLICE_F_MORE;
	if (tc->nonblock)
		t_set_nonblock(e->out, true);
}

static unsigned int call_flags(const struct ends *e, const struct tcase *tc)
{
	unsigned int f = e->flags & PSPLICE_F_MORE;

	return tc->nonblock ? f | PSPLICE_F_NONBLOCK : f;
}

static void wait_for(const struct ends *e, const struct psplice_result *r)
{
	struct pollfd pf = { .fd = r->side == PSPLICE_SIDE_OUT ? e->out : e->in,
			     .events = r->side == PSPLICE_SIDE_OUT ? POLLOUT : POLLIN };

	T_ASSERT(r->side != PSPLICE_SIDE_NONE);
	poll(&pf, 1, 100);
}

/* Move until the output fails; EAGAIN waits for the side it names. */
static void run_moves(const struct tcase *tc, const struct ends *e)
{
	struct psplice_pair *p = NULL;
	unsigned int plan = e->flags & ~PSPLICE_F_MORE;
	struct psplice_result r;
	int64_t off = 0;
	int64_t *offp = e->feed < 0 ? &off : NULL;
	ssize_t n;

	for (int i = 0; tc->shape == S_COPY && i < 100000; i++) {
		T_EQ(psplice_copy(e->in, offp, e->out, NULL, PSPLICE_TO_EOF,
				  e->flags | call_flags(e, tc), &r), -1);
		if (r.error != EAGAIN)
			break;
		wait_for(e, &r);
	}
	if (tc->shape == S_COPY) {
		T_EQ(r.error, EPIPE);
		T_EQ(r.side, PSPLICE_SIDE_OUT);
		return;
	}
	if (tc->shape == S_PAIR_SWITCHED) {
		signal(SIGPIPE, SIG_IGN);
		p = psplice_pair_new(e->in, e->out, plan);
		set_disp(tc->disp);
	} else if (tc->shape == S_PAIR) {
		p = psplice_pair_new(e->in, e->out, plan);
	} else if (tc->shape == S_PAIR_FLAG) {
		p = psplice_pair_new(e->in, e->out, plan | PSPLICE_F_SIGPIPE_IGNORED);
	}
	T_ASSERT(tc->shape == S_EX || p);
	for (int i = 0; i < 100000; i++) {
		size_t len = (size_t)(4096 + (unsigned)rand() % (1u << 20));

		if (p)
			n = psplice_pair_move(p, offp, NULL, len, call_flags(e, tc), &r);
		else
			n = psplice_ex(e->in, offp, e->out, NULL, len,
				       e->flags | call_flags(e, tc), &r);
		/* A step that delivered bytes and then met EAGAIN returns the
		 * count and says EAGAIN in the result. */
		if (r.error == EAGAIN) {
			wait_for(e, &r);
			continue;
		}
		if (r.error) {
			T_EQ(r.error, EPIPE);
			T_EQ(r.side, PSPLICE_SIDE_OUT);
			break;
		}
		T_ASSERT(n > 0);
	}
	T_EQ(r.error, EPIPE);
	psplice_pair_free(p);
}

static void one_case(void *arg)
{
	const struct tcase *tc = arg;
	pid_t rd, fd = -1;
	struct ends e;
	int st;

	alarm(20);
	srand((unsigned)tc->keep ^ (unsigned)tc->out << 8);
	connect_ends(tc, &e);
	if (e.feed >= 0) {
		fd = feeder(e.feed);
		close(e.feed);
	}
	rd = reader(e.peer, tc->keep);
	close(e.peer);
	if (tc->shape == S_PAIR_FLAG)
		signal(SIGPIPE, SIG_IGN);
	else if (tc->shape != S_PAIR_SWITCHED)
		set_disp(tc->disp);
	run_moves(tc, &e);
	T_OK(waitpid(rd, &st, 0));
	T_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(e.in);
	close(e.out);
	if (fd > 0) {
		kill(fd, SIGKILL);
		waitpid(fd, NULL, 0);
	}
	T_EQ(handled, 0);
	T_EQ(sigpipe_pending(), tc->disp == D_PENDING);
}

static void flagged_blocked(void *arg)
{
	const struct tcase *tc = arg;
	struct psplice_result r;
	int64_t off = 0;
	int p[2];

	set_disp(D_IGN_BLOCKED);
	t_pipe(p);
	close(p[0]);
	T_EQ(psplice_copy(tc->src, &off, p[1], NULL, PSPLICE_TO_EOF,
			  PSPLICE_F_SIGPIPE_IGNORED, &r), -1);
	T_RESULT(r, EPIPE, PSPLICE_SIDE_OUT, 0, 0);
	T_ASSERT(!sigpipe_pending());
	T_ERRNO(psplice_ex(tc->src, &off, p[1], NULL, 4096, PSPLICE_F_SIGPIPE_IGNORED, &r),
		EPIPE);
	T_ASSERT(!sigpipe_pending());
	close(p[1]);
}

int main(int argc, char **argv)
{
	static const uint64_t keeps[] = { 0, 1, 65536 + 7 };
	int fails = 0, cases = 0;
	struct tcase tc;

	t_dir(argc, argv);
	tc.src = t_make_file(t_path("src"), SRC_SIZE, 7);
	srand(15);
	for (tc.disp = 0; tc.disp < D_COUNT; tc.disp++)
	for (tc.shape = 0; tc.shape < S_COUNT; tc.shape++)
	for (tc.out = 0; tc.out < O_COUNT; tc.out++)
	for (unsigned k = 0; k < 4; k++) {
		/* A flagged pair is only for a SIGPIPE kept ignored. */
		if (tc.shape == S_PAIR_FLAG && tc.disp != D_IGNORED)
			continue;
		tc.keep = k < 3 ? keeps[k] : (uint64_t)(rand() % (3 << 20));
		tc.nonblock = (k + (unsigned)tc.out) % 2;
		cases++;
		if (t_child(one_case, &tc) != T_PASS) {
			fprintf(stderr, "case failed: SIGPIPE %s, %s, %s, reader leaves after %llu bytes%s\n",
				disp_name[tc.disp], shape_name[tc.shape], out_name[tc.out],
				(unsigned long long)tc.keep, tc.nonblock ? ", non-blocking" : "");
			fails++;
		}
	}
	/* Flagged and blocked against the promise: a copy that fails with
	 * EPIPE still takes back the SIGPIPE it raised, as a move does. */
	T_EQ(t_child(flagged_blocked, &tc), T_PASS);
	/* The promise is checked where it is made. */
	signal(SIGPIPE, SIG_DFL);
	T_ASSERT(psplice_pair_new(tc.src, 1, PSPLICE_F_SIGPIPE_IGNORED) == NULL);
	T_EQ(errno, EINVAL);
	T_EQ(psplice_last()->side, PSPLICE_SIDE_NONE);
	if (fails)
		T_FAILED("%d of %d cases failed", fails, cases);
	close(tc.src);
	return T_PASS;
}
