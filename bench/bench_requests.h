/* psplice bench, group "requests": what its files share. bench_requests.c
 * runs the loads through each forwarder and records the rows;
 * bench_requests_peers.c starts the servers (redis-server, nginx) and the
 * forwarders (psplice relay, HAProxy), runs the load generators
 * (redis-benchmark, wrk) and reads what they say. */
#ifndef BENCH_REQUESTS_H
#define BENCH_REQUESTS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "bench.h"

enum req_server { S_REDIS, S_NGINX, N_SERVERS };
/* Q_RELAY_COPY: the relay with --copy=readwrite, read and write through a
 * buffer as HAProxy does: what splicing costs small messages, measured. */
enum req_fwd { Q_HAPROXY, Q_RELAY, Q_RELAY_COPY, Q_DIRECT, N_QFWD };

/* A load: its generator's command line, %d the port it connects to (and,
 * for wrk, its seconds first). */
struct req_load {
	const char *item;
	enum req_server server;
	const char *cmd;
	int requests;        /* redis-benchmark -n; wrk runs o->secs */
};

/* What one run of a load measured. */
struct req_run {
	double rps;          /* requests a second */
	double p99_ms;       /* the generator's 99th percentile */
	double requests;     /* made in the run */
};

/* A server of each kind, on loopback ports of the bench's own. */
struct req_servers {
	pid_t pid[N_SERVERS];
	int port[N_SERVERS];
	char why[N_SERVERS][100]; /* a server that did not start: why */
};

/* Start redis-server and nginx (scratch files in o->dir). */
void req_servers_start(const struct bench_opts *o, struct req_servers *s);
void req_servers_stop(struct req_servers *s);
/* What is missing for this machine to run the group, or NULL. */
const char *req_missing(void);

/* Start forwarder f with j threads on a free port to server port target;
 * its pid and port, or -1 with why. */
pid_t req_fwd_start(const struct bench_opts *o, enum req_fwd f, int j, int target, int *port,
		    char *why, size_t size);
/* Run load l against port (o->secs for wrk); 0, or -1 with why. */
int req_load_run(const struct bench_opts *o, const struct req_load *l, int port,
		 struct req_run *r, char *why, size_t size);
/* The syscalls pid makes (strace -c -f) while load l runs against port,
 * per request, or -1. */
double req_syscalls(const struct bench_opts *o, pid_t pid, const struct req_load *l, int port);

#endif
