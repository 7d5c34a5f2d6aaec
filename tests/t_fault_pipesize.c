/* The system's pipe limits lowered (as root; put back at exit, on a fatal
 * signal and on the alarm): fs.pipe-max-size to one page, so that
 * F_SETPIPE_SZ cannot grow the internal pipe past it, and then
 * fs.pipe-user-pages-soft to 1 too, so that new pipes of an unprivileged
 * user get two pages. As nobody (root is exempt from both), every path
 * through the internal pipe (a copy socket to socket, file to socket, socket
 * to file, and a prepared pair whose reader is slow, so bytes wait pending
 * in the small pipe) moves every byte in order, through the small pipe and
 * not through user memory. No fd is left behind. */
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include "t.h"

#define SEED 71
#define N ((uint64_t)4 << 20)
#define NOBODY 65534
#define MAXSZ "/proc/sys/fs/pipe-max-size"
#define SOFT "/proc/sys/fs/pipe-user-pages-soft"

struct knob {
	const char *path;
	char saved[32];
	size_t len;
};

static struct knob knobs[] = { { MAXSZ, "", 0 }, { SOFT, "", 0 } };
static int src, outfile; /* opened as root: nobody cannot reach the scratch dir */

/* Async-signal-safe: also run from the signal handlers. */
static void restore(void)
{
	for (size_t i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++) {
		int fd;

		if (!knobs[i].len)
			continue;
		fd = open(knobs[i].path, O_WRONLY | O_CLOEXEC);
		if (fd >= 0) {
			if (write(fd, knobs[i].saved, knobs[i].len) == (ssize_t)knobs[i].len)
				knobs[i].len = 0;
			close(fd);
		}
	}
}

static void on_fatal(int sig)
{
	(void)sig;
	restore();
	_exit(T_FAIL);
}

static void set(struct knob *k, const char *v)
{
	int fd = open(k->path, O_RDWR | O_CLOEXEC);
	ssize_t n;

	T_OK(fd);
	if (!k->len) {
		n = read(fd, k->saved, sizeof(k->saved) - 1);
		T_ASSERT(n > 0);
		k->len = (size_t)n;
	}
	T_EQ(pwrite(fd, v, strlen(v), 0), (ssize_t)strlen(v));
	close(fd);
}

static void as_nobody(void)
{
	T_OK(setgid(NOBODY));
	T_OK(setuid(NOBODY));
}

static void copy_streams(int in_kind_file, int out_kind_file)
{
	struct psplice_result r;
	int u[2], d[2], in, out;
	pid_t feed = -1, drain = -1;

	if (in_kind_file) {
		in = src;
		T_OK(lseek(src, 0, SEEK_SET));
	} else {
		t_unix_pair(u);
		feed = t_feed(u[1], N, SEED);
		close(u[1]);
		in = u[0];
	}
	if (out_kind_file) {
		out = dup(outfile);
		T_OK(out);
		T_OK(ftruncate(out, 0));
		T_OK(lseek(out, 0, SEEK_SET));
	} else {
		t_unix_pair(d);
		drain = t_drain_check(d[1], N, SEED);
		close(d[1]);
		out = d[0];
	}
	T_EQ(psplice_copy(in, NULL, out, NULL, PSPLICE_TO_EOF,
			  PSPLICE_F_ONLY(PSPLICE_METHOD_SPLICE_PIPE), &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, N, N);
	T_EQ(r.method, PSPLICE_METHOD_SPLICE_PIPE);
	if (out_kind_file)
		T_ASSERT(t_check_fd(out, 0, N, SEED, 0));
	else
		T_OK(shutdown(out, SHUT_WR)); /* the drainer holds a copy */
	close(out);
	if (drain > 0)
		T_ASSERT(t_wait(drain));
	if (feed > 0) {
		T_ASSERT(t_wait(feed));
		close(in);
	}
}

/* A pair into a socket nobody reads for a while: what it took waits in
 * the small pipe (pending), and goes out first once the reader is back. */
static void slow_pair(void)
{
	struct psplice_result r;
	struct psplice_pair *p;
	uint8_t *buf = malloc(N);
	uint64_t got = 0;
	int u[2], d[2];
	ssize_t n;
	pid_t feed;

	T_ASSERT(buf);
	t_unix_pair(u);
	t_unix_pair(d);
	feed = t_feed(u[1], N, SEED);
	close(u[1]);
	t_set_nonblock(d[0], true);
	p = psplice_pair_new(u[0], d[0], 0);
	T_ASSERT(p);
	for (long i = 0; i < 10000000 && got < N; i++) {
		n = psplice_pair_move(p, NULL, NULL, 1 << 20, PSPLICE_F_NONBLOCK, &r);
		T_EQ(r.parked_len, 0);
		T_ASSERT(r.method != PSPLICE_METHOD_READWRITE);
		if (n < 0 && r.error != EAGAIN)
			T_FAILED("%s on side %s", strerror(r.error), psplice_side_name(r.side));
		/* The reader takes a little every few moves. */
		if (i % 4 == 0 || n < 0) {
			n = recv(d[1], buf + got, N - got < 3000 ? (size_t)(N - got) : 3000,
				 MSG_DONTWAIT);
			if (n > 0)
				got += (uint64_t)n;
		}
	}
	T_EQ_U(got, N);
	T_ASSERT(t_check_buf(buf, N, SEED, 0));
	T_EQ(psplice_pair_pending(p), 0);
	psplice_pair_free(p);
	T_ASSERT(t_wait(feed));
	close(u[0]);
	t_close_pair(d);
	free(buf);
}

static void limited(void *arg)
{
	int p[2], before;
	bool soft = *(bool *)arg;

	alarm(100);
	as_nobody();
	t_pipe(p);
	T_ERRNO(fcntl(p[1], F_SETPIPE_SZ, 1 << 20), EPERM);
	if (soft)
		T_ASSERT(fcntl(p[1], F_GETPIPE_SZ) < 65536);
	t_close_pair(p);
	before = t_count_fds();
	copy_streams(0, 0);
	copy_streams(1, 0);
	copy_streams(0, 1);
	slow_pair();
	T_ASSERT(t_count_fds() <= before + 2); /* this thread's internal pipe */
}

int main(int argc, char **argv)
{
	int sigs[] = { SIGALRM, SIGTERM, SIGINT, SIGHUP, SIGSEGV, SIGABRT };
	bool soft;
	int rc;

	t_dir(argc, argv);
	T_SKIP_IF(!t_root(), "lowering %s and %s needs root", MAXSZ, SOFT);
	src = t_make_file(t_path("src"), N, SEED);
	outfile = open(t_path("out"), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	T_OK(outfile);
	atexit(restore);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		signal(sigs[i], on_fatal);
	alarm(250);

	set(&knobs[0], "4096");
	soft = false;
	rc = t_child(limited, &soft);
	T_EQ(rc, T_PASS);
	set(&knobs[1], "1");
	soft = true;
	rc = t_child(limited, &soft);
	restore();
	T_EQ(rc, T_PASS);
	T_EQ(knobs[0].len + knobs[1].len, 0); /* both put back */
	close(src);
	close(outfile);
	return T_PASS;
}
