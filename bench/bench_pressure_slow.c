/* psplice bench, group "pressure", item "slow reader": a download through
 * the relay to a client with a small receive buffer that reads in bursts
 * with pauses; the bytes the relay delivered through user memory per GiB,
 * from its stats line at exit. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bench_pressure.h"

#define SLOW_ITEM "slow reader: copied through memory"
#define SLOW_TIMEOUT 30.0      /* a slow download must be done by then */
#define SLOW_RCVBUF 16384      /* the client's, before connect */
#define SLOW_BURST (256 << 10) /* read this much, then pause */
#define SLOW_PAUSE_NS 2000000L

static void pause_ns(long ns)
{
	struct timespec t = { ns / 1000000000L, ns % 1000000000L };

	nanosleep(&t, NULL);
}

struct slow_target {
	int listen_fd;
	uint64_t size;
};

/* Sends size bytes to the one connection it accepts, then closes. */
static void *slow_target_main(void *arg)
{
	struct slow_target *t = arg;
	static char buf[1 << 16];
	uint64_t left = t->size;
	int fd = accept4(t->listen_fd, NULL, NULL, SOCK_CLOEXEC);
	ssize_t n;

	memset(buf, 0x5a, sizeof(buf));
	while (fd >= 0 && left) {
		n = send(fd, buf, left < sizeof(buf) ? left : sizeof(buf), MSG_NOSIGNAL);
		if (n <= 0)
			break;
		left -= (uint64_t)n;
	}
	if (fd >= 0)
		close(fd);
	return NULL;
}

/* Read until the end, in bursts with a pause after each; what was read,
 * or -1 past the timeout. */
static int64_t slow_read(int fd)
{
	static char buf[1 << 16];
	double end = bench_now() + SLOW_TIMEOUT;
	int64_t total = 0, burst = 0;
	ssize_t n;

	struct timeval tv = { 1, 0 };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while (bench_now() < end) {
		n = recv(fd, buf, sizeof(buf), 0);
		if (n == 0)
			return total;
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -1;
		}
		total += n;
		burst += n;
		if (burst >= SLOW_BURST) {
			burst = 0;
			pause_ns(SLOW_PAUSE_NS);
		}
	}
	return -1;
}

struct slow_result {
	double copied_per_gib, cpu_per_gib;
};

static int slow_run(const struct bench_opts *o, int v, uint64_t size,
		    struct slow_result *res, char *why, size_t wsize)
{
	struct slow_target t = { .size = size };
	char log[4096];
	double copied = -1, cpu;
	int target, port, fd, st;
	int64_t got = -1;
	pthread_t th;
	pid_t relay;

	t.listen_fd = pressure_listen_any(&target, 0);
	if (t.listen_fd < 0) {
		snprintf(why, wsize, "target: %s", strerror(errno));
		return -1;
	}
	relay = pressure_relay_start(o, v, target, &port, log, sizeof(log), why, wsize);
	if (relay < 0 || pthread_create(&th, NULL, slow_target_main, &t)) {
		if (relay >= 0)
			bench_stop(relay, NULL);
		close(t.listen_fd);
		return -1;
	}
	fd = pressure_connect_to(port, 0, SLOW_RCVBUF);
	if (fd >= 0) {
		got = slow_read(fd);
		close(fd);
	}
	/* Unblocks the target's accept if the relay never connected. */
	shutdown(t.listen_fd, SHUT_RDWR);
	pthread_join(th, NULL);
	close(t.listen_fd);
	cpu = fwd_stop(relay, &st);
	if (got != (int64_t)size)
		snprintf(why, wsize, "the client got %lld of %llu bytes", (long long)got,
			 (unsigned long long)size);
	else if (st != 0)
		snprintf(why, wsize, "relay exited with %d", st);
	else if (pressure_relay_stats(log, NULL, &copied) < 0)
		snprintf(why, wsize, "no stats line from the relay");
	if (got != (int64_t)size || st != 0 || copied < 0)
		return -1;
	res->copied_per_gib = copied / ((double)size / BENCH_GiB);
	res->cpu_per_gib = cpu >= 0 ? cpu / ((double)size / BENCH_GiB) : -1;
	return 0;
}

void pressure_slow_item(const struct bench_opts *o, int reps)
{
	uint64_t size = (uint64_t)(o->quick ? 64 : 256) << 20;
	double copied[NV][MAX_REPS], cpu[NV][MAX_REPS];
	int n[NV] = { 0 }, ncpu[NV] = { 0 }, rep, v;
	char why[NV][100], note[160];
	struct slow_result r;

	for (rep = 0; rep < reps; rep++)
		for (v = 0; v < NV; v++) {
			if (slow_run(o, v, size, &r, why[v], sizeof(why[v])) < 0) {
				fprintf(stderr, "psplice bench: %s: %s: %s\n", GROUP, vnames[v],
					why[v]);
				continue;
			}
			copied[v][n[v]++] = r.copied_per_gib;
			if (r.cpu_per_gib >= 0)
				cpu[v][ncpu[v]++] = r.cpu_per_gib;
		}
	for (v = 0; v < NV; v++) {
		if (!n[v]) {
			bench_skip(GROUP, SLOW_ITEM, vnames[v], "%s", why[v]);
			continue;
		}
		snprintf(note, sizeof(note), "median of %d runs of %llu MiB; client "
			 "SO_RCVBUF %d, reads %d KiB then pauses %ld ms", n[v],
			 (unsigned long long)(size >> 20), SLOW_RCVBUF, SLOW_BURST >> 10,
			 SLOW_PAUSE_NS / 1000000);
		bench_row(GROUP, SLOW_ITEM, vnames[v], BENCH_BYTESGIB, bench_median(copied[v], n[v]),
			  ncpu[v] ? bench_median(cpu[v], ncpu[v]) : -1, v == V_READWRITE, note);
	}
	if (n[V_PSPLICE])
		bench_target_value("backpressure: bytes copied through memory per GiB",
				   bench_median(copied[V_PSPLICE], n[V_PSPLICE]), 0, false,
				   "psplice relay, client reading slowly (" SLOW_ITEM ")");
	else
		bench_target_missing("backpressure: bytes copied through memory per GiB", 0,
				     false, why[V_PSPLICE]);
}
