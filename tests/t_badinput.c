/* Bad input is refused with a clear errno and the right side before a byte
 * moves: each case runs through psplice, psplice_ex and psplice_copy, and
 * afterwards every offset, file position, output file and pipe or socket
 * buffer is exactly as it was. */
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "t.h"

#define IN_SIZE 8192
#define OUT_SIZE 4096
#define PIPE_BYTES 1000
#define IN_POS 100
#define OUT_POS 50

static struct {
	int in, in_wronly, out, out_rdonly, append, path, dir;
	int p[2], s[2];
	int closed;
} f;

static int line; /* the case being checked, for the failure message */

#define EXPECT(a, b) do { \
	long long e_a_ = (long long)(a), e_b_ = (long long)(b); \
	if (e_a_ != e_b_) T_FAILED("case at line %d: %s == %s: %lld != %lld", \
				   line, #a, #b, e_a_, e_b_); } while (0)

static void setup(void)
{
	int junk;

	f.in = t_make_file(t_path("in"), IN_SIZE, 1);
	f.out = t_make_file(t_path("out"), OUT_SIZE, 2);
	f.append = t_make_file(t_path("append"), OUT_SIZE, 3);
	close(f.append);
	f.append = open(t_path("append"), O_WRONLY | O_APPEND | O_CLOEXEC);
	f.in_wronly = open(t_path("in"), O_WRONLY | O_CLOEXEC);
	f.out_rdonly = open(t_path("out"), O_RDONLY | O_CLOEXEC);
	f.path = open(t_path("in"), O_PATH | O_CLOEXEC);
	f.dir = open(t_path(""), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	T_OK(f.append);
	T_OK(f.in_wronly);
	T_OK(f.out_rdonly);
	T_OK(f.path);
	T_OK(f.dir);
	T_EQ(lseek(f.in, IN_POS, SEEK_SET), IN_POS);
	T_EQ(lseek(f.out, OUT_POS, SEEK_SET), OUT_POS);
	T_EQ(lseek(f.in_wronly, IN_POS, SEEK_SET), IN_POS);
	T_EQ(lseek(f.out_rdonly, OUT_POS, SEEK_SET), OUT_POS);

	t_pipe(f.p);
	t_unix_pair(f.s);
	t_fill_fd(f.p[1], PIPE_BYTES, 4);
	t_fill_fd(f.s[1], PIPE_BYTES, 5);

	/* A number that names no open file. */
	junk = open("/dev/null", O_RDONLY | O_CLOEXEC);
	T_OK(junk);
	close(junk);
	f.closed = junk;
}

/* Nothing anywhere moved. */
static void check_untouched(void)
{
	struct stat st;

	EXPECT(t_pos(f.in), IN_POS);
	EXPECT(t_pos(f.in_wronly), IN_POS);
	EXPECT(t_pos(f.out), OUT_POS);
	EXPECT(t_pos(f.out_rdonly), OUT_POS);
	EXPECT(t_pos(f.append), 0);
	EXPECT(fstat(f.out, &st), 0);
	EXPECT(st.st_size, OUT_SIZE);
	EXPECT(fstat(f.append, &st), 0);
	EXPECT(st.st_size, OUT_SIZE);
	EXPECT(fstat(f.in, &st), 0);
	EXPECT(st.st_size, IN_SIZE);
	EXPECT(t_queued(f.p[0]), PIPE_BYTES);
	EXPECT(t_queued(f.s[0]), PIPE_BYTES);
	EXPECT(fcntl(f.append, F_GETFL) & O_APPEND, O_APPEND);
}

static void check_result(const struct psplice_result *r, int err, int side)
{
	EXPECT(r->error, err);
	EXPECT(r->side, side);
	EXPECT(r->in_bytes, 0);
	EXPECT(r->out_bytes, 0);
	EXPECT(r->parked_len, 0);
	EXPECT(r->parked == NULL, 1);
	EXPECT(r->method, PSPLICE_METHOD_NONE);
}

/* One refused call in the three shapes; the offsets given are copied so
 * that every shape sees the same values and a change shows. */
static void bad(int ln, int fd_in, const int64_t *off_in, int fd_out,
		const int64_t *off_out, uint64_t len, unsigned int flags,
		int err, int side)
{
	int64_t oi = off_in ? *off_in : 0, oo = off_out ? *off_out : 0;
	int64_t *pi = off_in ? &oi : NULL, *po = off_out ? &oo : NULL;
	struct psplice_result r;
	size_t slen = len > SIZE_MAX ? SIZE_MAX : (size_t)len;

	line = ln;
	errno = 0;
	EXPECT(psplice(fd_in, pi, fd_out, po, slen, flags), -1);
	EXPECT(errno, err);
	check_result(psplice_last(), err, side);

	memset(&r, 0x5a, sizeof(r));
	errno = 0;
	EXPECT(psplice_ex(fd_in, pi, fd_out, po, slen, flags, &r), -1);
	EXPECT(errno, err);
	check_result(&r, err, side);

	memset(&r, 0x5a, sizeof(r));
	errno = 0;
	EXPECT(psplice_copy(fd_in, pi, fd_out, po, len, flags, &r), -1);
	EXPECT(errno, err);
	check_result(&r, err, side);
	check_result(psplice_last(), err, side);

	errno = 0;
	EXPECT(psplice_copy(fd_in, pi, fd_out, po, len, flags, NULL), -1);
	EXPECT(errno, err);

	EXPECT(oi, off_in ? *off_in : 0);
	EXPECT(oo, off_out ? *off_out : 0);
	check_untouched();
}

#define BAD(...) bad(__LINE__, __VA_ARGS__)

static void bad_fds(void)
{
	const int64_t zero = 0;

	BAD(-1, NULL, f.out, NULL, 10, 0, EBADF, PSPLICE_SIDE_IN);
	BAD(f.in, NULL, -1, NULL, 10, 0, EBADF, PSPLICE_SIDE_OUT);
	BAD(-1, NULL, -1, NULL, 10, 0, EBADF, PSPLICE_SIDE_IN);
	BAD(f.closed, NULL, f.out, NULL, 10, 0, EBADF, PSPLICE_SIDE_IN);
	BAD(f.in, NULL, f.closed, NULL, 10, 0, EBADF, PSPLICE_SIDE_OUT);
	BAD(f.in_wronly, NULL, f.out, NULL, 10, 0, EBADF, PSPLICE_SIDE_IN);
	BAD(f.in_wronly, &zero, f.out, &zero, 10, 0, EBADF, PSPLICE_SIDE_IN);
	BAD(f.p[1], NULL, f.out, NULL, 10, 0, EBADF, PSPLICE_SIDE_IN);
	BAD(f.in, NULL, f.out_rdonly, NULL, 10, 0, EBADF, PSPLICE_SIDE_OUT);
	BAD(f.in, &zero, f.out_rdonly, &zero, 10, 0, EBADF, PSPLICE_SIDE_OUT);
	BAD(f.p[0], NULL, f.p[0], NULL, 10, 0, EBADF, PSPLICE_SIDE_OUT);
	BAD(f.in, NULL, f.dir, NULL, 10, 0, EBADF, PSPLICE_SIDE_OUT);
	BAD(f.path, NULL, f.out, NULL, 10, 0, EBADF, PSPLICE_SIDE_IN);
	BAD(f.in, NULL, f.path, NULL, 10, 0, EBADF, PSPLICE_SIDE_OUT);
	/* A zero length does not excuse a bad fd, as with splice(2). */
	BAD(-1, NULL, f.out, NULL, 0, 0, EBADF, PSPLICE_SIDE_IN);
	BAD(f.in, NULL, f.closed, NULL, 0, 0, EBADF, PSPLICE_SIDE_OUT);
}

/* A call asks for an fd's flags only where they change the plan (the
 * kernel refuses a bad fd by itself, before a byte moves), yet a bad fd is
 * named first whatever else is wrong: with no length to move, next to a
 * wrong offset or a directory, on every forced path and without fallback. */
static void bad_fd_first(void)
{
	const int64_t zero = 0, neg = -1;
	unsigned int only;

	BAD(f.in_wronly, NULL, f.out, NULL, 0, 0, EBADF, PSPLICE_SIDE_IN);
	BAD(f.path, NULL, f.out, NULL, 0, 0, EBADF, PSPLICE_SIDE_IN);
	BAD(f.in, NULL, f.out_rdonly, NULL, 0, 0, EBADF, PSPLICE_SIDE_OUT);
	BAD(f.in, NULL, f.path, NULL, 0, 0, EBADF, PSPLICE_SIDE_OUT);
	BAD(f.p[0], NULL, f.p[0], NULL, 0, 0, EBADF, PSPLICE_SIDE_OUT);

	BAD(f.p[1], &zero, f.out, NULL, 10, 0, EBADF, PSPLICE_SIDE_IN);
	BAD(f.path, &neg, f.out, NULL, 10, 0, EBADF, PSPLICE_SIDE_IN);
	BAD(f.in, &neg, f.out_rdonly, NULL, 10, 0, EBADF, PSPLICE_SIDE_OUT);
	BAD(f.in, NULL, f.path, &neg, 10, 0, EBADF, PSPLICE_SIDE_OUT);
	BAD(f.s[0], NULL, f.p[0], &zero, 10, 0, EBADF, PSPLICE_SIDE_OUT);
	BAD(f.in_wronly, NULL, f.append, &zero, 10, 0, EBADF, PSPLICE_SIDE_IN);
	BAD(f.dir, NULL, f.out_rdonly, NULL, 10, 0, EBADF, PSPLICE_SIDE_OUT);
	BAD(f.dir, NULL, f.path, NULL, 10, 0, EBADF, PSPLICE_SIDE_OUT);

	for (int m = PSPLICE_METHOD_CLONE; m <= PSPLICE_METHOD_READWRITE; m++) {
		only = PSPLICE_F_ONLY(m);
		BAD(f.in_wronly, NULL, f.out, NULL, 10, only, EBADF, PSPLICE_SIDE_IN);
		BAD(f.path, &zero, f.out, &zero, 10, only, EBADF, PSPLICE_SIDE_IN);
		BAD(f.in, NULL, f.out_rdonly, NULL, 10, only, EBADF, PSPLICE_SIDE_OUT);
		BAD(f.in, &zero, f.path, NULL, 10, only, EBADF, PSPLICE_SIDE_OUT);
		BAD(f.p[1], NULL, f.s[1], NULL, 10, only, EBADF, PSPLICE_SIDE_IN);
		BAD(f.s[0], NULL, f.p[0], NULL, 10, only, EBADF, PSPLICE_SIDE_OUT);
		BAD(f.s[0], NULL, f.path, NULL, 10, only, EBADF, PSPLICE_SIDE_OUT);
	}
	BAD(f.in_wronly, NULL, f.out, NULL, 10, PSPLICE_F_NOFALLBACK, EBADF,
	    PSPLICE_SIDE_IN);
	BAD(f.s[0], NULL, f.path, NULL, 10, PSPLICE_F_NOFALLBACK, EBADF, PSPLICE_SIDE_OUT);
	BAD(f.s[0], NULL, f.out_rdonly, NULL, 10, 0, EBADF, PSPLICE_SIDE_OUT);
	BAD(f.path, NULL, f.s[1], NULL, 10, 0, EBADF, PSPLICE_SIDE_IN);
	BAD(f.in, NULL, f.p[0], NULL, 10, 0, EBADF, PSPLICE_SIDE_OUT);
}

static void bad_offsets(void)
{
	const int64_t zero = 0, neg = -1, min = INT64_MIN, near = INT64_MAX - 10;

	BAD(f.p[0], &zero, f.out, NULL, 10, 0, ESPIPE, PSPLICE_SIDE_IN);
	BAD(f.s[0], &zero, f.out, NULL, 10, 0, ESPIPE, PSPLICE_SIDE_IN);
	BAD(f.in, NULL, f.p[1], &zero, 10, 0, ESPIPE, PSPLICE_SIDE_OUT);
	BAD(f.in, NULL, f.s[1], &zero, 10, 0, ESPIPE, PSPLICE_SIDE_OUT);
	BAD(f.p[0], NULL, f.s[1], &zero, 10, 0, ESPIPE, PSPLICE_SIDE_OUT);
	BAD(f.s[0], NULL, f.p[1], &zero, 10, 0, ESPIPE, PSPLICE_SIDE_OUT);

	BAD(f.in, &neg, f.out, NULL, 10, 0, EINVAL, PSPLICE_SIDE_IN);
	BAD(f.in, &min, f.out, NULL, 10, 0, EINVAL, PSPLICE_SIDE_IN);
	BAD(f.in, NULL, f.out, &neg, 10, 0, EINVAL, PSPLICE_SIDE_OUT);
	BAD(f.in, &zero, f.out, &min, 10, 0, EINVAL, PSPLICE_SIDE_OUT);
	BAD(f.in, &neg, f.p[1], NULL, 10, 0, EINVAL, PSPLICE_SIDE_IN);
	BAD(f.p[0], NULL, f.out, &neg, 10, 0, EINVAL, PSPLICE_SIDE_OUT);

	/* The end of the range would not fit in an off_t. */
	BAD(f.in, &near, f.out, NULL, 100, 0, EINVAL, PSPLICE_SIDE_IN);
	BAD(f.in, NULL, f.out, &near, 100, 0, EINVAL, PSPLICE_SIDE_OUT);
	BAD(f.in, &near, f.p[1], NULL, 100, 0, EINVAL, PSPLICE_SIDE_IN);
	BAD(f.p[0], NULL, f.out, &near, 100, 0, EINVAL, PSPLICE_SIDE_OUT);

	/* pwrite(2) on an O_APPEND file would append, whatever the offset. */
	BAD(f.in, NULL, f.append, &zero, 10, 0, EINVAL, PSPLICE_SIDE_OUT);
	BAD(f.p[0], NULL, f.append, &zero, 10, 0, EINVAL, PSPLICE_SIDE_OUT);
}

static void bad_flags(void)
{
	const int64_t zero = 0;

	BAD(f.in, NULL, f.out, NULL, 10, 0x8, EINVAL, PSPLICE_SIDE_NONE);
	BAD(f.in, NULL, f.out, NULL, 10, 0x80000000u, EINVAL, PSPLICE_SIDE_NONE);
	BAD(f.in, &zero, f.out, &zero, 10, 0x10000u, EINVAL, PSPLICE_SIDE_NONE);
	BAD(f.p[0], NULL, f.out, NULL, 10, PSPLICE_F_NONBLOCK | 0x40u, EINVAL,
	    PSPLICE_SIDE_NONE);
	/* No method has this number. */
	BAD(f.in, NULL, f.out, NULL, 10, PSPLICE_F_ONLY(PSPLICE_METHOD_READWRITE + 1),
	    EINVAL, PSPLICE_SIDE_NONE);
	BAD(f.in, NULL, f.out, NULL, 10, PSPLICE_F_ONLY(15), EINVAL, PSPLICE_SIDE_NONE);
	/* Flags are checked before the fds. */
	BAD(-1, NULL, -1, NULL, 10, 0x8, EINVAL, PSPLICE_SIDE_NONE);
}

/* The checks are on the values, not on the call: what is valid still works,
 * and the bytes that were waiting all along are the ones expected. */
static void still_works(void)
{
	int64_t near = INT64_MAX - 10, oo = 0;
	struct psplice_result r;
	int out;

	/* To end of input from far past the end: nothing to move, no error. */
	T_EQ(psplice_copy(f.in, &near, f.out, NULL, PSPLICE_TO_EOF, 0, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, 0, 0);
	T_EQ(near, INT64_MAX - 10);
	line = __LINE__;
	check_untouched();

	out = open(t_path("check"), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	T_OK(out);
	T_EQ(psplice_copy(f.p[0], NULL, out, &oo, PIPE_BYTES, 0, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, PIPE_BYTES, PIPE_BYTES);
	T_EQ(psplice_copy(f.s[0], NULL, out, &oo, PIPE_BYTES, 0, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, PIPE_BYTES, PIPE_BYTES);
	T_ASSERT(t_check_fd(out, 0, PIPE_BYTES, 4, 0));
	T_ASSERT(t_check_fd(out, PIPE_BYTES, PIPE_BYTES, 5, 0));
	T_ASSERT(t_check_fd(f.in, 0, IN_SIZE, 1, 0));
	T_ASSERT(t_check_fd(f.out, 0, OUT_SIZE, 2, 0));
	T_ASSERT(t_check_fd(f.out_rdonly, 0, OUT_SIZE, 2, 0));
	close(out);
}

int main(int argc, char **argv)
{
	t_dir(argc, argv);
	setup();
	bad_fds();
	bad_fd_first();
	bad_offsets();
	bad_flags();
	still_works();
	return T_PASS;
}
