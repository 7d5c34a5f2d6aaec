/* Copy_file_range across filesystems says EXDEV (before 5.3,
 * and again since 5.18 unless both files are on one filesystem type that
 * implements the call). Whatever this kernel says, a copy from the scratch
 * filesystem to a tmpfs must come out right, through copy_file_range when
 * the kernel takes the pair and through the next kernel path when not.
 * Seen in libuv/libuv#3108 (EXDEV before Linux 5.3) and
 * transmission/transmission#3654 (EXDEV again after the change of Linux
 * 5.18). */
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "t.h"

#define SIZE ((uint64_t)(1u << 20) + 5)

/* What the kernel itself says to this pair, one byte, nothing kept. */
static int raw_cfr(int in, int out)
{
	loff_t oi = 0, oo = 0;
	long n = syscall(SYS_copy_file_range, in, &oi, out, &oo, (size_t)1, 0u);

	if (n < 0)
		return errno;
	T_EQ(n, 1);
	T_OK(ftruncate(out, 0));
	return 0;
}

static bool kernel_path_failure(int err)
{
	return err == EXDEV || err == EINVAL || err == EOPNOTSUPP;
}

int main(int argc, char **argv)
{
	const char *dir = t_dir(argc, argv), *shm = t_tmpfs_dir();
	struct psplice_result r;
	struct stat a, b;
	char dst[4200];
	int in, out, raw, want_pos, want_off;
	int64_t oi = 0, oo = 0;

	T_SKIP_IF(!shm, "no tmpfs directory available");
	T_OK(stat(dir, &a));
	T_OK(stat(shm, &b));
	T_SKIP_IF(a.st_dev == b.st_dev, "%s is itself on the tmpfs", dir);
	snprintf(dst, sizeof(dst), "%s/dst", shm);
	in = t_make_file(t_path("src"), SIZE, 3);
	out = open(dst, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	T_OK(out);

	raw = raw_cfr(in, out);
	if (raw)
		T_ASSERT(kernel_path_failure(raw));
	/* The kernel refused: sendfile is the next kernel path for a pair of
	 * files, but it writes only at the output's file position, so with an
	 * output offset the internal pipe comes next. The kernel took it:
	 * there is nothing to fall back from. */
	want_pos = raw ? PSPLICE_METHOD_SENDFILE : PSPLICE_METHOD_COPY_FILE_RANGE;
	want_off = raw ? PSPLICE_METHOD_SPLICE_PIPE : PSPLICE_METHOD_COPY_FILE_RANGE;

	T_EQ(psplice_copy(in, &oi, out, &oo, PSPLICE_TO_EOF, 0, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, SIZE, SIZE);
	T_EQ(r.method, want_off);
	T_EQ(oi, (int64_t)SIZE);
	T_EQ(oo, (int64_t)SIZE);
	T_ASSERT(t_check_file(dst, SIZE, 3));

	/* Falling back from EXDEV never goes through user memory. */
	T_OK(ftruncate(out, 0));
	T_EQ(psplice_copy(in, NULL, out, NULL, PSPLICE_TO_EOF, PSPLICE_F_NOFALLBACK, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, SIZE, SIZE);
	T_EQ(r.method, want_pos);
	T_EQ(t_pos(in), (int64_t)SIZE);
	T_EQ(t_pos(out), (int64_t)SIZE);
	T_ASSERT(t_check_file(dst, SIZE, 3));

	/* Asked for copy_file_range alone: it works or nothing moves. */
	T_OK(ftruncate(out, 0));
	oi = oo = 0;
	if (raw) {
		T_EQ(psplice_copy(in, &oi, out, &oo, PSPLICE_TO_EOF,
				  PSPLICE_F_ONLY(PSPLICE_METHOD_COPY_FILE_RANGE), &r), -1);
		T_RESULT(r, EOPNOTSUPP, PSPLICE_SIDE_NONE, 0, 0);
		T_EQ(oi, 0);
		T_EQ(oo, 0);
		T_OK(fstat(out, &b));
		T_EQ(b.st_size, 0);
	} else {
		T_EQ(psplice_copy(in, &oi, out, &oo, PSPLICE_TO_EOF,
				  PSPLICE_F_ONLY(PSPLICE_METHOD_COPY_FILE_RANGE), &r), 0);
		T_RESULT(r, 0, PSPLICE_SIDE_NONE, SIZE, SIZE);
		T_ASSERT(t_check_file(dst, SIZE, 3));
	}
	close(in);
	close(out);
	return T_PASS;
}
