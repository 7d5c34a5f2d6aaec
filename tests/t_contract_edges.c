/* The edges of the contract that a randomized run found undecided, each
 * written out as the case that showed it:
 * - an input offset far past the end (near INT64_MAX) is the end of input,
 *   as pread(2) says, never an error of the output;
 * - PSPLICE_F_NOFALLBACK (and a forced path) at the end of a file is the
 *   end, not "no fast path";
 * - method is NONE when no byte was delivered;
 * - psplice_copy to end of input with an output offset near INT64_MAX moves
 *   what fits and says EFBIG on the output only when a byte would not;
 * - EAGAIN from a file input always names the output;
 * - after fork(), parent and child do not share the internal pipe;
 * - a file past 2 GiB goes to a tty (sendfile's EOVERFLOW is "next path");
 * - EINTR may come with parked bytes, as psplice(3) says. */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "t.h"

#define FAR (INT64_MAX - 65543) /* 9223372036854710264, the case reported */

struct sink {
	const char *name;
	int fd, peer;     /* peer: the other end, or -1 */
};

static int nsinks;
static struct sink sinks[8];

static void add_sink(const char *name, int fd, int peer)
{
	sinks[nsinks++] = (struct sink){ name, fd, peer };
}

static void make_sinks(const char *dir)
{
	char path[4200];
	int p[2], m, s;

	t_pipe(p);
	add_sink("pipe", p[1], p[0]);
	t_unix_pair(p);
	add_sink("unix", p[0], p[1]);
	t_tcp_pair(p);
	add_sink("tcp", p[0], p[1]);
	t_pty(&m, &s);
	add_sink("pty", s, m);
	add_sink("/dev/null", open("/dev/null", O_WRONLY | O_CLOEXEC), -1);
	add_sink("file", open(t_path("sink"), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644), -1);
	snprintf(path, sizeof(path), "%s/sink", dir);
	add_sink("tmpfs file", open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644), -1);
	for (int i = 0; i < nsinks; i++)
		T_OK(sinks[i].fd);
}

/* Nothing waits in a sink: a test that sent bytes would see them here. */
static void sinks_empty(void)
{
	struct stat st;

	for (int i = 0; i < nsinks; i++) {
		if (sinks[i].peer >= 0 && strcmp(sinks[i].name, "pty"))
			T_EQ(t_queued(sinks[i].peer), 0);
		if (fstat(sinks[i].fd, &st) == 0 && S_ISREG(st.st_mode))
			T_EQ(st.st_size, 0);
	}
}

#define END(res) do { T_RESULT(res, 0, PSPLICE_SIDE_NONE, 0, 0); \
	T_EQ((res).method, PSPLICE_METHOD_NONE); } while (0)

/* A length whose range ends within int64_t: past that, a length is EINVAL
 * (as with pread(2)), and t_badinput says so. */
static size_t fit(int64_t at, size_t len)
{
	return (uint64_t)(INT64_MAX - at) < len ? (size_t)(INT64_MAX - at) : len;
}

/* Every entry, at an input offset, to every sink: the end of input. */
static void at_end(int in, int64_t at, unsigned int flags, const char *what)
{
	struct psplice_result r;
	struct psplice_pair *p;
	int64_t off;

	/* A forced path that cannot take a pipe (the first sink) answers
	 * EOPNOTSUPP there, rightly: it does not apply. */
	for (int i = flags & PSPLICE_F_ONLY_MASK ? 1 : 0; i < nsinks; i++) {
		int out = sinks[i].fd;

		fprintf(stderr, "%s at %lld to %s, flags %#x\n", what, (long long)at,
			sinks[i].name, flags);
		off = at;
		T_EQ(psplice_ex(in, &off, out, NULL, fit(at, 4096), flags, &r), 0);
		END(r);
		T_EQ(off, at);
		T_EQ(psplice_ex(in, &off, out, NULL, fit(at, 65543), flags, &r), 0);
		END(r);
		T_EQ(psplice_copy(in, &off, out, NULL, PSPLICE_TO_EOF, flags, &r), 0);
		END(r);
		T_EQ(off, at);
		p = psplice_pair_new(in, out, flags);
		T_ASSERT(p);
		T_EQ(psplice_pair_move(p, &off, NULL, fit(at, 4096), 0, &r), 0);
		END(r);
		psplice_pair_free(p);
		T_EQ(off, at);
	}
	sinks_empty();
}

