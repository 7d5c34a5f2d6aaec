/* psplice bench, group "mechanism": for each source x sink pair, every kernel
 * path forced in turn, the planner's own choice, and a plain read/write loop
 * with a 128 KiB buffer (the baseline). One thread moves the bytes and only
 * its CPU time is counted; helper threads feed the source and drain the sink
 * with zero-copy syscalls so that they cost the mover nothing. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench.h"
#include "psplice.h"

#define MiB ((size_t)1 << 20)
#define CHUNK MiB
#define RW_BUF (128 * 1024)
#define SINK_WRAP (64 * (int64_t)MiB)
#define GROUP "mechanism"

enum kind { K_FILE, K_PIPE, K_TCP, K_UNIX, K_NULL };
static const char *const kind_names[] = { "file", "pipe", "tcp", "unix", "/dev/null" };

/* One end of the measured pair, and the helper's end behind it. */
struct end {
	enum kind kind;
	int fd;          /* the mover's fd */
	int peer;        /* the helper's fd (pipe or socket), -1 */
	int64_t off;     /* positional offset for files */
	int64_t wrap;    /* a file side goes back to 0 here */
};

struct helper {
	pthread_t tid;
	bool running;
	enum kind kind;
	int fd;          /* the helper's end */
	int file;        /* feeder: the cached file it sends from */
	int64_t size;
	int pipe[2];     /* drainer of a socket: socket -> pipe -> /dev/null */
	int null;
};

static atomic_bool stop;

static int wait_fd(int fd, short ev)
{
	struct pollfd p = { .fd = fd, .events = ev };

	return poll(&p, 1, 100);
}

/* Keep the source full: splice the cached file into a pipe, sendfile it into
 * a socket; non-blocking, so that it sees the stop flag. */
static void *feed(void *arg)
{
	struct helper *h = arg;
	loff_t off = 0;
	ssize_t n;

	while (!atomic_load(&stop)) {
		if (off >= h->size)
			off = 0;
		n = h->kind == K_PIPE
			? splice(h->file, &off, h->fd, NULL, CHUNK, SPLICE_F_NONBLOCK)
			: sendfile(h->fd, h->file, &off, CHUNK);
		if (n < 0 && errno == EAGAIN)
			wait_fd(h->fd, POLLOUT);
		else if (n < 0)
			break;
	}
	return NULL;
}

static char trunc_buf[CHUNK];

/* Empty the sink into /dev/null without copying: splice straight from a
 * pipe, through a pipe of its own from a Unix socket. */
static void *drain(void *arg)
{
	struct helper *h = arg;
	int from = h->kind == K_PIPE ? h->fd : h->pipe[0];
	ssize_t n;

	while (!atomic_load(&stop)) {
		if (h->kind == K_TCP) {
			/* TCP drops received bytes for MSG_TRUNC: no copy at all. */
			n = recv(h->fd, trunc_buf, CHUNK, MSG_TRUNC | MSG_DONTWAIT);
			if (n == 0 || (n < 0 && errno != EAGAIN))
				break;
			if (n < 0)
				wait_fd(h->fd, POLLIN);
			continue;
		}
		if (h->kind != K_PIPE) {
			n = splice(h->fd, NULL, h->pipe[1], NULL, CHUNK, SPLICE_F_NONBLOCK);
			if (n == 0)
				break;
			if (n < 0 && errno != EAGAIN)
				break;
		}
		n = splice(from, NULL, h->null, NULL, CHUNK, SPLICE_F_NONBLOCK);
		if (n == 0 && h->kind == K_PIPE)
			break;
		if (n < 0 && errno == EAGAIN)
			wait_fd(h->fd, POLLIN);
		else if (n < 0)
			break;
	}
	return NULL;
}

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static int tcp_pair(int sv[2])
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t l = sizeof(a);
	int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sv[0] = sv[1] = -1;
	if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen(ls, 1) < 0 || getsockname(ls, (struct sockaddr *)&a, &l) < 0)
		goto out;
	sv[0] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (sv[0] < 0 || connect(sv[0], (struct sockaddr *)&a, sizeof(a)) < 0)
		goto out;
	sv[1] = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
	setsockopt(sv[0], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(sv[1], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
out:
	if (ls >= 0)
		close(ls);
	if (sv[0] >= 0 && sv[1] >= 0)
		return 0;
	if (sv[0] >= 0)
		close(sv[0]);
	return -1;
}

/* A connected pair of the kind: [0] the mover's read end (source) or write
 * end (sink) as asked, [1] the helper's. */
static int make_channel(enum kind k, bool source, int ch[2])
{
	int p[2];

	if (k == K_PIPE) {
		if (pipe2(p, O_CLOEXEC) < 0)
			return -1;
		fcntl(p[0], F_SETPIPE_SZ, (int)MiB);
		ch[0] = source ? p[0] : p[1];
		ch[1] = source ? p[1] : p[0];
		return 0;
	}
	if (k == K_TCP)
		return tcp_pair(ch);
	return socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ch);
}

