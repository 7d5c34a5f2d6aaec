/* A signal handler installed without SA_RESTART interrupts a transfer that
 * waits. A single step returns -1 EINTR on the side it waited for, with
 * nothing moved (or, for bytes taken from a socket, parked); psplice_copy
 * retries and completes once the other end moves, every byte right, or,
 * with PSPLICE_F_EINTR, returns EINTR with its totals. */
#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "t.h"

#define FILE_SIZE (1u << 20)
#define SMALL 5000u
#define N 300000u            /* what a child supplies or drains after the signals */
#define JUNK_SEED 9

static int src, outfile;
static int *count;           /* signals handled, shared with the children */

static void on_signal(int sig)
{
	(void)sig;
	__atomic_add_fetch(count, 1, __ATOMIC_RELAXED);
}

static void handle(int sig)
{
	struct sigaction sa = { .sa_handler = on_signal }; /* no SA_RESTART */

	T_OK(sigaction(sig, &sa, NULL));
}

/* SIGALRM every 20 ms until stopped: one of them finds the call waiting. */
static void ticks(bool on)
{
	struct itimerval it = { { 0, on ? 20000 : 0 }, { 0, on ? 20000 : 0 } };

	T_OK(setitimer(ITIMER_REAL, &it, NULL));
}

static void check_outfile_empty(void)
{
	struct stat st;

	T_OK(fstat(outfile, &st));
	T_EQ(st.st_size, 0);
	T_EQ(t_pos(outfile), 0);
}

/* One step waiting on an empty input. */
static void step_in(int in, int out, unsigned int flags)
{
	struct psplice_result r;
	ssize_t n;
	int err;

	ticks(true);
	n = psplice_ex(in, NULL, out, NULL, 4096, flags, &r);
	err = errno;
	ticks(false);
	T_EQ(n, -1);
	T_EQ(err, EINTR);
	T_RESULT(r, EINTR, PSPLICE_SIDE_IN, 0, 0);
	T_EQ(r.parked_len, 0);
	T_RESULT(*psplice_last(), EINTR, PSPLICE_SIDE_IN, 0, 0);
	check_outfile_empty();
}

static void empty_inputs(void)
{
	const unsigned int rw = PSPLICE_F_ONLY(PSPLICE_METHOD_READWRITE);
	int p[2], u[2], t[2], q[2];

	t_pipe(p);
	t_pipe(q);
	t_unix_pair(u);
	t_tcp_pair(t);
	step_in(p[0], outfile, 0);
	step_in(p[0], outfile, rw);
	step_in(p[0], u[0], 0);
	step_in(u[0], outfile, 0);
	step_in(u[0], outfile, rw);
	step_in(u[0], t[0], 0);
	step_in(t[0], q[1], 0);
	step_in(t[0], outfile, 0);
	T_EQ(t_queued(q[0]), 0);
	T_EQ(t_queued(u[1]), 0);
	T_EQ(t_queued(t[1]), 0);
	t_close_pair(p);
	t_close_pair(q);
	t_close_pair(u);
	t_close_pair(t);
}

/* A blocking pipe or socket (fds[1] is what we write) full of junk. */
static uint64_t full(int fds[2], void (*make)(int[2]))
{
	uint64_t junk;
	int small = 1;

	make(fds);
	if (make != t_pipe)
		T_OK(setsockopt(fds[1], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)));
	t_set_nonblock(fds[1], true);
	junk = t_fill_full(fds[1], JUNK_SEED);
	t_set_nonblock(fds[1], false);
	return junk;
}

/* One step waiting on a full output. */
static void step_out(void (*make_out)(int[2]))
{
	struct psplice_result r;
	int64_t oi = 10;
	int o[2], p[2], u[2];
	uint64_t junk = full(o, make_out);

	T_EQ(lseek(src, 20, SEEK_SET), 20);
	ticks(true);
	T_ERRNO(psplice_ex(src, &oi, o[1], NULL, 4096, 0, &r), EINTR);
	T_RESULT(r, EINTR, PSPLICE_SIDE_OUT, 0, 0);
	T_ERRNO(psplice_ex(src, NULL, o[1], NULL, 4096, 0, &r), EINTR);
	T_RESULT(r, EINTR, PSPLICE_SIDE_OUT, 0, 0);
	ticks(false);
	T_EQ(oi, 10);
	T_EQ(t_pos(src), 20);

	t_pipe(p);
	t_fill_fd(p[1], SMALL, 2);
	ticks(true);
	T_ERRNO(psplice_ex(p[0], NULL, o[1], NULL, SMALL, 0, &r), EINTR);
	ticks(false);
	T_RESULT(r, EINTR, PSPLICE_SIDE_OUT, 0, 0);
	T_EQ(t_queued(p[0]), SMALL);

	/* Through the internal pipe: the bytes taken from the socket are
	 * parked, the rest stays in it. */
	t_unix_pair(u);
	t_fill_fd(u[1], SMALL, 2);
	ticks(true);
	T_ERRNO(psplice_ex(u[0], NULL, o[1], NULL, SMALL, 0, &r), EINTR);
	ticks(false);
	T_EQ(r.error, EINTR);
	T_EQ(r.side, PSPLICE_SIDE_OUT);
	T_EQ(r.out_bytes, 0);
	T_EQ_U(r.parked_len, r.in_bytes);
	T_ASSERT(r.parked_len == 0 || t_check_buf(r.parked, r.parked_len, 2, 0));
	T_EQ_U(t_queued(u[0]), SMALL - r.in_bytes);

	/* The output holds the junk and nothing else. */
	T_EQ_U(t_queued(o[0]), junk);
	T_ASSERT(t_check_fd(o[0], -1, junk, JUNK_SEED, 0));
	T_ASSERT(t_check_fd(p[0], -1, SMALL, 2, 0));
	t_close_pair(o);
	t_close_pair(p);
	t_close_pair(u);
}