static void offsets_past_end(int empty, int small, int tmp_empty)
{
	at_end(empty, FAR, 0, "empty ext4 file");
	at_end(tmp_empty, FAR, 0, "empty tmpfs file");
	at_end(small, FAR, 0, "100-byte file");
	at_end(small, INT64_MAX - 1, 0, "100-byte file");
}

static void nofallback_at_end(int empty, int small, int tmp_empty)
{
	static const unsigned int flags[] = {
		PSPLICE_F_NOFALLBACK, PSPLICE_F_ONLY(PSPLICE_METHOD_SENDFILE),
		PSPLICE_F_ONLY(PSPLICE_METHOD_SPLICE_PIPE), PSPLICE_F_NOFALLBACK | PSPLICE_F_MORE,
	};

	for (unsigned i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		at_end(empty, 0, flags[i] & ~PSPLICE_F_MORE, "empty ext4 file, no fallback");
		at_end(tmp_empty, 0, flags[i] & ~PSPLICE_F_MORE, "empty tmpfs file, no fallback");
		at_end(small, 100, flags[i] & ~PSPLICE_F_MORE, "100-byte file at 100, no fallback");
		at_end(small, FAR, flags[i] & ~PSPLICE_F_MORE, "100-byte file far, no fallback");
	}
	/* Between two files, each forced path at the end of an empty file. */
	for (int m = PSPLICE_METHOD_COPY_FILE_RANGE; m <= PSPLICE_METHOD_SPLICE_PIPE; m++) {
		struct psplice_result r;

		if (m == PSPLICE_METHOD_SPLICE)
			continue; /* needs a pipe */
		T_EQ(psplice_ex(empty, NULL, sinks[5].fd, NULL, 4096, PSPLICE_F_ONLY(m), &r), 0);
		END(r);
		T_EQ(psplice_copy(tmp_empty, NULL, sinks[6].fd, NULL, PSPLICE_TO_EOF,
				  PSPLICE_F_ONLY(m), &r), 0);
		END(r);
	}
}

/* A /proc file has content whatever its size says: no fallback must not
 * pass for its end. */
static void proc_not_end(void)
{
	int in = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	int nul = open("/dev/null", O_WRONLY | O_CLOEXEC);
	struct psplice_result r;
	ssize_t n;

	T_OK(in);
	n = psplice_ex(in, NULL, nul, NULL, 65536, PSPLICE_F_NOFALLBACK, &r);
	T_ASSERT(n > 0 || (n < 0 && r.error == EOPNOTSUPP));
	close(in);
	close(nul);
}

/* A failure that delivered nothing names no method. */
static void method_none(int small)
{
	int full = open("/dev/full", O_WRONLY | O_CLOEXEC), u[2];
	struct psplice_result r;
	int64_t off = 0;

	T_OK(full);
	T_ERRNO(psplice_ex(small, &off, full, NULL, 100,
			   PSPLICE_F_ONLY(PSPLICE_METHOD_READWRITE), &r), ENOSPC);
	T_RESULT(r, ENOSPC, PSPLICE_SIDE_OUT, 0, 0);
	T_EQ(r.method, PSPLICE_METHOD_NONE);
	T_ERRNO(psplice_ex(small, &off, full, NULL, 100, 0, &r), ENOSPC);
	T_EQ(r.method, PSPLICE_METHOD_NONE);
	T_EQ(psplice_copy(small, &off, full, NULL, PSPLICE_TO_EOF, 0, &r), -1);
	T_RESULT(r, ENOSPC, PSPLICE_SIDE_OUT, 0, 0);
	T_EQ(r.method, PSPLICE_METHOD_NONE);
	/* Taken from a socket and parked: still nothing delivered. */
	t_unix_pair(u);
	t_fill_fd(u[1], 1000, 3);
	T_ERRNO(psplice_ex(u[0], NULL, full, NULL, 1000, 0, &r), ENOSPC);
	T_EQ(r.side, PSPLICE_SIDE_OUT);
	T_EQ(r.out_bytes, 0);
	T_EQ_U(r.parked_len, r.in_bytes);
	T_EQ(r.method, PSPLICE_METHOD_NONE);
	t_close_pair(u);
	close(full);
}

