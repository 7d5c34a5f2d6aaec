/* psplice bench, groups "relay" and "scaling": psplice relay against its
 * peers (socat, haproxy, a read/write relay) under iperf3, and against
 * itself with more workers and connections under a load generator of our
 * own. Every forwarder's CPU is its own, from wait4 when it is stopped. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

#define MAX_REPS 3
#define START_TIMEOUT 5.0     /* a forwarder must listen by then */
#define REAP_TIMEOUT 2.0      /* socat's children must be gone by then */

/* ---- small helpers ---- */

static void scratch(const struct bench_opts *o, const char *name, char *buf, size_t size)
{
	snprintf(buf, size, "%s/%s", o->dir, name);
}

/* The first line of a file (a program's complaint, for a skip reason). */
static void first_line(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");

	buf[0] = '\0';
	if (!f)
		return;
	if (fgets(buf, (int)size, f))
		buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

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

static void sleep_secs(double s)
{
	if (s > 0)
		usleep((useconds_t)(s * 1e6));
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The median; of an even count, the better of the two middle values
 * (on a shared machine, noise only ever makes a figure worse). */
static double typical(double *v, int n, bool higher_is_better)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	if (n % 2)
		return v[n / 2];
	return higher_is_better ? v[n / 2] : v[n / 2 - 1];
}

/* The figures of the runs of one variant that worked. */
struct runs {
	double gbps[MAX_REPS];
	double cpu[MAX_REPS];     /* s per GiB, of the runs that know it */
	int n, ncpu;
};

static void runs_add(struct runs *r, double gbps, double cpu)
{
	if (r->n == MAX_REPS)
		return;
	r->gbps[r->n++] = gbps;
	if (cpu >= 0)
		r->cpu[r->ncpu++] = cpu;
}

/* "median of 3 runs", and whether some are missing. */
static void runs_note(const struct runs *r, int reps, char *note, size_t size)
{
	if (r->n > 1)
		snprintf(note, size, "%s of %d runs%s", r->n % 2 ? "median" : "better",
			 r->n, r->n < reps ? " (others failed)" : "");
	else
		snprintf(note, size, "1 run%s", r->n < reps ? " (others failed)" : "");
}

static void runs_row(const char *group, const char *item, const char *variant,
		     struct runs *r, bool baseline, const char *note)
{
	bench_row(group, item, variant, BENCH_GBITPS, typical(r->gbps, r->n, true),
		  r->ncpu ? typical(r->cpu, r->ncpu, false) : -1, baseline, note);
}

/* An argv built piece by piece, each argument in its own storage. */
struct cmdline {
	char *argv[24];
	char buf[23][200];
	int n;
};

/* The program is not copied: a path may be longer than an argument. */
static void cmd_init(struct cmdline *c, const char *prog)
{
	c->argv[0] = (char *)prog;
	c->argv[1] = NULL;
	c->n = 1;
}

static void arg(struct cmdline *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void arg(struct cmdline *c, const char *fmt, ...)
{
	va_list ap;

	if (c->n >= (int)(sizeof(c->buf) / sizeof(c->buf[0])))
		return;
	va_start(ap, fmt);
	vsnprintf(c->buf[c->n], sizeof(c->buf[0]), fmt, ap);
	va_end(ap);
	c->argv[c->n] = c->buf[c->n];
	c->argv[++c->n] = NULL;
}

static const char *prog_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* ---- forwarders: started, known to listen, stopped with their CPU ---- */

/* Has it ended? WNOWAIT leaves it to bench_stop to reap, with its rusage. */
static bool exited(pid_t pid)
{
	siginfo_t si = { .si_pid = 0 };

	return waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
	       si.si_pid == pid;
}

/* Is a TCP socket listening on this local port? Read from the kernel's
 * table rather than by connecting: iperf3 -s takes any connection that
 * sends nothing as a failed client, and after each client, failed or not,
 * it closes its listener and opens a new one, so that a probe (straight or
 * through a forwarder) resets the measurement's client if it comes in
 * between (seen: "control socket has closed unexpectedly"). */
static bool listening(int port)
{
	static const char *const tables[] = { "/proc/net/tcp", "/proc/net/tcp6" };
	char line[256];
	unsigned int lport, state;
	bool found = false;
	size_t i;

	for (i = 0; i < 2 && !found; i++) {
		FILE *f = fopen(tables[i], "r");

		while (f && !found && fgets(line, sizeof(line), f))
			found = sscanf(line, " %*d: %*[0-9A-Fa-f]:%x %*[0-9A-Fa-f]:%*x %x",
				       &lport, &state) == 2 &&
				(int)lport == port && state == 0x0A;   /* TCP_LISTEN */
		if (f)
			fclose(f);
	}
	return found;
}

/* Wait, at most timeout seconds, until pid listens on port; false when it
 * ended or did not. */
static bool wait_listening(pid_t pid, int port, double timeout)
{
	double end = bench_now() + timeout;

	while (!exited(pid)) {
		if (listening(port))
			return true;
		if (bench_now() > end)
			break;
		usleep(10000);
	}
	return false;
}

/* Start argv and wait until it listens on port, or gives up at once. -1
 * with why set when it did not come up. */
static pid_t start_listener(char *const argv[], int port, const char *errfile,
			    char *why, size_t size)
{
	char line[100];
	pid_t pid = bench_spawn(argv, errfile);

	if (pid < 0) {
		snprintf(why, size, "cannot start %s: %s", argv[0], strerror(errno));
		return -1;
	}
	if (wait_listening(pid, port, START_TIMEOUT))
		return pid;
	bench_stop(pid, NULL);
	first_line(errfile, line, sizeof(line));
	snprintf(why, size, "%.24s did not listen%s%.50s", prog_name(argv[0]),
		 *line ? ": " : "", line);
	return -1;
}

/* socat serves each connection in a forked child, whose CPU reaches the
 * parent's rusage only once the parent reaped it: wait (bounded) until it
 * has no children before stopping it. Single-threaded parents only, which
 * is what the children file of the main thread covers. */
static void wait_childless(pid_t pid)
{
	char path[64], line[64];
	double end = bench_now() + REAP_TIMEOUT;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
	do {
		first_line(path, line, sizeof(line));
		if (!line[0])
			return;
		usleep(20000);
	} while (bench_now() < end);
}

/* Stop a forwarder after its run; its CPU seconds, or -1 when it could not
 * be reaped. */
static double stop_forwarder(pid_t pid, int *status)
{
	double cpu = -1;

	wait_childless(pid);
	*status = bench_stop(pid, &cpu);
	return *status == -1 ? -1 : cpu;
}

/* ---- group "relay": iperf3 through each forwarder ---- */

enum fwd_kind { F_DIRECT, F_PSPLICE, F_READWRITE, F_SOCAT, F_HAPROXY, F_COUNT };

struct fwd {
	const char *variant;
	enum fwd_kind kind;
	const char *prog;         /* what runs it; NULL for the direct row */
	char why[100];            /* not measurable here: the reason */
	char fail[100];           /* the last run that failed: why */
	struct runs r;
};

struct relay_ctx {
	const struct bench_opts *o;
	struct fwd f[F_COUNT];
	char haproxy_note[72];    /* version and splice support */
	int server_port;
	pid_t server;
};

static const char *const variant_names[F_COUNT] = {
	[F_DIRECT] = "no relay (iperf3 direct)",
	[F_PSPLICE] = "psplice relay -j 1",
	[F_READWRITE] = "psplice relay --copy=readwrite",
	[F_SOCAT] = "socat -b 131072",
	[F_HAPROXY] = "haproxy splice",
};

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

	scratch(x->o, "haproxy-vv.txt", path, sizeof(path));
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
static void relay_variants(struct relay_ctx *x)
{
	struct fwd *f = x->f;
	int i;

	for (i = 0; i < F_COUNT; i++)
		f[i] = (struct fwd){ .variant = variant_names[i], .kind = i };
	f[F_PSPLICE].prog = f[F_READWRITE].prog = x->o->self;
	if (!relay_has_copy(x->o->self))
		snprintf(f[F_READWRITE].why, sizeof(f[0].why),
			 "psplice relay has no --copy=readwrite yet");
	f[F_SOCAT].prog = "socat";
	if (!bench_have("socat"))
		snprintf(f[F_SOCAT].why, sizeof(f[0].why), "socat not installed");
	f[F_HAPROXY].prog = find_haproxy();
	if (!f[F_HAPROXY].prog)
		snprintf(f[F_HAPROXY].why, sizeof(f[0].why), "haproxy not installed");
	else if (haproxy_check(x, f[F_HAPROXY].prog) < 0)
		snprintf(f[F_HAPROXY].why, sizeof(f[0].why), "haproxy without splice (%s)",
			 x->haproxy_note[0] ? x->haproxy_note : "haproxy -vv failed");
}

/* One thread, so that its CPU is one core's worth like the -j 1 relays.
 * Splice is forced both ways: with option splice-auto, HAProxy 2.6 never
 * judged an iperf3 stream on loopback fast enough to splice (strace: only
 * recvfrom/sendto, and the throughput of no splice option at all), so the
 * row would not be the splicing HAProxy it is named for. */
static int haproxy_config(const struct relay_ctx *x, int port, char *path, size_t size)
{
	FILE *c;

	scratch(x->o, "haproxy.cfg", path, size);
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
			  struct cmdline *c)
{
	char cfg[4096];

	cmd_init(c, f->prog);
	switch (f->kind) {
	case F_READWRITE:
	case F_PSPLICE:
		arg(c, "relay");
		arg(c, "-j");
		arg(c, "1");
		if (f->kind == F_READWRITE)
			arg(c, "--copy=readwrite");
		arg(c, "127.0.0.1:%d", port);
		arg(c, "127.0.0.1:%d", x->server_port);
		return 0;
	case F_SOCAT:
		arg(c, "-b");
		arg(c, "131072");
		arg(c, "TCP-LISTEN:%d,bind=127.0.0.1,reuseaddr,fork", port);
		arg(c, "TCP:127.0.0.1:%d", x->server_port);
		return 0;
	case F_HAPROXY:
		if (haproxy_config(x, port, cfg, sizeof(cfg)) < 0)
			return -1;
		arg(c, "-db");
		arg(c, "-f");
		arg(c, "%s", cfg);
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
	struct cmdline c;
	char log[4096];

	x->server_port = bench_free_port();
	cmd_init(&c, "iperf3");
	arg(&c, "-s");
	arg(&c, "-B");
	arg(&c, "127.0.0.1");
	arg(&c, "-p");
	arg(&c, "%d", x->server_port);
	scratch(x->o, "iperf3-server.log", log, sizeof(log));
	x->server = start_listener(c.argv, x->server_port, log, x->f[F_DIRECT].fail,
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

/* The receiver's totals from iperf3 -J: the sum over streams in "end". */
static int iperf_parse(const char *path, double *gbps, double *bytes, char *why,
		       size_t size)
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

static int iperf_run(struct relay_ctx *x, int port, int streams, double *gbps,
		     double *bytes, char *why, size_t size)
{
	char out[4096], cmd[4400];
	int secs = iperf_secs(x->o), st;

	scratch(x->o, "iperf3.json", out, sizeof(out));
	unlink(out);
	snprintf(cmd, sizeof(cmd), "timeout -k 2 %d iperf3 -c 127.0.0.1 -p %d -t %d -P %d "
		 "-J --connect-timeout 3000 > '%s'", secs + 15, port, secs, streams, out);
	st = bench_sh(cmd, NULL, NULL);
	if (iperf_parse(out, gbps, bytes, why, size) < 0)
		return -1;
	if (st != 0) {
		snprintf(why, size, "iperf3 exited with %d", st);
		return -1;
	}
	return 0;
}

/* One run of one variant: start its forwarder on a fresh port, send
 * through it, stop it for its CPU. */
static int relay_run(struct relay_ctx *x, struct fwd *f, int streams)
{
	char errfile[4096], line[100];
	double gbps = 0, bytes = 0, cpu = -1;
	struct cmdline c;
	int port = x->server_port, st = 0, r;
	pid_t pid = -1;

	/* The server listens anew after each test: not before it does. */
	if (!wait_listening(x->server, x->server_port, START_TIMEOUT)) {
		snprintf(f->fail, sizeof(f->fail), "the iperf3 server stopped listening");
		return -1;
	}
	if (f->kind != F_DIRECT) {
		port = bench_free_port();
		scratch(x->o, "forwarder.log", errfile, sizeof(errfile));
		if (forwarder_argv(x, f, port, &c) < 0) {
			snprintf(f->fail, sizeof(f->fail), "cannot write a configuration");
			return -1;
		}
		pid = start_listener(c.argv, port, errfile, f->fail, sizeof(f->fail));
		if (pid < 0)
			return -1;
	}
	r = iperf_run(x, port, streams, &gbps, &bytes, f->fail, sizeof(f->fail));
	if (pid > 0)
		cpu = stop_forwarder(pid, &st);
	/* The relay exits 0 after a SIGTERM drain: anything else is a crash
	 * worth reporting, not a number. */
	if (!r && (f->kind == F_PSPLICE || f->kind == F_READWRITE) && st != 0) {
		first_line(errfile, line, sizeof(line));
		snprintf(f->fail, sizeof(f->fail), "relay exited with %d%s%.60s", st,
			 *line ? ": " : "", line);
		r = -1;
	}
	if (r < 0)
		return -1;
	runs_add(&f->r, gbps, pid > 0 && cpu >= 0 ? cpu / (bytes / BENCH_GiB) : -1);
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
		for (i = 0; i < F_COUNT; i++)
			if (!x->f[i].why[0])
				relay_try(x, &x->f[i], streams);
}

/* How the figure was taken and, for the peers, what they are. */
static void relay_note(const struct relay_ctx *x, const struct fwd *f, int reps,
		       char *note, size_t size)
{
	char runs[40];

	runs_note(&f->r, reps, runs, sizeof(runs));
	snprintf(note, size, "%s%s%.60s", runs,
		 f->kind == F_DIRECT ? "; the ceiling" : f->kind == F_HAPROXY ? "; " : "",
		 f->kind == F_HAPROXY ? x->haproxy_note : "");
}

/* HAProxy is the baseline; without it, the ceiling is, so that the other
 * rows still have their ratios. */
static void relay_record(struct relay_ctx *x, const char *item, int reps)
{
	int base = x->f[F_HAPROXY].r.n > 0 ? F_HAPROXY : F_DIRECT, i;
	char note[120];

	for (i = 0; i < F_COUNT; i++) {
		struct fwd *f = &x->f[i];

		if (f->why[0] || !f->r.n) {
			bench_skip("relay", item, f->variant, "%s", f->why[0] ? f->why :
				   f->fail[0] ? f->fail : "iperf3 server did not start");
			continue;
		}
		relay_note(x, f, reps, note, sizeof(note));
		runs_row("relay", item, f->variant, &f->r, i == base, note);
	}
}

static void relay_targets(struct relay_ctx *x, const char *item)
{
	const char *what = "relay vs haproxy splice, throughput";

	if (x->f[F_HAPROXY].r.n)
		bench_target_ratio(what, "relay", item, variant_names[F_PSPLICE],
				   variant_names[F_HAPROXY], false, 1.15, true);
	else
		bench_target_missing(what, 1.15, true, x->f[F_HAPROXY].why[0] ?
				     x->f[F_HAPROXY].why : x->f[F_HAPROXY].fail);
	bench_target_ratio("relay vs read/write relay, CPU per GiB", "relay", item,
			   variant_names[F_PSPLICE], variant_names[F_READWRITE], true, 0.5,
			   false);
}

static void relay_item(const struct bench_opts *o, const char *item, int streams,
		       bool targets)
{
	struct relay_ctx x = { .o = o, .server = -1 };
	/* Two runs even in the quick subset: one second of iperf3 on a busy
	 * machine moves by a third from one run to the next. */
	int reps = o->quick ? 2 : MAX_REPS;

	relay_variants(&x);
	server_start(&x);
	relay_rounds(&x, streams, reps);
	if (x.server > 0)
		bench_stop(x.server, NULL);
	relay_record(&x, item, reps);
	if (targets)
		relay_targets(&x, item);
}

void bench_relay(const struct bench_opts *o)
{
	const char *item1 = "iperf3, 1 stream", *item8 = "iperf3, 8 streams";
	int i;

	if (!bench_have("iperf3")) {
		for (i = 0; i < F_COUNT; i++)
			bench_skip("relay", item1, variant_names[i],
				   "iperf3 not installed");
		bench_target_missing("relay vs haproxy splice, throughput", 1.15, true,
				     "iperf3 not installed");
		bench_target_missing("relay vs read/write relay, CPU per GiB", 0.5, false,
				     "iperf3 not installed");
		return;
	}
	relay_item(o, item1, 1, true);
	if (!o->quick)
		relay_item(o, item8, 8, false);
}

/* ---- group "scaling": our own load, so that connections can be many ---- */

#define SINK_BUF (1u << 20)
#define SEND_BUF (256u << 10)
#define LISTENER_SLOT UINT32_MAX
#define SETTLE_TIMEOUT 5.0    /* connections must be up by then */
/* Connections must be gone by then once the senders close. What is queued
 * in the socket buffers goes through first: 1.3 GB for 256 connections
 * here, over a second. */
#define DRAIN_TIMEOUT 10.0

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
	struct cmdline c;

	l->relay_port = bench_free_port();
	scratch(o, "scaling-relay.log", errfile, sizeof(errfile));
	cmd_init(&c, o->self);
	arg(&c, "relay");
	arg(&c, "-j");
	arg(&c, "%d", jobs);
	arg(&c, "--drain-timeout");
	arg(&c, "1");
	arg(&c, "127.0.0.1:%d", l->relay_port);
	arg(&c, "127.0.0.1:%d", sink_port);
	return start_listener(c.argv, l->relay_port, errfile, why, size);
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
	cpu = stop_forwarder(relay, &st);
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
	struct rlimit r;
	rlim_t need = (rlim_t)conns * 2 + 64;

	if (getrlimit(RLIMIT_NOFILE, &r) < 0)
		return -1;
	if (r.rlim_cur >= need)
		return 0;
	r.rlim_cur = r.rlim_max < need ? r.rlim_max : need;
	return setrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur >= need ? 0 : -1;
}

/* One variant's runs in an item, and why one failed. */
struct scale_cell {
	struct runs r;
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
	runs_add(&c->r, res.gbps, res.cpu);
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
		runs_note(&cell[i].r, reps, note, sizeof(note));
		if (cell[i].undrained)
			snprintf(note + strlen(note), sizeof(note) - strlen(note),
				 "; connections outlived their senders");
		runs_row("scaling", item, variant, &cell[i].r, i == 0, note);
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
