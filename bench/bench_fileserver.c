/* psplice bench, group "file-server": a server that answers one request at
 * a time over loopback TCP, as a file server does (an SMB read or write):
 * "serve" reads N bytes of a 1 GiB cached file at a random offset into the
 * connection, "recvfile" writes N bytes from the connection into a file at
 * a random offset. The server is this process, each request moved by each
 * way in turn: psplice() against the ways a program writes by itself
 * (sendfile, pread + send, splice through a pipe it keeps; recv + pwrite,
 * splice through a kept pipe). The client is a child process that asks
 * (serve: a request, then reads the answer) or sends (recvfile: requests
 * with their bytes, back to back) until the server closes. Requests a
 * second and the server thread's CPU per request, best of the rounds, each
 * way taking its turn in every round; the ratio is to the best raw way. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "psplice.h"

#define GROUP "file-server"
#define ROUNDS 5
#define BUF (1u << 20)
#define PIPE_CAP (1u << 20)
#define PROMISE PSPLICE_F_SIGPIPE_IGNORED

struct req {
	uint64_t off, len;
};

enum way { W_PSPLICE, W_COPY, W_SENDFILE, W_PREAD, W_SPLICE, W_RECV, N_WAYS };
static const char *const way_names[] = {
	"psplice()", "psplice_copy()", "sendfile", "pread + send", "splice via kept pipe",
	"recv + pwrite",
};
#define N_OURS 2 /* the ways before W_SENDFILE are psplice's */

struct server {
	int file, out;   /* what serve reads, what recvfile writes */
	int sock, kr, kw;
	unsigned char *buf;
	uint64_t size;   /* of the file, and of the span recvfile writes */
};

static bool send_all(int fd, const unsigned char *b, size_t n)
{
	ssize_t w;

	for (; n; b += w, n -= (size_t)w) {
		w = send(fd, b, n, MSG_NOSIGNAL);
		if (w <= 0)
			return false;
	}
	return true;
}

static bool pwrite_all(int fd, const unsigned char *b, size_t n, off_t off)
{
	ssize_t w;

	for (; n; b += w, n -= (size_t)w, off += w) {
		w = pwrite(fd, b, n, off);
		if (w <= 0)
			return false;
	}
	return true;
}

/* The kept pipe into fd (at *off when not NULL): all of its n bytes. */
static bool pipe_out(struct server *s, int fd, loff_t *off, size_t n)
{
	ssize_t m;

	for (; n; n -= (size_t)m) {
		m = splice(s->kr, NULL, fd, off, n, 0);
		if (m <= 0)
			return false;
	}
	return true;
}

/* One step by psplice's way w, in to out, the file at its offset: > 0
 * bytes moved; psplice_copy moves them all or fails. */
static ssize_t ours(int w, int in, int64_t *oi, int out, int64_t *oo, size_t left)
{
	if (w == W_PSPLICE)
		return psplice(in, oi, out, oo, left, PROMISE);
	return psplice_copy(in, oi, out, oo, left, PROMISE, NULL) ? -1 : (ssize_t)left;
}

/* One step of a serve by the way w: > 0 bytes moved. */
static ssize_t serve_step(struct server *s, int w, int64_t *off, size_t left)
{
	loff_t lo = *off;
	ssize_t m;

	if (left > BUF)
		left = BUF;
	switch (w) {
	case W_PSPLICE:
	case W_COPY: return ours(w, s->file, off, s->sock, NULL, left);
	case W_SENDFILE: m = sendfile(s->sock, s->file, &lo, left); break;
	case W_PREAD:
		m = pread(s->file, s->buf, left, *off);
		if (m > 0 && !send_all(s->sock, s->buf, (size_t)m))
			return -1;
		break;
	default:
		m = splice(s->file, &lo, s->kw, NULL, left, 0);
		if (m > 0 && !pipe_out(s, s->sock, NULL, (size_t)m))
			return -1;
	}
	if (m > 0)
		*off += m;
	return m;
}

