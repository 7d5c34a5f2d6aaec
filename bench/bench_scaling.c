/* psplice bench, group "scaling": psplice relay against itself with more
 * workers and connections, under a load generator of our own so that
 * connections can be many. The relay's CPU is its own, from wait4 when it
 * is stopped (bench_fwd.c). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench.h"
#include "bench_fwd.h"

#define SINK_BUF (1u << 20)
#define SEND_BUF (256u << 10)
#define LISTENER_SLOT UINT32_MAX
#define SETTLE_TIMEOUT 5.0    /* connections must be up by then */
/* Connections must be gone by then once the senders close. What is queued
 * in the socket buffers goes through first: 1.3 GB for 256 connections
 * here, over a second. */
#define DRAIN_TIMEOUT 10.0

static void sleep_secs(double s)
{
	if (s > 0)
		usleep((useconds_t)(s * 1e6));
}

/* What the bench process's two load threads share with the measurement.
 * iperf3 -P stops at 128 streams; this goes to any count. */
struct load {
	int listen_fd;                 /* the sink's, on 127.0.0.1 */
	int relay_port;
	int nconns;
	atomic_bool stop_source, stop_sink;
	atomic_uint_fast64_t received; /* by the sink: what the relay delivered */
	atomic_int connected;          /* senders whose connect completed */
	atomic_int sink_open;          /* connections the sink has open */
	atomic_int source_err;         /* the first sender's failure, an errno */
};

/* The sink's connections by slot; the slot is the epoll data, so that a
 * closed one is known by its -1. */
struct slots {
	int *fd;
	uint32_t n, cap;
};

static int slot_add(struct slots *s, int fd)
{
	if (s->n == s->cap) {
		uint32_t cap = s->cap ? s->cap * 2 : 64;
		int *p = realloc(s->fd, cap * sizeof(*p));

		if (!p)
			return -1;
		s->fd = p;
		s->cap = cap;
	}
	s->fd[s->n] = fd;
	return (int)s->n++;
}

static void slots_close(struct slots *s)
{
	uint32_t i;

	for (i = 0; i < s->n; i++)
		if (s->fd[i] >= 0)
			close(s->fd[i]);
	free(s->fd);
}

static int sink_listen(struct load *l)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	l->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (l->listen_fd < 0)
		return -1;
	if (bind(l->listen_fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen(l->listen_fd, 4096) < 0 ||
	    getsockname(l->listen_fd, (struct sockaddr *)&a, &len) < 0) {
		close(l->listen_fd);
		l->listen_fd = -1;
		return -1;
	}
	return ntohs(a.sin_port);
}

static void sink_accept(struct load *l, int ep, struct slots *s)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int fd, slot, i;

	for (i = 0; i < 64; i++) {
		fd = accept4(l->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		slot = slot_add(s, fd);
		ev.data.u32 = (uint32_t)slot;
		if (slot < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
			if (slot >= 0)
				s->fd[slot] = -1;
			close(fd);
			continue;
		}
		atomic_fetch_add(&l->sink_open, 1);
	}
}

/* MSG_TRUNC makes TCP drop what it received without copying it out: the
 * sink costs the machine little next to the relay it measures. */
static void sink_read(struct load *l, struct slots *s, uint32_t slot, char *buf)
{
	int fd = s->fd[slot], i;
	ssize_t n;

	/* A slot closed earlier in the same batch of events is -1. */
	for (i = 0; i < 64 && fd >= 0; i++) {
		n = recv(fd, buf, SINK_BUF, MSG_TRUNC | MSG_DONTWAIT);
		if (n > 0) {
			atomic_fetch_add(&l->received, (uint64_t)n);
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		/* End or reset: closing also takes it out of the epoll set. */
		close(fd);
		s->fd[slot] = -1;
		atomic_fetch_sub(&l->sink_open, 1);
		return;
	}
}

static void *sink_main(void *arg)
{
	struct load *l = arg;
	struct epoll_event lev = { .events = EPOLLIN, .data.u32 = LISTENER_SLOT }, ev[64];
	struct slots s = { NULL, 0, 0 };
	char *buf = malloc(SINK_BUF);
	int ep = epoll_create1(EPOLL_CLOEXEC), n, i;

	if (!buf || ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, l->listen_fd, &lev) < 0)
		goto out;
	while (!atomic_load(&l->stop_sink)) {
		n = epoll_wait(ep, ev, 64, 50);
		for (i = 0; i < n; i++) {
			if (ev[i].data.u32 == LISTENER_SLOT)
				sink_accept(l, ep, &s);
			else
				sink_read(l, &s, ev[i].data.u32, buf);
		}
	}
out:
	slots_close(&s);
	if (ep >= 0)
		close(ep);
	free(buf);
	return NULL;
}

static void source_fail(struct load *l, int err)
{
	int none = 0;

	atomic_compare_exchange_strong(&l->source_err, &none, err);
}

