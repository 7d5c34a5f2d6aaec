/* Prepared pairs: psplice_pair_move is psplice_ex without the per-call
 * classification. Each kind of pair moves the right bytes by the right path;
 * offsets, positions, results, parked bytes and SIGPIPE behave as with
 * psplice_ex; sizes are not cached (the overlap refusal after the file
 * grew); and, under seccomp, a move makes no fcntl, fstat, lseek or signal
 * mask call while psplice() cannot even start. */
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "t.h"

#define SIZE 100000
#define SEED 31

static int src; /* SIZE bytes of stream SEED */

static struct psplice_pair *pair(int in, int out, unsigned int flags)
{
	struct psplice_pair *p = psplice_pair_new(in, out, flags);

	if (!p)
		T_FAILED("psplice_pair_new(%d, %d, %#x): %s", in, out, flags, strerror(errno));
	return p;
}

static int new_file(const char *name, int flags)
{
	int fd = open(t_path(name), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | flags, 0644);

	T_OK(fd);
	return fd;
}

/* Write n bytes of stream seed, from stream offset soff, at off. */
static void put(int fd, int64_t off, size_t n, uint32_t seed, uint64_t soff)
{
	uint8_t *b = malloc(n);

	t_gen(seed, soff, b, n);
	T_EQ(pwrite(fd, b, n, off), (ssize_t)n);
	free(b);
}

static void no_pending(void)
{
	sigset_t set;

	T_OK(sigpending(&set));
	T_ASSERT(!sigismember(&set, SIGPIPE));
}

