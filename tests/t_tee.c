/* psplice_tee (issue 11): one input to many sinks.
 * - every sink kind at once (a file on the scratch fs and on tmpfs, an
 *   O_APPEND file, a pipe, a Unix and a TCP socket, /dev/null) from a file,
 *   a pipe and a socket, sizes 0 ... 16 MiB + 3, each sink's bytes checked,
 *   the zero-copy paths taken from a pipe;
 * - the prepared form in pieces (psplice_tee_copy with a length, moves);
 * - one sink failing (EPIPE, a reader gone; ENOSPC, a full tmpfs) while the
 *   others get every byte, the process not killed;
 * - a slow sink with PSPLICE_F_NONBLOCK: held within hold_max, then
 *   reported blocked (side out) while the others go on; nothing lost, and
 *   psplice_tee_take hands its pending bytes back in order;
 * - bad arguments refused. */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "t.h"

#define SEED 11
#define MiB (1u << 20)

enum { S_FILE, S_TMPFS, S_APPEND, S_PIPE, S_UNIX, S_TCP, S_NULL, S_N };
static const char *const names[S_N] = { "file", "tmpfs", "append", "pipe", "unix",
					"tcp", "null" };

struct sinks {
	int fd[S_N];
	pid_t drain[S_N];
	char path[S_N][4200];
};

/* In a child: every fd but keep is closed, so that readers see the end. */
static void close_others(int keep)
{
	for (int fd = 3; fd < 1024; fd++)
		if (fd != keep)
			close(fd);
}

static pid_t drain(int fd, uint64_t n)
{
	pid_t pid = fork();
	char extra;

	T_OK(pid);
	if (pid)
		return pid;
	close_others(fd);
	if (!t_check_fd(fd, -1, n, SEED, 0))
		_exit(1);
	_exit(read(fd, &extra, 1) == 0 ? 0 : 2);
}

static pid_t feed(int fd, uint64_t n)
{
	pid_t pid = fork();

	T_OK(pid);
	if (pid)
		return pid;
	close_others(fd);
	_exit(t_wait(t_feed(fd, n, SEED)) ? 0 : 1);
}

static int create(const char *path, int extra)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | extra, 0644);

	T_OK(fd);
	return fd;
}

static void open_sinks(struct sinks *s, uint64_t n)
{
	int p[3][2];

	snprintf(s->path[S_FILE], 4200, "%s", t_path("out.file"));
	snprintf(s->path[S_TMPFS], 4200, "%s/out.tmpfs", t_tmpfs_dir());
	snprintf(s->path[S_APPEND], 4200, "%s", t_path("out.append"));
	s->fd[S_FILE] = create(s->path[S_FILE], 0);
	s->fd[S_TMPFS] = create(s->path[S_TMPFS], 0);
	s->fd[S_APPEND] = create(s->path[S_APPEND], O_APPEND);
	t_pipe(p[0]);
	t_unix_pair(p[1]);
	t_tcp_pair(p[2]);
	for (int i = 0; i < 3; i++) {
		s->fd[S_PIPE + i] = p[i][1];
		s->drain[S_PIPE + i] = drain(p[i][0], n);
		close(p[i][0]);
	}
	s->fd[S_NULL] = open("/dev/null", O_WRONLY | O_CLOEXEC);
	T_OK(s->fd[S_NULL]);
}

static void check_sinks(struct sinks *s, const struct psplice_result *res, uint64_t n)
{
	for (int i = 0; i < S_N; i++) {
		close(s->fd[i]);
		if (res) {
			if (res[i].error || res[i].out_bytes != n)
				T_FAILED("%s: error %d, %llu of %llu bytes", names[i],
					 res[i].error, (unsigned long long)res[i].out_bytes,
					 (unsigned long long)n);
			T_EQ_U(res[i].in_bytes, n);
		}
		if (i >= S_PIPE && i <= S_TCP && !t_wait(s->drain[i]))
			T_FAILED("%s: the reader saw wrong bytes (%llu)", names[i],
				 (unsigned long long)n);
		if (i <= S_APPEND && !t_check_file(s->path[i], n, SEED))
			T_FAILED("%s: wrong bytes (%llu)", names[i], (unsigned long long)n);
	}
}