/* One step of a recvfile by the way w. */
static ssize_t recv_step(struct server *s, int w, int64_t *off, size_t left)
{
	loff_t lo = *off;
	ssize_t m;

	if (left > BUF)
		left = BUF;
	switch (w) {
	case W_PSPLICE:
	case W_COPY: return ours(w, s->sock, NULL, s->out, off, left);
	case W_RECV:
		m = recv(s->sock, s->buf, left, 0);
		if (m > 0 && !pwrite_all(s->out, s->buf, (size_t)m, *off))
			return -1;
		break;
	default:
		m = splice(s->sock, NULL, s->kw, NULL, left, 0);
		if (m > 0 && !pipe_out(s, s->out, &lo, (size_t)m))
			return -1;
	}
	if (m > 0)
		*off += m;
	return m;
}

/* One request, read from the connection and answered by the way w. */
static bool answer(struct server *s, bool serve, int w)
{
	struct req q;
	int64_t off;
	uint64_t done;
	ssize_t m;

	if (recv(s->sock, &q, sizeof(q), MSG_WAITALL) != (ssize_t)sizeof(q) || !q.len ||
	    q.off + q.len > s->size)
		return false;
	off = (int64_t)q.off;
	for (done = 0; done < q.len; done += (uint64_t)m) {
		m = serve ? serve_step(s, w, &off, q.len - done) :
			    recv_step(s, w, &off, q.len - done);
		if (m <= 0)
			return false;
	}
	return true;
}

/* A request's offset: random, 4 KiB aligned, the request inside size. */
static uint64_t random_off(uint64_t *x, uint64_t size, size_t len)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return (*x % ((size - len) / 4096 + 1)) * 4096;
}

/* The client, a child process: requests until the server closes (bounded
 * by an alarm besides). serve: one request, then its answer read; else
 * requests with their bytes, back to back. */
static void client(int port, bool serve, uint64_t size, size_t len, unsigned char *buf,
		   unsigned int secs)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	uint64_t x = 88172645463325252ull;
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	struct req q = { .len = len };

	alarm(secs);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		_exit(1);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	for (;;) {
		q.off = random_off(&x, size, len);
		if (!send_all(fd, (unsigned char *)&q, sizeof(q)))
			break;
		if (serve ? recv(fd, buf, len, MSG_WAITALL) != (ssize_t)len :
			    !send_all(fd, buf, len))
			break;
	}
	_exit(0);
}

/* Listen on loopback, start the client, take its connection. */
static pid_t connect_client(struct server *s, bool serve, size_t len, double secs)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t l = sizeof(a);
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
	pid_t pid = -1;

	if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(lfd, 1) < 0 ||
	    getsockname(lfd, (struct sockaddr *)&a, &l) < 0)
		goto out;
	pid = fork();
	if (pid == 0)
		client(ntohs(a.sin_port), serve, s->size, len, s->buf, (unsigned int)(secs * 3) + 60);
	if (pid > 0 && (s->sock = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) < 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		pid = -1;
	}
	if (pid > 0)
		setsockopt(s->sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
out:
	if (lfd >= 0)
		close(lfd);
	return pid;
}

/* The client goes when the connection does. */
static void end_client(struct server *s, pid_t pid)
{
	shutdown(s->sock, SHUT_RDWR);
	close(s->sock);
	s->sock = -1;
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
}

struct best {
	double rate, cpu;  /* requests a second, CPU seconds a request */
};

/* Requests answered by way w for about slice seconds; false on a failure. */
static bool slice_of(struct server *s, bool serve, int w, double slice, struct best *b)
{
	double t0 = bench_now(), c0 = bench_cpu_thread(), t;
	long n = 0;

	do {
		if (!answer(s, serve, w))
			return false;
		n++;
		t = bench_now();
	} while (t - t0 < slice);
	if (n / (t - t0) > b->rate) {
		b->rate = (double)n / (t - t0);
		b->cpu = (bench_cpu_thread() - c0) / (double)n;
	}
	return true;
}

