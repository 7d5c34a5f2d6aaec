/* A prepared pair with a non-seekable input holds what the output cannot
 * take (issue 14): the bytes stay pending in the pair's pipe, not copied,
 * go out first and in order, and are never dropped.
 * - backpressure: a slow reader; every move keeps pending = before + taken
 *   - delivered, parks nothing, says side out when it holds bytes and the
 *   output is full; nothing goes through user memory; sha-like check of
 *   every byte in order;
 * - half-close: end of input comes only after the pending bytes are out;
 * - take and free hand the pending bytes back, in order;
 * - psplice_pair_copy delivers the pending bytes first, then the rest;
 * - two threads on one pair keep the stream in order;
 * - a budget of kept pipes (PSPLICE_MAX_PIPES), no fds for a pipe, and a
 *   user past pipe-user-pages-soft degrade (memory, read/write, a small
 *   pipe) and never fail. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "t.h"

#define SEED 77
#define MOVE (1u << 20)
#define SMALL_BUF 16384

/* One stream: the test writes into in_w, the pair moves in_r -> out_w, the
 * test reads out_r and checks every byte. */
struct stream {
	int in_w, in_r, out_w, out_r;
	struct psplice_pair *p;
	uint32_t seed;
	uint64_t total, fed, taken, delivered, checked, pending, max_pending, max_in;
	uint64_t by_method[PSPLICE_METHOD_READWRITE + 1];
	bool in_closed, ended, keep_open;
};

static void small_bufs(int fd_send, int fd_recv)
{
	int v = SMALL_BUF;

	T_OK(setsockopt(fd_send, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v)));
	T_OK(setsockopt(fd_recv, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v)));
}

static void stream_open(struct stream *s, uint64_t total, uint32_t seed)
{
	int a[2], b[2], big = 4 << 20;

	memset(s, 0, sizeof(*s));
	t_unix_pair(a);
	t_unix_pair(b);
	/* Room for a whole move's worth in the input, little in the output. */
	T_OK(setsockopt(a[1], SOL_SOCKET, SO_SNDBUF, &big, sizeof(big)));
	small_bufs(b[0], b[1]);
	/* Non-blocking as in an event loop: PSPLICE_F_NONBLOCK does not reach
	 * the socket on the other side of a splice. */
	t_set_nonblock(a[1], true);
	t_set_nonblock(b[0], true);
	t_set_nonblock(b[1], true);
	s->in_w = a[1];
	s->in_r = a[0];
	s->out_w = b[0];
	s->out_r = b[1];
	s->total = total;
	s->seed = seed;
	s->p = psplice_pair_new(s->in_r, s->out_w, 0);
	T_ASSERT(s->p);
}

static void stream_close(struct stream *s)
{
	psplice_pair_free(s->p);
	if (!s->in_closed)
		close(s->in_w);
	close(s->in_r);
	close(s->out_w);
	close(s->out_r);
}

/* Write what the input takes now; close it once all is written. */
static void feed(struct stream *s)
{
	static uint8_t buf[1 << 16];
	ssize_t w;
	size_t k;

	while (s->fed < s->total) {
		k = s->total - s->fed < sizeof(buf) ? (size_t)(s->total - s->fed) : sizeof(buf);
		t_gen(s->seed, s->fed, buf, k);
		w = write(s->in_w, buf, k);
		if (w < 0 && errno == EAGAIN)
			return;
		T_ASSERT(w > 0);
		s->fed += (uint64_t)w;
	}
	if (!s->in_closed && !s->keep_open) {
		close(s->in_w);
		s->in_closed = true;
	}
}

/* Read and check up to max bytes of what the output got. */
static void drain(struct stream *s, size_t max)
{
	static uint8_t buf[1 << 16];
	size_t k;
	ssize_t n;

	while (max > 0) {
		k = max < sizeof(buf) ? max : sizeof(buf);
		n = read(s->out_r, buf, k);
		if ((n < 0 && errno == EAGAIN) || n == 0)
			return;
		T_ASSERT(n > 0);
		T_ASSERT(t_check_buf(buf, (size_t)n, s->seed, s->checked));
		s->checked += (uint64_t)n;
		max -= (size_t)n;
	}
}

