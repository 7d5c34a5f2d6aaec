/* psplice bench, group "relay": psplice relay against its peers (socat,
 * haproxy, a read/write relay), iperf3 through each forwarder. Every
 * forwarder's CPU is its own, from wait4 when it is stopped (bench_fwd.c).
 *
 * On loopback that figure mostly shows where softirq work is billed: the
 * receive processing of the next hop runs in the sending process's context,
 * so a relay that costs less itself moves CPU to the iperf3 client rather
 * than saving it. Each item therefore has a second item, "<item>: whole-
 * system CPU", whose rows are the forwarder's CPU plus both iperf3 ends'
 * (their own figures from iperf3 -J) over the GiB the receiver got; the
 * no-relay row's (the two ends only) is the floor.
 *
 * Loopback also flatters a read/write relay, whose copies hit pages the
 * cache still holds; the 1 and 8 stream items run again across veth pairs
 * between network namespaces of the bench's own (bench_netns.h), side by
 * side with loopback. Group "relay-proxy" (below) is the PROXY header's
 * cost. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_netns.h"
#include "bench_relay.h"

/* The variants of the main items; the ratios of the targets are taken
 * between these names. */
#define V_DIRECT "no relay (iperf3 direct)"
#define V_PSPLICE "psplice relay -j 1"
#define V_READWRITE "psplice relay --copy=readwrite"
#define V_HAPROXY "haproxy splice"
#define V_CHAIN "relay -> relay"
#define V_CHAIN_PROXY "--send-proxy-v2 -> --accept-proxy"

static const struct fwd main_set[] = {
	{ .variant = V_DIRECT, .kind = F_DIRECT },
	{ .variant = V_PSPLICE, .kind = F_RELAY },
	{ .variant = V_READWRITE, .kind = F_RELAY, .copy = true },
	{ .variant = "socat -b 131072", .kind = F_SOCAT },
	{ .variant = V_HAPROXY, .kind = F_HAPROXY },
};

/* The socket options of "fuller segments out" (issue 14): Nagle back on,
 * and unsent bytes bounded, for both ways of relaying. The read/write relay
 * with its defaults is the baseline. */
static const struct fwd sockopt_set[] = {
	{ .variant = V_READWRITE, .kind = F_RELAY, .copy = true },
	{ .variant = V_PSPLICE, .kind = F_RELAY },
	{ .variant = "psplice relay --nagle", .kind = F_RELAY, .nagle = true },
	{ .variant = "psplice relay --notsent-lowat=1M", .kind = F_RELAY, .lowat = "1M" },
	{ .variant = "psplice relay --notsent-lowat=128K", .kind = F_RELAY,
	  .lowat = "128K" },
	{ .variant = "--copy=readwrite --nagle", .kind = F_RELAY, .copy = true,
	  .nagle = true },
	{ .variant = "--copy=readwrite --notsent-lowat=128K", .kind = F_RELAY,
	  .copy = true, .lowat = "128K" },
	{ .variant = "--copy=readwrite --notsent-lowat=1M", .kind = F_RELAY, .copy = true,
	  .lowat = "1M" },
};

/* The PROXY header's cost: the relay measured forwards to a second psplice
 * relay, which forwards to the iperf3 server (which would take a header
 * for its own protocol's bytes). The header is the only difference: sent
 * with --send-proxy-v2 and taken off with --accept-proxy in one variant,
 * neither in the other. A second relay in both is fairer than teaching a
 * server of the bench's own to skip the header, which would measure that
 * server against iperf3's rather than the header; its cost counts in the
 * whole-system figure of both alike. */
static const struct fwd proxy_set[] = {
	{ .variant = V_CHAIN, .kind = F_RELAY, .chain = true },
	{ .variant = V_CHAIN_PROXY, .kind = F_RELAY, .chain = true, .send_proxy = true },
};

/* The quick subset of the socket options: splice only, Nagle and the bound
 * that did best in full runs (1M: 0.98x the read/write relay's whole-system
 * CPU where the relay's defaults gave 1.12x). */