/* The state letter of a process: 'S' while it waits in a system call. */
static char state_of(pid_t pid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return '?';
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return '?';
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : '?';
}

/* In a child: send SIGUSR1 to the parent whenever it waits, until it has
 * handled three, then do the child's part. */
static pid_t after_signals(void (*then)(void *), void *arg)
{
	pid_t parent = getpid(), pid = fork();

	T_OK(pid);
	if (pid)
		return pid;
	for (int i = 0; i < 4000 && __atomic_load_n(count, __ATOMIC_RELAXED) < 3; i++) {
		if (state_of(parent) == 'S')
			kill(parent, SIGUSR1);
		usleep(5000);
	}
	if (__atomic_load_n(count, __ATOMIC_RELAXED) < 3)
		_exit(9);
	then(arg);
	_exit(0);
}

static void feed(void *arg)
{
	int fd = *(int *)arg;

	t_fill_fd(fd, N, 3);
	close(fd);
}

struct drain {
	int fd, writer;   /* the read end, and our write end to close */
	uint64_t junk, n;
	uint32_t seed;
	uint64_t soff;
};

static void drain(void *arg)
{
	struct drain *d = arg;
	char c;

	close(d->writer);
	if (!t_check_fd(d->fd, -1, d->junk, JUNK_SEED, 0))
		_exit(1);
	if (!t_check_fd(d->fd, -1, d->n, d->seed, d->soff))
		_exit(2);
	if (read(d->fd, &c, 1) != 0)
		_exit(3);
}

/* psplice_copy waits for input that a child writes only after the loop has
 * been interrupted three times. */