enum { IN_FILE, IN_PIPE, IN_UNIX };

/* The input of kind k with n bytes of the stream: *feeder is the child
 * writing into a pipe or socket, or 0. */
static int open_input(int k, uint64_t n, pid_t *feeder)
{
	int p[2], fd;

	*feeder = 0;
	if (k == IN_FILE) {
		fd = t_make_file(t_path("in"), n, SEED);
		T_OK(lseek(fd, 0, SEEK_SET));
		return fd;
	}
	if (k == IN_PIPE)
		t_pipe(p);
	else
		t_unix_pair(p);
	*feeder = feed(p[1], n);
	close(p[1]);
	return p[0];
}

static void every_sink(int in_kind, uint64_t n)
{
	struct psplice_result res[S_N];
	struct sinks s;
	pid_t feeder;
	int in = open_input(in_kind, n, &feeder);

	open_sinks(&s, n);
	if (psplice_tee(in, s.fd, S_N, PSPLICE_TO_EOF, 0, res) != 0)
		T_FAILED("psplice_tee, input %d, %llu bytes: %s", in_kind,
			 (unsigned long long)n, strerror(errno));
	T_EQ_U(psplice_last()->in_bytes, n);
	if (n && in_kind == IN_PIPE) {
		/* From a pipe nothing goes through user memory but the
		 * O_APPEND file's share. */
		for (int i = 0; i < S_N; i++)
			if (i != S_APPEND && res[i].method != PSPLICE_METHOD_SPLICE_PIPE &&
			    res[i].method != PSPLICE_METHOD_SPLICE)
				T_FAILED("%s: method %s", names[i],
					 psplice_method_name(res[i].method));
		T_EQ(res[S_APPEND].method, PSPLICE_METHOD_READWRITE);
	}
	check_sinks(&s, res, n);
	if (feeder)
		T_ASSERT(t_wait(feeder));
	close(in);
}

/* The prepared form: a copy with a length, then moves, then the rest. */
static void prepared(void)
{
	uint64_t n = 5 * MiB + 123, done = 0;
	struct psplice_result res[S_N];
	struct psplice_tee *t;
	struct sinks s;
	pid_t feeder;
	ssize_t r;
	int in = open_input(IN_PIPE, n, &feeder), i;

	open_sinks(&s, n);
	t = psplice_tee_new(in, s.fd, S_N, 0, 0);
	T_ASSERT(t);
	T_OK(psplice_tee_copy(t, MiB + 1, 0, res));
	for (i = 0; i < S_N; i++)
		T_EQ_U(res[i].out_bytes, MiB + 1);
	done = MiB + 1;
	for (i = 0; i < 3; i++) {
		r = psplice_tee_move(t, 70000, 0, res);
		T_ASSERT(r > 0 && r <= 70000);
		for (int j = 0; j < S_N; j++)
			T_EQ_U(res[j].out_bytes, (uint64_t)r);
		done += (uint64_t)r;
	}
	T_OK(psplice_tee_copy(t, PSPLICE_TO_EOF, 0, res));
	for (i = 0; i < S_N; i++)
		T_EQ_U(res[i].out_bytes, n - done);
	T_EQ(psplice_tee_move(t, 100, 0, NULL), 0);
	psplice_tee_free(t);
	check_sinks(&s, NULL, n);
	T_ASSERT(t_wait(feeder));
	close(in);
}

/* A reader that takes `keep` bytes and leaves. */
static pid_t short_reader(int fd, uint64_t keep)
{
	pid_t pid = fork();

	T_OK(pid);
	if (pid)
		return pid;
	close_others(fd);
	_exit(t_check_fd(fd, -1, keep, SEED, 0) ? 0 : 1);
}

