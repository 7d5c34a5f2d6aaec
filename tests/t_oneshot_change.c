/* One-shot calls on fds that change between two calls: an fd number closed
 * and opened again as another kind (dup2 over it), O_APPEND and O_NONBLOCK
 * set and cleared on the open file, a pipe's reader gone, a file cut short,
 * and the same call from eight threads at once, each on fds of its own.
 * Whatever a one-shot call remembers from the call before, each call must
 * pick the path of the fds as they are now, attribute its error to the
 * side that failed, and keep SIGPIPE from the caller. Every case asserts
 * the method and the side, not only the bytes. A thread's word that SIGPIPE
 * is ignored is checked at its first one-shot call. An O_APPEND output refuses
 * copy_file_range with EBADF and splice and sendfile with EINVAL, as in
 * rust-lang/rust#82417. */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "t.h"

#define CHUNK 4096
#define SRC_SIZE (64 * CHUNK)
#define THREADS 8
#define ROUNDS 200

static int src;

static int make_out(const char *name)
{
	int fd = open(t_path(name), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	T_OK(fd);
	return fd;
}

/* CHUNK bytes of src at off into fd (its position), which takes them all. */
static void move_chunk(int fd, int64_t off, int method)
{
	struct psplice_result r;
	int64_t o = off;

	T_EQ(psplice_ex(src, &o, fd, NULL, CHUNK, 0, &r), CHUNK);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, CHUNK, CHUNK);
	T_EQ(r.method, method);
	T_EQ(o, off + CHUNK);
}

static void no_sigpipe_pending(void)
{
	sigset_t set;

	T_OK(sigpending(&set));
	T_ASSERT(!sigismember(&set, SIGPIPE));
}

/* The output's fd number is a file, then a socket, then a pipe whose
 * reader goes, then a file again. */
static void output_reused(void)
{
	int n = make_out("o1"), s[2], p[2], f;
	struct psplice_result r;
	int64_t off = CHUNK;
	uint8_t buf[CHUNK];

	move_chunk(n, 0, PSPLICE_METHOD_COPY_FILE_RANGE);
	t_unix_pair(s);
	T_OK(dup2(s[0], n));
	close(s[0]);
	move_chunk(n, CHUNK, PSPLICE_METHOD_SENDFILE);
	T_EQ(read(s[1], buf, sizeof(buf)), CHUNK);
	T_ASSERT(t_check_buf(buf, CHUNK, 1, CHUNK));
	close(s[1]);
	T_ERRNO(psplice_ex(src, &off, n, NULL, CHUNK, 0, &r), EPIPE);
	T_RESULT(r, EPIPE, PSPLICE_SIDE_OUT, 0, 0);
	T_EQ(off, CHUNK);
	no_sigpipe_pending();

	t_pipe(p);
	T_OK(dup2(p[1], n));
	close(p[1]);
	move_chunk(n, 2 * CHUNK, PSPLICE_METHOD_SPLICE);
	T_EQ(read(p[0], buf, sizeof(buf)), CHUNK);
	T_ASSERT(t_check_buf(buf, CHUNK, 1, 2 * CHUNK));
	close(p[0]);
	off = 3 * CHUNK;
	T_ERRNO(psplice_ex(src, &off, n, NULL, CHUNK, 0, &r), EPIPE);
	T_RESULT(r, EPIPE, PSPLICE_SIDE_OUT, 0, 0);
	no_sigpipe_pending();

	f = make_out("o2");
	T_OK(dup2(f, n));
	close(f);
	move_chunk(n, 4 * CHUNK, PSPLICE_METHOD_COPY_FILE_RANGE);
	T_ASSERT(t_check_fd(n, 0, CHUNK, 1, 4 * CHUNK));
	close(n);
}

/* The input's fd number is a pipe with bytes in it, then a file, then a
 * socket whose peer has gone (end of input), then closed (EBADF, side in). */
