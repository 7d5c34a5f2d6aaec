/* A file cut under a copy and written again before the copy looks at it:
 * t_fault_truncate's racing case, scheduled instead of raced. The test
 * defines splice, sendfile64 and syscall, which the library (linked in
 * statically) calls for splice(2), sendfile(2) and copy_file_range(2): while
 * armed, each such call on the source cuts the file at CUT, makes the real
 * call, and writes the stream back from CUT to S before it returns. The
 * mechanism thus moves the bytes up to CUT, then finds the end there (0),
 * and the file has grown again by the time the library looks at it.
 *
 * A step's 0 after it moved bytes is the end it found, as read(2) would
 * have reported it (psplice(3), "A file that changes during a copy"):
 * with PSPLICE_F_ONLY the copy ends there with success, CUT bytes, the
 * input's position or offset just past them. Without it the next
 * mechanism reads on (read(2) is not cut) and the copy takes all S.
 *
 * Not every "not here" after progress is the end: copy_file_range refuses
 * an O_DIRECT input's short last block (EINVAL) and leaves it to the next
 * mechanism. The hook makes the first call stop at the last whole block,
 * so that the refusal comes after progress: with PSPLICE_F_ONLY it is
 * EOPNOTSUPP with the whole blocks moved, never a copy that ends short as
 * if the file ended there. */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "t.h"

#define SEED 43
#define S ((uint64_t)256 << 10)
#define CUT ((uint64_t)64 << 10)

static int src = -1;  /* the armed source, or -1 */
static unsigned long cuts;
static int split = -1; /* the source whose next copy_file_range stops short */
static long split_len;

static long real_syscall(long nr, long a, long b, long c, long d, long e, long f)
{
	static long (*fn)(long, ...);

	if (!fn)
		fn = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
	return fn(nr, a, b, c, d, e, f);
}

static void cut(int fd)
{
	if (fd != src)
		return;
	T_OK(ftruncate(fd, (off_t)CUT));
	cuts++;
}

/* The stream's own bytes again from CUT to S: the file is what it was. */
static void regrow(int fd)
{
	static uint8_t buf[S - CUT];

	if (fd != src)
		return;
	t_gen(SEED, CUT, buf, sizeof(buf));
	T_EQ(pwrite(fd, buf, sizeof(buf), (off_t)CUT), (ssize_t)sizeof(buf));
}

/* A real call between cut() and regrow(), its errno kept. */
static long cut_call(int fd, long nr, long a, long b, long c, long d, long e, long f)
{
	long r;
	int err;

	cut(fd);
	r = real_syscall(nr, a, b, c, d, e, f);
	err = errno;
	regrow(fd);
	errno = err;
	return r;
}