static void epipe(void)
{
	uint64_t n = 8 * MiB + 5;
	struct psplice_result res[3];
	int in = t_make_file(t_path("in"), n, SEED), p[2], out[3];
	pid_t reader;

	signal(SIGPIPE, SIG_DFL);
	T_OK(lseek(in, 0, SEEK_SET));
	t_pipe(p);
	out[0] = create(t_path("ok1"), 0);
	out[1] = p[1];
	out[2] = create(t_path("ok2"), 0);
	reader = short_reader(p[0], 100000);
	close(p[0]);
	T_ERRNO(psplice_tee(in, out, 3, PSPLICE_TO_EOF, 0, res), EPIPE);
	T_ASSERT(t_wait(reader));
	/* Its share stops with the step it failed in. */
	T_RESULT(res[1], EPIPE, PSPLICE_SIDE_OUT, res[1].in_bytes, res[1].out_bytes);
	T_ASSERT(res[1].out_bytes >= 100000 && res[1].out_bytes < res[1].in_bytes);
	T_ASSERT(res[1].in_bytes < n);
	T_RESULT(res[0], 0, PSPLICE_SIDE_NONE, n, n);
	T_RESULT(res[2], 0, PSPLICE_SIDE_NONE, n, n);
	T_EQ(psplice_last()->side, PSPLICE_SIDE_OUT);
	T_ASSERT(t_check_file(t_path("ok1"), n, SEED));
	T_ASSERT(t_check_file(t_path("ok2"), n, SEED));
	for (int i = 0; i < 3; i++)
		close(out[i]);
	close(in);
}

static void enospc(void)
{
	const char *mnt = t_mount_tmpfs("small", "1m");
	uint64_t n = 4 * MiB + 3;
	struct psplice_result res[3];
	char full[4200];
	int in, p[2], out[3];
	pid_t feeder, reader;

	if (!mnt) {
		printf("enospc: no tmpfs mount (%s), not run\n", strerror(errno));
		return;
	}
	snprintf(full, sizeof(full), "%s/full", mnt);
	in = open_input(IN_PIPE, n, &feeder);
	t_pipe(p);
	out[0] = create(t_path("ok1"), 0);
	out[1] = create(full, 0);
	out[2] = p[1];
	reader = drain(p[0], n);
	close(p[0]);
	T_ERRNO(psplice_tee(in, out, 3, PSPLICE_TO_EOF, 0, res), ENOSPC);
	close(out[2]);
	T_RESULT(res[1], ENOSPC, PSPLICE_SIDE_OUT, res[1].in_bytes, res[1].out_bytes);
	T_ASSERT(res[1].in_bytes > res[1].out_bytes);
	T_ASSERT(res[1].out_bytes > 0 && res[1].out_bytes <= MiB);
	T_ASSERT(t_check_file(full, res[1].out_bytes, SEED));
	T_RESULT(res[0], 0, PSPLICE_SIDE_NONE, n, n);
	T_RESULT(res[2], 0, PSPLICE_SIDE_NONE, n, n);
	T_ASSERT(t_check_file(t_path("ok1"), n, SEED));
	T_ASSERT(t_wait(reader));
	T_ASSERT(t_wait(feeder));
	close(out[0]);
	close(out[1]);
	close(in);
}

/* Read what the slow pipe holds now and check it against the stream. */
static uint64_t read_slow(int fd, uint64_t at)
{
	static unsigned char buf[1 << 16];
	ssize_t r;

	while ((r = read(fd, buf, sizeof(buf))) > 0) {
		if (!t_check_buf(buf, (size_t)r, SEED, at))
			T_FAILED("slow sink: wrong bytes at %llu", (unsigned long long)at);
		at += (uint64_t)r;
	}
	return at;
}

static void wait_in(int fd)
{
	struct pollfd pf = { .fd = fd, .events = POLLIN };

	poll(&pf, 1, 1000);
}

/* A sink that does not read holds back the input only within hold_max;
 * the fast sink meanwhile gets everything taken. Then the slow one reads,
 * and every byte arrives, in order. */