/* One non-blocking move, with the contract of every move checked. */
static void step(struct stream *s)
{
	struct psplice_result r;
	uint64_t before = s->pending;
	ssize_t n;

	n = psplice_pair_move(s->p, NULL, NULL, MOVE, PSPLICE_F_NONBLOCK, &r);
	T_EQ_U(r.parked_len, 0);
	T_ASSERT(r.parked == NULL);
	/* A move with bytes pending delivers only those. */
	if (before)
		T_EQ_U(r.in_bytes, 0);
	s->taken += r.in_bytes;
	if (r.in_bytes > s->max_in)
		s->max_in = r.in_bytes;
	s->delivered += r.out_bytes;
	s->pending = before + r.in_bytes - r.out_bytes;
	T_EQ_U(psplice_pair_pending(s->p), s->pending);
	T_EQ_U(s->pending, s->taken - s->delivered);
	if (s->pending > s->max_pending)
		s->max_pending = s->pending;
	if (r.out_bytes) {
		T_ASSERT(r.method > PSPLICE_METHOD_NONE && r.method <= PSPLICE_METHOD_READWRITE);
		s->by_method[r.method] += r.out_bytes;
	}
	if (r.error) {
		T_EQ(r.error, EAGAIN);
		/* Holding bytes, only the output can be what blocks. */
		if (s->pending)
			T_EQ(r.side, PSPLICE_SIDE_OUT);
		T_EQ(n, r.out_bytes ? (ssize_t)r.out_bytes : -1);
		return;
	}
	T_EQ(n, (ssize_t)r.out_bytes);
	if (!r.in_bytes && !r.out_bytes) {
		/* The end comes after the pending bytes, never before. */
		T_EQ_U(s->pending, 0);
		T_EQ_U(s->delivered, s->total);
		s->ended = true;
	}
}

/* Run the stream to its end; the reader takes at most read_max per turn. */
static void run(struct stream *s, size_t read_max)
{
	time_t stop = time(NULL) + 60;
	long turns = 0;

	while (!s->ended || s->checked < s->total) {
		T_ASSERT(++turns < 4000000 && time(NULL) < stop);
		feed(s);
		if (!s->ended)
			step(s);
		drain(s, read_max);
	}
	T_EQ_U(s->checked, s->total);
	T_EQ_U(s->delivered, s->total);
}

/* A slow reader: 4 KiB per turn out of an output with small buffers. */
static void backpressure(void)
{
	struct stream s;

	stream_open(&s, 8u << 20, SEED);
	run(&s, 4096);
	/* The case is the one asked for: bytes were held, far more than the
	 * output's buffers, and none went through user memory. */
	T_ASSERT(s.max_pending > 4 * SMALL_BUF);
	T_EQ_U(s.by_method[PSPLICE_METHOD_READWRITE], 0);
	T_EQ_U(s.by_method[PSPLICE_METHOD_SPLICE_PIPE], s.total);
	stream_close(&s);
}

/* Fill the input, let one move take it all and deliver a little. */
static void take_some(struct stream *s)
{
	feed(s);
	step(s);
	T_ASSERT(s->pending > 0);
}

/* The input ends while the pair holds bytes: the end is seen only once
 * they are all out. */
static void half_close(void)
{
	struct stream s;

	stream_open(&s, 300000, SEED + 1);
	take_some(&s);
	T_ASSERT(s.in_closed);
	T_ASSERT(s.pending > 100000);
	run(&s, 8192);
	stream_close(&s);
}

/* psplice_pair_take hands back the oldest bytes; free hands back the rest
 * as parked bytes; the input still has what came after. */
