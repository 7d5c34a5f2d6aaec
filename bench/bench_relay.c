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
 * no-relay row's (the two ends only) is the floor. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "bench_fwd.h"

/* A whole small file, NUL-terminated; NULL when unreadable or empty. */
static char *slurp(const char *path, size_t max)
{
	FILE *f = fopen(path, "r");
	char *buf = f ? malloc(max + 1) : NULL;
	size_t n = 0;

	if (buf)
		n = fread(buf, 1, max, f);
	if (f)
		fclose(f);
	if (!n) {
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	return buf;
}

enum fwd_kind { F_DIRECT, F_RELAY, F_SOCAT, F_HAPROXY };

struct fwd {
	const char *variant;
	enum fwd_kind kind;
	bool copy;                /* psplice relay --copy=readwrite */
	bool nagle;               /* psplice relay --nagle */
	const char *lowat;        /* psplice relay --notsent-lowat=, NULL: none */
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

/* The variants of the main items; the ratios of the targets are taken
 * between these names. */
#define V_DIRECT "no relay (iperf3 direct)"
#define V_PSPLICE "psplice relay -j 1"
#define V_READWRITE "psplice relay --copy=readwrite"
#define V_HAPROXY "haproxy splice"

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

/* The quick subset of the socket options: splice only, Nagle and the bound
 * that did best in full runs (1M: 0.98x the read/write relay's whole-system
 * CPU where the relay's defaults gave 1.12x). */
#define SOCKOPT_QUICK 4

/* Debian puts haproxy in /usr/sbin, outside a user's PATH. */
static const char *find_haproxy(void)
{
	static const char *const where[] = { "haproxy", "/usr/sbin/haproxy",
					     "/usr/local/sbin/haproxy" };
	size_t i;

	for (i = 0; i < sizeof(where) / sizeof(where[0]); i++)
		if (bench_have(where[i]))
			return where[i];
	return NULL;
}

/* Whether this haproxy was built with splice, and its version, for the
 * row's note; -1 when it does not splice (the row would measure nothing
 * of what it claims). */
static int haproxy_check(struct relay_ctx *x, const char *prog)
{
	char path[4096], cmd[4300], ver[32] = "?";
	char *vv, *p;
	int splice;

	fwd_scratch(x->o, "haproxy-vv.txt", path, sizeof(path));
	snprintf(cmd, sizeof(cmd), "'%s' -vv > '%s' 2>&1", prog, path);
	bench_sh(cmd, NULL, NULL);
	vv = slurp(path, 1 << 16);
	if (!vv)
		return -1;
	if ((p = strstr(vv, "version ")))
		sscanf(p + 8, "%31[0-9.]", ver);
	splice = strstr(vv, "+LINUX_SPLICE") != NULL;
	free(vv);
	snprintf(x->haproxy_note, sizeof(x->haproxy_note), "HAProxy %.15s, %s", ver,
		 splice ? "+LINUX_SPLICE, splice-request/response" : "no LINUX_SPLICE");
	return splice ? 0 : -1;
}

/* --copy is new: until psplice relay has it, the read/write row is
 * skipped rather than measured as something else. */
static bool relay_has_copy(const char *self)
{
	char cmd[4200];

	snprintf(cmd, sizeof(cmd), "'%s' relay --help | grep -q -e '--copy'", self);
	return bench_sh(cmd, NULL, NULL) == 0;
}

/* Which forwarders this machine has; the reason for each it has not. */
static void relay_variants(struct relay_ctx *x, const struct fwd *set, int n)
{
	const char *haproxy = NULL;
	struct fwd *f;
	int i;

	x->n = n;
	for (i = 0; i < n; i++) {
		f = &x->f[i];
		*f = set[i];
		switch (f->kind) {
		case F_DIRECT:
			break;
		case F_RELAY:
			f->prog = x->o->self;
			if (f->copy && !relay_has_copy(x->o->self))
				snprintf(f->why, sizeof(f->why),
					 "psplice relay has no --copy=readwrite yet");
			break;
		case F_SOCAT:
			f->prog = "socat";
			if (!bench_have("socat"))
				snprintf(f->why, sizeof(f->why), "socat not installed");
			break;
		case F_HAPROXY:
			f->prog = haproxy = find_haproxy();
			if (!haproxy)
				snprintf(f->why, sizeof(f->why), "haproxy not installed");
			else if (haproxy_check(x, haproxy) < 0)
				snprintf(f->why, sizeof(f->why), "haproxy without splice (%s)",
					 x->haproxy_note[0] ? x->haproxy_note :
					 "haproxy -vv failed");
			break;
		}
	}
}

/* The variant of this name in the item, or NULL. */
static struct fwd *variant(struct relay_ctx *x, const char *name)
{
	int i;

	for (i = 0; i < x->n; i++)
		if (!strcmp(x->f[i].variant, name))
			return &x->f[i];
	return NULL;
}

/* One thread, so that its CPU is one core's worth like the -j 1 relays.
 * Splice is forced both ways: with option splice-auto, HAProxy 2.6 never
 * judged an iperf3 stream on loopback fast enough to splice (strace: only
 * recvfrom/sendto, and the throughput of no splice option at all), so the
 * row would not be the splicing HAProxy it is named for. */
static int haproxy_config(const struct relay_ctx *x, int port, char *path, size_t size)
{
	FILE *c;

	fwd_scratch(x->o, "haproxy.cfg", path, size);
	c = fopen(path, "w");
	if (!c)
		return -1;
	fprintf(c, "global\n\tnbthread 1\n\tmaxconn 1024\n"
		"defaults\n\tmode tcp\n\toption splice-request\n\toption splice-response\n"
		"\ttimeout connect 5s\n\ttimeout client 60s\n\ttimeout server 60s\n"
		"frontend in\n\tbind 127.0.0.1:%d\n\tdefault_backend out\n"
		"backend out\n\tserver target 127.0.0.1:%d\n", port, x->server_port);
	return fclose(c);
}

static int forwarder_argv(const struct relay_ctx *x, const struct fwd *f, int port,
			  struct fwd_cmdline *c)
{
	char cfg[4096];

	fwd_cmd_init(c, f->prog);
	switch (f->kind) {
	case F_RELAY:
		fwd_arg(c, "relay");
		fwd_arg(c, "-j");
		fwd_arg(c, "1");
		/* Stopped with SIGTERM: drain for less than fwd_stop waits. */
		fwd_arg(c, "--drain-timeout");
		fwd_arg(c, "1");
		if (f->copy)
			fwd_arg(c, "--copy=readwrite");
		if (f->nagle)
			fwd_arg(c, "--nagle");
		if (f->lowat)
			fwd_arg(c, "--notsent-lowat=%s", f->lowat);
		fwd_arg(c, "127.0.0.1:%d", port);
		fwd_arg(c, "127.0.0.1:%d", x->server_port);
		return 0;
	case F_SOCAT:
		fwd_arg(c, "-b");
		fwd_arg(c, "131072");
		fwd_arg(c, "TCP-LISTEN:%d,bind=127.0.0.1,reuseaddr,fork", port);
		fwd_arg(c, "TCP:127.0.0.1:%d", x->server_port);
		return 0;
	case F_HAPROXY:
		if (haproxy_config(x, port, cfg, sizeof(cfg)) < 0)
			return -1;
		fwd_arg(c, "-db");
		fwd_arg(c, "-f");
		fwd_arg(c, "%s", cfg);
		return 0;
	default:
		return -1;
	}
}

/* The iperf3 server every variant sends to; a fresh one after a failed
 * run, in case the failure left it stuck in a test. why is the direct
 * row's, the first to need it. */
static int server_start(struct relay_ctx *x)
{
	struct fwd_cmdline c;
	char log[4096];

	x->server_port = bench_free_port();
	fwd_cmd_init(&c, "iperf3");
	fwd_arg(&c, "-s");
	fwd_arg(&c, "-B");
	fwd_arg(&c, "127.0.0.1");
	fwd_arg(&c, "-p");
	fwd_arg(&c, "%d", x->server_port);
	fwd_scratch(x->o, "iperf3-server.log", log, sizeof(log));
	x->server = fwd_start_listener(c.argv, x->server_port, log, x->f[0].fail,
				       sizeof(x->f[0].fail));
	return x->server < 0 ? -1 : 0;
}

/* `"key": number` at or after from; -1 when absent. */
static double json_number(const char *from, const char *key)
{
	char quoted[64];
	const char *p;

	snprintf(quoted, sizeof(quoted), "\"%s\"", key);
	p = strstr(from, quoted);
	if (!p || !(p = strchr(p + strlen(quoted), ':')))
		return -1;
	return strtod(p + 1, NULL);
}

/* The CPU seconds of both iperf3 ends over the test, from "end" of its -J
 * output at p (the receiver's sum), -1 when it does not say. iperf3 gives
 * each end's CPU as the percent of one CPU over the test: clock() (user +
 * system of all the process's threads) over the wall time from the test's
 * start to its end (cpu_util() in iperf_util.c); "host" is the client,
 * "remote" the server. Times the receiver's seconds, that gave the seconds
 * of /usr/bin/time for the client and of /proc/PID/stat for the server
 * within 0.01 s (iperf 3.12, 2 s tests on loopback). */
static double iperf_peers_cpu(const char *p)
{
	double secs = json_number(p, "seconds"), host, remote;
	const char *u = strstr(p, "\"cpu_utilization_percent\":");

	if (!u || secs <= 0)
		return -1;
	host = json_number(u, "host_total");
	remote = json_number(u, "remote_total");
	if (host < 0 || remote < 0)
		return -1;
	return (host + remote) / 100 * secs;
}

/* The receiver's totals from iperf3 -J: the sum over streams in "end";
 * both ends' CPU seconds in *peers_cpu (-1: not known). */
static int iperf_parse(const char *path, double *gbps, double *bytes,
		       double *peers_cpu, char *why, size_t size)
{
	char *json = slurp(path, 4 << 20), *p, *err;
	int r = -1;

	if (!json) {
		snprintf(why, size, "iperf3 wrote no output");
		return -1;
	}
	if ((err = strstr(json, "\"error\":"))) {
		err += 8 + strcspn(err + 8, "\"");
		err += *err == '"';
		snprintf(why, size, "iperf3: %.*s", (int)strcspn(err, "\""), err);
	} else if (!(p = strstr(json, "\"end\":")) ||
		   !(p = strstr(p, "\"sum_received\":"))) {
		snprintf(why, size, "iperf3 output has no receiver sum");
	} else {
		*bytes = json_number(p, "bytes");
		*gbps = json_number(p, "bits_per_second") / 1e9;
		*peers_cpu = iperf_peers_cpu(p);
		r = *bytes > 0 && *gbps > 0 ? 0 : -1;
		if (r < 0)
			snprintf(why, size, "iperf3 received nothing");
	}
	free(json);
	return r;
}

/* iperf3 takes whole seconds, and -t 0 would mean forever. */
static int iperf_secs(const struct bench_opts *o)
{
	return o->secs < 1 ? 1 : (int)(o->secs + 0.5);
}

/* The sum of every "key:N" in text. */
static double sum_field(const char *text, const char *key)
{
	size_t len = strlen(key);
	const char *p = text;
	double sum = 0;

	while ((p = strstr(p, key))) {
		if (p == text || p[-1] == ' ' || p[-1] == '\t')
			sum += strtod(p + len, NULL);
		p += len;
	}
	return sum;
}

/* What ss -ti said of the sockets that send to the iperf3 server (the
 * forwarder's, or the client's in the direct row): bytes and data
 * segments sent so far. */
static void segments_add(struct fwd *f, const char *path)
{
	char *ss = slurp(path, 1 << 20);
	double sent, segs;

	if (!ss)
		return;
	sent = sum_field(ss, "bytes_sent:");
	segs = sum_field(ss, "data_segs_out:");
	free(ss);
	if (sent > 0 && segs > 0) {
		f->sent += sent;
		f->segs += segs;
	}
}

/* iperf3 through port; ss samples the sockets that reach the server at
 * two thirds of the test, for the segment sizes. */
static int iperf_run(struct relay_ctx *x, struct fwd *f, int port, int streams,
		     double *gbps, double *bytes, double *peers_cpu)
{
	char out[4096], seg[4096], cmd[9000];
	int secs = iperf_secs(x->o), st;

	fwd_scratch(x->o, "iperf3.json", out, sizeof(out));
	fwd_scratch(x->o, "ss.txt", seg, sizeof(seg));
	unlink(out);
	unlink(seg);
	snprintf(cmd, sizeof(cmd), "(sleep %.2f; ss -tniH state established "
		 "dport = :%d > '%s' 2>/dev/null) & "
		 "timeout -k 2 %d iperf3 -c 127.0.0.1 -p %d -t %d -P %d "
		 "-J --connect-timeout 3000 > '%s'; st=$?; wait; exit $st",
		 secs * 2 / 3.0 + 0.2, x->server_port, seg, secs + 15, port, secs,
		 streams, out);
	st = bench_sh(cmd, NULL, NULL);
	if (iperf_parse(out, gbps, bytes, peers_cpu, f->fail, sizeof(f->fail)) < 0)
		return -1;
	if (st != 0) {
		snprintf(f->fail, sizeof(f->fail), "iperf3 exited with %d", st);
		return -1;
	}
	segments_add(f, seg);
	return 0;
}

/* One run of one variant: start its forwarder on a fresh port, send
 * through it, stop it for its CPU. */
static int relay_run(struct relay_ctx *x, struct fwd *f, int streams)
{
	char errfile[4096], line[100];
	double gbps = 0, bytes = 0, cpu = -1, peers = -1, gib;
	struct fwd_cmdline c;
	int port = x->server_port, st = 0, r;
	pid_t pid = -1;

	/* The server listens anew after each test: not before it does. */
	if (!fwd_wait_listening(x->server, x->server_port, FWD_START_TIMEOUT)) {
		snprintf(f->fail, sizeof(f->fail), "the iperf3 server stopped listening");
		return -1;
	}
	if (f->kind != F_DIRECT) {
		port = bench_free_port();
		fwd_scratch(x->o, "forwarder.log", errfile, sizeof(errfile));
		if (forwarder_argv(x, f, port, &c) < 0) {
			snprintf(f->fail, sizeof(f->fail), "cannot write a configuration");
			return -1;
		}
		pid = fwd_start_listener(c.argv, port, errfile, f->fail, sizeof(f->fail));
		if (pid < 0)
			return -1;
	}
	r = iperf_run(x, f, port, streams, &gbps, &bytes, &peers);
	if (pid > 0)
		cpu = fwd_stop(pid, &st);
	/* The relay exits 0 after a SIGTERM drain: anything else is a crash
	 * worth reporting, not a number. */
	if (!r && f->kind == F_RELAY && st != 0) {
		fwd_first_line(errfile, line, sizeof(line));
		snprintf(f->fail, sizeof(f->fail), "relay exited with %d%s%.60s", st,
			 *line ? ": " : "", line);
		r = -1;
	}
	if (r < 0)
		return -1;
	gib = bytes / BENCH_GiB;
	fwd_runs_add(&f->r, gbps, pid > 0 && cpu >= 0 ? cpu / gib : -1);
	/* The whole system: the forwarder (none for the direct row) and both
	 * iperf3 ends. */
	if (peers >= 0 && (pid < 0 || cpu >= 0))
		fwd_runs_add_system(&f->r, ((pid > 0 ? cpu : 0) + peers) / gib);
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

/* Whose CPU the whole-system figure adds up. */
static const char *system_whose(const struct fwd *f)
{
	switch (f->kind) {
	case F_DIRECT: return "iperf3 client+server";
	case F_RELAY: return "relay+iperf3 client+server";
	case F_SOCAT: return "socat+iperf3 client+server";
	default: return "haproxy+iperf3 client+server";
	}
}

/* The mean size of the data segments sent on to the server, "" when ss
 * gave nothing. */
static void segments_note(const struct fwd *f, char *buf, size_t size)
{
	buf[0] = '\0';
	if (f->segs > 0)
		snprintf(buf, size, "; segs out %.1f KiB", f->sent / f->segs / 1024);
}

/* How the figure was taken, the whole system's CPU per GiB (sys < 0: not
 * known), the segments sent and, for the peers, what they are. */
static void relay_note(const struct relay_ctx *x, const struct fwd *f, int reps,
		       double sys, char *note, size_t size)
{
	char runs[40], system[64] = "", segs[32], full[256];
	size_t n;

	fwd_runs_note(&f->r, reps, runs, sizeof(runs));
	segments_note(f, segs, sizeof(segs));
	if (sys >= 0)
		snprintf(system, sizeof(system), "; system %.2f s/GiB", sys);
	if (f->kind == F_HAPROXY)
		snprintf(full, sizeof(full), "%s%s%s; %.60s", runs, system, segs,
			 x->haproxy_note);
	else
		snprintf(full, sizeof(full), "%s%s%s%s", runs, system, segs,
			 f->kind == F_DIRECT ? "; the ceiling" : "");
	/* A note cut short is still a note. */
	n = strlen(full) < size ? strlen(full) : size - 1;
	memcpy(note, full, n);
	note[n] = '\0';
}

/* The whole-system item: one row per variant, its figure the forwarder's
 * CPU and both iperf3 ends' per GiB received, lower is better. */
static void relay_record_system(struct relay_ctx *x, const char *item, int reps,
				const double *sys, int base)
{
	char sitem[64], note[160], runs[40];
	int i;

	snprintf(sitem, sizeof(sitem), "%s: whole-system CPU", item);
	for (i = 0; i < x->n; i++) {
		struct fwd *f = &x->f[i];

		if (f->why[0] || !f->r.n) {
			bench_skip("relay", sitem, f->variant, "%s", f->why[0] ? f->why :
				   f->fail[0] ? f->fail : "iperf3 server did not start");
			continue;
		}
		if (sys[i] < 0) {
			bench_skip("relay", sitem, f->variant, "%s",
				   "iperf3 -J gave no cpu_utilization_percent, or the "
				   "forwarder's CPU is not known");
			continue;
		}
		if (f->r.nsys == f->r.n)
			fwd_runs_note(&f->r, reps, runs, sizeof(runs));
		else
			snprintf(runs, sizeof(runs), "known in %d of %d runs", f->r.nsys,
				 f->r.n);
		snprintf(note, sizeof(note), "%s; %s%s", runs, system_whose(f),
			 f->kind == F_DIRECT ? " only: the floor" : "");
		bench_row("relay", sitem, f->variant, BENCH_CPUGIB, sys[i], -1, i == base,
			  note);
	}
}

/* The first of the baselines named that was measured, so that the other
 * rows still have their ratios; -1 when none was. */
static int pick_base(struct relay_ctx *x, const char *const *names, const double *sys)
{
	struct fwd *f;

	for (; *names; names++)
		if ((f = variant(x, *names)) && f->r.n && (!sys || sys[f - x->f] >= 0))
			return (int)(f - x->f);
	return -1;
}

static void relay_record(struct relay_ctx *x, const char *item, int reps,
			 const char *const *bases)
{
	int base = pick_base(x, bases, NULL), sbase, i;
	double sys[MAX_FWD];
	char note[160];

	for (i = 0; i < x->n; i++) {
		struct fwd *f = &x->f[i];

		sys[i] = f->why[0] ? -1 : fwd_runs_system(&f->r);
		if (f->why[0] || !f->r.n) {
			bench_skip("relay", item, f->variant, "%s", f->why[0] ? f->why :
				   f->fail[0] ? f->fail : "iperf3 server did not start");
			continue;
		}
		relay_note(x, f, reps, sys[i], note, sizeof(note));
		fwd_runs_row("relay", item, f->variant, &f->r, i == base, note);
	}
	/* The same baseline, unless it is one without a system figure. */
	sbase = pick_base(x, bases, sys);
	relay_record_system(x, item, reps, sys, sbase);
}

/* The targets of issue 14 for one item; what says which ("1 stream"). A
 * row that was not measured leaves its target unmeasured, with the row's
 * name. */
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

static void relay_item(const struct bench_opts *o, const char *item, int streams,
		       const struct fwd *set, int n, const char *const *bases)
{
	struct relay_ctx x = { .o = o, .server = -1 };
	/* Two runs even in the quick subset: one second of iperf3 on a busy
	 * machine moves by a third from one run to the next. */
	int reps = o->quick ? 2 : FWD_MAX_REPS;

	relay_variants(&x, set, n);
	server_start(&x);
	relay_rounds(&x, streams, reps);
	if (x.server > 0)
		bench_stop(x.server, NULL);
	relay_record(&x, item, reps, bases);
}

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

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

void bench_relay(const struct bench_opts *o)
{
	/* HAProxy is the baseline of the main items; without it, the ceiling
	 * (the direct row) is. */
	static const char *const main_bases[] = { V_HAPROXY, V_DIRECT, NULL };
	static const char *const sockopt_bases[] = { V_READWRITE, NULL };
	const char *item1 = "iperf3, 1 stream", *item8 = "iperf3, 8 streams";
	const char *itemo = "sockopts, 1 stream";
	int i;

	if (!bench_have("iperf3")) {
		for (i = 0; i < N_OF(main_set); i++)
			bench_skip("relay", item1, main_set[i].variant,
				   "iperf3 not installed");
		relay_missing("1 stream", "iperf3 not installed");
		relay_missing("8 streams", "iperf3 not installed");
		return;
	}
	relay_item(o, item1, 1, main_set, N_OF(main_set), main_bases);
	if (!o->quick)
		relay_item(o, item8, 8, main_set, N_OF(main_set), main_bases);
	relay_item(o, itemo, 1, sockopt_set, o->quick ? SOCKOPT_QUICK : N_OF(sockopt_set),
		   sockopt_bases);
	relay_targets(item1, "1 stream");
	if (!o->quick)
		relay_targets(item8, "8 streams");
	else
		relay_missing("8 streams", "not in the --quick subset");
}