static void slow_sink(void)
{
	const size_t hold = 3 * MiB;
	uint64_t n = 12 * MiB + 9, taken = 0, slow_got = 0, fast = 0;
	struct psplice_result res[2];
	int p[2], out[2], i;
	struct psplice_tee *t;
	pid_t feeder;
	ssize_t r;
	int in = open_input(IN_PIPE, n, &feeder);

	t_pipe(p);
	t_set_nonblock(p[0], true);
	t_set_nonblock(p[1], true);
	out[0] = create(t_path("fast"), 0);
	out[1] = p[1];
	t = psplice_tee_new(in, out, 2, hold, 0);
	T_ASSERT(t);
	for (i = 0; i < 10000; i++) {
		r = psplice_tee_move(t, MiB, PSPLICE_F_NONBLOCK, res);
		fast += res[0].out_bytes;
		if (r > 0)
			taken += (uint64_t)r;
		if (r < 0 && errno == EAGAIN && psplice_last()->side == PSPLICE_SIDE_IN) {
			wait_in(in);
			continue;
		}
		if (r < 0)
			break;
	}
	T_EQ(errno, EAGAIN);
	T_EQ(psplice_last()->side, PSPLICE_SIDE_OUT);
	T_RESULT(res[1], EAGAIN, PSPLICE_SIDE_OUT, 0, 0);
	T_EQ(res[0].error, 0);
	T_EQ_U(fast, taken);
	T_ASSERT(psplice_tee_pending(t, 1) >= hold);
	T_ASSERT(psplice_tee_pending(t, 1) <= hold + MiB);
	T_EQ(psplice_tee_pending(t, 0), 0);
	/* Now the slow sink reads: everything arrives. */
	for (i = 0; i < 100000; i++) {
		r = psplice_tee_move(t, MiB, PSPLICE_F_NONBLOCK, res);
		fast += res[0].out_bytes;
		if (r > 0)
			taken += (uint64_t)r;
		if (r == 0)
			break;
		if (r < 0 && errno != EAGAIN)
			T_FAILED("move: %s", strerror(errno));
		if (r < 0 && psplice_last()->side == PSPLICE_SIDE_IN)
			wait_in(in);
		slow_got = read_slow(p[0], slow_got);
	}
	slow_got = read_slow(p[0], slow_got);
	T_EQ_U(taken, n);
	T_EQ_U(fast, n);
	T_EQ_U(slow_got, n);
	psplice_tee_free(t);
	T_ASSERT(t_check_file(t_path("fast"), n, SEED));
	T_ASSERT(t_wait(feeder));
	close(out[0]);
	t_close_pair(p);
	close(in);
}

/* A blocked sink's pending bytes, taken back: the stream from where its
 * reader is, in order, and nothing pending after. */
static void take(void)
{
	uint64_t n = 4 * MiB, in_pipe;
	struct psplice_result res[2];
	unsigned char *buf = malloc(8 * MiB);
	int p[2], out[2], in;
	struct psplice_tee *t;
	size_t pend, got;
	ssize_t r;

	T_ASSERT(buf);
	in = t_make_file(t_path("in"), n, SEED);
	T_OK(lseek(in, 0, SEEK_SET));
	t_pipe(p);
	t_set_nonblock(p[1], true);
	out[0] = open("/dev/null", O_WRONLY | O_CLOEXEC);
	out[1] = p[1];
	t = psplice_tee_new(in, out, 2, MiB, 0);
	T_ASSERT(t);
	for (int i = 0; i < 100; i++)
		if ((r = psplice_tee_move(t, MiB, PSPLICE_F_NONBLOCK, res)) < 0)
			break;
	T_EQ(errno, EAGAIN);
	in_pipe = (uint64_t)t_queued(p[0]);
	pend = psplice_tee_pending(t, 1);
	T_ASSERT(pend > 0);
	got = psplice_tee_take(t, 1, buf, 8 * MiB);
	T_EQ_U(got, pend);
	T_ASSERT(t_check_buf(buf, got, SEED, in_pipe));
	T_EQ(psplice_tee_pending(t, 1), 0);
	psplice_tee_free(t);
	free(buf);
	close(out[0]);
	t_close_pair(p);
	close(in);
}

