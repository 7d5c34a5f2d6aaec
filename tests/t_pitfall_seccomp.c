/* Under seccomp (containers, sandboxes) a missing syscall may
 * answer EPERM rather than ENOSYS. Either answer, before a byte moved, means
 * "take the next path": the copy still succeeds. Each case runs in a forked
 * child that installs a real filter.
 * Seen in golang/go#40893 and rust-lang/rust#51266 (copy_file_range
 * answered EPERM in a Docker container). */
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "t.h"

#define SIZE ((uint64_t)(1u << 20) + 11)

static int in_fd;

static int new_out(const char *name)
{
	int fd = open(t_path(name), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	T_OK(fd);
	return fd;
}

/* A child that reads fd to its end and checks it holds stream 5 of n bytes.
 * It closes its copy of other, the writing end, or it would never see the
 * end. */
static pid_t reader(int fd, int other, uint64_t n)
{
	pid_t pid;
	char extra;

	fflush(NULL);
	pid = fork();
	T_OK(pid);
	if (pid)
		return pid;
	close(other);
	alarm(50);
	if (!t_check_fd(fd, -1, n, 5, 0) || read(fd, &extra, 1) != 0)
		_exit(1);
	_exit(0);
}

static void deny(long nr, int err)
{
	if (t_seccomp_errno(nr, err, -1, 0) < 0)
		T_FAILED("seccomp filter: %s", strerror(errno));
}

/* copy_file_range answers EPERM: sendfile moves a file into a file at its
 * position, the internal pipe at an offset. */
static void cfr_eperm(void *arg)
{
	struct psplice_result r;
	int64_t oi = 0, oo = 0;
	loff_t a = 0, b = 0;
	int out = new_out("cfr");

	(void)arg;
	alarm(50);
	deny(SYS_copy_file_range, EPERM);
	T_ERRNO(syscall(SYS_copy_file_range, in_fd, &a, out, &b, (size_t)1, 0u), EPERM);

	T_EQ(lseek(in_fd, 0, SEEK_SET), 0);
	T_EQ(psplice_copy(in_fd, NULL, out, NULL, PSPLICE_TO_EOF, 0, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, SIZE, SIZE);
	T_EQ(r.method, PSPLICE_METHOD_SENDFILE);
	T_EQ(t_pos(in_fd), (int64_t)SIZE);
	T_ASSERT(t_check_file(t_path("cfr"), SIZE, 5));

	T_OK(ftruncate(out, 0));
	T_EQ(psplice_copy(in_fd, &oi, out, &oo, PSPLICE_TO_EOF, 0, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, SIZE, SIZE);
	T_EQ(r.method, PSPLICE_METHOD_SPLICE_PIPE);
	T_EQ(oo, (int64_t)SIZE);
	T_ASSERT(t_check_file(t_path("cfr"), SIZE, 5));
	close(out);
}

/* splice answers ENOSYS: pairs with a pipe and socket pairs go through
 * user memory; sendfile and copy_file_range do not need the syscall. */
static void splice_enosys(void *arg)
{
	struct psplice_result r;
	int p[2], s[2], d[2];
	int64_t oi = 0;
	pid_t pid, rd;

	(void)arg;
	alarm(50);
	deny(SYS_splice, ENOSYS);
	t_pipe(p);
	T_ERRNO(splice(in_fd, NULL, p[1], NULL, 1, 0), ENOSYS);

	pid = reader(p[0], p[1], SIZE);
	close(p[0]);
	T_EQ(psplice_copy(in_fd, &oi, p[1], NULL, PSPLICE_TO_EOF, 0, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, SIZE, SIZE);
	T_EQ(r.method, PSPLICE_METHOD_READWRITE);
	close(p[1]);
	T_ASSERT(t_wait(pid));

	/* Forbidden to copy through user memory: no path left, nothing moved. */
	t_pipe(p);
	oi = 0;
	T_EQ(psplice_copy(in_fd, &oi, p[1], NULL, 4096, PSPLICE_F_NOFALLBACK, &r), -1);
	T_RESULT(r, EOPNOTSUPP, PSPLICE_SIDE_NONE, 0, 0);
	T_EQ(oi, 0);
	close(p[0]);
	close(p[1]);

	/* Socket to socket: the internal pipe cannot be filled. */
	t_unix_pair(s);
	t_unix_pair(d);
	pid = t_feed(s[1], SIZE, 5);
	close(s[1]);
	rd = reader(d[1], d[0], SIZE);
	close(d[1]);
	T_EQ(psplice_copy(s[0], NULL, d[0], NULL, PSPLICE_TO_EOF, 0, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, SIZE, SIZE);
	T_EQ(r.method, PSPLICE_METHOD_READWRITE);
	T_ASSERT(t_wait(pid));
	close(d[0]);
	T_ASSERT(t_wait(rd));
	close(s[0]);

	/* sendfile does its splicing inside the kernel. */
	t_unix_pair(s);
	pid = reader(s[1], s[0], SIZE);
	close(s[1]);
	oi = 0;
	T_EQ(psplice_copy(in_fd, &oi, s[0], NULL, PSPLICE_TO_EOF, 0, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, SIZE, SIZE);
	T_EQ(r.method, PSPLICE_METHOD_SENDFILE);
	close(s[0]);
	T_ASSERT(t_wait(pid));
}

int main(int argc, char **argv)
{
	t_dir(argc, argv);
	alarm(50);
	in_fd = t_make_file(t_path("src"), SIZE, 5);
	T_EQ(t_child(cfr_eperm, NULL), T_PASS);
	T_EQ(t_child(splice_enosys, NULL), T_PASS);
	close(in_fd);
	return T_PASS;
}