#define SOCKOPT_QUICK 4

/* Loopback: the forwarder and both iperf3 ends on 127.0.0.1, no namespace. */
static const struct relay_net lo = { .front = "127.0.0.1", .back = "127.0.0.1" };

/* The rate limit's item: iperf3 through a relay at --rate=RATE_ASKED
 * MiB/s, well below what loopback carries, against the unlimited relay,
 * whose CPU per GiB is the one to keep. RATE_SECS long: the burst (a
 * tenth of a second's worth) and iperf3's start are then 1 % of it. */
#define RATE_ASKED 50
#define RATE_SECS 10
#define V_RATE "psplice relay -j 1 --rate=50M"

static const struct fwd rate_set[] = {
	{ .variant = V_PSPLICE, .kind = F_RELAY },
	{ .variant = V_RATE, .kind = F_RELAY, .rate = "50M" },
};

/* The iperf3 server every variant sends to; a fresh one after a failed
 * run, in case the failure left it stuck in a test. why is the direct
 * row's, the first to need it. */
static int server_start(struct relay_ctx *x)
{
	struct fwd_cmdline c;
	char log[4096];

	x->server_port = bench_free_port();
	fwd_cmd_init_in(&c, x->net->server_ns, "iperf3");
	fwd_arg(&c, "-s");
	fwd_arg(&c, "-B");
	fwd_arg(&c, "%s", x->net->back);
	fwd_arg(&c, "-p");
	fwd_arg(&c, "%d", x->server_port);
	fwd_scratch(x->o, "iperf3-server.log", log, sizeof(log));
	x->server = fwd_start_listener(c.argv, x->server_port, log, x->f[0].fail,
				       sizeof(x->f[0].fail));
	return x->server < 0 ? -1 : 0;
}

/* The second relay of a chained variant, listening on a port of its own
 * (*port); its pid, or -1 with f->fail set. */
static pid_t chain_start(struct relay_ctx *x, struct fwd *f, int *port)
{
	struct fwd_cmdline c;
	char errfile[4096];

	*port = bench_free_port();
	fwd_scratch(x->o, "chain.log", errfile, sizeof(errfile));
	relay_chain_argv(x, f, *port, &c);
	return fwd_start_listener(c.argv, *port, errfile, f->fail, sizeof(f->fail));
}

/* Start the forwarder of f (and the second relay of a chain, *chain) on a
 * fresh port (*port); its pid, or -1 with f->fail set. */
static pid_t forwarder_start(struct relay_ctx *x, struct fwd *f, int *port, pid_t *chain,
			     const char *errfile)
{
	struct fwd_cmdline c;
	int chain_port = 0;
	pid_t pid;

	*chain = -1;
	if (f->chain && (*chain = chain_start(x, f, &chain_port)) < 0)
		return -1;
	*port = bench_free_port();
	if (relay_forwarder_argv(x, f, *port, chain_port, &c) < 0) {
		snprintf(f->fail, sizeof(f->fail), "cannot write a configuration");
		pid = -1;
	} else {
		pid = fwd_start_listener(c.argv, *port, errfile, f->fail, sizeof(f->fail));
	}
	if (pid < 0 && *chain > 0)
		bench_stop(*chain, NULL);
	return pid;
}

/* One run of one variant: start its forwarder on a fresh port, send
 * through it, stop it for its CPU. */