static void input_reused(void)
{
	int out = make_out("i1"), p[2], s[2], n;
	struct psplice_result r;
	int64_t off;

	t_pipe(p);
	t_fill_fd(p[1], CHUNK, 1);
	n = p[0];
	close(p[1]);
	T_EQ(psplice_ex(n, NULL, out, NULL, CHUNK, 0, &r), CHUNK);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, CHUNK, CHUNK);
	T_EQ(r.method, PSPLICE_METHOD_SPLICE);

	T_OK(dup2(src, n));
	off = CHUNK;
	T_EQ(psplice_ex(n, &off, out, NULL, CHUNK, 0, &r), CHUNK);
	T_EQ(r.method, PSPLICE_METHOD_COPY_FILE_RANGE);
	T_EQ(t_pos(n), 0);
	T_ASSERT(t_check_fd(out, 0, 2 * CHUNK, 1, 0));

	t_unix_pair(s);
	T_OK(dup2(s[0], n));
	close(s[0]);
	close(s[1]);
	T_EQ(psplice_ex(n, NULL, out, NULL, CHUNK, 0, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, 0, 0);

	close(n);
	T_ERRNO(psplice_ex(n, NULL, out, NULL, CHUNK, 0, &r), EBADF);
	T_EQ(r.side, PSPLICE_SIDE_IN);
	close(out);
}

/* The input's fd number a file, then /dev/zero, which sendfile(2) reads
 * too, at an offset or not (Linux 6.18): a device takes no offset (ESPIPE,
 * the input's), and without one goes through the internal pipe. */
static void input_to_device(void)
{
	int n = dup(src), s[2], z = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	struct psplice_result r;
	uint8_t buf[CHUNK];
	int64_t off = 0;

	T_OK(n);
	T_OK(z);
	t_unix_pair(s);
	T_EQ(psplice_ex(n, &off, s[0], NULL, CHUNK, 0, &r), CHUNK);
	T_EQ(r.method, PSPLICE_METHOD_SENDFILE);
	T_EQ(read(s[1], buf, sizeof(buf)), CHUNK);
	T_OK(dup2(z, n));
	T_ERRNO(psplice_ex(n, &off, s[0], NULL, CHUNK, 0, &r), ESPIPE);
	T_RESULT(r, ESPIPE, PSPLICE_SIDE_IN, 0, 0);
	T_EQ(off, CHUNK);
	T_EQ(psplice_ex(n, NULL, s[0], NULL, CHUNK, 0, &r), CHUNK);
	T_EQ(r.method, PSPLICE_METHOD_SPLICE_PIPE);
	T_EQ(read(s[1], buf, sizeof(buf)), CHUNK);
	T_EQ(buf[0], 0);
	close(n);
	close(z);
	close(s[0]);
	close(s[1]);
}

/* The input's fd number a pipe, then a file at its end, into a full
 * blocking socket with PSPLICE_F_NONBLOCK: the end of input (0), which
 * only a file's kind tells from the output's EAGAIN. */