/* One sink, an input pipe (spliced straight through): a reader gone is
 * EPIPE on the sink, never the end of input; and so again, once out. */
static void lone_sink_gone(void)
{
	struct psplice_result res[1];
	struct psplice_tee *t;
	int in[2], out[2];

	t_pipe(in);
	t_pipe(out);
	t_fill_fd(in[1], 4096, SEED);
	close(out[0]);
	t = psplice_tee_new(in[0], &out[1], 1, 0, 0);
	T_ASSERT(t);
	T_ERRNO(psplice_tee_move(t, MiB, 0, res), EPIPE);
	T_EQ(psplice_last()->side, PSPLICE_SIDE_OUT);
	T_RESULT(res[0], EPIPE, PSPLICE_SIDE_OUT, 0, 0);
	T_ERRNO(psplice_tee_move(t, MiB, 0, res), EPIPE);
	T_EQ(res[0].error, EPIPE);
	T_EQ(t_queued(in[0]), 4096);
	psplice_tee_free(t);
	t_close_pair(in);
	close(out[1]);
}

/* A sink that fails in a step keeps the share it was given pending,
 * whether it was to take the pages themselves (the last sink) or a tee of
 * them, and when another sink is served from memory (O_APPEND): nothing
 * taken is dropped. */
static void failed_keeps(void)
{
	struct psplice_result res[3];
	struct psplice_tee *t;
	int in[2], gone[2], out[3];
	unsigned char buf[8192];

	for (int k = 0; k < 4; k++) {
		size_t f = k % 2 ? 2 : 0;

		t_pipe(in);
		t_pipe(gone);
		close(gone[0]);
		t_fill_fd(in[1], 4096, SEED);
		for (size_t i = 0; i < 3; i++)
			out[i] = i == f ? gone[1] : open("/dev/null", O_WRONLY | O_CLOEXEC);
		if (k >= 2) {
			close(out[1]);
			out[1] = create(t_path("app"), O_APPEND);
		}
		t = psplice_tee_new(in[0], out, 3, 0, 0);
		T_ASSERT(t);
		T_EQ(psplice_tee_move(t, MiB, 0, res), 4096);
		T_RESULT(res[f], EPIPE, PSPLICE_SIDE_OUT, 4096, 0);
		T_EQ_U(psplice_tee_pending(t, f), 4096);
		T_EQ_U(psplice_tee_take(t, f, buf, sizeof(buf)), 4096);
		T_ASSERT(t_check_buf(buf, 4096, SEED, 0));
		T_EQ_U(psplice_tee_pending(t, f), 0);
		psplice_tee_free(t);
		for (int i = 0; i < 3; i++)
			close(out[i]);
		t_close_pair(in);
	}
}

/* With PSPLICE_F_NOFALLBACK a last sink that falls behind is not put out:
 * out of an input pipe, the rest it did not take waits in a pipe of its
 * own, not in memory that only write(2) could deliver. */
static void nofallback_slow_last(void)
{
	struct psplice_result res[2];
	struct psplice_tee *t;
	int in[2], p[2], out[2];
	size_t pend;
	pid_t pid;

	t_pipe(in);
	t_pipe(p);
	T_OK(fcntl(p[1], F_SETPIPE_SZ, 4096));
	t_set_nonblock(p[1], true);
	out[0] = open("/dev/null", O_WRONLY | O_CLOEXEC);
	out[1] = p[1];
	t_fill_fd(in[1], 65536, SEED);
	close(in[1]);
	t = psplice_tee_new(in[0], out, 2, MiB, PSPLICE_F_NOFALLBACK);
	T_ASSERT(t);
	T_EQ(psplice_tee_move(t, MiB, PSPLICE_F_NONBLOCK, res), 65536);
	pend = psplice_tee_pending(t, 1);
	T_ASSERT(pend > 0);
	pid = t_fork_closing(p[1], 30);
	if (!pid) {
		char extra;

		_exit(t_check_fd(p[0], -1, 65536, SEED, 0) && read(p[0], &extra, 1) == 0 ? 0 : 1);
	}
	close(p[0]);
	T_OK(psplice_tee_copy(t, PSPLICE_TO_EOF, 0, res));
	T_RESULT(res[1], 0, PSPLICE_SIDE_NONE, 0, pend);
	psplice_tee_free(t);
	close(p[1]);
	T_ASSERT(t_wait(pid));
	close(out[0]);
	close(in[0]);
}