static int relay_run(struct relay_ctx *x, struct fwd *f, int streams)
{
	char errfile[4096], line[100];
	struct iperf_result ir;
	double cpu = -1, ccpu = 0, gib;
	int port = x->server_port, st = 0, cst = 0, r;
	pid_t pid = -1, chain = -1;

	/* The server listens anew after each test: not before it does. */
	if (!fwd_wait_listening(x->server, x->server_port, FWD_START_TIMEOUT)) {
		snprintf(f->fail, sizeof(f->fail), "the iperf3 server stopped listening");
		return -1;
	}
	if (f->kind != F_DIRECT) {
		fwd_scratch(x->o, "forwarder.log", errfile, sizeof(errfile));
		pid = forwarder_start(x, f, &port, &chain, errfile);
		if (pid < 0)
			return -1;
	}
	r = iperf_run(x->o, x->net, f->kind == F_DIRECT, x->server_port, port, streams, &ir,
		      f->fail, sizeof(f->fail));
	if (pid > 0)
		cpu = fwd_stop(pid, &st);
	if (chain > 0)
		ccpu = fwd_stop(chain, &cst);
	/* The relay exits 0 after a SIGTERM drain: anything else is a crash
	 * worth reporting, not a number. */
	if (!r && f->kind == F_RELAY && (st != 0 || cst != 0)) {
		fwd_first_line(errfile, line, sizeof(line));
		snprintf(f->fail, sizeof(f->fail), "relay exited with %d%s%.60s",
			 st ? st : cst, *line ? ": " : "", line);
		r = -1;
	}
	if (r < 0)
		return -1;
	f->sent += ir.sent;
	f->segs += ir.segs;
	gib = ir.bytes / BENCH_GiB;
	fwd_runs_add(&f->r, ir.gbps, pid > 0 && cpu >= 0 ? cpu / gib : -1);
	/* The whole system: the forwarder (none for the direct row), the
	 * second relay of a chain, and both iperf3 ends. */
	if (ir.peers_cpu >= 0 && (pid < 0 || cpu >= 0) && ccpu >= 0)
		fwd_runs_add_system(&f->r, ((pid > 0 ? cpu : 0) + ccpu + ir.peers_cpu) / gib);
	return 0;
}

/* A failed run is tried once more on a fresh iperf3 server, in case the
 * failure was the server's. */
static void relay_try(struct relay_ctx *x, struct fwd *f, int streams)
{
	int attempt;

	for (attempt = 0; attempt < 2 && x->server > 0; attempt++) {
		if (relay_run(x, f, streams) == 0)
			return;
		fprintf(stderr, "psplice bench: relay: %s: %s\n", f->variant, f->fail);
		bench_stop(x->server, NULL);
		server_start(x);
	}
}

/* Rounds of every variant in turn, so that a noisy moment of the machine
 * is spread over all of them rather than landing on one. */
static void relay_rounds(struct relay_ctx *x, int streams, int reps)
{
	int rep, i;

	for (rep = 0; rep < reps; rep++)
		for (i = 0; i < x->n; i++)
			if (!x->f[i].why[0])
				relay_try(x, &x->f[i], streams);
}

/* The targets of issue 14 for one item; what says which ("1 stream",
 * "veth, 1 stream"). A row that was not measured leaves its target
 * unmeasured, with the row's name. */
static void relay_targets(const char *item, const char *what)
{
	char name[96], sitem[64];

	snprintf(name, sizeof(name), "relay vs haproxy splice, throughput, %s", what);
	bench_target_ratio(name, "relay", item, V_PSPLICE, V_HAPROXY, false, 1.15, true);
	snprintf(name, sizeof(name), "relay vs readwrite, throughput, %s", what);
	bench_target_ratio(name, "relay", item, V_PSPLICE, V_READWRITE, false, 1.0, true);
	snprintf(name, sizeof(name), "relay vs readwrite, relay CPU/GiB, %s", what);
	bench_target_ratio(name, "relay", item, V_PSPLICE, V_READWRITE, true, 0.5, false);
	snprintf(name, sizeof(name), "relay vs readwrite, whole-system CPU/GiB, %s", what);
	snprintf(sitem, sizeof(sitem), "%s: whole-system CPU", item);
	bench_target_ratio(name, "relay", sitem, V_PSPLICE, V_READWRITE, false, 1.0,
			   false);
}