struct ctx {
	const struct bench_opts *o;
	int file;            /* the cached source file */
	int64_t size;
	char sink_path[4096];
};

static int open_end(struct ctx *c, struct end *e, struct helper *h, bool source)
{
	int ch[2];

	memset(h, 0, sizeof(*h));
	h->fd = e->peer = -1;
	h->pipe[0] = h->pipe[1] = -1;
	h->null = -1;
	h->kind = e->kind;
	e->off = 0;
	if (e->kind == K_FILE) {
		e->fd = source ? dup(c->file) : open(c->sink_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		e->wrap = source ? c->size : SINK_WRAP;
		return e->fd < 0 ? -1 : 0;
	}
	if (e->kind == K_NULL) {
		e->fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
		return e->fd < 0 ? -1 : 0;
	}
	if (make_channel(e->kind, source, ch) < 0)
		return -1;
	e->fd = ch[0];
	e->peer = h->fd = ch[1];
	set_nonblock(h->fd);
	h->file = c->file;
	h->size = c->size;
	if (!source) {
		h->null = open("/dev/null", O_WRONLY | O_CLOEXEC);
		if (e->kind != K_PIPE && pipe2(h->pipe, O_CLOEXEC | O_NONBLOCK) < 0)
			return -1;
	}
	return 0;
}

/* 0, or -1 when the thread could not start: the mover would wait forever
 * on an end nobody feeds or drains. */
static int start_helper(struct helper *h, bool source)
{
	if (h->fd < 0)
		return 0;
	h->running = pthread_create(&h->tid, NULL, source ? feed : drain, h) == 0;
	return h->running ? 0 : -1;
}

static void close_end(struct end *e, struct helper *h)
{
	if (h->running)
		pthread_join(h->tid, NULL);
	if (e->fd >= 0)
		close(e->fd);
	if (h->fd >= 0)
		close(h->fd);
	if (h->pipe[0] >= 0) {
		close(h->pipe[0]);
		close(h->pipe[1]);
	}
	if (h->null >= 0)
		close(h->null);
}

static int64_t *pos(struct end *e, size_t *len)
{
	if (e->kind != K_FILE)
		return NULL;
	if (e->off >= e->wrap)
		e->off = 0;
	if ((int64_t)*len > e->wrap - e->off)
		*len = (size_t)(e->wrap - e->off);
	return &e->off;
}

static ssize_t write_all(int fd, int64_t *off, const char *buf, size_t n)
{
	size_t done = 0;
	ssize_t w;

	while (done < n) {
		w = off ? pwrite(fd, buf + done, n - done, *off + (int64_t)done)
			: write(fd, buf + done, n - done);
		if (w < 0)
			return -1;
		done += (size_t)w;
	}
	if (off)
		*off += (int64_t)done;
	return (ssize_t)done;
}

/* The baseline: what a program without psplice writes. */
static ssize_t move_rw(struct end *in, struct end *out)
{
	static char buf[RW_BUF];
	size_t len = RW_BUF;
	int64_t *oi = pos(in, &len), *oo = pos(out, &len);
	ssize_t n = oi ? pread(in->fd, buf, len, *oi) : read(in->fd, buf, len);

	if (n <= 0)
		return n;
	if (oi)
		*oi += n;
	return write_all(out->fd, oo, buf, (size_t)n);
}

/* method -1: the read/write baseline; 0: the planner; else forced. */
static ssize_t move_once(struct end *in, struct end *out, int method)
{
	size_t len = CHUNK;
	int64_t *oi, *oo;

	if (method < 0)
		return move_rw(in, out);
	oi = pos(in, &len);
	oo = pos(out, &len);
	return psplice(in->fd, oi, out->fd, oo, len,
		       method ? PSPLICE_F_ONLY((unsigned)method) : 0);
}

struct result {
	double rate, cpu;   /* GiB/s, CPU s/GiB */
	int method;         /* what psplice said it used */
	int error;
};

static struct result measure(struct end *in, struct end *out, int method, double secs)
{
	struct result r = { 0 };
	double t0 = bench_now(), c0 = bench_cpu_thread(), t;
	uint64_t bytes = 0;
	ssize_t n;

	do {
		n = move_once(in, out, method);
		if (n < 0) {
			r.error = errno;
			return r;
		}
		if (n == 0 && in->kind == K_FILE)
			in->off = 0;
		bytes += (uint64_t)n;
		if (method >= 0 && n > 0)
			r.method = psplice_last()->method;
		t = bench_now();
	} while (t - t0 < secs);
	r.rate = (double)bytes / BENCH_GiB / (t - t0);
	r.cpu = bytes ? (bench_cpu_thread() - c0) / ((double)bytes / BENCH_GiB) : -1;
	return r;
}

static struct result run_one(struct ctx *c, enum kind src, enum kind dst, int method,
			     double secs)
{
	struct end in = { .kind = src, .fd = -1 }, out = { .kind = dst, .fd = -1 };
	struct helper hi = { .fd = -1, .pipe = { -1, -1 }, .null = -1 }, ho = hi;
	struct result r = { .error = EIO };

	atomic_store(&stop, false);
	if (open_end(c, &in, &hi, true) < 0 || open_end(c, &out, &ho, false) < 0) {
		r.error = errno;
		goto out;
	}
	if (start_helper(&hi, true) < 0 || start_helper(&ho, false) < 0) {
		r.error = EAGAIN;
		goto out;
	}
	r = measure(&in, &out, method, secs);
	atomic_store(&stop, true);
out:
	atomic_store(&stop, true);
	close_end(&in, &hi);
	close_end(&out, &ho);
	return r;
}

/* The variants of a pair: the read/write baseline (-1), each forced path,
 * the planner (0). */
static const int variants[] = {
	-1, PSPLICE_METHOD_COPY_FILE_RANGE, PSPLICE_METHOD_SENDFILE, PSPLICE_METHOD_SPLICE,
	PSPLICE_METHOD_SPLICE_PIPE, PSPLICE_METHOD_READWRITE, 0,
};
#define N_VARIANTS (sizeof(variants) / sizeof(variants[0]))
#define PLANNER (N_VARIANTS - 1)

static void variant_name(int method, char *buf, size_t size)
{
	if (method < 0)
		snprintf(buf, size, "read/write 128 KiB");
	else if (method == 0)
		snprintf(buf, size, "planner (no flags)");
	else
		snprintf(buf, size, "only %s", psplice_method_name(method));
}

/* Does the planner's pick hold its own against the fastest forced path? */
static void judge(const struct result *r, char *note, size_t size)
{
	const struct result *p = &r[PLANNER];
	size_t i, best = 0;

	for (i = 1; i < PLANNER; i++)
		if (r[i].rate > r[best].rate)
			best = i;
	if ((best > 0 && r[best].method == p->method) || p->rate >= 0.9 * r[best].rate)
		snprintf(note, size, "planner's pick: %s", psplice_method_name(p->method));
	else
		snprintf(note, size, "PLANNER NOT FASTEST: picks %s; %s %.2fx faster, %.2fx "
			 "the CPU/GiB", psplice_method_name(p->method),
			 best ? psplice_method_name(variants[best]) : "read/write 128 KiB",
			 r[best].rate / p->rate, p->cpu > 0 ? r[best].cpu / p->cpu : 0);
}

/* Variants take turns, round after round, so that a noisy neighbour hits
 * them alike; the best round of each counts. A path that does not apply
 * says EOPNOTSUPP in the first round and sits out the rest. */
static void pair(struct ctx *c, enum kind src, enum kind dst)
{
	struct result best[N_VARIANTS] = { { 0 } }, r;
	int rounds = c->o->quick ? 2 : 3, k;
	char item[64], variant[48], note[120];
	bool skip[N_VARIANTS] = { false };
	size_t i;

	snprintf(item, sizeof(item), "%s -> %s", kind_names[src], kind_names[dst]);
	for (k = 0; k < rounds; k++)
		for (i = 0; i < N_VARIANTS; i++) {
			if (skip[i])
				continue;
			r = run_one(c, src, dst, variants[i], c->o->secs / rounds);
			if (r.error) {
				best[i].error = r.error;
				skip[i] = true;
			} else if (r.rate > best[i].rate) {
				best[i] = r;
			}
		}
	for (i = 0; i < N_VARIANTS; i++) {
		variant_name(variants[i], variant, sizeof(variant));
		note[0] = '\0';
		if (best[i].error == EOPNOTSUPP && i > 0 && i != PLANNER)
			continue;   /* the path does not apply to this pair */
		if (best[i].error) {
			bench_skip(GROUP, item, variant, "%s", strerror(best[i].error));
			continue;
		}
		if (i == PLANNER)
			judge(best, note, sizeof(note));
		bench_row(GROUP, item, variant, BENCH_GIBPS, best[i].rate, best[i].cpu, i == 0,
			  note);
	}
}

/* The quick subset: one pair per kind of path. */
static bool in_quick(enum kind src, enum kind dst)
{
	static const unsigned char quick[][2] = {
		{ K_FILE, K_FILE }, { K_FILE, K_PIPE }, { K_FILE, K_TCP },
		{ K_FILE, K_NULL }, { K_PIPE, K_FILE }, { K_PIPE, K_PIPE },
		{ K_TCP, K_TCP }, { K_UNIX, K_FILE },
	};
	size_t i;

	for (i = 0; i < sizeof(quick) / sizeof(quick[0]); i++)
		if (quick[i][0] == src && quick[i][1] == dst)
			return true;
	return false;
}

void bench_mechanism(const struct bench_opts *o)
{
	struct ctx c = { .o = o };
	char path[4096];
	int src, dst;

	c.size = (int64_t)(o->quick ? 256 : 1024) * (int64_t)MiB;
	snprintf(path, sizeof(path), "%s/mech-src", o->dir);
	snprintf(c.sink_path, sizeof(c.sink_path), "%s/mech-sink", o->dir);
	if (bench_make_file(path, (uint64_t)c.size) < 0 ||
	    (c.file = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		bench_skip(GROUP, "all pairs", "-", "cannot make %s: %s", path,
			   strerror(errno));
		return;
	}
	for (src = K_FILE; src <= K_UNIX; src++)
		for (dst = K_FILE; dst <= K_NULL; dst++)
			if (!o->quick || in_quick(src, dst))
				pair(&c, src, dst);
	close(c.file);
	unlink(path);
	unlink(c.sink_path);
}
