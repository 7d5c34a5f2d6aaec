/* Splice(2) into a pipe without a reader, or a socket whose
 * peer is gone, raises SIGPIPE, and splice has no MSG_NOSIGNAL. psplice
 * must fail with EPIPE on the output side and the signal must never reach
 * the caller: neither kill it (default disposition) nor run its handler.
 * Seen in lalinsky/zio#630 (a splice chain into a socket, and SIGPIPE). */
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include "t.h"

#define SIZE 100000

static volatile sig_atomic_t handled;

static void on_sigpipe(int sig)
{
	(void)sig;
	handled++;
}

static void no_pending(void)
{
	sigset_t set;

	T_OK(sigpending(&set));
	T_ASSERT(!sigismember(&set, SIGPIPE));
}

static void readerless(int in, unsigned int flags)
{
	struct psplice_result r;
	int64_t oi = 0;
	int p[2];

	t_pipe(p);
	close(p[0]);
	T_EQ(psplice_copy(in, &oi, p[1], NULL, PSPLICE_TO_EOF, flags, &r), -1);
	T_EQ(errno, EPIPE);
	T_RESULT(r, EPIPE, PSPLICE_SIDE_OUT, 0, 0);
	T_EQ(oi, 0);
	T_ERRNO(psplice(in, &oi, p[1], NULL, 4096, flags), EPIPE);
	T_EQ(psplice_last()->side, PSPLICE_SIDE_OUT);
	T_EQ(oi, 0);
	close(p[1]);
	no_pending();
}

static void peer_gone(int in)
{
	struct psplice_result r;
	int64_t oi = 0;
	int s[2];

	t_unix_pair(s);
	close(s[1]);
	T_EQ(psplice_copy(in, &oi, s[0], NULL, PSPLICE_TO_EOF, 0, &r), -1);
	T_RESULT(r, EPIPE, PSPLICE_SIDE_OUT, 0, 0);
	close(s[0]);
	no_pending();
}

static void all_outputs(int in)
{
	readerless(in, 0);
	readerless(in, PSPLICE_F_ONLY(PSPLICE_METHOD_READWRITE));
	peer_gone(in);
}

/* Default disposition: a SIGPIPE that got through kills the child, which
 * t_child reports. */
static void with_default(void *arg)
{
	alarm(50);
	signal(SIGPIPE, SIG_DFL);
	all_outputs(*(int *)arg);
}

static void with_handler(void *arg)
{
	alarm(50);
	signal(SIGPIPE, on_sigpipe);
	all_outputs(*(int *)arg);
	T_EQ(handled, 0);
}

int main(int argc, char **argv)
{
	int in;

	t_dir(argc, argv);
	alarm(55);
	in = t_make_file(t_path("src"), SIZE, 17);
	T_EQ(t_child(with_default, &in), T_PASS);
	T_EQ(t_child(with_handler, &in), T_PASS);
	close(in);
	return T_PASS;
}