/* A sink holding bytes in a kept pipe and newer ones in memory whose
 * splice(2) is then refused: a pty whose master closed answers splice with
 * EINVAL and write(2) with EIO (Linux 6.18). The sink is out, and its
 * pending bytes, taken back, are in stream order: the pipe's first. */
static void hangup_keeps_order(void)
{
	static unsigned char buf[2 * 65536];
	static const char zero[4096];
	struct psplice_result res[2];
	struct psplice_tee *t;
	int in[2], m, sl, out[2];
	size_t added = 0;
	ssize_t w;

	t_pty(&m, &sl);
	/* Full to the last byte, and so it stays: a tty polls writable while
	 * it has room, and a pty makes room as the kernel moves bytes on to
	 * the master's side, a little after the write. */
	t_set_nonblock(sl, true);
	for (int round = 0; round < 100 && (round < 2 || added); round++) {
		added = 0;
		for (size_t k = sizeof(zero); k; k /= 2)
			while ((w = write(sl, zero, k)) > 0)
				added += (size_t)w;
		T_EQ(errno, EAGAIN);
		usleep(20000);
	}
	T_EQ_U(added, 0);
	t_set_nonblock(sl, false);
	t_pipe(in);
	out[0] = sl;
	out[1] = open("/dev/null", O_WRONLY | O_CLOEXEC);
	t = psplice_tee_new(in[0], out, 2, MiB, 0);
	T_ASSERT(t);
	t_fill_fd(in[1], 65536, SEED);
	T_EQ(psplice_tee_move(t, MiB, PSPLICE_F_NONBLOCK, res), 65536);
	t_gen(SEED, 65536, buf, 65536);
	T_EQ(write(in[1], buf, 65536), 65536);
	T_EQ(psplice_tee_move(t, MiB, PSPLICE_F_NONBLOCK, res), 65536);
	T_EQ_U(psplice_tee_pending(t, 0), 2 * 65536);
	close(m);
	close(in[1]);
	T_EQ(psplice_tee_move(t, MiB, 0, res), 0);
	T_EQ(res[0].error, EIO);
	T_EQ_U(psplice_tee_take(t, 0, buf, sizeof(buf)), sizeof(buf));
	T_ASSERT(t_check_buf(buf, sizeof(buf), SEED, 0));
	psplice_tee_free(t);
	close(sl);
	close(out[1]);
	close(in[0]);
}

/* No fd left for a pipe between two sinks (RLIMIT_NOFILE), when the first
 * keeps the one it was tee'd through: the second gets its share from
 * memory, and the step's bytes are taken once, never tee'd again by the
 * next step to the sinks that had them. */
