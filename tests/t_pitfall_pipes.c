/* The internal pipe cannot always be had or grown. With no fd
 * left (EMFILE) the copy goes through user memory, or, when that is
 * forbidden, fails with EMFILE before a byte moves. An unprivileged user
 * past pipe-user-pages-soft gets small pipes that F_SETPIPE_SZ cannot grow
 * (EPERM): the copy still goes through the small pipe. Each case runs in a
 * fresh child, whose thread has no internal pipe yet.
 * Seen in capnproto/capnproto#1403 (pipe-user-pages-soft at scale),
 * Aiven-Open/pghoard#368 (F_SETPIPE_SZ refused with EPERM as non-root). */
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "t.h"

#define SEED 16
#define N 100000
#define BIG ((uint64_t)(1u << 20) + 16)
#define SOFT "/proc/sys/fs/pipe-user-pages-soft"
#define NOBODY 65534

static char saved_soft[32];
static size_t saved_len;

static pid_t reader(int fd, int other, uint64_t n)
{
	char extra;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	T_OK(pid);
	if (pid)
		return pid;
	close(other);
	alarm(50);
	if (!t_check_fd(fd, -1, n, SEED, 0) || read(fd, &extra, 1) != 0)
		_exit(1);
	_exit(0);
}

static void big_sndbuf(int fd)
{
	int big = 1 << 20;

	T_OK(setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof(big)));
}

/* Sockets and a file first, then every other fd slot taken. */
static void emfile(void *arg)
{
	struct psplice_result r;
	struct rlimit rl = { 64, 64 };
	int u[2], d[2], p[2], out;
	uint8_t *buf = malloc(N);

	(void)arg;
	alarm(50);
	T_OK(setrlimit(RLIMIT_NOFILE, &rl));
	t_unix_pair(u);
	t_unix_pair(d);
	big_sndbuf(u[1]);
	big_sndbuf(d[0]);
	t_fill_fd(u[1], N, SEED);
	close(u[1]);
	out = open(t_path("emfile"), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	T_OK(out);
	T_ASSERT(t_fill_fds() > 0);
	T_ERRNO(pipe(p), EMFILE);

	T_EQ(psplice_copy(u[0], NULL, d[0], NULL, N, PSPLICE_F_NOFALLBACK, &r), -1);
	T_EQ(errno, EMFILE);
	T_RESULT(r, EMFILE, PSPLICE_SIDE_NONE, 0, 0);
	T_ERRNO(psplice(u[0], NULL, out, NULL, N, PSPLICE_F_NOFALLBACK), EMFILE);
	T_EQ_U(psplice_last()->in_bytes, 0);

	T_EQ(psplice_copy(u[0], NULL, d[0], NULL, N / 2, 0, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, N / 2, N / 2);
	T_EQ(r.method, PSPLICE_METHOD_READWRITE);
	T_EQ(psplice_copy(u[0], NULL, out, NULL, PSPLICE_TO_EOF, 0, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, N - N / 2, N - N / 2);
	T_EQ(r.method, PSPLICE_METHOD_READWRITE);

	T_EQ(recv(d[1], buf, N, MSG_DONTWAIT | MSG_WAITALL), N / 2);
	T_ASSERT(t_check_buf(buf, N / 2, SEED, 0));
	T_ASSERT(t_check_fd(out, 0, N - N / 2, SEED, N / 2));
	t_unfill_fds();
	free(buf);
}

/* As nobody, past the soft limit: pipes are small and stay small. */
static void small_pipes(void *arg)
{
	struct psplice_result r;
	int u[2], d[2], p[2], out;
	pid_t feed, rd;

	(void)arg;
	alarm(50);
	t_unix_pair(u);
	t_unix_pair(d);
	out = open(t_path("soft"), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	T_OK(out);
	T_OK(setgid(NOBODY));
	T_OK(setuid(NOBODY));
	t_pipe(p);
	T_ERRNO(fcntl(p[1], F_SETPIPE_SZ, 1 << 20), EPERM);
	T_ASSERT(fcntl(p[1], F_GETPIPE_SZ) < 65536);
	close(p[0]);
	close(p[1]);

	feed = t_feed(u[1], BIG, SEED);
	close(u[1]);
	rd = reader(d[1], d[0], BIG);
	close(d[1]);
	T_EQ(psplice_copy(u[0], NULL, d[0], NULL, PSPLICE_TO_EOF, 0, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, BIG, BIG);
	T_EQ(r.method, PSPLICE_METHOD_SPLICE_PIPE);
	close(d[0]);
	T_ASSERT(t_wait(feed));
	T_ASSERT(t_wait(rd));
	close(u[0]);

	/* Socket to file, through the same small pipe. */
	t_unix_pair(u);
	feed = t_feed(u[1], BIG, SEED);
	close(u[1]);
	T_EQ(psplice_copy(u[0], NULL, out, NULL, PSPLICE_TO_EOF, 0, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, BIG, BIG);
	T_EQ(r.method, PSPLICE_METHOD_SPLICE_PIPE);
	T_ASSERT(t_wait(feed));
	T_ASSERT(t_check_fd(out, 0, BIG, SEED, 0));
	close(u[0]);
	close(out);
}

/* Async-signal-safe: also run from the alarm's handler. */
static void restore_soft(void)
{
	int fd;

	if (!saved_len)
		return;
	fd = open(SOFT, O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (write(fd, saved_soft, saved_len) != (ssize_t)saved_len)
			saved_len = 0;
		close(fd);
	}
}

static void on_alarm(int sig)
{
	(void)sig;
	restore_soft();
	_exit(T_FAIL);
}

static void set_soft(const char *v)
{
	int fd = open(SOFT, O_RDWR | O_CLOEXEC);
	ssize_t n;

	T_OK(fd);
	n = read(fd, saved_soft, sizeof(saved_soft) - 1);
	T_ASSERT(n > 0);
	saved_len = (size_t)n;
	atexit(restore_soft);
	signal(SIGALRM, on_alarm);
	signal(SIGTERM, on_alarm);
	T_EQ(pwrite(fd, v, strlen(v), 0), (ssize_t)strlen(v));
	close(fd);
}

int main(int argc, char **argv)
{
	int rc;

	t_dir(argc, argv);

	alarm(55);
	T_EQ(t_child(emfile, NULL), T_PASS);

	T_SKIP_IF(!t_root(), "setting %s and becoming nobody need root", SOFT);
	set_soft("1");
	rc = t_child(small_pipes, NULL);
	restore_soft();
	T_EQ(rc, T_PASS);
	return T_PASS;
}