long syscall(long nr, ...)
{
	long a[6];
	va_list ap;

	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (nr == SYS_copy_file_range && a[0] == split && split >= 0) {
		split = -1;
		if (a[4] > split_len)
			a[4] = split_len;
	}
	if (nr == SYS_copy_file_range)
		return cut_call((int)a[0], nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	return real_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

ssize_t splice(int in, loff_t *off_in, int out, loff_t *off_out, size_t len,
	       unsigned int flags)
{
	return cut_call(in, SYS_splice, in, (long)off_in, out, (long)off_out,
			(long)len, flags);
}

ssize_t sendfile64(int out, int in, off64_t *off, size_t len)
{
	return cut_call(in, SYS_sendfile, out, in, (long)off, (long)len, 0, 0);
}

struct way {
	unsigned int flags;
	int method;        /* the mechanism that moved the bytes */
	uint64_t want;     /* what the copy moves */
};

static const struct way ways[] = {
	{ PSPLICE_F_ONLY(PSPLICE_METHOD_COPY_FILE_RANGE), PSPLICE_METHOD_COPY_FILE_RANGE, CUT },
	{ PSPLICE_F_ONLY(PSPLICE_METHOD_SENDFILE), PSPLICE_METHOD_SENDFILE, CUT },
	{ PSPLICE_F_ONLY(PSPLICE_METHOD_SPLICE_PIPE), PSPLICE_METHOD_SPLICE_PIPE, CUT },
	{ PSPLICE_F_ONLY(PSPLICE_METHOD_SPLICE), PSPLICE_METHOD_SPLICE, CUT },
	/* The kernel's mechanisms all find the end at CUT; read(2) reads on. */
	{ 0, PSPLICE_METHOD_READWRITE, S },
	{ PSPLICE_F_NOFALLBACK, PSPLICE_METHOD_COPY_FILE_RANGE, CUT },
};

/* The output: a file, or for splice(2) itself a pipe that holds it all. */
static int open_out(const struct way *w, int *rd)
{
	int fds[2];

	*rd = -1;
	if (w->method != PSPLICE_METHOD_SPLICE)
		return open(t_path("dst"), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	t_pipe(fds);
	T_OK(fcntl(fds[1], F_SETPIPE_SZ, (int)S));
	*rd = fds[0];
	return fds[1];
}

static void check_out(int out, int rd, uint64_t n)
{
	static uint8_t buf[S];
	struct stat st;

	if (rd < 0) {
		T_OK(fstat(out, &st));
		T_EQ_U((uint64_t)st.st_size, n);
		T_EQ(t_pos(out), (int64_t)n);
		T_ASSERT(t_check_fd(out, 0, n, SEED, 0));
		return;
	}
	close(out);
	T_EQ(read(rd, buf, sizeof(buf)), (ssize_t)n);
	T_EQ(read(rd, buf, 1), 0);
	T_ASSERT(t_check_buf(buf, n, SEED, 0));
	close(rd);
}

static void one(const struct way *w, bool positional)
{
	int in = t_make_file(t_path("src"), S, SEED), rd, out = open_out(w, &rd);
	struct psplice_result r;
	int64_t off = 0;
	int rc;

	T_OK(out);
	cuts = 0;
	src = in;
	rc = psplice_copy(in, positional ? &off : NULL, out, NULL, PSPLICE_TO_EOF,
			  w->flags, &r);
	src = -1;
	T_EQ(r.error, 0);
	T_EQ(rc, 0);
	T_ASSERT(cuts >= 2);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, w->want, w->want);
	T_EQ(r.method, w->method);
	T_EQ(positional ? off : t_pos(in), (int64_t)w->want);
	check_out(out, rd, w->want);
	close(in);
}

/* An O_DIRECT input of three blocks and a bit, its first call stopped at
 * the last whole block. */
static void odirect_tail(unsigned int flags, int err, uint64_t want)
{
	const uint64_t size = 3 * 4096 + 100, whole = 3 * 4096;
	int fd = t_make_file(t_path("dsrc"), size, SEED), in, out;
	struct psplice_result r;

	T_OK(fsync(fd));
	close(fd);
	in = open(t_path("dsrc"), O_RDONLY | O_DIRECT | O_CLOEXEC);
	T_SKIP_IF(in < 0 && errno == EINVAL, "no O_DIRECT on this filesystem");
	T_OK(in);
	out = open(t_path("ddst"), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	T_OK(out);
	split = in;
	split_len = (long)whole;
	T_EQ(psplice_copy(in, NULL, out, NULL, PSPLICE_TO_EOF, flags, &r), err ? -1 : 0);
	T_EQ(split, -1);
	T_RESULT(r, err, PSPLICE_SIDE_NONE, want, want);
	T_EQ(t_pos(in), (int64_t)want);
	T_ASSERT(t_check_fd(out, 0, want, SEED, 0));
	close(in);
	close(out);
}

int main(int argc, char **argv)
{
	t_dir(argc, argv);
	odirect_tail(PSPLICE_F_ONLY(PSPLICE_METHOD_COPY_FILE_RANGE), EOPNOTSUPP, 3 * 4096);
	odirect_tail(0, 0, 3 * 4096 + 100);
	for (size_t i = 0; i < sizeof(ways) / sizeof(ways[0]); i++) {
		one(&ways[i], false);
		one(&ways[i], true);
	}
	return T_PASS;
}