/* To end of input with the output offset near INT64_MAX. */
static void out_near_max(const char *tmp, int empty, int small, int tmp_in)
{
	char path[4200];
	struct psplice_result r;
	int64_t oo;
	int out;

	snprintf(path, sizeof(path), "%s/far", tmp);
	out = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	T_OK(out);
	/* No byte to move: nothing would pass the limit. */
	oo = INT64_MAX;
	T_EQ(psplice_copy(empty, NULL, out, &oo, PSPLICE_TO_EOF, 0, &r), 0);
	END(r);
	oo = INT64_MAX - 10;
	T_EQ(psplice_copy(empty, NULL, out, &oo, PSPLICE_TO_EOF, 0, &r), 0);
	END(r);
	/* tmpfs takes files up to INT64_MAX bytes: 10 bytes fit, then the
	 * next byte would lie past the largest offset. */
	T_EQ(lseek(small, 0, SEEK_SET), 0);
	T_EQ(psplice_copy(small, NULL, out, &oo, PSPLICE_TO_EOF, 0, &r), -1);
	T_RESULT(r, EFBIG, PSPLICE_SIDE_OUT, 10, 10);
	T_EQ(oo, INT64_MAX);
	T_EQ(t_pos(small), 10);
	/* 5 bytes fit whole: no error. */
	T_EQ(lseek(small, 95, SEEK_SET), 95);
	oo = INT64_MAX - 10;
	T_EQ(psplice_copy(small, NULL, out, &oo, PSPLICE_TO_EOF, 0, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, 5, 5);
	T_EQ(oo, INT64_MAX - 5);
	T_ASSERT(t_check_fd(out, INT64_MAX - 10, 5, 11, 95));
	/* The same through the file positions. */
	T_EQ(lseek(small, 0, SEEK_SET), 0);
	T_EQ(lseek(out, INT64_MAX - 10, SEEK_SET), INT64_MAX - 10);
	T_EQ(psplice_copy(small, NULL, out, NULL, PSPLICE_TO_EOF, 0, &r), -1);
	T_RESULT(r, EFBIG, PSPLICE_SIDE_OUT, 10, 10);
	T_EQ(t_pos(out), INT64_MAX);
	T_EQ(t_pos(small), 10);
	T_EQ(lseek(out, 0, SEEK_SET), 0);
	T_EQ(lseek(tmp_in, INT64_MAX - 10, SEEK_SET), INT64_MAX - 10);
	T_EQ(psplice_copy(tmp_in, NULL, out, NULL, PSPLICE_TO_EOF, 0, &r), 0);
	END(r);
	T_EQ(t_pos(tmp_in), INT64_MAX - 10);
	/* An input offset at the limit is the end of input. */
	oo = 0;
	int64_t oi = INT64_MAX;
	T_EQ(psplice_copy(small, &oi, out, &oo, PSPLICE_TO_EOF, 0, &r), 0);
	END(r);
	close(out);
	unlink(path);
}

/* EAGAIN from a file into a full pipe whose reader drains it meanwhile: the
 * poll that tells the side may see room by then, and the answer must still
 * be the output (a file never makes a call wait). Into a socket too. */
static volatile int draining;

static void *drainer(void *arg)
{
	char buf[4096];
	int fd = *(int *)arg;

	while (draining) {
		if (read(fd, buf, sizeof(buf)) <= 0)
			usleep(100);
	}
	return NULL;
}

static void eagain_side_into(int big, int u[2])
{
	struct psplice_result r;
	pthread_t th;
	int eagains = 0;
	int64_t off = 0;

	t_set_nonblock(u[0], true);
	t_set_nonblock(u[1], true);
	draining = 1;
	T_EQ(pthread_create(&th, NULL, drainer, &u[0]), 0);
	for (int i = 0; i < 20000 && eagains < 2000; i++) {
		if (off >= (1 << 20))
			off = 0;
		psplice_ex(big, &off, u[1], NULL, 65536, PSPLICE_F_NONBLOCK, &r);
		if (r.error == EAGAIN) {
			eagains++;
			T_EQ(r.side, PSPLICE_SIDE_OUT);
		}
	}
	draining = 0;
	pthread_join(th, NULL);
	T_ASSERT(eagains > 0);
	t_close_pair(u);
}

static void eagain_side(int big)
{
	int u[2];

	t_pipe(u);
	eagain_side_into(big, u);
	t_unix_pair(u);
	eagain_side_into(big, u);
}

/* Used before fork(), the library must not let the two processes share
 * its internal pipe: each relays its own stream over Unix sockets. */
static void relay_stream(uint32_t seed)
{
	int a[2], b[2];
	pid_t feed, check;
	struct psplice_result r;

	/* The checker first, so that it holds no copy of the feeder's end
	 * (the input would never end); the feeder exits once it has fed. */
	t_unix_pair(b);
	check = fork();
	T_OK(check);
	if (!check) {
		char extra;

		close(b[0]);
		_exit(t_check_fd(b[1], -1, 16u << 20, seed, 0) &&
		      read(b[1], &extra, 1) == 0 ? 0 : 1);
	}
	close(b[1]);
	t_unix_pair(a);
	feed = t_feed(a[1], 16u << 20, seed);
	close(a[1]);
	T_EQ(psplice_copy(a[0], NULL, b[0], NULL, PSPLICE_TO_EOF, 0, &r), 0);
	T_EQ_U(r.out_bytes, 16u << 20);
	T_EQ(r.method, PSPLICE_METHOD_SPLICE_PIPE);
	close(a[0]);
	close(b[0]);
	T_ASSERT(t_wait(feed));
	T_ASSERT(t_wait(check));
}

static void after_fork(void)
{
	pid_t kids[3];
	int st;

	relay_stream(20); /* the internal pipe now exists */
	for (int i = 0; i < 3; i++) {
		kids[i] = fork();
		T_OK(kids[i]);
		if (!kids[i]) {
			relay_stream(21 + (uint32_t)i);
			_exit(T_PASS);
		}
	}
	relay_stream(30);
	for (int i = 0; i < 3; i++) {
		T_OK(waitpid(kids[i], &st, 0));
		T_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == T_PASS);
	}
}

