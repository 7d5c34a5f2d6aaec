/* psplice bench, groups "relay" and "relay-proxy": what their files share
 * (bench_relay.c runs the items, bench_relay_record.c records their rows,
 * bench_relay_fwd.c starts the forwarders, bench_iperf.c runs iperf3
 * through them, bench_netns.c makes the veth namespaces). */
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
	/* Through a second psplice relay to the server (the PROXY header
	 * item): send_proxy gives the first --send-proxy-v2 and the second
	 * --accept-proxy, so that only the header differs. */
	bool chain, send_proxy;
	const char *prog;         /* what runs it; NULL for the direct row */
	char why[100];            /* not measurable here: the reason */
	char fail[100];           /* the last run that failed: why */
	struct fwd_runs r;
	/* What the forwarder sent on to the iperf3 server, summed over runs
	 * from ss -ti mid-run: bytes_sent and data_segs_out. */
	double sent, segs;
};

#define MAX_FWD 8

/* Where an item's peers run: all on loopback in this process's network
 * namespace, or the iperf3 client, the forwarder and the iperf3 server
 * each in a namespace of the bench's own, joined by veth pairs
 * (bench_netns.h). */
struct relay_net {
	const char *client_ns, *relay_ns, *server_ns; /* NULL: this process's */
	const char *front;  /* where the forwarder listens, the client connects */
	const char *back;   /* where the iperf3 server listens */
};

struct relay_ctx {
	const struct bench_opts *o;
	const char *group;        /* whose rows: "relay", "relay-proxy" */
	const struct relay_net *net;
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
 * server (f->chain: to the second relay on chain_port); -1 when its
 * configuration cannot be written. */
int relay_forwarder_argv(const struct relay_ctx *x, const struct fwd *f, int port,
			 int chain_port, struct fwd_cmdline *c);
/* The command line of the second relay of f->chain: on 127.0.0.1:chain_port,
 * with --accept-proxy when f sends the header, to the iperf3 server. */
void relay_chain_argv(const struct relay_ctx *x, const struct fwd *f, int chain_port,
		      struct fwd_cmdline *c);

/* The rows of an item whose runs are in x (bench_relay_record.c): each
 * variant's, its ratio to the first of bases that was measured, and the
 * whole-system CPU item beside it. */
void relay_record(struct relay_ctx *x, const char *item, int reps,
		  const char *const *bases);

/* What one iperf3 run measured. */
struct iperf_result {
	double gbps, bytes;   /* the receiver's totals */
	double peers_cpu;     /* both ends' CPU seconds; -1: not known */
	double sent, segs;    /* bytes and data segments sent on to the server
			       * (ss -ti mid-run); 0 when ss said nothing */
};

/* iperf3 with streams streams through port on net->front to the server on
 * server_port (or straight to the server when direct), o->secs long (whole
 * seconds, at least one). -1 with why set when it failed or received
 * nothing. */
int iperf_run(const struct bench_opts *o, const struct relay_net *net, bool direct,
	      int server_port, int port, int streams, struct iperf_result *res,
	      char *why, size_t size);

#endif