static void take_and_free(void)
{
	const struct psplice_result *last;
	struct stream s;
	uint8_t buf[1000];
	uint64_t pending, at;

	stream_open(&s, 400000, SEED + 2);
	take_some(&s);
	drain(&s, SIZE_MAX); /* what was delivered */
	T_EQ_U(s.checked, s.delivered);
	T_EQ_U(psplice_pair_take(s.p, buf, sizeof(buf)), sizeof(buf));
	T_ASSERT(t_check_buf(buf, sizeof(buf), s.seed, s.delivered));
	pending = psplice_pair_pending(s.p);
	T_EQ_U(pending, s.pending - sizeof(buf));
	at = s.delivered + sizeof(buf);
	psplice_pair_free(s.p);
	s.p = NULL;
	last = psplice_last();
	T_EQ_U(last->parked_len, pending);
	T_EQ_U(last->in_bytes, pending);
	T_EQ(last->error, 0);
	T_ASSERT(t_check_buf(last->parked, last->parked_len, s.seed, at));
	/* Nothing was lost and nothing doubled: the input goes on from there. */
	T_ASSERT(t_check_fd(s.in_r, -1, s.fed - at - pending, s.seed, at + pending));
	/* A pair with nothing pending leaves psplice_last alone. */
	s.p = psplice_pair_new(s.in_r, s.out_w, 0);
	T_ASSERT(s.p);
	psplice_pair_free(s.p);
	T_EQ_U(psplice_last()->parked_len, pending);
	s.p = NULL;
	stream_close(&s);
}

/* psplice_pair_copy on a pair that holds bytes: they go first, then the
 * rest of the input, to its end. */
static void pair_copy(void)
{
	struct psplice_result r;
	struct stream s;
	uint64_t held;
	pid_t reader, feeder;
	int fd, in, out;
	int64_t oi = 1000, oo = 0;

	stream_open(&s, 300000, SEED + 3);
	s.keep_open = true;
	take_some(&s);
	s.total = 2000000;
	held = s.pending;
	drain(&s, SIZE_MAX);
	T_EQ_U(s.checked, s.delivered);
	/* The rest in one blocking copy: a pair's view of O_NONBLOCK matters
	 * only to moves with PSPLICE_F_NONBLOCK (psplice_pair_new(3)). */
	t_set_nonblock(s.in_w, false);
	t_set_nonblock(s.out_w, false);
	t_set_nonblock(s.out_r, false);
	feeder = fork();
	T_OK(feeder);
	if (feeder == 0) {
		close(s.out_w);
		s.keep_open = false;
		feed(&s); /* blocking now: everything, then close */
		_exit(0);
	}
	close(s.in_w);
	s.in_closed = true;
	reader = fork();
	T_OK(reader);
	if (reader == 0) {
		close(s.out_w);
		drain(&s, SIZE_MAX);
		_exit(s.checked == s.total ? 0 : 1);
	}
	T_OK(psplice_pair_copy(s.p, NULL, NULL, PSPLICE_TO_EOF, 0, &r));
	T_EQ_U(r.out_bytes, s.total - s.delivered);
	T_EQ_U(r.in_bytes, s.total - s.taken);
	T_EQ_U(r.out_bytes - r.in_bytes, held);
	T_EQ_U(psplice_pair_pending(s.p), 0);
	close(s.out_w);
	s.out_w = -1;
	T_ASSERT(t_wait(feeder));
	T_ASSERT(t_wait(reader));
	stream_close(&s);

	/* File to file, at offsets, and a length. */
	T_OK(t_make_file(t_path("cin"), 300000, SEED));
	in = open(t_path("cin"), O_RDONLY | O_CLOEXEC);
	out = open(t_path("cout"), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	T_OK(in);
	T_OK(out);
	struct psplice_pair *p = psplice_pair_new(in, out, 0);
	T_ASSERT(p);
	T_OK(psplice_pair_copy(p, &oi, &oo, 200000, 0, &r));
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, 200000, 200000);
	T_EQ(oi, 201000);
	T_EQ(oo, 200000);
	T_ASSERT(t_check_fd(out, 0, 200000, SEED, 1000));
	T_OK(psplice_pair_copy(p, &oi, &oo, PSPLICE_TO_EOF, 0, &r));
	T_EQ_U(r.out_bytes, 99000);
	T_ERRNO(psplice_pair_copy(p, NULL, NULL, 1, PSPLICE_F_REFLINK, &r), EINVAL);
	T_ERRNO(psplice_pair_copy(NULL, NULL, NULL, 1, 0, &r), EINVAL);
	T_EQ_U(psplice_pair_pending(p), 0);
	psplice_pair_free(p);
	fd = in;
	close(fd);
	close(out);
}