/* An item: rounds (at most FWD_MAX_RUNS) of every variant of set. */
static void relay_item(const struct bench_opts *o, const char *group,
		       const struct relay_net *net, const char *item, int streams,
		       const struct fwd *set, int n, const char *const *bases, int rounds)
{
	struct relay_ctx x = { .o = o, .group = group, .net = net, .server = -1 };
	/* Two runs even in the quick subset: one second of iperf3 on a busy
	 * machine moves by a third from one run to the next. */
	int reps = o->quick ? 2 : rounds;

	relay_variants(&x, set, n);
	server_start(&x);
	relay_rounds(&x, streams, reps);
	if (x.server > 0)
		bench_stop(x.server, NULL);
	relay_record(&x, item, reps, bases);
}

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* The rate limit's targets: the measured rate over the asked, within
 * 5 % either way, and the relay's CPU per GiB at the limit at most 1.2
 * times the unlimited relay's. */
static void rate_targets(const char *item, const char *why)
{
	const struct bench_row *r = why ? NULL : bench_find("relay", item, V_RATE);
	double asked = RATE_ASKED * 1048576.0 * 8 / 1e9;   /* Gbit/s */
	char note[160];

	if (!r) {
		bench_target_missing("relay --rate, measured/asked, at least", 0.95, true,
				     why ? why : "not measured: " V_RATE);
		bench_target_missing("relay --rate, measured/asked, at most", 1.05, false,
				     why ? why : "not measured: " V_RATE);
	} else {
		snprintf(note, sizeof(note), "%.3f Gbit/s received over %.3f asked (%s)",
			 r->value, asked, item);
		bench_target_ratio_of("relay --rate, measured/asked, at least",
				      r->value / asked, 0.95, true, note);
		bench_target_ratio_of("relay --rate, measured/asked, at most",
				      r->value / asked, 1.05, false, note);
	}
	if (why)
		bench_target_missing("relay --rate vs unlimited, relay CPU/GiB", 1.2, false,
				     why);
	else
		bench_target_ratio("relay --rate vs unlimited, relay CPU/GiB", "relay", item,
				   V_RATE, V_PSPLICE, true, 1.2, false);
}

/* iperf3 for RATE_SECS through the relay with and without --rate (the
 * quick subset keeps its own length). */
static void rate_item(const struct bench_opts *o, const char *item)
{
	static const char *const bases[] = { V_PSPLICE, NULL };
	struct bench_opts longer = *o;

	if (!o->quick)
		longer.secs = RATE_SECS;
	relay_item(&longer, "relay", &lo, item, 1, rate_set, N_OF(rate_set), bases,
		   FWD_MAX_REPS);
	rate_targets(item, NULL);
}

static void relay_missing(const char *what, const char *why)
{
	char name[96];

	snprintf(name, sizeof(name), "relay vs haproxy splice, throughput, %s", what);
	bench_target_missing(name, 1.15, true, why);
	snprintf(name, sizeof(name), "relay vs readwrite, throughput, %s", what);
	bench_target_missing(name, 1.0, true, why);
	snprintf(name, sizeof(name), "relay vs readwrite, relay CPU/GiB, %s", what);
	bench_target_missing(name, 0.5, false, why);
	snprintf(name, sizeof(name), "relay vs readwrite, whole-system CPU/GiB, %s", what);
	bench_target_missing(name, 1.0, false, why);
}

/* Every row of an item and its whole-system item skipped for one reason,
 * and its targets unmeasured. */
static void relay_skip_item(const char *item, const char *what, const char *why)
{
	char sitem[64];
	int i;

	snprintf(sitem, sizeof(sitem), "%s: whole-system CPU", item);
	for (i = 0; i < N_OF(main_set); i++) {
		bench_skip("relay", item, main_set[i].variant, "%s", why);
		bench_skip("relay", sitem, main_set[i].variant, "%s", why);
	}
	relay_missing(what, why);
}

/* The items of one stream count, on loopback and then across veth (where
 * the namespaces are up: vethwhy empty), side by side in the table. */
