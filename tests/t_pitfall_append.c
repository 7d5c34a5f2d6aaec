/* An O_APPEND output. copy_file_range says EBADF, splice and
 * sendfile EINVAL; clearing O_APPEND to get past them would change the
 * shared file description under everyone else who holds it. psplice must
 * append correctly and leave the fd's flags exactly as they were.
 * Seen in rust-lang/rust#82417 (copy_file_range's EBADF for an O_APPEND
 * output), oven-sh/bun#41685. */
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "t.h"

#define HEAD 1000
#define SIZE ((uint64_t)(1u << 20) + 13)

static int open_append(const char *name)
{
	int fd = t_make_file(t_path(name), HEAD, 1);

	close(fd);
	fd = open(t_path(name), O_WRONLY | O_APPEND | O_CLOEXEC);
	T_OK(fd);
	return fd;
}

/* The file holds the HEAD bytes, then n bytes of stream 6 from soff. */
static void check_appended(const char *name, uint64_t n, uint64_t soff)
{
	int fd = open(t_path(name), O_RDONLY | O_CLOEXEC);
	struct stat st;

	T_OK(fd);
	T_OK(fstat(fd, &st));
	T_EQ_U(st.st_size, HEAD + n);
	T_ASSERT(t_check_fd(fd, 0, HEAD, 1, 0));
	T_ASSERT(t_check_fd(fd, HEAD, n, 6, soff));
	close(fd);
}

static void file_to_append(int in)
{
	int out = open_append("a"), other = dup(out), fl = fcntl(out, F_GETFL);
	struct psplice_result r;
	int64_t oi = 0;

	T_ASSERT(fl & O_APPEND);
	/* The position says 0; O_APPEND writes at the end whatever it says. */
	T_EQ(lseek(out, 0, SEEK_SET), 0);
	T_EQ(psplice_copy(in, &oi, out, NULL, PSPLICE_TO_EOF, 0, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, SIZE, SIZE);
	/* Every kernel path refuses O_APPEND outputs. */
	T_EQ(r.method, PSPLICE_METHOD_READWRITE);
	T_EQ(oi, (int64_t)SIZE);
	T_EQ(fcntl(out, F_GETFL), fl);
	T_EQ(fcntl(other, F_GETFL), fl);
	T_EQ(t_pos(out), (int64_t)(HEAD + SIZE));
	check_appended("a", SIZE, 0);

	/* Not through user memory: no path left, and nothing appended. */
	oi = 0;
	T_EQ(psplice_copy(in, &oi, out, NULL, 4096, PSPLICE_F_NOFALLBACK, &r), -1);
	T_RESULT(r, EOPNOTSUPP, PSPLICE_SIDE_NONE, 0, 0);
	T_EQ(oi, 0);
	T_EQ(fcntl(out, F_GETFL), fl);
	check_appended("a", SIZE, 0);
	close(other);
	close(out);
}

/* An output offset cannot be honoured on O_APPEND (pwrite would append
 * anyway): refused before a byte moves, on both shapes of call. */
static void offset_on_append(int in)
{
	int out = open_append("b"), fl = fcntl(out, F_GETFL);
	struct psplice_result r;
	int64_t oi = 0, oo = 0;

	T_EQ(psplice_copy(in, &oi, out, &oo, 4096, 0, &r), -1);
	T_EQ(errno, EINVAL);
	T_RESULT(r, EINVAL, PSPLICE_SIDE_OUT, 0, 0);
	T_ERRNO(psplice(in, &oi, out, &oo, 4096, 0), EINVAL);
	T_EQ(psplice_last()->side, PSPLICE_SIDE_OUT);
	T_EQ(oi, 0);
	T_EQ(oo, 0);
	T_EQ(fcntl(out, F_GETFL), fl);
	check_appended("b", 0, 0);
	close(out);
}

/* A pipe and a socket into an O_APPEND file: splice refuses it too. */
static void stream_to_append(int in)
{
	int out = open_append("c"), fl = fcntl(out, F_GETFL), p[2], s[2];
	struct psplice_result r;
	int64_t oi = 0;

	t_pipe(p);
	T_EQ(psplice(in, &oi, p[1], NULL, 65536, 0), 65536);
	close(p[1]);
	T_EQ(psplice_copy(p[0], NULL, out, NULL, PSPLICE_TO_EOF, 0, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, 65536, 65536);
	close(p[0]);
	T_EQ(fcntl(out, F_GETFL), fl);

	t_unix_pair(s);
	T_EQ(psplice(in, &oi, s[1], NULL, 100000, 0), 100000);
	close(s[1]);
	T_EQ(psplice_copy(s[0], NULL, out, NULL, PSPLICE_TO_EOF, 0, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, 100000, 100000);
	close(s[0]);
	T_EQ(fcntl(out, F_GETFL), fl);
	check_appended("c", 165536, 0);
	close(out);
}

int main(int argc, char **argv)
{
	int in;

	t_dir(argc, argv);
	alarm(55);
	in = t_make_file(t_path("src"), SIZE, 6);
	file_to_append(in);
	offset_on_append(in);
	stream_to_append(in);
	T_EQ(t_pos(in), 0);
	close(in);
	return T_PASS;
}