struct mover {
	struct psplice_pair *p;
	uint64_t moved;
};

static void *mover_main(void *arg)
{
	struct mover *m = arg;
	struct psplice_result r;
	ssize_t n;

	while ((n = psplice_pair_move(m->p, NULL, NULL, 65536, 0, &r)) > 0 ||
	       (n < 0 && r.error == EINTR))
		m->moved += r.out_bytes;
	return (void *)(intptr_t)(n < 0 ? r.error : 0);
}

/* Two threads move on one pair: they take turns, so the output gets the
 * stream in order. */
static void two_threads(void)
{
	struct mover m[2];
	pthread_t th[2];
	void *ret;
	int a[2], b[2], i;
	pid_t feeder, reader;
	uint64_t total = 16u << 20;

	t_unix_pair(a);
	t_unix_pair(b);
	small_bufs(b[0], b[1]);
	reader = fork();
	T_OK(reader);
	if (reader == 0) {
		close(b[0]);
		close(a[1]);
		_exit(t_check_fd(b[1], -1, total, SEED + 4, 0) && read(b[1], &i, 1) == 0 ? 0 : 1);
	}
	close(b[1]);
	feeder = t_feed(a[1], total, SEED + 4);
	close(a[1]);
	m[0].p = m[1].p = psplice_pair_new(a[0], b[0], 0);
	T_ASSERT(m[0].p);
	for (i = 0; i < 2; i++) {
		m[i].moved = 0;
		T_EQ(pthread_create(&th[i], NULL, mover_main, &m[i]), 0);
	}
	for (i = 0; i < 2; i++) {
		T_EQ(pthread_join(th[i], &ret), 0);
		T_ASSERT(ret == NULL);
	}
	T_EQ_U(m[0].moved + m[1].moved, total);
	psplice_pair_free(m[0].p);
	close(b[0]);
	close(a[0]);
	T_ASSERT(t_wait(feeder));
	T_ASSERT(t_wait(reader));
}

/* After fork(), the pair is used on one side; freeing its copy on the other
 * side leaves the pending bytes alone. Both ways round. */
static void fork_then_free(bool child_frees)
{
	struct stream s;
	pid_t pid;

	stream_open(&s, 3000000, SEED + 5);
	take_some(&s);
	pid = fork();
	T_OK(pid);
	if (pid == 0) {
		if (child_frees) {
			psplice_pair_free(s.p);
			T_EQ_U(psplice_last()->parked_len, 0);
		} else {
			run(&s, 8192);
		}
		_exit(T_PASS);
	}
	if (child_frees) {
		T_ASSERT(t_wait(pid));
		run(&s, 8192);
		stream_close(&s);
		return;
	}
	psplice_pair_free(s.p);
	s.p = NULL;
	T_ASSERT(t_wait(pid));
	stream_close(&s);
}

/* PSPLICE_F_NOFALLBACK: pending bytes never go out by write(2). Past the
 * budget the pair keeps its pipe anyway; an output that takes no splice
 * says EOPNOTSUPP, side out, and the bytes stay pending for the caller. */
static void nofallback(void *arg)
{
	struct psplice_result r;
	struct psplice_pair *p;
	struct stream s;
	uint8_t buf[10];
	int a[2], comm;

	(void)arg;
	T_OK(setenv("PSPLICE_MAX_PIPES", "0", 1));
	stream_open(&s, 3000000, SEED + 6);
	psplice_pair_free(s.p);
	s.p = psplice_pair_new(s.in_r, s.out_w, PSPLICE_F_NOFALLBACK);
	T_ASSERT(s.p);
	take_some(&s);
	run(&s, 8192);
	T_EQ_U(s.by_method[PSPLICE_METHOD_READWRITE], 0);
	T_EQ_U(s.by_method[PSPLICE_METHOD_SPLICE_PIPE], s.total);
	stream_close(&s);

	/* /proc/self/comm is a file that takes write(2) and no splice. */
	comm = open("/proc/self/comm", O_WRONLY | O_CLOEXEC);
	T_OK(comm);
	t_unix_pair(a);
	t_fill_fd(a[1], sizeof(buf), SEED + 7);
	p = psplice_pair_new(a[0], comm, PSPLICE_F_NOFALLBACK);
	T_ASSERT(p);
	T_ERRNO(psplice_pair_move(p, NULL, NULL, 4096, 0, &r), EOPNOTSUPP);
	T_EQ(r.side, PSPLICE_SIDE_OUT);
	T_EQ_U(r.in_bytes, sizeof(buf));
	T_EQ_U(psplice_pair_pending(p), sizeof(buf));
	T_ERRNO(psplice_pair_move(p, NULL, NULL, 4096, 0, &r), EOPNOTSUPP);
	T_RESULT(r, EOPNOTSUPP, PSPLICE_SIDE_OUT, 0, 0);
	T_EQ_U(psplice_pair_take(p, buf, sizeof(buf)), sizeof(buf));
	T_ASSERT(t_check_buf(buf, sizeof(buf), SEED + 7, 0));
	psplice_pair_free(p);
	close(comm);
	t_close_pair(a);
}