/* Connect every sender without waiting: the first EPOLLOUT says done. */
static int source_open(struct load *l, int ep, int *fd)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons((uint16_t)l->relay_port) };
	struct epoll_event ev = { .events = EPOLLOUT };
	int i;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	for (i = 0; i < l->nconns; i++) {
		fd[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		ev.data.u32 = (uint32_t)i;
		if (fd[i] < 0 ||
		    (connect(fd[i], (struct sockaddr *)&a, sizeof(a)) < 0 &&
		     errno != EINPROGRESS) ||
		    epoll_ctl(ep, EPOLL_CTL_ADD, fd[i], &ev) < 0) {
			source_fail(l, errno);
			return -1;
		}
	}
	return 0;
}

/* Fill one sender's socket until it is full. The first call is the
 * connect's completion. */
static void source_send(struct load *l, int *fd, bool *up, int i, const char *buf)
{
	socklen_t len = sizeof(int);
	int err = 0, k;
	ssize_t n;

	if (!up[i]) {
		if (getsockopt(fd[i], SOL_SOCKET, SO_ERROR, &err, &len) < 0)
			err = errno;
		if (err)
			goto fail;
		up[i] = true;
		atomic_fetch_add(&l->connected, 1);
	}
	for (k = 0; k < 64; k++) {
		n = send(fd[i], buf, SEND_BUF, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n >= 0)
			continue;
		if (errno == EAGAIN || errno == EINTR)
			return;
		err = errno;
		goto fail;
	}
	return;
fail:
	source_fail(l, err);
	close(fd[i]);
	fd[i] = -1;
}

static void *source_main(void *arg)
{
	struct load *l = arg;
	struct epoll_event ev[64];
	int *fd = calloc((size_t)l->nconns, sizeof(*fd));
	bool *up = calloc((size_t)l->nconns, sizeof(*up));
	char *buf = malloc(SEND_BUF);
	int ep = epoll_create1(EPOLL_CLOEXEC), n, i;

	if (fd)
		for (i = 0; i < l->nconns; i++)
			fd[i] = -1;
	if (!fd || !up || !buf || ep < 0) {
		source_fail(l, ENOMEM);
		goto out;
	}
	/* Any bytes do: the relay neither looks at nor compresses them. */
	memset(buf, 0x5a, SEND_BUF);
	if (source_open(l, ep, fd) < 0)
		goto out;
	while (!atomic_load(&l->stop_source)) {
		n = epoll_wait(ep, ev, 64, 50);
		for (i = 0; i < n; i++)
			if (fd[ev[i].data.u32] >= 0)
				source_send(l, fd, up, (int)ev[i].data.u32, buf);
	}
out:
	/* Nothing was ever read from these: close sends a FIN after the data,
	 * not a reset. */
	for (i = 0; fd && i < l->nconns; i++)
		if (fd[i] >= 0)
			close(fd[i]);
	if (ep >= 0)
		close(ep);
	free(fd);
	free(up);
	free(buf);
	return NULL;
}

/* Wait, at most timeout seconds, for the sink to hold at least (or, with
 * at_most, no more than) count connections. */
static bool wait_sink(struct load *l, int count, bool at_most, double timeout)
{
	double end = bench_now() + timeout;
	int open;

	for (;;) {
		open = atomic_load(&l->sink_open);
		if (at_most ? open <= count :
		    open >= count && atomic_load(&l->connected) >= count)
			return true;
		if (atomic_load(&l->source_err) || bench_now() > end)
			return false;
		usleep(10000);
	}
}

/* Bytes the sink received over the window, as Gbit/s. */
static double window_gbps(struct load *l, double secs)
{
	uint64_t b0 = atomic_load(&l->received), b1;
	double t0 = bench_now(), t1;

	sleep_secs(secs);
	b1 = atomic_load(&l->received);
	t1 = bench_now();
	return (double)(b1 - b0) * 8 / (t1 - t0) / 1e9;
}

static pid_t scaling_relay(const struct bench_opts *o, struct load *l, int jobs,
			   int sink_port, char *why, size_t size)
{
	char errfile[4096];
	struct fwd_cmdline c;

	l->relay_port = bench_free_port();
	fwd_scratch(o, "scaling-relay.log", errfile, sizeof(errfile));
	fwd_cmd_init(&c, o->self);
	fwd_arg(&c, "relay");
	fwd_arg(&c, "-j");
	fwd_arg(&c, "%d", jobs);
	fwd_arg(&c, "--drain-timeout");
	fwd_arg(&c, "1");
	fwd_arg(&c, "127.0.0.1:%d", l->relay_port);
	fwd_arg(&c, "127.0.0.1:%d", sink_port);
	return fwd_start_listener(c.argv, l->relay_port, errfile, why, size);
}

#define MAX_JOBS 3

struct scale_result {
	double gbps, cpu;    /* cpu: relay s per GiB, -1 unknown */
	bool undrained;      /* connections outlived the senders by DRAIN_TIMEOUT */
};

/* The window, once every connection is up and has had a moment to reach
 * its pace; then the senders close and the relay's last bytes are let
 * through, so that its CPU is set against all it moved. */
