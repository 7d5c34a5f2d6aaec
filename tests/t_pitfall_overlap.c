/* A file copied onto itself. Overlapping ranges would read
 * bytes the copy has just written (garbage) or never reach the end (a
 * hang): refused with EINVAL before a byte moves. Ranges that do not
 * overlap copy correctly, and "to end of file" onto the file's own end
 * stops at the end the file had when the call began.
 * Seen in nodejs/node#27746 (copyFileSync of a file onto itself hangs). */
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "t.h"

#define SIZE ((uint64_t)(1u << 20))
#define SEED 8

static const char *path;

static void unchanged(int fd)
{
	struct stat st;

	T_OK(fstat(fd, &st));
	T_EQ_U(st.st_size, SIZE);
	T_ASSERT(t_check_fd(fd, 0, SIZE, SEED, 0));
}

static void refuse(int in, int64_t oi, int out, int64_t oo, uint64_t len)
{
	struct psplice_result r;
	int64_t i = oi, o = oo;

	T_EQ(psplice_copy(in, &i, out, &o, len, 0, &r), -1);
	T_EQ(errno, EINVAL);
	T_RESULT(r, EINVAL, PSPLICE_SIDE_NONE, 0, 0);
	T_EQ(i, oi);
	T_EQ(o, oo);
	T_ERRNO(psplice(in, &i, out, &o, (size_t)len, 0), EINVAL);
	T_EQ(i, oi);
	T_EQ(o, oo);
	unchanged(in);
}

static void overlapping(int fd)
{
	int other = open(path, O_RDWR | O_CLOEXEC);
	struct psplice_result r;

	T_OK(other);
	refuse(fd, 0, fd, 4096, 65536);            /* output ahead of input */
	refuse(fd, 4096, fd, 0, 65536);            /* output behind input */
	refuse(fd, 0, fd, 0, 1);                   /* the same bytes */
	refuse(fd, 1000, other, 2000, PSPLICE_TO_EOF); /* two opens, one file */
	refuse(fd, SIZE - 10, other, SIZE - 15, PSPLICE_TO_EOF);

	/* Through the file positions of two fds. */
	T_EQ(lseek(fd, 100, SEEK_SET), 100);
	T_EQ(lseek(other, 200, SEEK_SET), 200);
	T_EQ(psplice_copy(fd, NULL, other, NULL, 4096, 0, &r), -1);
	T_RESULT(r, EINVAL, PSPLICE_SIDE_NONE, 0, 0);
	T_EQ(t_pos(fd), 100);
	T_EQ(t_pos(other), 200);
	unchanged(fd);
	close(other);
}

static void disjoint(int fd)
{
	struct psplice_result r;
	int64_t oi = 0, oo = 512 << 10;

	T_EQ(psplice_copy(fd, &oi, fd, &oo, 65536, 0, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, 65536, 65536);
	T_EQ(oi, 65536);
	T_EQ(oo, (512 << 10) + 65536);
	/* Ranges that touch without sharing a byte. */
	oi = 200000;
	oo = 100000;
	T_EQ(psplice(fd, &oi, fd, &oo, 100000, 0), 100000);
	T_EQ(oi, 300000);

	T_ASSERT(t_check_fd(fd, 0, 100000, SEED, 0));
	T_ASSERT(t_check_fd(fd, 100000, 100000, SEED, 200000));
	T_ASSERT(t_check_fd(fd, 200000, (512 << 10) - 200000, SEED, 200000));
	T_ASSERT(t_check_fd(fd, 512 << 10, 65536, SEED, 0));
	T_ASSERT(t_check_fd(fd, (512 << 10) + 65536, SIZE - (512 << 10) - 65536,
			    SEED, (512 << 10) + 65536));
}

/* On a small tmpfs, so that a copy chasing its own output ends in ENOSPC
 * rather than filling a disk. */
static void onto_own_end(void)
{
	const char *dir = t_mount_tmpfs("small", "8m");
	struct psplice_result r;
	char name[4200];
	struct stat st;
	int64_t oi = 0, oo = SIZE;
	int fd, other;

	T_SKIP_IF(!dir, "cannot mount a tmpfs: %s", strerror(errno));
	snprintf(name, sizeof(name), "%s/self", dir);
	fd = t_make_file(name, SIZE, SEED);
	T_EQ(psplice_copy(fd, &oi, fd, &oo, PSPLICE_TO_EOF, 0, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, SIZE, SIZE);
	T_OK(fstat(fd, &st));
	T_EQ_U(st.st_size, 2 * SIZE);
	T_ASSERT(t_check_fd(fd, SIZE, SIZE, SEED, 0));

	/* The same through the positions of two fds of the file, in user
	 * memory, where nothing in the kernel stops at the old end. */
	T_EQ(lseek(fd, 0, SEEK_SET), 0);
	other = open(name, O_WRONLY | O_CLOEXEC);
	T_OK(other);
	T_EQ(lseek(other, 0, SEEK_END), (off_t)(2 * SIZE));
	T_EQ(psplice_copy(fd, NULL, other, NULL, PSPLICE_TO_EOF,
			  PSPLICE_F_ONLY(PSPLICE_METHOD_READWRITE), &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, 2 * SIZE, 2 * SIZE);
	T_OK(fstat(fd, &st));
	T_EQ_U(st.st_size, 4 * SIZE);
	T_ASSERT(t_check_fd(fd, 3 * SIZE, SIZE, SEED, 0));
	close(other);

	/* O_APPEND lands where the input ends: reading to that end is
	 * `cat f >> f`, refused; a range that stops short of it is not. */
	other = open(name, O_WRONLY | O_APPEND | O_CLOEXEC);
	T_OK(other);
	oi = 0;
	T_EQ(psplice_copy(fd, &oi, other, NULL, PSPLICE_TO_EOF, 0, &r), -1);
	T_RESULT(r, EINVAL, PSPLICE_SIDE_NONE, 0, 0);
	T_EQ(psplice_copy(fd, &oi, other, NULL, 4 * SIZE, 0, &r), -1);
	T_RESULT(r, EINVAL, PSPLICE_SIDE_NONE, 0, 0);
	T_EQ(psplice_copy(fd, &oi, other, NULL, SIZE, 0, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, SIZE, SIZE);
	T_OK(fstat(fd, &st));
	T_EQ_U(st.st_size, 5 * SIZE);
	T_ASSERT(t_check_fd(fd, 4 * SIZE, SIZE, SEED, 0));
	close(other);
	close(fd);
}

int main(int argc, char **argv)
{
	int fd;

	t_dir(argc, argv);
	alarm(55);
	path = t_path("f");
	fd = t_make_file(path, SIZE, SEED);
	overlapping(fd);
	disjoint(fd);
	close(fd);
	onto_own_end();
	return T_PASS;
}
