/* psplice bench, group "requests": psplice relay against HAProxy (TCP mode,
 * its defaults) on the traffic a TCP relay mostly carries: requests. A
 * redis GET at a time and pipelined from 50 clients (redis-benchmark), a
 * 1 KiB page on 50 keep-alive connections and one request a connection on
 * 8 (wrk --latency against nginx), each through the relay at -j N and
 * HAProxy at nbthread N, N = 1 and 2, beside the server reached directly.
 * Forwarders take turns in rounds; each load's best round counts, with its
 * 99th percentile latency and the forwarder's CPU per request (wait4 when
 * it is stopped). The relay also with --copy=readwrite, through a buffer:
 * whether splicing small messages costs them, in the same run. At -j 1 the
 * forwarders' system calls are counted too, per
 * request (strace -c, a run of its own, as strace slows what it traces):
 * for the one-request connections, per connection. */
#include <stdio.h>
#include <string.h>

#include "bench_fwd.h"
#include "bench_requests.h"

#define GROUP "requests"
#define ROUNDS 3

static const struct req_load loads[] = {
	{ "redis GET -c 1", S_REDIS,
	  "redis-benchmark -h 127.0.0.1 -p %d -t get -c 1 -n %d --csv", 20000 },
	{ "redis GET -c 50 -P 16", S_REDIS,
	  "redis-benchmark -h 127.0.0.1 -p %d -t get -c 50 -P 16 -n %d --csv", 400000 },
	{ "wrk 1 KiB keep-alive, 50 conns", S_NGINX,
	  "wrk -t 1 -c 50 -d %ds --latency http://127.0.0.1:%d/1k", 0 },
	{ "wrk 1 KiB Connection: close, 8 conns", S_NGINX,
	  "wrk -t 1 -c 8 -d %ds --latency -H 'Connection: close' http://127.0.0.1:%d/1k", 0 },
};
#define N_LOADS (sizeof(loads) / sizeof(loads[0]))

struct best {
	struct req_run run;
	double cpu;          /* the forwarder's CPU seconds per request */
	char why[100];       /* the last failure */
	int ok;
};

static void variant_name(enum req_fwd f, int j, char *buf, size_t size)
{
	if (f == Q_HAPROXY)
		snprintf(buf, size, "haproxy nbthread %d", j);
	else if (f == Q_RELAY)
		snprintf(buf, size, "psplice relay -j %d", j);
	else if (f == Q_RELAY_COPY)
		snprintf(buf, size, "psplice relay -j %d --copy=readwrite", j);
	else
		snprintf(buf, size, "no proxy");
}

/* One run of load l through forwarder f (or none); the best kept. */
static void one_run(const struct bench_opts *o, const struct req_servers *s,
		    const struct req_load *l, enum req_fwd f, int j, struct best *b)
{
	int port = s->port[l->server], st;
	pid_t pid = -1;
	struct req_run r;
	double cpu = 0;

	if (f != Q_DIRECT) {
		pid = req_fwd_start(o, f, j, s->port[l->server], &port, b->why, sizeof(b->why));
		if (pid < 0)
			return;
	}
	if (req_load_run(o, l, port, &r, b->why, sizeof(b->why)) < 0)
		r.rps = -1;
	if (pid > 0)
		cpu = fwd_stop(pid, &st);
	if (r.rps > b->run.rps) {
		b->run = r;
		b->cpu = cpu >= 0 && r.requests > 0 ? cpu / r.requests : -1;
	}
	b->ok += r.rps > 0;
}

static void record(const char *item, int j, const struct best *b)
{
	char name[48], note[160], what[96];
	int f;

	for (f = 0; f < N_QFWD; f++) {
		variant_name((enum req_fwd)f, j, name, sizeof(name));
		if (!b[f].ok) {
			bench_skip(GROUP, item, name, "%s", b[f].why);
			continue;
		}
		snprintf(note, sizeof(note), "best of %d; p99 %.3f ms%s", ROUNDS, b[f].run.p99_ms,
			 f == Q_DIRECT ? "; no forwarder" : "");
		if (f != Q_DIRECT && b[f].cpu >= 0)
			snprintf(note + strlen(note), sizeof(note) - strlen(note),
				 "; %.1f us CPU a request", b[f].cpu * 1e6);
		bench_row(GROUP, item, name, BENCH_REQPS, b[f].run.rps, -1, f == Q_HAPROXY, note);
	}
	variant_name(Q_RELAY, j, name, sizeof(name));
	snprintf(what, sizeof(what), "relay over haproxy, %.60s", item);
	variant_name(Q_HAPROXY, j, note, sizeof(note));
	bench_target_ratio(what, GROUP, item, name, note, false, 1.1, true);
	if (b[Q_RELAY].ok && b[Q_HAPROXY].ok && b[Q_HAPROXY].run.p99_ms > 0) {
		snprintf(what, sizeof(what), "relay p99 over haproxy's, %.60s", item);
		bench_target_value(what, b[Q_RELAY].run.p99_ms / b[Q_HAPROXY].run.p99_ms, 1.0,
				   false, "99th percentile latency, the load generator's");
	}
}

static void measure(const struct bench_opts *o, const struct req_servers *s,
		    const struct req_load *l, int j)
{
	struct best b[N_QFWD];
	char item[80];
	int r, f;

	snprintf(item, sizeof(item), "%s, %d thread%s", l->item, j, j > 1 ? "s" : "");
	memset(b, 0, sizeof(b));
	for (f = 0; f < N_QFWD; f++)
		b[f].run.rps = -1;
	if (s->pid[l->server] < 0) {
		bench_skip(GROUP, item, "-", "%s", s->why[l->server]);
		return;
	}
	for (r = 0; r < ROUNDS; r++)
		for (f = 0; f < N_QFWD; f++)
			one_run(o, s, l, (enum req_fwd)f, j, &b[f]);
	record(item, j, b);
}

/* System calls per request of each forwarder at -j 1 / nbthread 1. */
static void syscalls(const struct bench_opts *o, const struct req_servers *s,
		     const struct req_load *l)
{
	double n[2] = { -1, -1 };
	char item[96], name[48], why[100];
	int f, port, st;
	pid_t pid;

	snprintf(item, sizeof(item), "syscalls a request, %s", l->item);
	for (f = 0; f < 2 && s->pid[l->server] > 0; f++) {
		pid = req_fwd_start(o, (enum req_fwd)f, 1, s->port[l->server], &port, why,
				    sizeof(why));
		if (pid < 0)
			continue;
		n[f] = req_syscalls(o, pid, l, port);
		fwd_stop(pid, &st);
	}
	for (f = 0; f < 2; f++) {
		variant_name((enum req_fwd)f, 1, name, sizeof(name));
		if (n[f] < 0)
			bench_skip(GROUP, item, name, "strace counted nothing");
		else
			bench_row(GROUP, item, name, BENCH_COUNT, n[f], -1, f == Q_HAPROXY,
				  "strace -c -f, the forwarder's calls over the requests made");
	}
}

void bench_requests(const struct bench_opts *o)
{
	const char *missing = req_missing();
	struct req_servers s;
	int j, jmax = o->quick ? 1 : 2;
	size_t i;

	if (missing) {
		bench_skip(GROUP, "all", "-", "%s", missing);
		return;
	}
	req_servers_start(o, &s);
	for (j = 1; j <= jmax; j++)
		for (i = 0; i < N_LOADS; i++)
			measure(o, &s, &loads[i], j);
	syscalls(o, &s, &loads[0]);
	syscalls(o, &s, &loads[3]);
	req_servers_stop(&s);
}
