/* An errno that means "take the next path" when a call starts
 * is a hard error once the same path has moved bytes in that call: the
 * failed syscall may itself have moved some, so a fall back could duplicate
 * or skip bytes. The trigger is real: RLIMIT_FSIZE makes the first
 * copy_file_range short, and a seccomp filter answers EXDEV to the second
 * one only, recognised by its length argument.
 * Seen in rust-lang/rust#91152 and rust-lang/rust#91153 (a fall-back
 * after copy_file_range had moved bytes). */
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "t.h"

#define SIZE ((uint64_t)(1u << 20) + 9)
#define LIMIT ((uint64_t)300000)

static int in_fd;

static void limit_size(rlim_t soft)
{
	struct rlimit rl;

	T_OK(getrlimit(RLIMIT_FSIZE, &rl));
	rl.rlim_cur = soft;
	T_OK(setrlimit(RLIMIT_FSIZE, &rl));
}

static void check_prefix(const char *path, int fd, uint64_t n)
{
	struct stat st;

	T_OK(fstat(fd, &st));
	T_EQ_U(st.st_size, n);
	T_ASSERT(t_check_file(path, n, 9));
}

/* The filter answers EXDEV to a copy_file_range asked for len bytes. */
static void exdev_for(uint64_t len)
{
	if (t_seccomp_errno(SYS_copy_file_range, EXDEV, 4, len) < 0)
		T_FAILED("seccomp filter: %s", strerror(errno));
}

static void with_offsets(void *arg)
{
	const char *path = t_path("off");
	int out = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	struct psplice_result r;
	int64_t oi = 0, oo = 0;

	(void)arg;
	alarm(50);
	T_OK(out);
	signal(SIGXFSZ, SIG_IGN);
	limit_size(LIMIT);
	exdev_for(SIZE - LIMIT);

	T_EQ(psplice_copy(in_fd, &oi, out, &oo, SIZE, 0, &r), -1);
	T_EQ(errno, EXDEV);
	/* The input still reads where the call failed: the output's fault. */
	T_RESULT(r, EXDEV, PSPLICE_SIDE_OUT, LIMIT, LIMIT);
	T_EQ(r.method, PSPLICE_METHOD_COPY_FILE_RANGE);
	T_EQ(oi, (int64_t)LIMIT);
	T_EQ(oo, (int64_t)LIMIT);
	check_prefix(path, out, LIMIT);

	/* A new call from where this one stopped starts fresh: EXDEV before
	 * anything moved is a fall back, and the rest lands exactly once. */
	limit_size(RLIM_INFINITY);
	T_EQ(psplice_copy(in_fd, &oi, out, &oo, SIZE - LIMIT, 0, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, SIZE - LIMIT, SIZE - LIMIT);
	T_ASSERT(r.method != PSPLICE_METHOD_COPY_FILE_RANGE);
	T_EQ(oi, (int64_t)SIZE);
	T_EQ(oo, (int64_t)SIZE);
	check_prefix(path, out, SIZE);
	close(out);
}

/* Through the file positions: both end just past the delivered bytes. */
static void with_positions(void *arg)
{
	const char *path = t_path("pos");
	int out = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	struct psplice_result r;

	(void)arg;
	alarm(50);
	T_OK(out);
	signal(SIGXFSZ, SIG_IGN);
	limit_size(LIMIT);
	exdev_for(SIZE - LIMIT);
	T_EQ(lseek(in_fd, 0, SEEK_SET), 0);

	T_EQ(psplice_copy(in_fd, NULL, out, NULL, SIZE, 0, &r), -1);
	T_RESULT(r, EXDEV, PSPLICE_SIDE_OUT, LIMIT, LIMIT);
	T_EQ(t_pos(in_fd), (int64_t)LIMIT);
	T_EQ(t_pos(out), (int64_t)LIMIT);
	check_prefix(path, out, LIMIT);
	close(out);
}

int main(int argc, char **argv)
{
	t_dir(argc, argv);
	alarm(55);
	in_fd = t_make_file(t_path("src"), SIZE, 9);
	T_EQ(t_child(with_offsets, NULL), T_PASS);
	T_EQ(t_child(with_positions, NULL), T_PASS);
	close(in_fd);
	return T_PASS;
}