/* The rows of an item: the best raw way is the baseline. */
static void record(const char *item, const int *ways, int n, const struct best *b, size_t len)
{
	char note[96];
	int i, base = N_OURS;

	for (i = N_OURS + 1; i < n; i++)
		if (b[i].rate > b[base].rate)
			base = i;
	for (i = 0; i < n; i++) {
		snprintf(note, sizeof(note), "best of %d rounds; %.1f us CPU a request%s", ROUNDS,
			 b[i].cpu * 1e6, i == base ? "; the best raw way" : "");
		bench_row(GROUP, item, way_names[ways[i]], BENCH_REQPS, b[i].rate,
			  b[i].cpu / ((double)len / BENCH_GiB), i == base, note);
	}
	for (i = 0; i < N_OURS; i++) {
		snprintf(note, sizeof(note), "%s over the best raw way, %s", way_names[i], item);
		bench_target_ratio(note, GROUP, item, way_names[i], way_names[ways[base]], false,
				   1.0, true);
	}
}

static void measure(struct server *s, bool serve, size_t len, double secs)
{
	static const int serve_ways[] = { W_PSPLICE, W_COPY, W_SENDFILE, W_PREAD, W_SPLICE };
	static const int recv_ways[] = { W_PSPLICE, W_COPY, W_RECV, W_SPLICE };
	const int *ways = serve ? serve_ways : recv_ways;
	int n = serve ? 5 : 4, r, i;
	struct best b[5] = { { 0, 0 } };
	char item[48];
	pid_t pid;

	snprintf(item, sizeof(item), "%s %zu KiB", serve ? "serve" : "recvfile", len >> 10);
	pid = connect_client(s, serve, len, secs);
	if (pid < 0) {
		bench_skip(GROUP, item, "-", "no loopback connection: %s", strerror(errno));
		return;
	}
	for (r = 0; r < ROUNDS; r++)
		for (i = 0; i < n; i++)
			if (!slice_of(s, serve, ways[i], secs / ROUNDS / n, &b[i])) {
				bench_skip(GROUP, item, way_names[ways[i]], "a request failed: %s",
					   strerror(errno));
				end_client(s, pid);
				return;
			}
	end_client(s, pid);
	record(item, ways, n, b, len);
}

static int setup(struct server *s, const struct bench_opts *o, const char *src,
		 const char *dst)
{
	int p[2];

	*s = (struct server){ .file = -1, .out = -1, .sock = -1, .kr = -1, .kw = -1,
			      .size = o->quick ? 256ull << 20 : 1ull << 30 };
	s->buf = malloc(BUF);
	if (!s->buf || bench_make_file(src, s->size) < 0 || pipe2(p, O_CLOEXEC) < 0)
		return -1;
	s->kr = p[0];
	s->kw = p[1];
	fcntl(s->kw, F_SETPIPE_SZ, PIPE_CAP);
	s->file = open(src, O_RDONLY | O_CLOEXEC);
	s->out = open(dst, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (s->file < 0 || s->out < 0 || ftruncate(s->out, (off_t)s->size) < 0)
		return -1;
	memset(s->buf, 0x5a, BUF);
	return 0;
}

void bench_fileserver(const struct bench_opts *o)
{
	static const size_t serve_sizes[] = { 4096, 65536, 1 << 20 };
	static const size_t recv_sizes[] = { 65536, 1 << 20 };
	char src[4096], dst[4096];
	struct server s;
	size_t i;

	snprintf(src, sizeof(src), "%s/fileserver-src", o->dir);
	snprintf(dst, sizeof(dst), "%s/fileserver-dst", o->dir);
	if (setup(&s, o, src, dst) < 0) {
		bench_skip(GROUP, "all", "-", "cannot set up: %s", strerror(errno));
	} else {
		for (i = 0; i < sizeof(serve_sizes) / sizeof(serve_sizes[0]); i++)
			measure(&s, true, serve_sizes[i], o->secs * 2);
		for (i = 0; i < sizeof(recv_sizes) / sizeof(recv_sizes[0]); i++)
			measure(&s, false, recv_sizes[i], o->secs * 2);
	}
	free(s.buf);
	for (i = 0; i < 4; i++) {
		int fd = (int[]){ s.file, s.out, s.kr, s.kw }[i];

		if (fd >= 0)
			close(fd);
	}
	unlink(src);
	unlink(dst);
}