static void no_fd_between_sinks(void)
{
	struct psplice_result res[3];
	struct psplice_tee *t;
	int in[2], full[2], p[2], out[3], sv[2];
	unsigned char buf[8192] = { 0 };
	struct rlimit rl;
	rlim_t was;

	t_pipe(in);
	t_pipe(full);
	t_pipe(p);
	t_set_nonblock(full[1], true);
	t_fill_full(full[1], SEED);
	out[0] = full[1];
	out[1] = p[1];
	out[2] = open("/dev/null", O_WRONLY | O_CLOEXEC);
	t = psplice_tee_new(in[0], out, 3, MiB, 0);
	T_ASSERT(t);
	/* The thread's pipe exists before the fds run out. */
	t_unix_pair(sv);
	T_EQ(write(sv[0], buf, 1), 1);
	T_EQ(psplice(sv[1], NULL, out[2], NULL, 1, 0), 1);
	t_fill_fd(in[1], 4096, SEED);
	T_OK(getrlimit(RLIMIT_NOFILE, &rl));
	was = rl.rlim_cur;
	rl.rlim_cur = (rlim_t)sv[1] + 16;
	T_OK(setrlimit(RLIMIT_NOFILE, &rl));
	t_fill_fds();
	T_EQ(psplice_tee_move(t, MiB, PSPLICE_F_NONBLOCK, res), 4096);
	t_unfill_fds();
	rl.rlim_cur = was;
	T_OK(setrlimit(RLIMIT_NOFILE, &rl));
	T_EQ_U(psplice_tee_pending(t, 0), 4096);
	T_RESULT(res[1], 0, PSPLICE_SIDE_NONE, 4096, 4096);
	T_EQ(t_queued(in[0]), 0);
	T_ERRNO(psplice_tee_move(t, MiB, PSPLICE_F_NONBLOCK, res), EAGAIN);
	T_EQ_U(psplice_tee_pending(t, 0), 4096);
	T_EQ(t_queued(p[0]), 4096);
	T_ASSERT(t_check_fd(p[0], -1, 4096, SEED, 0));
	psplice_tee_free(t);
	t_close_pair(in);
	t_close_pair(full);
	t_close_pair(p);
	t_close_pair(sv);
	close(out[2]);
}

static void bad_input(void)
{
	int out[2] = { 1, -1 }, p[2], ro;

	t_pipe(p);
	T_ASSERT(!psplice_tee_new(p[0], NULL, 1, 0, 0));
	T_EQ(errno, EINVAL);
	T_ASSERT(!psplice_tee_new(p[0], out, 0, 0, 0));
	T_EQ(errno, EINVAL);
	T_ASSERT(!psplice_tee_new(p[0], out, PSPLICE_TEE_MAX + 1, 0, 0));
	T_EQ(errno, EINVAL);
	T_ASSERT(!psplice_tee_new(p[0], out, 1, 0, PSPLICE_F_NONBLOCK));
	T_EQ(errno, EINVAL);
	T_ASSERT(!psplice_tee_new(-1, out, 1, 0, 0));
	T_EQ(errno, EBADF);
	T_EQ(psplice_last()->side, PSPLICE_SIDE_IN);
	T_ASSERT(!psplice_tee_new(p[0], out, 2, 0, 0));
	T_EQ(errno, EBADF);
	T_EQ(psplice_last()->side, PSPLICE_SIDE_OUT);
	T_ASSERT(!psplice_tee_new(p[1], out, 1, 0, 0));
	T_EQ(errno, EBADF);
	T_EQ(psplice_last()->side, PSPLICE_SIDE_IN);
	ro = open("/dev/null", O_RDONLY | O_CLOEXEC);
	out[1] = ro;
	T_ASSERT(!psplice_tee_new(p[0], out, 2, 0, 0));
	T_EQ(errno, EBADF);
	T_ERRNO(psplice_tee(p[0], out, 1, 10, PSPLICE_F_NONBLOCK, NULL), EINVAL);
	T_ERRNO(psplice_tee_move(NULL, 10, 0, NULL), EINVAL);
	T_ERRNO(psplice_tee_copy(NULL, 10, 0, NULL), EINVAL);
	T_EQ(psplice_tee_pending(NULL, 0), 0);
	psplice_tee_free(NULL);
	close(ro);
	t_close_pair(p);
}

int main(int argc, char **argv)
{
	static const uint64_t sizes[] = { 0, 1, 4095, 65537, MiB + 7, 16 * MiB + 3 };

	t_dir(argc, argv);
	T_ASSERT(t_tmpfs_dir());
	/* First: no other tee has left the pool an empty pipe to reuse. */
	no_fd_between_sinks();
	bad_input();
	lone_sink_gone();
	failed_keeps();
	nofallback_slow_last();
	hangup_keeps_order();
	for (int k = IN_FILE; k <= IN_UNIX; k++)
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
			every_sink(k, sizes[i]);
	prepared();
	epipe();
	slow_sink();
	take();
	enospc();
	return T_PASS;
}