static void copy_in(void (*make)(int[2]), unsigned int flags, bool to_eof)
{
	struct psplice_result r;
	int s[2], out;
	int64_t oo = 0;
	pid_t pid;

	out = open(t_path("copy_in"), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	T_OK(out);
	make(s);
	*count = 0;
	pid = after_signals(feed, &s[1]);
	close(s[1]);
	T_EQ(psplice_copy(s[0], NULL, out, &oo, to_eof ? PSPLICE_TO_EOF : N, flags, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, N, N);
	T_EQ(oo, N);
	T_ASSERT(*count >= 3);
	T_ASSERT(t_wait(pid));
	T_ASSERT(t_check_file(t_path("copy_in"), N, 3));
	close(s[0]);
	close(out);
}

/* psplice_copy waits for room that a child makes only after the loop has
 * been interrupted three times. */
static void copy_out(void (*make_out)(int[2]), void (*make_in)(int[2]))
{
	struct psplice_result r;
	struct drain d = { .n = N };
	int o[2], s[2], in;
	int64_t oi = 1000;
	pid_t pid, feeder = 0;

	d.junk = full(o, make_out);
	d.fd = o[0];
	d.writer = o[1];
	if (make_in) {
		make_in(s);
		feeder = t_feed(s[1], N, 3);
		close(s[1]);
		in = s[0];
		d.seed = 3;
	} else {
		in = src;
		d.seed = 1;
		d.soff = 1000;
	}
	*count = 0;
	pid = after_signals(drain, &d);
	close(o[0]);
	T_EQ(psplice_copy(in, make_in ? NULL : &oi, o[1], NULL, N, 0, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, N, N);
	close(o[1]);
	T_ASSERT(*count >= 3);
	T_ASSERT(t_wait(pid));
	if (make_in) {
		T_ASSERT(t_wait(feeder));
		close(in);
	} else {
		T_EQ(oi, 1000 + N);
	}
}

/* PSPLICE_F_EINTR: a copy waiting on an idle input returns EINTR with what
 * it delivered, the offset advanced by it; called again, it goes on from
 * there. pair: through a prepared pair (which keeps what it holds). */
static void eintr_in(void (*make)(int[2]), bool pair)
{
	const unsigned int flags = PSPLICE_F_EINTR;
	struct psplice_pair *p = NULL;
	struct psplice_result r;
	int s[2], out;
	int64_t oo = 7;
	int rc, err;

	out = open(t_path("eintr_in"), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	T_OK(out);
	make(s);
	t_fill_fd(s[1], SMALL, 4);
	if (pair)
		T_ASSERT((p = psplice_pair_new(s[0], out, 0)));
	ticks(true);
	rc = pair ? psplice_pair_copy(p, NULL, &oo, PSPLICE_TO_EOF, flags, &r) :
		    psplice_copy(s[0], NULL, out, &oo, PSPLICE_TO_EOF, flags, &r);
	err = errno;
	ticks(false);
	T_EQ(rc, -1);
	T_EQ(err, EINTR);
	T_RESULT(r, EINTR, PSPLICE_SIDE_IN, SMALL, SMALL);
	T_EQ(r.parked_len, 0);
	T_EQ(oo, 7 + SMALL);
	/* The rest comes, and the same call finishes the stream. */
	t_fill_fd(s[1], SMALL, 5);
	close(s[1]);
	rc = pair ? psplice_pair_copy(p, NULL, &oo, PSPLICE_TO_EOF, flags, &r) :
		    psplice_copy(s[0], NULL, out, &oo, PSPLICE_TO_EOF, flags, &r);
	T_EQ(rc, 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, SMALL, SMALL);
	T_EQ(oo, 7 + 2 * SMALL);
	T_ASSERT(t_check_fd(out, 7, SMALL, 4, 0));
	T_ASSERT(t_check_fd(out, 7 + SMALL, SMALL, 5, 0));
	psplice_pair_free(p);
	close(s[0]);
	close(out);
}

/* PSPLICE_F_EINTR on a full output: the copy returns EINTR on the output
 * side; from a file nothing is parked and the offset says exactly what was
 * delivered, from a socket what was taken and not delivered is parked. */
static void eintr_out(void (*make_in)(int[2]))
{
	struct psplice_result r;
	int64_t oi = 1000;
	int o[2], s[2] = { -1, -1 };
	uint64_t junk = full(o, t_pipe);

	if (make_in) {
		make_in(s);
		t_fill_fd(s[1], SMALL, 6);
	}
	ticks(true);
	T_ERRNO(psplice_copy(make_in ? s[0] : src, make_in ? NULL : &oi, o[1], NULL, SMALL,
			     PSPLICE_F_EINTR, &r), EINTR);
	ticks(false);
	T_EQ(r.error, EINTR);
	T_EQ(r.side, PSPLICE_SIDE_OUT);
	T_EQ(r.out_bytes, 0);
	if (make_in) {
		T_EQ_U(r.parked_len, r.in_bytes);
		T_ASSERT(r.parked_len == 0 || t_check_buf(r.parked, r.parked_len, 6, 0));
		T_EQ_U(t_queued(s[0]), SMALL - r.in_bytes);
		t_close_pair(s);
	} else {
		T_EQ(r.parked_len, 0);
		T_EQ(oi, 1000);
	}
	T_EQ_U(t_queued(o[0]), junk);
	t_close_pair(o);
}

/* A single step returns on EINTR anyway: the flag changes nothing. */
static void eintr_step(void)
{
	int p[2];

	t_pipe(p);
	step_in(p[0], outfile, PSPLICE_F_EINTR);
	t_close_pair(p);
}

/* A tee's copy retries EINTR: it refuses the flag, as an unknown one. */
static void eintr_tee(void)
{
	struct psplice_result r; /* the one sink's */
	struct psplice_tee *t;
	int p[2];

	t_pipe(p);
	t = psplice_tee_new(p[0], &outfile, 1, 0, 0);
	T_ASSERT(t);
	T_ERRNO(psplice_tee_copy(t, 1, PSPLICE_F_EINTR, &r), EINVAL);
	T_RESULT(*psplice_last(), EINVAL, PSPLICE_SIDE_NONE, 0, 0);
	psplice_tee_free(t);
	t_close_pair(p);
	check_outfile_empty();
}

int main(int argc, char **argv)
{
	const unsigned int rw = PSPLICE_F_ONLY(PSPLICE_METHOD_READWRITE);

	t_dir(argc, argv);
	count = mmap(NULL, sizeof(*count), PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	T_ASSERT(count != MAP_FAILED);
	src = t_make_file(t_path("src"), FILE_SIZE, 1);
	outfile = open(t_path("out"), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	T_OK(outfile);
	handle(SIGALRM);
	handle(SIGUSR1);

	empty_inputs();
	step_out(t_pipe);
	step_out(t_unix_pair);

	copy_in(t_pipe, 0, false);
	copy_in(t_pipe, rw, false);
	copy_in(t_unix_pair, 0, false);
	copy_in(t_unix_pair, rw, true);
	copy_in(t_tcp_pair, 0, true);
	copy_out(t_pipe, NULL);
	copy_out(t_unix_pair, NULL);
	copy_out(t_pipe, t_unix_pair);
	copy_out(t_unix_pair, t_unix_pair);
	copy_out(t_unix_pair, t_pipe);

	eintr_in(t_pipe, false);
	eintr_in(t_unix_pair, false);
	eintr_in(t_tcp_pair, true);
	eintr_in(t_unix_pair, true);
	eintr_out(NULL);
	eintr_out(t_unix_pair);
	eintr_tee();
	eintr_step();
	return T_PASS;
}