/* A pty's filesystem caps sendfile at 2 GiB; the bytes past it still go. */
static void tty_past_2g(void)
{
	const int64_t at = (2047ll << 20);
	static unsigned char buf[2u << 20];
	int in = open(t_path("big"), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	struct psplice_result r;
	int m, s, st;
	int64_t off = at;
	pid_t pid;

	T_OK(in);
	T_OK(ftruncate(in, at));
	t_gen(12, 0, buf, sizeof(buf));
	T_EQ(pwrite(in, buf, sizeof(buf), at), (ssize_t)sizeof(buf));
	t_pty(&m, &s);
	pid = fork();
	T_OK(pid);
	if (!pid) {
		close(s);
		_exit(t_check_fd(m, -1, 2u << 20, 12, 0) ? 0 : 1);
	}
	close(m);
	T_EQ(psplice_copy(in, &off, s, NULL, 2u << 20, 0, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, 2u << 20, 2u << 20);
	T_EQ(off, at + (2 << 20));
	T_OK(waitpid(pid, &st, 0));
	T_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(s);
	close(in);
	unlink(t_path("big"));
}

static void on_alarm(int sig)
{
	(void)sig;
}

/* A single step interrupted after it took bytes from a socket parks them
 * (a signal still ends a wait on a stalled output); a caller that retries
 * EINTR takes them first, and loses nothing. */
static void eintr_parks(void)
{
	struct sigaction sa = { .sa_handler = on_alarm };
	struct itimerval it = { { 0, 20000 }, { 0, 20000 } };
	struct psplice_result r;
	int in[2], out[2], small = 4096, parks = 0;
	uint64_t fed = 256u << 10, got = 0;
	pid_t check, feed;
	time_t deadline;

	T_OK(sigaction(SIGALRM, &sa, NULL));
	t_unix_pair(in);
	t_unix_pair(out);
	T_OK(setsockopt(out[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)));
	feed = fork();
	T_OK(feed);
	if (!feed) {
		close(in[0]);
		close(out[0]);
		close(out[1]);
		t_fill_fd(in[1], fed, 13);
		_exit(0);
	}
	close(in[1]);
	/* A slow reader, so the output is full most of the time. */
	check = fork();
	T_OK(check);
	if (!check) {
		static unsigned char buf[1000];
		uint64_t n = 0;
		ssize_t k;

		close(out[0]);
		close(in[0]);
		while ((k = read(out[1], buf, sizeof(buf))) > 0) {
			if (!t_check_buf(buf, (size_t)k, 13, n))
				_exit(1);
			n += (uint64_t)k;
			usleep(200);
		}
		_exit(n == fed ? 0 : 2);
	}
	close(out[1]);
	T_OK(setitimer(ITIMER_REAL, &it, NULL));
	/* The interval timer took alarm()'s place: bound the loop by time. */
	deadline = time(NULL) + 60;
	while (got < fed) {
		T_ASSERT(time(NULL) < deadline);
		ssize_t n = psplice_ex(in[0], NULL, out[0], NULL, 65536, 0, &r);

		if (n > 0) {
			got += (uint64_t)n;
			continue;
		}
		T_ASSERT(n < 0);
		T_EQ(r.error, EINTR);
		T_EQ_U(r.parked_len, r.in_bytes - r.out_bytes);
		got += r.out_bytes;
		if (r.parked_len) {
			parks++;
			for (size_t done = 0; done < r.parked_len;) {
				ssize_t w = write(out[0], (const char *)r.parked + done,
						  r.parked_len - done);
				if (w < 0 && errno == EINTR)
					continue;
				T_ASSERT(w > 0);
				done += (size_t)w;
			}
			got += r.parked_len;
		}
	}
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
	/* A tick may still be on its way (valgrind delivers signals late):
	 * the handler stays, as under SIG_DFL it would kill the test. The
	 * waits below retry EINTR; the runner's timeout bounds them. */
	close(out[0]);
	close(in[0]);
	T_ASSERT(t_wait(check));
	T_ASSERT(t_wait(feed));
	fprintf(stderr, "EINTR with parked bytes: %d\n", parks);
}

int main(int argc, char **argv)
{
	const char *tmp;
	char path[4200];
	int empty, small, tmp_empty, big;

	t_dir(argc, argv);
	alarm(120);
	tmp = t_tmpfs_dir();
	T_ASSERT(tmp != NULL);
	make_sinks(tmp);
	empty = t_make_file(t_path("empty"), 0, 10);
	small = t_make_file(t_path("small"), 100, 11);
	snprintf(path, sizeof(path), "%s/empty", tmp);
	tmp_empty = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	T_OK(tmp_empty);
	big = t_make_file(t_path("big1m"), 1u << 20, 14);

	offsets_past_end(empty, small, tmp_empty);
	nofallback_at_end(empty, small, tmp_empty);
	proc_not_end();
	method_none(small);
	out_near_max(tmp, empty, small, tmp_empty);
	eagain_side(big);
	after_fork();
	tty_past_2g();
	eintr_parks();
	return T_PASS;
}