static void input_ended_nonblock(void)
{
	int n, p[2], s[2], f = open(t_path("src"), O_RDONLY | O_CLOEXEC), fl;
	struct psplice_result r;
	uint64_t full;

	T_OK(f);
	T_EQ(lseek(f, 0, SEEK_END), SRC_SIZE);
	t_pipe(p);
	t_unix_pair(s);
	t_fill_fd(p[1], CHUNK, 1);
	n = p[0];
	T_EQ(psplice_ex(n, NULL, s[0], NULL, CHUNK, 0, &r), CHUNK);
	T_EQ(r.method, PSPLICE_METHOD_SPLICE);
	t_recv_check(s[1], 0, CHUNK, 1);
	T_OK(dup2(f, n));
	fl = fcntl(s[0], F_GETFL);
	T_OK(fcntl(s[0], F_SETFL, fl | O_NONBLOCK));
	full = t_fill_full(s[0], 2);
	T_OK(fcntl(s[0], F_SETFL, fl));
	T_EQ(psplice_ex(n, NULL, s[0], NULL, CHUNK, PSPLICE_F_NONBLOCK, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, 0, 0);
	t_check_rest(s[1], 0, full, 2);
	close(n);
	close(p[1]);
	close(f);
	close(s[0]);
	close(s[1]);
}

/* O_APPEND set between two calls on an output the calls give an offset:
 * refused (EINVAL, the output's) before a byte moves, whatever the length,
 * none included, where pwrite(2) would append whatever the offset says. */
static void append_offset(int out, int fl)
{
	struct psplice_result r;
	int64_t oi = 0, oo = 0;
	struct stat st;

	T_EQ(psplice_ex(src, &oi, out, &oo, CHUNK, 0, &r), CHUNK);
	T_EQ(r.method, PSPLICE_METHOD_COPY_FILE_RANGE);
	T_OK(fcntl(out, F_SETFL, fl | O_APPEND));
	T_OK(fstat(out, &st));
	T_ERRNO(psplice_ex(src, &oi, out, &oo, CHUNK, 0, &r), EINVAL);
	T_RESULT(r, EINVAL, PSPLICE_SIDE_OUT, 0, 0);
	T_ERRNO(psplice_ex(src, &oi, out, &oo, 0, 0, &r), EINVAL);
	T_RESULT(r, EINVAL, PSPLICE_SIDE_OUT, 0, 0);
	T_ERRNO(psplice_copy(src, &oi, out, &oo, 0, 0, &r), EINVAL);
	T_RESULT(r, EINVAL, PSPLICE_SIDE_OUT, 0, 0);
	T_ERRNO(psplice_copy(src, &oi, out, &oo, 2 * CHUNK, 0, &r), EINVAL);
	T_RESULT(r, EINVAL, PSPLICE_SIDE_OUT, 0, 0);
	T_EQ(oi, CHUNK);
	T_EQ(oo, CHUNK);
	T_ASSERT(t_check_fd(out, 0, st.st_size, 1, 0));
	T_OK(fcntl(out, F_SETFL, fl));
}

/* O_APPEND set on the output between two calls, then cleared. */
static void append_toggled(void)
{
	int out = make_out("a"), fl = fcntl(out, F_GETFL);
	struct stat st;

	move_chunk(out, 0, PSPLICE_METHOD_COPY_FILE_RANGE);
	T_EQ(lseek(out, 0, SEEK_SET), 0);
	T_OK(fcntl(out, F_SETFL, fl | O_APPEND));
	/* Every kernel path refuses it: appended through user memory, at the
	 * end whatever the position says, the flags left as they are. */
	move_chunk(out, CHUNK, PSPLICE_METHOD_READWRITE);
	T_EQ(fcntl(out, F_GETFL), fl | O_APPEND);
	T_OK(fstat(out, &st));
	T_EQ(st.st_size, 2 * CHUNK);
	T_OK(fcntl(out, F_SETFL, fl));
	move_chunk(out, 2 * CHUNK, PSPLICE_METHOD_COPY_FILE_RANGE);
	T_ASSERT(t_check_fd(out, 0, 3 * CHUNK, 1, 0));
	append_offset(out, fl);
	close(out);
}

/* O_NONBLOCK set on an empty input pipe, then on a full output socket,
 * then cleared: EAGAIN on the side that would block, then the bytes. */
static void nonblock_toggled(void)
{
	int out = make_out("nb"), p[2], s[2], fl;
	struct psplice_result r;
	uint64_t full;
	int64_t off = 0;
	pid_t pid;

	t_pipe(p);
	fl = fcntl(p[0], F_GETFL);
	T_OK(fcntl(p[0], F_SETFL, fl | O_NONBLOCK));
	T_ERRNO(psplice_ex(p[0], NULL, out, NULL, CHUNK, 0, &r), EAGAIN);
	T_RESULT(r, EAGAIN, PSPLICE_SIDE_IN, 0, 0);
	T_OK(fcntl(p[0], F_SETFL, fl));
	pid = t_feed(p[1], CHUNK, 1);
	close(p[1]);
	T_EQ(psplice_ex(p[0], NULL, out, NULL, CHUNK, 0, &r), CHUNK);
	T_EQ(r.method, PSPLICE_METHOD_SPLICE);
	T_ASSERT(t_wait(pid));
	close(p[0]);

	t_unix_pair(s);
	fl = fcntl(s[0], F_GETFL);
	T_OK(fcntl(s[0], F_SETFL, fl | O_NONBLOCK));
	full = t_fill_full(s[0], 2);
	T_ERRNO(psplice_ex(src, &off, s[0], NULL, CHUNK, 0, &r), EAGAIN);
	T_RESULT(r, EAGAIN, PSPLICE_SIDE_OUT, 0, 0);
	T_EQ(off, 0);
	T_OK(fcntl(s[0], F_SETFL, fl));
	t_check_rest(s[1], 0, full, 2);
	T_EQ(psplice_ex(src, &off, s[0], NULL, CHUNK, 0, &r), CHUNK);
	T_EQ(r.method, PSPLICE_METHOD_SENDFILE);
	T_EQ(fcntl(s[0], F_GETFL), fl);
	t_check_rest(s[1], 0, CHUNK, 1);
	close(s[0]);
	close(s[1]);
	close(out);
}

/* The input file cut short between calls: the call at an offset past the
 * new end is end of input, not an error; cut in the middle of a chunk, a
 * short count. */
static void truncated(void)
{
	int in = t_make_file(t_path("t"), 4 * CHUNK, 3), out = make_out("to");
	struct psplice_result r;
	int64_t off = 0;

	T_EQ(psplice_ex(in, &off, out, NULL, CHUNK, 0, &r), CHUNK);
	T_EQ(r.method, PSPLICE_METHOD_COPY_FILE_RANGE);
	T_OK(ftruncate(in, CHUNK + 100));
	T_EQ(psplice_ex(in, &off, out, NULL, CHUNK, 0, &r), 100);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, 100, 100);
	T_EQ(off, CHUNK + 100);
	T_OK(ftruncate(in, 0));
	T_EQ(psplice_ex(in, &off, out, NULL, CHUNK, 0, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, 0, 0);
	T_EQ(off, CHUNK + 100);
	T_ASSERT(t_check_fd(out, 0, CHUNK + 100, 3, 0));
	close(in);
	close(out);
}

/* Each thread moves src, chunk by chunk at offsets of its own, into an
 * output of a kind that depends on its number: a file, a pipe, a socket. */
struct worker {
	int id, kind;
	int fd, peer;   /* the output, and a pipe's or socket's other end */
	bool ok;
};

static bool worker_round(const struct worker *w, int64_t off)
{
	struct psplice_result r;
	static const int method[] = {
		PSPLICE_METHOD_COPY_FILE_RANGE, PSPLICE_METHOD_SPLICE, PSPLICE_METHOD_SENDFILE,
	};
	uint8_t buf[CHUNK];
	int64_t o = off, oo = off;

	if (psplice_ex(src, &o, w->fd, w->kind ? NULL : &oo, CHUNK, 0, &r) != CHUNK ||
	    r.method != method[w->kind] || r.side != PSPLICE_SIDE_NONE || o != off + CHUNK)
		return false;
	if (w->kind == 0)
		return true;
	return read(w->peer, buf, sizeof(buf)) == CHUNK && t_check_buf(buf, CHUNK, 1, (uint64_t)off);
}

static void *worker_run(void *arg)
{
	struct worker *w = arg;
	int i;

	w->ok = true;
	for (i = 0; i < ROUNDS && w->ok; i++)
		w->ok = worker_round(w, (int64_t)((i * 7 + w->id) % (SRC_SIZE / CHUNK)) * CHUNK);
	return NULL;
}

/* Worker i's output: a file, a pipe or a socket, by i % 3, made here, as
 * t_path's storage is not the threads' to share. */
static void worker_init(struct worker *w, int i)
{
	char name[16];
	int fds[2];

	*w = (struct worker){ .id = i, .kind = i % 3, .peer = -1 };
	if (w->kind == 0) {
		snprintf(name, sizeof(name), "w%d", i);
		w->fd = make_out(name);
		return;
	}
	(w->kind == 1 ? t_pipe : t_unix_pair)(fds);
	w->fd = w->kind == 1 ? fds[1] : fds[0];
	w->peer = w->kind == 1 ? fds[0] : fds[1];
}

static void threads(void)
{
	struct worker w[THREADS];
	pthread_t th[THREADS];
	int i;

	for (i = 0; i < THREADS; i++) {
		worker_init(&w[i], i);
		T_EQ(pthread_create(&th[i], NULL, worker_run, &w[i]), 0);
	}
	for (i = 0; i < THREADS; i++) {
		T_EQ(pthread_join(th[i], NULL), 0);
		if (!w[i].ok)
			T_FAILED("thread %d: a move went wrong", i);
		close(w[i].fd);
		if (w[i].peer >= 0)
			close(w[i].peer);
	}
	T_EQ(t_pos(src), 0);
}

/* The word that SIGPIPE is ignored: a thread's first one-shot call that
 * gives it while SIGPIPE is not ignored is refused; once a call found it
 * kept, the thread's later calls take it as kept, and an output whose
 * reader left is EPIPE, the output's, with no SIGPIPE left pending. */
static void *promise_run(void *arg)
{
	struct psplice_result r;
	int64_t off = 0;
	int p[2], out = *(int *)arg;

	signal(SIGPIPE, SIG_DFL);
	T_ERRNO(psplice_ex(src, &off, out, NULL, CHUNK, PSPLICE_F_SIGPIPE_IGNORED, &r), EINVAL);
	T_RESULT(r, EINVAL, PSPLICE_SIDE_NONE, 0, 0);
	signal(SIGPIPE, SIG_IGN);
	t_pipe(p);
	close(p[0]);
	T_ERRNO(psplice_ex(src, &off, p[1], NULL, CHUNK, PSPLICE_F_SIGPIPE_IGNORED, &r), EPIPE);
	T_RESULT(r, EPIPE, PSPLICE_SIDE_OUT, 0, 0);
	T_ERRNO(psplice_ex(src, &off, p[1], NULL, CHUNK, PSPLICE_F_SIGPIPE_IGNORED, &r), EPIPE);
	no_sigpipe_pending();
	close(p[1]);
	signal(SIGPIPE, SIG_DFL);
	T_EQ(psplice_ex(src, &off, out, NULL, CHUNK, PSPLICE_F_SIGPIPE_IGNORED, &r), CHUNK);
	T_EQ(r.method, PSPLICE_METHOD_COPY_FILE_RANGE);
	return NULL;
}

static void promise_once(void)
{
	int out = make_out("promise");
	pthread_t th;

	T_EQ(pthread_create(&th, NULL, promise_run, &out), 0);
	T_EQ(pthread_join(th, NULL), 0);
	close(out);
}

/* A thread's memory holds every fd it classified, as a server's thousand
 * open files: once each pair of files was moved, a second round of
 * one-shot copies asks the kernel nothing about them (fstat is refused
 * by a seccomp filter, so a call that asked would fail). With a memory
 * of a few slots chosen by fd number, fds evicted each other and every
 * call asked. */
#define MANY 1000

static void memory_holds_run(void *arg)
{
	static int in[MANY], out[MANY];
	struct rlimit rl;
	int64_t off, ooff;
	int o, i;

	(void)arg;
	T_OK(getrlimit(RLIMIT_NOFILE, &rl));
	if (rl.rlim_cur < 2 * MANY + 64 && rl.rlim_max >= 2 * MANY + 64)
		rl.rlim_cur = 2 * MANY + 64;
	T_OK(setrlimit(RLIMIT_NOFILE, &rl));
	if (rl.rlim_cur < 2 * MANY + 64)
		_exit(T_SKIP);
	o = make_out("many");
	for (i = 0; i < MANY; i++) {
		T_OK(in[i] = dup(src));
		T_OK(out[i] = dup(o));
		off = 0, ooff = (int64_t)i * 512;
		T_EQ(psplice(in[i], &off, out[i], &ooff, 512, 0), 512);
	}
	T_OK(t_seccomp_errno(SYS_fstat, EPERM, -1, 0));
	T_OK(t_seccomp_errno(SYS_newfstatat, EPERM, -1, 0));
#ifdef SYS_statx
	T_OK(t_seccomp_errno(SYS_statx, EPERM, -1, 0));
#endif
	for (i = 0; i < MANY; i++) {
		off = 512, ooff = (int64_t)i * 512;
		T_EQ(psplice(in[i], &off, out[i], &ooff, 512, 0), 512);
		T_EQ(psplice_last()->method, PSPLICE_METHOD_COPY_FILE_RANGE);
	}
	_exit(T_PASS);
}

static void memory_holds(void)
{
	int rc;

	/* valgrind does not take the seccomp filter's syscall */
	if (t_under_valgrind())
		return;
	rc = t_child(memory_holds_run, NULL);
	if (rc == T_SKIP)
		printf("t_oneshot_change: memory_holds not checked: RLIMIT_NOFILE below %d\n",
		       2 * MANY + 64);
	else
		T_EQ(rc, T_PASS);
}

int main(int argc, char **argv)
{
	t_dir(argc, argv);
	src = t_make_file(t_path("src"), SRC_SIZE, 1);
	T_EQ(lseek(src, 0, SEEK_SET), 0);
	output_reused();
	input_reused();
	input_to_device();
	input_ended_nonblock();
	append_toggled();
	nonblock_toggled();
	truncated();
	threads();
	promise_once();
	memory_holds();
	return T_PASS;
}
