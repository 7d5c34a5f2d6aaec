/* With PSPLICE_F_NONBLOCK a tee move does not wait for a sink that is a
 * blocking socket with no room: splice(2) into a socket waits for room
 * whatever SPLICE_F_NONBLOCK says (the kernel asks the fd's O_NONBLOCK),
 * so the sink is polled before any byte goes to it, as a pair's blocking
 * output is. A blocking Unix socket, full, whose reader does not read,
 * first or last of two sinks (the last takes the pages by splice, the
 * first a tee of them): the moves stop with EAGAIN, side out, and once the
 * reader reads, a blocking copy delivers every byte, in order. */
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include "t.h"

#define SEED 31
#define SIZE (8u << 20)
#define MiB (1u << 20)

/* Fill the socket until it takes no more: how many bytes. */
static size_t fill(int fd)
{
	static const char zero[4096];
	size_t n = 0;
	ssize_t w;

	while ((w = send(fd, zero, sizeof(zero), MSG_DONTWAIT)) > 0)
		n += (size_t)w;
	T_EQ(errno, EAGAIN);
	return n;
}

/* A child reads the filler, then the stream, and checks it. */
static pid_t reader(int fd, size_t filler)
{
	pid_t pid = fork();
	char b[4096];
	ssize_t r;

	T_OK(pid);
	if (pid)
		return pid;
	alarm(60);
	for (; filler; filler -= (size_t)r)
		if ((r = read(fd, b, filler < sizeof(b) ? filler : sizeof(b))) <= 0)
			_exit(2);
	_exit(t_check_fd(fd, -1, SIZE, SEED, 0) ? 0 : 1);
}

static void stalled_socket(int in, size_t at)
{
	struct psplice_result res[2];
	struct psplice_tee *t;
	int sv[2], out[2], small = 4096, i;
	size_t filler;
	ssize_t n = 0;
	pid_t pid;

	T_OK(lseek(in, 0, SEEK_SET));
	T_OK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
	T_OK(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)));
	filler = fill(sv[0]);
	out[at] = sv[0];
	out[1 - at] = open("/dev/null", O_WRONLY | O_CLOEXEC);
	T_OK(out[1 - at]);
	t = psplice_tee_new(in, out, 2, MiB, 0);
	T_ASSERT(t);
	/* SIGALRM ends the test if a move waits. */
	alarm(20);
	for (i = 0; i < 64 && (n = psplice_tee_move(t, MiB, PSPLICE_F_NONBLOCK, res)) > 0; i++)
		;
	alarm(0);
	T_EQ(n, -1);
	T_EQ(errno, EAGAIN);
	T_EQ(psplice_last()->side, PSPLICE_SIDE_OUT);
	T_EQ(res[at].error, EAGAIN);
	T_ASSERT(psplice_tee_pending(t, at) > 0);
	pid = reader(sv[1], filler);
	close(sv[1]);
	T_OK(psplice_tee_copy(t, PSPLICE_TO_EOF, 0, NULL));
	T_EQ(psplice_tee_pending(t, at), 0);
	psplice_tee_free(t);
	close(sv[0]);
	T_ASSERT(t_wait(pid));
	close(out[1 - at]);
}

int main(int argc, char **argv)
{
	int in;

	t_dir(argc, argv);
	signal(SIGPIPE, SIG_IGN);
	T_OK(t_make_file(t_path("in"), SIZE, SEED));
	in = open(t_path("in"), O_RDONLY | O_CLOEXEC);
	T_OK(in);
	stalled_socket(in, 1);
	stalled_socket(in, 0);
	close(in);
	printf("PASS: a NONBLOCK tee move does not wait for a blocking socket sink\n");
	return T_PASS;
}