static void relay_pair(const struct bench_opts *o, const struct relay_net *veth,
		       const char *vethwhy, int streams)
{
	static const char *const bases[] = { V_HAPROXY, V_DIRECT, NULL };
	char item[64], vitem[64], what[32], vwhat[48];

	snprintf(what, sizeof(what), "%d stream%s", streams, streams > 1 ? "s" : "");
	snprintf(vwhat, sizeof(vwhat), "veth, %s", what);
	snprintf(item, sizeof(item), "iperf3, %s", what);
	snprintf(vitem, sizeof(vitem), "veth, iperf3, %s", what);
	relay_item(o, "relay", &lo, item, streams, main_set, N_OF(main_set), bases,
		   FWD_MAX_REPS);
	if (vethwhy[0])
		relay_skip_item(vitem, vwhat, vethwhy);
	else
		relay_item(o, "relay", veth, vitem, streams, main_set, N_OF(main_set), bases,
			   FWD_MAX_REPS);
	relay_targets(item, what);
	if (!vethwhy[0])
		relay_targets(vitem, vwhat);
}

void bench_relay(const struct bench_opts *o)
{
	static const char *const sockopt_bases[] = { V_READWRITE, NULL };
	struct bench_netns ns;
	struct relay_net veth = { .front = NULL };
	char vethwhy[100] = "";

	if (!bench_have("iperf3")) {
		relay_skip_item("iperf3, 1 stream", "1 stream", "iperf3 not installed");
		relay_missing("8 streams", "iperf3 not installed");
		relay_missing("veth, 1 stream", "iperf3 not installed");
		relay_missing("veth, 8 streams", "iperf3 not installed");
		rate_targets("rate limit, 1 stream", "iperf3 not installed");
		return;
	}
	if (bench_netns_up(o, &ns, vethwhy, sizeof(vethwhy)) == 0)
		veth = (struct relay_net){ .client_ns = ns.client, .relay_ns = ns.relay,
					   .server_ns = ns.server, .front = NETNS_FRONT_ADDR,
					   .back = NETNS_BACK_ADDR };
	relay_pair(o, &veth, vethwhy, 1);
	if (!o->quick) {
		relay_pair(o, &veth, vethwhy, 8);
	} else {
		relay_missing("8 streams", "not in the --quick subset");
		relay_missing("veth, 8 streams", "not in the --quick subset");
	}
	bench_netns_down(&ns);
	relay_item(o, "relay", &lo, "sockopts, 1 stream", 1, sockopt_set,
		   o->quick ? SOCKOPT_QUICK : N_OF(sockopt_set), sockopt_bases, FWD_MAX_REPS);
	rate_item(o, "rate limit, 1 stream");
}

/* Group "relay-proxy": the relay with --send-proxy-v2 against without,
 * through the same second relay (proxy_set), 1 and 8 streams on loopback.
 * The header is a few dozen bytes per connection: what could cost is a
 * path that stopped splicing for it, which the throughput and CPU show.
 * The difference looked for (2%) is far below what one run moves on a
 * shared machine (a third), hence more rounds than the other items. */
#define PROXY_ROUNDS FWD_MAX_RUNS

void bench_relay_proxy(const struct bench_opts *o)
{
	static const char *const bases[] = { V_CHAIN, NULL };
	static const int streams[] = { 1, 8 };
	char item[64], name[96];
	int i, k;

	for (k = 0; k < (o->quick ? 1 : 2); k++) {
		snprintf(item, sizeof(item), "iperf3 via 2 relays, %d stream%s", streams[k],
			 streams[k] > 1 ? "s" : "");
		snprintf(name, sizeof(name), "relay --send-proxy-v2 vs without, "
			 "throughput, %d stream%s", streams[k], streams[k] > 1 ? "s" : "");
		if (!bench_have("iperf3")) {
			for (i = 0; i < N_OF(proxy_set); i++)
				bench_skip("relay-proxy", item, proxy_set[i].variant,
					   "iperf3 not installed");
			bench_target_missing(name, 0.98, true, "iperf3 not installed");
			continue;
		}
		relay_item(o, "relay-proxy", &lo, item, streams[k], proxy_set,
			   N_OF(proxy_set), bases, PROXY_ROUNDS);
		bench_target_ratio(name, "relay-proxy", item, V_CHAIN_PROXY, V_CHAIN, false,
				   0.98, true);
	}
}