/* A pair freed by a thread-specific-data destructor, after the library's
 * own per-thread state is gone: its pending bytes are handed back all the
 * same. */
static pthread_key_t pair_key;
static uint64_t freed_parked, freed_want;

static void free_at_exit(void *arg)
{
	psplice_pair_free(arg);
	freed_parked = psplice_last()->parked_len;
}

static void *take_then_exit(void *arg)
{
	struct stream *s = arg;

	take_some(s);
	drain(s, SIZE_MAX);
	freed_want = s->pending;
	pthread_setspecific(pair_key, s->p);
	return NULL;
}

static void freed_at_thread_exit(void)
{
	struct stream s;
	pthread_t th;

	stream_open(&s, 300000, SEED + 8);
	/* The library's key first: its destructor runs before ours. */
	T_EQ_U(psplice_pair_pending(s.p), 0);
	(void)psplice_last();
	T_EQ(pthread_key_create(&pair_key, free_at_exit), 0);
	T_EQ(pthread_create(&th, NULL, take_then_exit, &s), 0);
	T_EQ(pthread_join(th, NULL), 0);
	T_ASSERT(freed_want > 0);
	T_EQ_U(freed_parked, freed_want);
	s.p = NULL;
	stream_close(&s);
	pthread_key_delete(pair_key);
}

/* A program built against 0.1 gets psplice_pair_new@PSPLICE_0.1, whose
 * pairs park what they could not deliver, as that version promised. */
struct psplice_pair *pair_new_0_1(int fd_in, int fd_out, unsigned int flags);
__asm__(".symver pair_new_0_1, psplice_pair_new@PSPLICE_0.1");

static void version_0_1(void)
{
	struct psplice_result r;
	struct stream s;

	stream_open(&s, 300000, SEED + 9);
	psplice_pair_free(s.p);
	s.p = pair_new_0_1(s.in_r, s.out_w, 0);
	T_ASSERT(s.p);
	feed(&s);
	psplice_pair_move(s.p, NULL, NULL, MOVE, PSPLICE_F_NONBLOCK, &r);
	T_ASSERT(r.in_bytes > r.out_bytes);
	T_EQ_U(r.parked_len, r.in_bytes - r.out_bytes);
	T_EQ_U(psplice_pair_pending(s.p), 0);
	drain(&s, SIZE_MAX);
	T_ASSERT(t_check_buf(r.parked, r.parked_len, s.seed, s.checked));
	stream_close(&s);
}

#define NSTREAMS 5

/* PSPLICE_MAX_PIPES=2: two pairs keep their pipes; the others hold their
 * bytes in memory and say readwrite; every stream arrives whole, and the
 * fds held are the kept pipes, not one pipe per pair. */
