/* psplice bench, group "relay": what its files share (bench_relay.c runs
 * the items, bench_relay_fwd.c starts the forwarders, bench_iperf.c runs
 * iperf3 through them). */
#ifndef BENCH_RELAY_H
#define BENCH_RELAY_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "bench.h"
#include "bench_fwd.h"

enum fwd_kind { F_DIRECT, F_RELAY, F_SOCAT, F_HAPROXY };

struct fwd {
	const char *variant;
	enum fwd_kind kind;
	bool copy;                /* psplice relay --copy=readwrite */
	bool nagle;               /* psplice relay --nagle */
	const char *lowat;        /* psplice relay --notsent-lowat=, NULL: none */
	const char *rate;         /* psplice relay --rate=, NULL: none */
	const char *prog;         /* what runs it; NULL for the direct row */
	char why[100];            /* not measurable here: the reason */
	char fail[100];           /* the last run that failed: why */
	struct fwd_runs r;
	/* What the forwarder sent on to the iperf3 server, summed over runs
	 * from ss -ti mid-run: bytes_sent and data_segs_out. */
	double sent, segs;
};

#define MAX_FWD 8

struct relay_ctx {
	const struct bench_opts *o;
	struct fwd f[MAX_FWD];
	int n;                    /* variants in this item */
	char haproxy_note[72];    /* version and splice support */
	int server_port;
	pid_t server;
};

/* Which forwarders of set this machine has (x->f, x->n); the reason for
 * each it has not in its why. */
void relay_variants(struct relay_ctx *x, const struct fwd *set, int n);
/* The command line of f listening on port, forwarding to the iperf3
 * server; -1 when its configuration cannot be written. */
int relay_forwarder_argv(const struct relay_ctx *x, const struct fwd *f, int port,
			 struct fwd_cmdline *c);

/* What one iperf3 run measured. */
struct iperf_result {
	double gbps, bytes;   /* the receiver's totals */
	double peers_cpu;     /* both ends' CPU seconds; -1: not known */
	double sent, segs;    /* bytes and data segments sent on to the server
			       * (ss -ti mid-run); 0 when ss said nothing */
};

/* iperf3 with streams streams through port to the server on server_port,
 * o->secs long (whole seconds, at least one). -1 with why set when it
 * failed or received nothing. */
int iperf_run(const struct bench_opts *o, int server_port, int port, int streams,
	      struct iperf_result *res, char *why, size_t size);

#endif
