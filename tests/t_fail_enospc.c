/* A full output: a small tmpfs that fills up, and /dev/full. ENOSPC is the
 * output's; what was delivered is exactly the stream's prefix; a seekable
 * input's offset (or position) ends just past the last delivered byte, and
 * bytes taken from a pipe or socket and not delivered are either still in
 * it or handed back in res.parked. */
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "t.h"

#define SRC_SIZE (2u << 20)  /* twice the tmpfs */
#define ROOM 16384u          /* left free for the stream tests */
#define STREAM 65536u        /* bytes waiting in the pipe or socket */
#define STEP 300000u         /* one psplice_ex step; not page aligned */

static const char *mnt;
static int src;

static const char *in_mnt(const char *name)
{
	static char p[2][4200];
	static int k;
	char *s = p[k++ % 2];

	snprintf(s, sizeof(p[0]), "%s/%s", mnt, name);
	return s;
}

static uint64_t free_bytes(void)
{
	struct statfs s;

	T_OK(statfs(mnt, &s));
	return (uint64_t)s.f_bavail * (uint64_t)s.f_bsize;
}

static int64_t size_of(int fd)
{
	struct stat st;

	T_OK(fstat(fd, &st));
	return st.st_size;
}

static int create(const char *name)
{
	int fd = open(in_mnt(name), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	T_OK(fd);
	return fd;
}

static void check_full(int out, uint64_t n, uint32_t seed, uint64_t soff)
{
	T_EQ(free_bytes(), 0);
	T_EQ(size_of(out), n);
	T_ASSERT(t_check_fd(out, 0, n, seed, soff));
	close(out);
}

/* The tmpfs holds nothing else: the whole of it is what can be delivered. */
static void file_copy_positional(void)
{
	uint64_t cap = free_bytes();
	struct psplice_result r;
	int64_t oi = 0, oo = 0;
	int out = create("a");

	T_ASSERT(cap > 0 && cap < SRC_SIZE);
	T_EQ(lseek(src, 123, SEEK_SET), 123);
	T_ERRNO(psplice_copy(src, &oi, out, &oo, PSPLICE_TO_EOF, 0, &r), ENOSPC);
	T_RESULT(r, ENOSPC, PSPLICE_SIDE_OUT, cap, cap);
	T_EQ(r.parked_len, 0);
	T_EQ(oi, cap);
	T_EQ(oo, cap);
	T_EQ(t_pos(src), 123);
	T_EQ(t_pos(out), 0);
	check_full(out, cap, 1, 0);
	T_OK(unlink(in_mnt("a")));
}

static void file_copy_position(void)
{
	uint64_t cap = free_bytes();
	struct psplice_result r;
	int out = create("b");

	T_EQ(lseek(src, 1000, SEEK_SET), 1000);
	T_ERRNO(psplice_copy(src, NULL, out, NULL, SRC_SIZE - 1000, 0, &r), ENOSPC);
	T_RESULT(r, ENOSPC, PSPLICE_SIDE_OUT, cap, cap);
	T_EQ(r.parked_len, 0);
	T_EQ(t_pos(src), 1000 + cap);
	T_EQ(t_pos(out), cap);
	check_full(out, cap, 1, 1000);
	T_OK(unlink(in_mnt("b")));
}

/* Both files on the one tmpfs: copy_file_range(2) applies, and its short
 * count then ENOSPC are read the same way. */
static void file_same_fs(void)
{
	uint64_t cap;
	struct psplice_result r;
	int64_t oi = 0, oo = 0;
	int in = t_make_file(in_mnt("src"), 600u << 10, 1), out = create("g");

	cap = free_bytes();
	T_ASSERT(cap > 0 && cap < (600u << 10));
	T_ERRNO(psplice_copy(in, &oi, out, &oo, PSPLICE_TO_EOF, 0, &r), ENOSPC);
	T_RESULT(r, ENOSPC, PSPLICE_SIDE_OUT, cap, cap);
	T_EQ(r.method, PSPLICE_METHOD_COPY_FILE_RANGE);
	T_EQ(oi, cap);
	T_EQ(oo, cap);
	check_full(out, cap, 1, 0);
	close(in);
	T_OK(unlink(in_mnt("g")));
	T_OK(unlink(in_mnt("src")));
}

/* Single steps, as a caller driving its own loop: each step that delivered
 * something says so (with ENOSPC noted if it then hit the end), and the
 * step after the last byte fits fails with nothing moved. */
static void file_steps(int64_t *oi, int64_t *oo)
{
	uint64_t cap = free_bytes(), total = 0;
	int64_t start_in = oi ? *oi : t_pos(src);
	struct psplice_result r;
	int out = create("c");
	ssize_t n = 0;
	int i;

	for (i = 0; i < 100; i++) {
		n = psplice_ex(src, oi, out, oo, STEP, 0, &r);
		if (n < 0)
			break;
		T_ASSERT(n > 0);
		T_EQ_U(r.in_bytes, n);
		T_EQ_U(r.out_bytes, n);
		T_EQ(r.parked_len, 0);
		T_ASSERT(r.error == 0 || (r.error == ENOSPC && r.side == PSPLICE_SIDE_OUT));
		total += (uint64_t)n;
	}
	T_EQ(n, -1);
	T_EQ(errno, ENOSPC);
	T_RESULT(r, ENOSPC, PSPLICE_SIDE_OUT, 0, 0);
	T_RESULT(*psplice_last(), ENOSPC, PSPLICE_SIDE_OUT, 0, 0);
	T_EQ_U(total, cap);
	if (oi) {
		T_EQ(*oi, start_in + (int64_t)cap);
		T_EQ(*oo, cap);
		T_EQ(t_pos(out), 0);
	} else {
		T_EQ(t_pos(src), start_in + (int64_t)cap);
		T_EQ(t_pos(out), cap);
	}
	/* The plain call says the same. */
	T_ERRNO(psplice(src, oi, out, oo, STEP, 0), ENOSPC);
	check_full(out, cap, 1, (uint64_t)start_in);
	T_OK(unlink(in_mnt("c")));
}

/* Leave exactly ROOM bytes free. */
static void fill_but(void)
{
	int fd = create("filler");

	T_OK(ftruncate(fd, 0));
	T_OK(posix_fallocate(fd, 0, (off_t)(free_bytes() - ROOM)));
	close(fd);
	T_EQ(free_bytes(), ROOM);
}

/* Loopback TCP delivers in softirq context, maybe a little later. */
static void wait_queued(int fd, int n)
{
	int i;

	for (i = 0; i < 10000 && t_queued(fd) < n; i++)
		usleep(1000);
	T_EQ(t_queued(fd), n);
}

/* What the pipe or socket still holds is the stream from soff on. */
static void check_rest(int fd, uint64_t soff)
{
	uint64_t left = STREAM - soff;

	T_EQ(t_queued(fd), left);
	T_ASSERT(t_check_fd(fd, -1, left, 2, soff));
	T_EQ(t_queued(fd), 0);
}

/* splice(2) from a pipe takes only what the file accepted: the rest never
 * left the pipe, so nothing needs parking. */
static void pipe_direct(void)
{
	struct psplice_result r;
	int p[2], out = create("d");

	t_pipe(p);
	t_fill_fd(p[1], STREAM, 2);
	T_ERRNO(psplice_copy(p[0], NULL, out, NULL, STREAM, 0, &r), ENOSPC);
	T_RESULT(r, ENOSPC, PSPLICE_SIDE_OUT, ROOM, ROOM);
	T_EQ(r.parked_len, 0);
	T_EQ(r.method, PSPLICE_METHOD_SPLICE);
	T_EQ(t_pos(out), ROOM);
	check_rest(p[0], ROOM);
	check_full(out, ROOM, 2, 0);
	close(p[0]);
	close(p[1]);
	T_OK(unlink(in_mnt("d")));
}

static void check_parked(const struct psplice_result *r, uint64_t soff)
{
	T_EQ_U(r->parked_len, r->in_bytes - r->out_bytes);
	T_ASSERT(r->parked != NULL);
	T_ASSERT(t_check_buf(r->parked, r->parked_len, 2, soff));
}

/* Through user memory the whole read is taken from the pipe: the part the
 * file refused comes back parked, in both shapes of call. */
static void pipe_readwrite(bool copy)
{
	unsigned int only = PSPLICE_F_ONLY(PSPLICE_METHOD_READWRITE);
	struct psplice_result r;
	int p[2], out = create("e");

	t_pipe(p);
	t_fill_fd(p[1], STREAM, 2);
	if (copy)
		T_ERRNO(psplice_copy(p[0], NULL, out, NULL, STREAM, only, &r), ENOSPC);
	else
		T_ERRNO(psplice_ex(p[0], NULL, out, NULL, STREAM, only, &r), ENOSPC);
	T_RESULT(r, ENOSPC, PSPLICE_SIDE_OUT, STREAM, ROOM);
	T_EQ(r.method, PSPLICE_METHOD_READWRITE);
	check_parked(&r, ROOM);
	check_parked(psplice_last(), ROOM);
	T_EQ(t_queued(p[0]), 0);
	T_EQ(t_pos(out), ROOM);
	check_full(out, ROOM, 2, 0);
	close(p[0]);
	close(p[1]);
	T_OK(unlink(in_mnt("e")));
}

/* An O_APPEND output takes only write(2): from the file, the refused bytes
 * are given back by rewinding; from a pipe, they are parked. The file
 * already holds 4096 bytes of its own. */
static void append_output(void)
{
	struct psplice_result r;
	int64_t oi = 0;
	int out = create("h"), rd, p[2];

	t_fill_fd(out, 4096, 4);
	close(out);
	out = open(in_mnt("h"), O_WRONLY | O_APPEND | O_CLOEXEC);
	rd = open(in_mnt("h"), O_RDONLY | O_CLOEXEC);
	T_OK(out);
	T_OK(rd);
	T_ERRNO(psplice_copy(src, &oi, out, NULL, PSPLICE_TO_EOF, 0, &r), ENOSPC);
	T_RESULT(r, ENOSPC, PSPLICE_SIDE_OUT, ROOM - 4096, ROOM - 4096);
	T_EQ(r.parked_len, 0);
	T_EQ(oi, ROOM - 4096);
	T_EQ(size_of(out), ROOM);
	T_ASSERT(t_check_fd(rd, 0, 4096, 4, 0));
	T_ASSERT(t_check_fd(rd, 4096, ROOM - 4096, 1, 0));
	T_EQ(fcntl(out, F_GETFL) & O_APPEND, O_APPEND);
	T_OK(ftruncate(out, 4096));

	t_pipe(p);
	t_fill_fd(p[1], STREAM, 2);
	T_ERRNO(psplice_ex(p[0], NULL, out, NULL, STREAM, 0, &r), ENOSPC);
	T_EQ(r.error, ENOSPC);
	T_EQ(r.side, PSPLICE_SIDE_OUT);
	T_EQ(r.out_bytes, ROOM - 4096);
	check_parked(&r, ROOM - 4096);
	T_EQ_U(t_queued(p[0]), STREAM - r.in_bytes);
	T_ASSERT(t_check_fd(p[0], -1, STREAM - r.in_bytes, 2, r.in_bytes));
	T_EQ(size_of(out), ROOM);
	T_ASSERT(t_check_fd(rd, 0, 4096, 4, 0));
	T_ASSERT(t_check_fd(rd, 4096, ROOM - 4096, 2, 0));
	close(out);
	close(rd);
	close(p[0]);
	close(p[1]);
	T_OK(unlink(in_mnt("h")));
}

/* A socket goes through the internal pipe: whatever was taken into it and
 * not delivered is parked, the rest is still in the socket. */
static void socket_source(void (*pair)(int[2]), unsigned int flags)
{
	struct psplice_result r;
	int s[2], out = create("f");

	pair(s);
	t_fill_fd(s[1], STREAM, 2);
	wait_queued(s[0], STREAM);
	T_ERRNO(psplice_copy(s[0], NULL, out, NULL, STREAM, flags, &r), ENOSPC);
	T_EQ(r.error, ENOSPC);
	T_EQ(r.side, PSPLICE_SIDE_OUT);
	T_EQ(r.out_bytes, ROOM);
	T_ASSERT(r.in_bytes >= ROOM && r.in_bytes <= STREAM);
	check_parked(&r, ROOM);
	T_EQ(t_pos(out), ROOM);
	check_rest(s[0], r.in_bytes);
	check_full(out, ROOM, 2, 0);
	close(s[0]);
	close(s[1]);
	T_OK(unlink(in_mnt("f")));
}

/* /dev/full takes no splice: every path ends in write(2) and ENOSPC with
 * nothing delivered. */
static void dev_full(void)
{
	unsigned int rw = PSPLICE_F_ONLY(PSPLICE_METHOD_READWRITE);
	struct psplice_result r;
	int64_t oi = 500;
	int full = open("/dev/full", O_WRONLY | O_CLOEXEC), p[2], s[2];

	T_OK(full);
	T_EQ(lseek(src, 700, SEEK_SET), 700);
	T_ERRNO(psplice_ex(src, &oi, full, NULL, STEP, 0, &r), ENOSPC);
	T_RESULT(r, ENOSPC, PSPLICE_SIDE_OUT, 0, 0);
	T_ERRNO(psplice_copy(src, &oi, full, NULL, PSPLICE_TO_EOF, 0, &r), ENOSPC);
	T_RESULT(r, ENOSPC, PSPLICE_SIDE_OUT, 0, 0);
	T_ERRNO(psplice_copy(src, &oi, full, NULL, PSPLICE_TO_EOF, rw, &r), ENOSPC);
	T_RESULT(r, ENOSPC, PSPLICE_SIDE_OUT, 0, 0);
	T_EQ(oi, 500);
	T_ERRNO(psplice_ex(src, NULL, full, NULL, STEP, 0, &r), ENOSPC);
	T_RESULT(r, ENOSPC, PSPLICE_SIDE_OUT, 0, 0);
	T_ERRNO(psplice_copy(src, NULL, full, NULL, 4096, 0, &r), ENOSPC);
	T_RESULT(r, ENOSPC, PSPLICE_SIDE_OUT, 0, 0);
	T_EQ(t_pos(src), 700);

	t_pipe(p);
	t_fill_fd(p[1], STREAM, 2);
	T_ERRNO(psplice_copy(p[0], NULL, full, NULL, STREAM, 0, &r), ENOSPC);
	T_RESULT(r, ENOSPC, PSPLICE_SIDE_OUT, STREAM, 0);
	check_parked(&r, 0);
	T_EQ(t_queued(p[0]), 0);

	t_unix_pair(s);
	t_fill_fd(s[1], STREAM, 2);
	T_ERRNO(psplice_ex(s[0], NULL, full, NULL, STREAM, 0, &r), ENOSPC);
	T_EQ(r.error, ENOSPC);
	T_EQ(r.side, PSPLICE_SIDE_OUT);
	T_EQ(r.out_bytes, 0);
	T_ASSERT(r.in_bytes > 0);
	check_parked(&r, 0);
	check_rest(s[0], r.in_bytes);
	close(full);
	close(p[0]);
	close(p[1]);
	close(s[0]);
	close(s[1]);
}

int main(int argc, char **argv)
{
	int64_t oi = 4321, oo = 0;

	t_dir(argc, argv);
	src = t_make_file(t_path("src"), SRC_SIZE, 1);
	dev_full();
	T_SKIP_IF(!t_root(), "mounting a small tmpfs needs root");
	mnt = t_mount_tmpfs("small", "1m");
	T_ASSERT(mnt != NULL);

	file_copy_positional();
	file_copy_position();
	file_same_fs();
	file_steps(&oi, &oo);
	T_EQ(lseek(src, 77, SEEK_SET), 77);
	file_steps(NULL, NULL);

	fill_but();
	pipe_direct();
	pipe_readwrite(true);
	pipe_readwrite(false);
	socket_source(t_unix_pair, 0);
	socket_source(t_tcp_pair, 0);
	socket_source(t_unix_pair, PSPLICE_F_ONLY(PSPLICE_METHOD_READWRITE));
	append_output();
	return T_PASS;
}