/* What psplice_pair_new refuses, and what the per-call checks refuse. */
static void refusals(void)
{
	int nul = open("/dev/null", O_WRONLY | O_CLOEXEC), rd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	int dir = open(t_dir(0, NULL), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int pth = open(t_dir(0, NULL), O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct { int in, out; unsigned int flags; int err, side; } bad[] = {
		{ -1, nul, 0, EBADF, PSPLICE_SIDE_IN },
		{ nul, nul, 0, EBADF, PSPLICE_SIDE_IN },   /* not open for reading */
		{ src, rd, 0, EBADF, PSPLICE_SIDE_OUT },   /* not open for writing */
		{ pth, nul, 0, EBADF, PSPLICE_SIDE_IN },   /* O_PATH, before EISDIR */
		{ src, pth, 0, EBADF, PSPLICE_SIDE_OUT },
		{ dir, rd, 0, EBADF, PSPLICE_SIDE_OUT },   /* before EISDIR */
		{ dir, nul, 0, EISDIR, PSPLICE_SIDE_IN },
		{ src, nul, PSPLICE_F_NONBLOCK, EINVAL, PSPLICE_SIDE_NONE }, /* per call */
		{ src, nul, PSPLICE_F_ONLY(15), EINVAL, PSPLICE_SIDE_NONE },
		{ src, nul, 0x80000000u, EINVAL, PSPLICE_SIDE_NONE },
	};
	struct psplice_result r;
	struct psplice_pair *p;
	int64_t off = 0, neg = -1;
	int fds = t_count_fds();

	T_OK(nul);
	T_OK(rd);
	T_OK(dir);
	T_OK(pth);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		p = psplice_pair_new(bad[i].in, bad[i].out, bad[i].flags);
		if (p)
			T_FAILED("case %zu: a pair, want %s", i, ps_errname(bad[i].err));
		T_EQ(errno, bad[i].err);
		T_EQ(psplice_last()->error, bad[i].err);
		T_EQ(psplice_last()->side, bad[i].side);
	}
	psplice_pair_free(NULL);

	p = pair(src, nul, 0);
	T_EQ(t_count_fds(), fds); /* a pair holds no fd of its own */
	/* Per-call checks: planning flags, unknown flags, offsets. */
	T_ERRNO(psplice_pair_move(p, &off, NULL, 4096, PSPLICE_F_REFLINK, &r), EINVAL);
	T_RESULT(r, EINVAL, PSPLICE_SIDE_NONE, 0, 0);
	T_ERRNO(psplice_pair_move(p, &off, NULL, 4096, 0x40000u, NULL), EINVAL);
	T_ERRNO(psplice_pair_move(p, &neg, NULL, 4096, 0, &r), EINVAL);
	T_EQ(r.side, PSPLICE_SIDE_IN);
	off = INT64_MAX - 10;
	T_ERRNO(psplice_pair_move(p, &off, NULL, 4096, 0, &r), EINVAL);
	T_EQ(r.side, PSPLICE_SIDE_IN);
	off = 0;
	T_ERRNO(psplice_pair_move(p, &off, &off, 4096, 0, &r), ESPIPE);
	T_EQ(r.side, PSPLICE_SIDE_OUT);
	T_EQ(psplice_last()->side, PSPLICE_SIDE_OUT);
	T_ERRNO(psplice_pair_move(NULL, &off, NULL, 4096, 0, &r), EINVAL);
	T_EQ(psplice_pair_move(p, &off, NULL, 0, 0, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, 0, 0);
	T_EQ(off, 0);
	psplice_pair_free(p);
	/* Freeing closed nothing. */
	T_OK(fcntl(nul, F_GETFD));
	T_OK(fcntl(src, F_GETFD));
	close(nul);
	close(rd);
	close(dir);
	close(pth);
}

/* file -> /dev/null: sendfile, at an offset (the position stays) and at the
 * position (advanced); the planning flags hold for every move. */
static void to_null(void)
{
	int nul = open("/dev/null", O_WRONLY | O_CLOEXEC);
	struct psplice_result r;
	struct psplice_pair *p;
	int64_t off = 0;
	ssize_t n;

	T_OK(nul);
	p = pair(src, nul, 0);
	T_EQ(lseek(src, 0, SEEK_SET), 0);
	for (int64_t want = 0; want < SIZE; want += n) {
		n = psplice_pair_move(p, &off, NULL, 4096, 0, &r);
		T_EQ(n, SIZE - want < 4096 ? SIZE - want : 4096);
		T_RESULT(r, 0, PSPLICE_SIDE_NONE, n, n);
		T_EQ(r.method, PSPLICE_METHOD_SENDFILE);
		T_EQ(off, want + n);
	}
	T_EQ(psplice_pair_move(p, &off, NULL, 4096, 0, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, 0, 0);
	T_EQ(t_pos(src), 0);

	T_EQ(lseek(src, 1000, SEEK_SET), 1000);
	T_EQ(psplice_pair_move(p, NULL, NULL, 4096, 0, NULL), 4096);
	T_EQ(t_pos(src), 5096);
	T_EQ(psplice_last()->method, PSPLICE_METHOD_SENDFILE);
	T_EQ_U(psplice_last()->out_bytes, 4096);
	psplice_pair_free(p);

	p = pair(src, nul, PSPLICE_F_ONLY(PSPLICE_METHOD_READWRITE));
	off = 0;
	T_EQ(psplice_pair_move(p, &off, NULL, 4096, 0, &r), 4096);
	T_EQ(r.method, PSPLICE_METHOD_READWRITE);
	psplice_pair_free(p);
	p = pair(src, nul, PSPLICE_F_NOFALLBACK | PSPLICE_F_ONLY(PSPLICE_METHOD_READWRITE));
	T_ERRNO(psplice_pair_move(p, &off, NULL, 4096, 0, &r), EOPNOTSUPP);
	T_RESULT(r, EOPNOTSUPP, PSPLICE_SIDE_NONE, 0, 0);
	psplice_pair_free(p);
	close(nul);
}

/* file -> pipe and pipe -> file: splice. */
static void with_pipes(void)
{
	struct psplice_result r;
	struct psplice_pair *p;
	int pp[2], out = new_file("pf", 0);
	int64_t off = 10, oo;

	t_pipe(pp);
	p = pair(src, pp[1], 0);
	T_EQ(lseek(src, 0, SEEK_SET), 0);
	T_EQ(psplice_pair_move(p, &off, NULL, 5000, 0, &r), 5000);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, 5000, 5000);
	T_EQ(r.method, PSPLICE_METHOD_SPLICE);
	T_EQ(off, 5010);
	T_EQ(t_pos(src), 0);
	T_ASSERT(t_check_fd(pp[0], -1, 5000, SEED, 10));
	T_EQ(lseek(src, 20000, SEEK_SET), 20000);
	T_EQ(psplice_pair_move(p, NULL, NULL, 3000, 0, &r), 3000);
	T_EQ(t_pos(src), 23000);
	T_ASSERT(t_check_fd(pp[0], -1, 3000, SEED, 20000));
	T_ERRNO(psplice_pair_move(p, NULL, &off, 3000, 0, &r), ESPIPE);
	T_EQ(r.side, PSPLICE_SIDE_OUT);
	psplice_pair_free(p);

	p = pair(pp[0], out, 0);
	t_fill_fd(pp[1], 6000, SEED);
	T_EQ(psplice_pair_move(p, NULL, NULL, 65536, 0, &r), 6000);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, 6000, 6000);
	T_EQ(r.method, PSPLICE_METHOD_SPLICE);
	T_EQ(t_pos(out), 6000);
	t_fill_fd(pp[1], 6000, SEED);
	oo = 6000;
	T_EQ(psplice_pair_move(p, NULL, &oo, 65536, 0, &r), 6000);
	T_EQ(oo, 12000);
	T_EQ(t_pos(out), 6000);
	T_ASSERT(t_check_fd(out, 0, 6000, SEED, 0));
	T_ASSERT(t_check_fd(out, 6000, 6000, SEED, 0));
	/* The pipe is empty: a per-call NONBLOCK says who would block. */
	T_ERRNO(psplice_pair_move(p, NULL, NULL, 65536, PSPLICE_F_NONBLOCK, &r), EAGAIN);
	T_EQ(r.side, PSPLICE_SIDE_IN);
	T_ERRNO(psplice_pair_move(p, &off, NULL, 1, 0, &r), ESPIPE);
	T_EQ(r.side, PSPLICE_SIDE_IN);
	psplice_pair_free(p);
	t_close_pair(pp);
	close(out);
}

/* socket -> socket: splice through the internal pipe; when the output's
 * peer is gone, the bytes taken stay pending in the pair, in order, nothing
 * lost, and freeing the pair hands them back as parked bytes. */
static void sockets(void)
{
	struct psplice_result r;
	struct psplice_pair *p;
	const struct psplice_result *last;
	int a[2], b[2];
	uint64_t got = 0, pending;
	ssize_t n;

	t_unix_pair(a);
	t_unix_pair(b);
	p = pair(a[0], b[0], 0);
	t_fill_fd(a[1], 50000, SEED);
	while (got < 50000) {
		n = psplice_pair_move(p, NULL, NULL, 65536, 0, &r);
		T_ASSERT(n > 0);
		T_RESULT(r, 0, PSPLICE_SIDE_NONE, n, n);
		T_EQ(r.method, PSPLICE_METHOD_SPLICE_PIPE);
		got += (uint64_t)n;
	}
	T_EQ_U(got, 50000);
	T_ASSERT(t_check_fd(b[1], -1, 50000, SEED, 0));
	T_ERRNO(psplice_pair_move(p, NULL, NULL, 65536, PSPLICE_F_NONBLOCK, &r), EAGAIN);
	T_EQ(r.side, PSPLICE_SIDE_IN);
	T_EQ_U(psplice_pair_pending(p), 0);

	close(b[1]);
	t_fill_fd(a[1], 20000, SEED + 1);
	T_ERRNO(psplice_pair_move(p, NULL, NULL, 65536, 0, &r), EPIPE);
	T_EQ(r.side, PSPLICE_SIDE_OUT);
	T_EQ_U(r.out_bytes, 0);
	T_ASSERT(r.in_bytes > 0);
	T_EQ_U(r.parked_len, 0);
	T_ASSERT(r.parked == NULL);
	pending = r.in_bytes;
	T_EQ_U(psplice_pair_pending(p), pending);
	/* The next move meets the same error, and reads nothing more. */
	T_ERRNO(psplice_pair_move(p, NULL, NULL, 65536, 0, &r), EPIPE);
	T_RESULT(r, EPIPE, PSPLICE_SIDE_OUT, 0, 0);
	T_EQ_U(psplice_pair_pending(p), pending);
	/* Freed, the pair hands them back. */
	psplice_pair_free(p);
	last = psplice_last();
	T_EQ_U(last->parked_len, pending);
	T_EQ_U(last->in_bytes, pending);
	T_ASSERT(t_check_buf(last->parked, last->parked_len, SEED + 1, 0));
	/* The rest is still in the input, right after them. */
	close(a[1]);
	T_ASSERT(t_check_fd(a[0], -1, 20000 - pending, SEED + 1, pending));
	close(a[0]);
	close(b[0]);
	no_pending();
}

/* file -> file: copy_file_range, at offsets and at the positions; a file
 * that grew after the pair was prepared is copied whole. */
static void file_to_file(void)
{
	struct psplice_result r;
	struct psplice_pair *p;
	int out = new_file("ff", 0), grow = new_file("grow", 0);
	int64_t oi = 0, oo = 0;
	ssize_t n;

	p = pair(src, out, 0);
	T_EQ(lseek(src, 0, SEEK_SET), 0);
	while ((n = psplice_pair_move(p, &oi, &oo, 30000, 0, &r)) > 0) {
		T_EQ(r.method, PSPLICE_METHOD_COPY_FILE_RANGE);
		T_EQ(oi, oo);
	}
	T_EQ(n, 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, 0, 0);
	T_EQ(oi, SIZE);
	T_EQ(t_pos(src), 0);
	T_EQ(t_pos(out), 0);
	T_ASSERT(t_check_file(t_path("ff"), SIZE, SEED));

	T_OK(ftruncate(out, 0));
	while ((n = psplice_pair_move(p, NULL, NULL, 30000, 0, &r)) > 0)
		T_EQ(r.method, PSPLICE_METHOD_COPY_FILE_RANGE);
	T_EQ(n, 0);
	T_EQ(t_pos(src), SIZE);
	T_EQ(t_pos(out), SIZE);
	T_ASSERT(t_check_file(t_path("ff"), SIZE, SEED));
	psplice_pair_free(p);

	put(grow, 0, 1000, SEED, 0);
	T_OK(ftruncate(out, 0));
	p = pair(grow, out, 0);
	put(grow, 1000, 9000, SEED, 1000);
	oi = oo = 0;
	T_EQ(psplice_pair_move(p, &oi, &oo, 65536, 0, &r), 10000);
	T_EQ(psplice_pair_move(p, &oi, &oo, 65536, 0, &r), 0);
	T_ASSERT(t_check_file(t_path("ff"), 10000, SEED));
	psplice_pair_free(p);
	close(grow);
	close(out);
}

/* The overlap refusal measures the file at each move, not when the pair was
 * prepared: with the size of then, both moves below would go ahead. */
static void overlap_after_growth(void)
{
	struct psplice_result r;
	struct psplice_pair *p;
	int f = t_make_file(t_path("ov"), 4096, SEED), g = open(t_path("ov"), O_RDWR | O_CLOEXEC);
	int cat_in = new_file("cat", 0), cat_out = open(t_path("cat"), O_WRONLY | O_APPEND | O_CLOEXEC);
	int64_t oi = 0, oo = 4096;

	T_OK(g);
	T_OK(cat_out);
	p = pair(f, g, 0);
	put(f, 4096, 12288, SEED, 4096);
	T_ERRNO(psplice_pair_move(p, &oi, &oo, 8192, 0, &r), EINVAL);
	T_RESULT(r, EINVAL, PSPLICE_SIDE_NONE, 0, 0);
	T_EQ(oi, 0);
	T_EQ(oo, 4096);
	T_ASSERT(t_check_file(t_path("ov"), 16384, SEED));
	/* Beside it, not over it: allowed. */
	oo = 16384;
	T_EQ(psplice_pair_move(p, &oi, &oo, 4096, 0, &r), 4096);
	T_ASSERT(t_check_fd(f, 16384, 4096, SEED, 0));
	psplice_pair_free(p);

	/* `cat f >> f`, prepared while f was empty. */
	p = pair(cat_in, cat_out, 0);
	put(cat_in, 0, 8192, SEED, 0);
	T_ERRNO(psplice_pair_move(p, NULL, NULL, 65536, 0, &r), EINVAL);
	T_RESULT(r, EINVAL, PSPLICE_SIDE_NONE, 0, 0);
	T_ASSERT(t_check_file(t_path("cat"), 8192, SEED));
	T_ERRNO(psplice_pair_move(p, NULL, &oo, 1, 0, &r), EINVAL); /* O_APPEND */
	T_EQ(r.side, PSPLICE_SIDE_OUT);
	psplice_pair_free(p);
	close(f);
	close(g);
	close(cat_in);
	close(cat_out);
}

/* A pipe without a reader and a socket whose peer is gone: EPIPE on the
 * output side, and no SIGPIPE delivered or left pending. */
static void readers_gone(bool blocked)
{
	struct psplice_result r;
	struct psplice_pair *p;
	sigset_t set, old;
	int pp[2], s[2];
	int64_t oi = 0;

	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	if (blocked)
		T_OK(pthread_sigmask(SIG_BLOCK, &set, &old));
	t_pipe(pp);
	close(pp[0]);
	p = pair(src, pp[1], 0);
	T_ERRNO(psplice_pair_move(p, &oi, NULL, 4096, 0, &r), EPIPE);
	T_RESULT(r, EPIPE, PSPLICE_SIDE_OUT, 0, 0);
	T_EQ(oi, 0);
	T_EQ(psplice_last()->side, PSPLICE_SIDE_OUT);
	psplice_pair_free(p);
	close(pp[1]);

	t_unix_pair(s);
	close(s[1]);
	p = pair(src, s[0], 0);
	T_ERRNO(psplice_pair_move(p, &oi, NULL, 4096, 0, &r), EPIPE);
	T_RESULT(r, EPIPE, PSPLICE_SIDE_OUT, 0, 0);
	psplice_pair_free(p);
	close(s[0]);
	if (blocked) {
		no_pending();
		T_OK(pthread_sigmask(SIG_SETMASK, &old, NULL));
	}
	no_pending();
}

/* SIGPIPE's default disposition: a SIGPIPE that got through kills the
 * child, which t_child reports. */
static void sigpipe_default(void *arg)
{
	(void)arg;
	alarm(50);
	signal(SIGPIPE, SIG_DFL);
	readers_gone(false);
	readers_gone(true);
}

static void sigpipe_ignored(void *arg)
{
	(void)arg;
	alarm(50);
	signal(SIGPIPE, SIG_IGN);
	readers_gone(false);
	/* Blocked, an ignored SIGPIPE is kept pending: the move takes it back. */
	readers_gone(true);
}

static void deny(long nr, int err)
{
	if (t_seccomp_errno(nr, err, -1, 0) < 0)
		T_FAILED("seccomp filter: %s", strerror(errno));
}

static void forbid(long nr)
{
	if (t_seccomp_kill(nr) < 0)
		T_FAILED("seccomp filter: %s", strerror(errno));
}

/* After the pairs are prepared (and each has moved once, so the thread's
 * buffers and internal pipe exist), classifying fails and seeking or
 * touching the signal mask would kill the process: the moves go on. With
 * SIGPIPE kept ignored (PSPLICE_F_SIGPIPE_IGNORED), a pipe or socket output
 * needs no guard either. */
static void hot_path(void *arg)
{
	int nul = open("/dev/null", O_WRONLY | O_CLOEXEC), pp[2], a[2], b[2];
	struct psplice_pair *to_null, *to_pipe, *sock;
	struct psplice_result r;
	int64_t off = 0;
	uint64_t got;
	ssize_t n;

	(void)arg;
	alarm(50);
	signal(SIGPIPE, SIG_IGN);
	T_OK(nul);
	t_pipe(pp);
	t_unix_pair(a);
	t_unix_pair(b);
	to_null = pair(src, nul, 0);
	to_pipe = pair(src, pp[1], PSPLICE_F_SIGPIPE_IGNORED);
	sock = pair(a[0], b[0], PSPLICE_F_SIGPIPE_IGNORED);
	T_EQ(psplice_pair_move(to_null, &off, NULL, 1, 0, &r), 1);
	T_EQ(psplice_pair_move(to_pipe, &off, NULL, 1, 0, &r), 1);
	T_ASSERT(t_check_fd(pp[0], -1, 1, SEED, 1));
	t_fill_fd(a[1], 1, SEED);
	T_EQ(psplice_pair_move(sock, NULL, NULL, 1, 0, &r), 1);
	T_ASSERT(t_check_fd(b[1], -1, 1, SEED, 0));
	T_EQ(lseek(src, 0, SEEK_SET), 0);

	deny(SYS_fcntl, EPERM);
	deny(SYS_fstat, EPERM);
	deny(SYS_newfstatat, EPERM);
#ifdef SYS_statx
	deny(SYS_statx, EPERM);
#endif
	forbid(SYS_lseek);
	forbid(SYS_rt_sigprocmask);
	forbid(SYS_rt_sigpending);
	/* rt_sigtimedwait stays allowed: a move that meets a gone reader
	 * (the EPIPE below) takes back a SIGPIPE a blocked mask kept. */

	off = 0;
	for (int i = 0; i < 10; i++) {
		T_EQ(psplice_pair_move(to_null, &off, NULL, 4096, 0, &r), 4096);
		T_EQ(r.method, PSPLICE_METHOD_SENDFILE);
		T_EQ(psplice_pair_move(to_null, NULL, NULL, 4096, 0, &r), 4096);
	}
	T_EQ(off, 40960);
	T_EQ(psplice_pair_move(to_pipe, &off, NULL, 4096, 0, &r), 4096);
	T_EQ(r.method, PSPLICE_METHOD_SPLICE);
	T_ASSERT(t_check_fd(pp[0], -1, 4096, SEED, 40960));
	t_fill_fd(a[1], 20000, SEED);
	for (got = 0; got < 20000; got += (uint64_t)n) {
		n = psplice_pair_move(sock, NULL, NULL, 65536, 0, &r);
		T_ASSERT(n > 0);
		T_EQ(r.method, PSPLICE_METHOD_SPLICE_PIPE);
	}
	T_ASSERT(t_check_fd(b[1], -1, 20000, SEED, 0));
	/* EPIPE too, without the guard. */
	close(pp[0]);
	T_ERRNO(psplice_pair_move(to_pipe, &off, NULL, 4096, 0, &r), EPIPE);
	T_EQ(r.side, PSPLICE_SIDE_OUT);

	/* psplice() classifies on every call, and now it cannot. */
	T_ERRNO(psplice(src, &off, nul, NULL, 4096, 0), EBADF);
	T_EQ(psplice_last()->side, PSPLICE_SIDE_IN);
	/* Not exit(): a sanitizer's exit handlers may touch the signal mask. */
	_exit(T_PASS);
}

int main(int argc, char **argv)
{
	t_dir(argc, argv);
	alarm(55);
	src = t_make_file(t_path("src"), SIZE, SEED);
	/* Default SIGPIPE disposition throughout: a SIGPIPE that got through
	 * would kill the test. */
	refusals();
	to_null();
	with_pipes();
	sockets();
	file_to_file();
	overlap_after_growth();
	T_EQ(t_child(sigpipe_default, NULL), T_PASS);
	T_EQ(t_child(sigpipe_ignored, NULL), T_PASS);
	/* valgrind's own syscalls would meet the filters. */
	if (!t_under_valgrind())
		T_EQ(t_child(hot_path, NULL), T_PASS);
	close(src);
	return T_PASS;
}