static int scaling_measure(const struct bench_opts *o, struct load *l, pid_t relay,
			   pthread_t source, struct scale_result *res, char *why,
			   size_t size)
{
	int err, st;
	double cpu;
	bool up = wait_sink(l, l->nconns, false, SETTLE_TIMEOUT), drained;

	if (up) {
		sleep_secs(o->quick ? 0.2 : 0.5);
		res->gbps = window_gbps(l, o->secs);
	}
	atomic_store(&l->stop_source, true);
	pthread_join(source, NULL);
	drained = wait_sink(l, 0, true, DRAIN_TIMEOUT);
	cpu = fwd_stop(relay, &st);
	/* A sender fails only when the relay resets it, and the relay exits 0
	 * after a drain: either is a fault to report, not a figure. */
	err = atomic_load(&l->source_err);
	if (err)
		snprintf(why, size, "a sender failed: %s", strerror(err));
	else if (!up)
		snprintf(why, size, "%d connections not up in %.0f s", l->nconns,
			 SETTLE_TIMEOUT);
	else if (st)
		snprintf(why, size, "relay exited with %d", st);
	if (err || !up || st)
		return -1;
	res->cpu = cpu >= 0 && atomic_load(&l->received) ?
		   cpu / ((double)atomic_load(&l->received) / BENCH_GiB) : -1;
	res->undrained = !drained;
	return 0;
}

static int scaling_run(const struct bench_opts *o, int jobs, int conns,
		       struct scale_result *res, char *why, size_t size)
{
	struct load l = { .nconns = conns };
	pthread_t sink, source;
	int sink_port = sink_listen(&l), r = -1;
	pid_t relay;

	if (sink_port < 0) {
		snprintf(why, size, "sink: %s", strerror(errno));
		return -1;
	}
	if (pthread_create(&sink, NULL, sink_main, &l)) {
		snprintf(why, size, "cannot start the sink thread");
		close(l.listen_fd);
		return -1;
	}
	relay = scaling_relay(o, &l, jobs, sink_port, why, size);
	if (relay < 0)
		goto out;
	if (pthread_create(&source, NULL, source_main, &l)) {
		snprintf(why, size, "cannot start the source thread");
		bench_stop(relay, NULL);
		goto out;
	}
	r = scaling_measure(o, &l, relay, source, res, why, size);
out:
	atomic_store(&l.stop_sink, true);
	pthread_join(sink, NULL);
	close(l.listen_fd);
	return r;
}

/* Each connection takes two fds here (sender and sink) and two in the
 * relay, which inherits the limit. */
static int enough_fds(int conns)
{
	return bench_nofile((unsigned long)conns * 2 + 64);
}

/* One variant's runs in an item, and why one failed. */
struct scale_cell {
	struct fwd_runs r;
	char why[100];
	bool undrained;      /* a run's connections outlived their senders */
};

static void scaling_once(const struct bench_opts *o, int jobs, int conns,
			 struct scale_cell *c)
{
	struct scale_result res = { .cpu = -1 };

	if (enough_fds(conns) < 0) {
		snprintf(c->why, sizeof(c->why), "RLIMIT_NOFILE below %d", conns * 2 + 64);
		return;
	}
	if (scaling_run(o, jobs, conns, &res, c->why, sizeof(c->why)) < 0)
		return;
	fwd_runs_add(&c->r, res.gbps, res.cpu);
	c->undrained |= res.undrained;
}

/* Rounds over the worker counts, as for the relay group: the machine's
 * noisy moments are shared out rather than landing on one variant. */
static void scaling_item(const struct bench_opts *o, int conns, const int *jobs, int njobs,
			 int reps)
{
	struct scale_cell cell[MAX_JOBS];
	char item[32], variant[16], note[120];
	int rep, i;

	memset(cell, 0, sizeof(cell));
	snprintf(item, sizeof(item), "%d conn%s", conns, conns == 1 ? "" : "s");
	for (rep = 0; rep < reps; rep++)
		for (i = 0; i < njobs; i++)
			scaling_once(o, jobs[i], conns, &cell[i]);
	for (i = 0; i < njobs; i++) {
		snprintf(variant, sizeof(variant), "-j %d", jobs[i]);
		if (!cell[i].r.n) {
			bench_skip("scaling", item, variant, "%s", cell[i].why);
			continue;
		}
		fwd_runs_note(&cell[i].r, reps, note, sizeof(note));
		if (cell[i].undrained)
			snprintf(note + strlen(note), sizeof(note) - strlen(note),
				 "; connections outlived their senders");
		fwd_runs_row("scaling", item, variant, &cell[i].r, i == 0, note);
	}
}

void bench_scaling(const struct bench_opts *o)
{
	static const int jobs[MAX_JOBS] = { 1, 2, 4 }, conns[] = { 1, 16, 256 };
	int n = o->quick ? 2 : 3, i;

	/* One run each in the quick subset; two in the full one, for the
	 * time the relay group leaves. */
	for (i = 0; i < n; i++)
		scaling_item(o, conns[i], jobs, n, o->quick ? 1 : 2);
}