static void budget(void *arg)
{
	struct stream s[NSTREAMS];
	int i, base, held, done;

	(void)arg;
	T_OK(setenv("PSPLICE_MAX_PIPES", "2", 1));
	for (i = 0; i < NSTREAMS; i++)
		stream_open(&s[i], 600000, SEED + 10 + (uint32_t)i);
	base = t_count_fds();
	for (i = 0; i < NSTREAMS; i++)
		take_some(&s[i]);
	held = t_count_fds() - base;
	for (i = 0; i < NSTREAMS; i++)
		held += s[i].in_closed; /* fed whole and closed */
	/* Two kept pipes, and the thread's own: three pipes, six fds. */
	T_EQ(held, 6);
	for (done = 0; done < NSTREAMS;) {
		done = 0;
		for (i = 0; i < NSTREAMS; i++) {
			if (s[i].ended && s[i].checked == s[i].total) {
				done++;
				continue;
			}
			feed(&s[i]);
			if (!s[i].ended)
				step(&s[i]);
			drain(&s[i], 8192);
		}
	}
	for (i = 0; i < NSTREAMS; i++)
		T_EQ_U(s[i].checked, s[i].total);
	/* A pair past the budget said so: its bytes went through memory. */
	T_ASSERT(s[0].by_method[PSPLICE_METHOD_SPLICE_PIPE] > 0);
	T_ASSERT(s[2].by_method[PSPLICE_METHOD_READWRITE] > 0);
	for (i = 0; i < NSTREAMS; i++)
		stream_close(&s[i]);
	T_ASSERT(t_count_fds() - base + 4 * NSTREAMS <= 6);
}

static int highest_fd(void)
{
	int fd, top = 0;

	for (fd = 0; fd < 4096; fd++)
		if (fcntl(fd, F_GETFD) >= 0)
			top = fd;
	return top;
}

/* No fd for a pipe (RLIMIT_NOFILE): the pair moves with read/write and
 * holds its bytes in memory. */
static void no_fds(void *arg)
{
	struct rlimit rl;
	struct stream s;

	(void)arg;
	stream_open(&s, 2000000, SEED + 20);
	T_OK(getrlimit(RLIMIT_NOFILE, &rl));
	rl.rlim_cur = (rlim_t)highest_fd() + 1;
	T_OK(setrlimit(RLIMIT_NOFILE, &rl));
	t_fill_fds();
	run(&s, 4096);
	T_EQ_U(s.by_method[PSPLICE_METHOD_READWRITE], s.total);
	T_ASSERT(s.max_pending > 0);
	t_unfill_fds();
	stream_close(&s);
}

/* A user past fs.pipe-user-pages-soft gets two-page pipes and no bigger:
 * the pair moves through a small pipe, and keeps it while it holds bytes. */
static void small_pipes(void *arg)
{
	struct stream s;
	int fds[2], n;

	(void)arg;
	if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0)
		exit(T_FAIL);
	for (n = 0; n < 400; n++) {
		if (pipe2(fds, O_CLOEXEC) < 0)
			exit(T_FAIL);
		if (fcntl(fds[1], F_SETPIPE_SZ, 1 << 20) < 0) {
			if (errno != EPERM)
				exit(T_FAIL);
			break;
		}
	}
	if (n == 400) {
		fprintf(stderr, "SKIP part: pipe-user-pages-soft does not limit pipes here\n");
		exit(T_SKIP);
	}
	stream_open(&s, 2000000, SEED + 30);
	run(&s, 4096);
	T_ASSERT(s.max_in <= 8192);
	T_ASSERT(s.max_pending > 0);
	T_EQ_U(s.by_method[PSPLICE_METHOD_SPLICE_PIPE], s.total);
	stream_close(&s);
}

int main(int argc, char **argv)
{
	int st;

	t_dir(argc, argv);
	signal(SIGPIPE, SIG_IGN);
	unsetenv("PSPLICE_MAX_PIPES");
	/* The budget is read once per process: these run in children, before
	 * this process keeps a pipe. */
	T_EQ(t_child(budget, NULL), T_PASS);
	T_EQ(t_child(no_fds, NULL), T_PASS);
	T_EQ(t_child(nofallback, NULL), T_PASS);
	if (t_root()) {
		st = t_child(small_pipes, NULL);
		T_ASSERT(st == T_PASS || st == T_SKIP);
	} else {
		fprintf(stderr, "SKIP part: small pipes need root to become another user\n");
	}
	backpressure();
	half_close();
	take_and_free();
	pair_copy();
	two_threads();
	fork_then_free(true);
	fork_then_free(false);
	freed_at_thread_exit();
	version_0_1();
	return T_PASS;
}
