/* Huge lengths. splice(2) refuses some, one syscall
 * moves at most 0x7ffff000 bytes, and glibc 2.41/2.42's copy_file_range
 * wrapper corrupted ranges past 2 GiB. len = SIZE_MAX must work for a step
 * (moving what there is), and a copy of a 2.5 GiB sparse file must land
 * every byte where it belongs.
 * Seen in HAProxy commit a9de333aa and KarpelesLab/reflink#3 (one call
 * moves at most 0x7ffff000 bytes), glibc bug 33245 and openzfs/zfs#17629
 * (the wrapper past 2 GiB). */
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "t.h"

#define SMALL 100000
#define BIG ((uint64_t)5 << 29) /* 2.5 GiB */
#define MAX_RW ((uint64_t)0x7ffff000)

/* Where the data is in the sparse file: the edges, both sides of 2 GiB and
 * of the one-call limit, and beyond them. */
static const uint64_t marks[] = {
	0, MAX_RW - 100, (1ull << 31) - 7, (1ull << 31) + 12345,
	(9ull << 28) + 4097, BIG - 64,
};
#define MARK 64

static void size_max_steps(int in)
{
	struct psplice_result r;
	int out = open(t_path("out"), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	int p[2], s[2];
	int64_t oi = 0, oo = 0;

	T_OK(out);
	T_EQ(psplice(in, NULL, out, NULL, SIZE_MAX, 0), SMALL);
	T_EQ(psplice(in, NULL, out, NULL, SIZE_MAX, 0), 0);
	T_ASSERT(t_check_file(t_path("out"), SMALL, 4));
	T_EQ(psplice(in, &oi, out, &oo, SIZE_MAX, 0), SMALL);
	T_EQ(oi, SMALL);
	T_EQ(oo, SMALL);

	/* Into a pipe: as much as the pipe takes; out of it: what it holds. */
	t_pipe(p);
	oi = 0;
	T_ASSERT(psplice(in, &oi, p[1], NULL, SIZE_MAX, 0) > 0);
	T_ASSERT(oi > 0 && oi <= SMALL);
	T_OK(ftruncate(out, 0));
	oo = 0;
	T_EQ(psplice(p[0], NULL, out, &oo, SIZE_MAX, 0), oi);
	T_ASSERT(t_check_fd(out, 0, (uint64_t)oi, 4, 0));
	close(p[0]);
	close(p[1]);

	/* A socket in both directions. */
	t_unix_pair(s);
	oi = 0;
	T_EQ(psplice_ex(in, &oi, s[0], NULL, SIZE_MAX, 0, &r), SMALL);
	T_OK(ftruncate(out, 0));
	oo = 0;
	T_EQ(psplice_ex(s[1], NULL, out, &oo, SIZE_MAX, 0, &r), SMALL);
	T_ASSERT(t_check_fd(out, 0, SMALL, 4, 0));
	close(s[0]);
	close(s[1]);

	/* psplice_copy's "to end of file" is the same number. */
	T_OK(ftruncate(out, 0));
	oi = oo = 0;
	T_EQ(psplice_copy(in, &oi, out, &oo, (uint64_t)SIZE_MAX, 0, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, SMALL, SMALL);
	close(out);
}

static void put_marks(int fd)
{
	uint8_t buf[MARK];

	T_OK(ftruncate(fd, (off_t)BIG));
	for (size_t i = 0; i < sizeof(marks) / sizeof(marks[0]); i++) {
		t_gen(10, marks[i], buf, MARK);
		T_EQ(pwrite(fd, buf, MARK, (off_t)marks[i]), MARK);
	}
}

/* The output is the input shifted down by one byte. */
static void check_marks(int fd)
{
	uint8_t zero[MARK] = { 0 }, got[MARK];
	struct stat st;

	T_OK(fstat(fd, &st));
	T_EQ_U(st.st_size, BIG - 1);
	for (size_t i = 1; i < sizeof(marks) / sizeof(marks[0]); i++) {
		T_ASSERT(t_check_fd(fd, (int64_t)marks[i] - 1, MARK, 10, marks[i]));
		/* Holes stay zeros on both sides of each mark. */
		T_EQ(pread(fd, got, MARK, (off_t)(marks[i] - 1 - MARK)), MARK);
		T_ASSERT(memcmp(got, zero, MARK) == 0);
	}
	T_ASSERT(t_check_fd(fd, 0, MARK - 1, 10, 1));
}

/* Copied where memory is cheap to fill and to drop. */
static void over_2g(void)
{
	const char *dir = t_tmpfs_dir();
	char src[4200], dst[4200];
	struct psplice_result r;
	int64_t oi = 1, oo = 0;
	int in, out;
	ssize_t n;

	T_SKIP_IF(!dir, "no tmpfs directory");
	snprintf(src, sizeof(src), "%s/big", dir);
	snprintf(dst, sizeof(dst), "%s/big.copy", dir);
	in = open(src, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	out = open(dst, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	T_OK(in);
	T_OK(out);
	put_marks(in);

	/* One step asked for everything moves what one syscall can. */
	n = psplice(in, &oi, out, &oo, (size_t)BIG, 0);
	T_EQ_U(n, MAX_RW);
	T_EQ_U(oi, MAX_RW + 1);
	T_EQ_U(oo, MAX_RW);
	T_EQ(psplice_copy(in, &oi, out, &oo, PSPLICE_TO_EOF, 0, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, BIG - 1 - MAX_RW, BIG - 1 - MAX_RW);
	T_EQ(r.method, PSPLICE_METHOD_COPY_FILE_RANGE);
	T_EQ_U(oi, BIG);
	T_EQ_U(oo, BIG - 1);
	check_marks(out);
	close(in);
	close(out);
	unlink(src);
	unlink(dst);
}

int main(int argc, char **argv)
{
	int in;

	t_dir(argc, argv);
	alarm(55);
	in = t_make_file(t_path("small"), SMALL, 4);
	size_max_steps(in);
	close(in);
	over_2g();
	return T_PASS;
}
