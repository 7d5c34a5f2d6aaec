/* psplice bench: what the groups "relay" and "scaling" share (bench_fwd.h):
 * their runs' figures, the command lines they start, and forwarders started,
 * known to listen and stopped. Every forwarder's CPU is its own, from wait4
 * when it is stopped. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_fwd.h"

#define REAP_TIMEOUT 2.0      /* socat's children must be gone by then */

/* ---- small helpers ---- */

void fwd_scratch(const struct bench_opts *o, const char *name, char *buf, size_t size)
{
	snprintf(buf, size, "%s/%s", o->dir, name);
}

void fwd_first_line(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");

	buf[0] = '\0';
	if (!f)
		return;
	if (fgets(buf, (int)size, f))
		buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

char *fwd_slurp(const char *path, size_t max)
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

/* The median; of an even count, the better of the two middle values
 * (on a shared machine, noise only ever makes a figure worse). */
static double typical(double *v, int n, bool higher_is_better)
{
	bench_sort(v, n);
	if (n % 2)
		return v[n / 2];
	return higher_is_better ? v[n / 2] : v[n / 2 - 1];
}

void fwd_runs_add(struct fwd_runs *r, double gbps, double cpu)
{
	if (r->n == FWD_MAX_RUNS)
		return;
	r->gbps[r->n++] = gbps;
	if (cpu >= 0)
		r->cpu[r->ncpu++] = cpu;
}

void fwd_runs_add_system(struct fwd_runs *r, double sys)
{
	if (sys >= 0 && r->nsys < FWD_MAX_RUNS)
		r->sys[r->nsys++] = sys;
}

double fwd_runs_system(struct fwd_runs *r)
{
	return r->nsys ? typical(r->sys, r->nsys, false) : -1;
}

void fwd_runs_note(const struct fwd_runs *r, int reps, char *note, size_t size)
{
	if (r->n > 1)
		snprintf(note, size, "%s of %d runs%s", r->n % 2 ? "median" : "better",
			 r->n, r->n < reps ? " (others failed)" : "");
	else
		snprintf(note, size, "1 run%s", r->n < reps ? " (others failed)" : "");
}

void fwd_runs_row(const char *group, const char *item, const char *variant,
		  struct fwd_runs *r, bool baseline, const char *note)
{
	bench_row(group, item, variant, BENCH_GBITPS, typical(r->gbps, r->n, true),
		  r->ncpu ? typical(r->cpu, r->ncpu, false) : -1, baseline, note);
}

void fwd_cmd_init(struct fwd_cmdline *c, const char *prog)
{
	c->argv[0] = (char *)prog;
	c->argv[1] = NULL;
	c->n = 1;
}

void fwd_cmd_init_in(struct fwd_cmdline *c, const char *ns, const char *prog)
{
	static const char *const prefix[] = { "ip", "netns", "exec" };
	int i;

	if (!ns) {
		fwd_cmd_init(c, prog);
		return;
	}
	for (i = 0; i < 3; i++)
		c->argv[i] = (char *)prefix[i];
	c->argv[3] = (char *)ns;
	c->argv[4] = (char *)prog;
	c->argv[5] = NULL;
	c->n = 5;
}

void fwd_arg(struct fwd_cmdline *c, const char *fmt, ...)
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

/* Is a TCP socket listening on this local port, in pid's network
 * namespace (/proc/PID/net: a forwarder or server may run in a namespace of
 * the bench's own, bench_netns.c)? Read from the kernel's table rather than
 * by connecting: iperf3 -s takes any connection that
 * sends nothing as a failed client, and after each client, failed or not,
 * it closes its listener and opens a new one, so that a probe (straight or
 * through a forwarder) resets the measurement's client if it comes in
 * between (seen: "control socket has closed unexpectedly"). */
static bool listening(pid_t pid, int port)
{
	static const char *const tables[] = { "tcp", "tcp6" };
	char line[256], path[64];
	unsigned int lport, state;
	bool found = false;
	size_t i;

	for (i = 0; i < 2 && !found; i++) {
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/net/%s", (int)pid, tables[i]);
		f = fopen(path, "r");

		while (f && !found && fgets(line, sizeof(line), f))
			found = sscanf(line, " %*d: %*[0-9A-Fa-f]:%x %*[0-9A-Fa-f]:%*x %x",
				       &lport, &state) == 2 &&
				(int)lport == port && state == 0x0A;   /* TCP_LISTEN */
		if (f)
			fclose(f);
	}
	return found;
}

bool fwd_wait_listening(pid_t pid, int port, double timeout)
{
	double end = bench_now() + timeout;

	while (!exited(pid)) {
		if (listening(pid, port))
			return true;
		if (bench_now() > end)
			break;
		usleep(10000);
	}
	return false;
}

pid_t fwd_start_listener(char *const argv[], int port, const char *errfile,
			 char *why, size_t size)
{
	char line[100];
	pid_t pid = bench_spawn(argv, errfile);

	if (pid < 0) {
		snprintf(why, size, "cannot start %s: %s", argv[0], strerror(errno));
		return -1;
	}
	if (fwd_wait_listening(pid, port, FWD_START_TIMEOUT))
		return pid;
	bench_stop(pid, NULL);
	fwd_first_line(errfile, line, sizeof(line));
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
		fwd_first_line(path, line, sizeof(line));
		if (!line[0])
			return;
		usleep(20000);
	} while (bench_now() < end);
}

double fwd_stop(pid_t pid, int *status)
{
	double cpu = -1;

	wait_childless(pid);
	*status = bench_stop(pid, &cpu);
	return *status == -1 ? -1 : cpu;
}

int fwd_haproxy_conf(const struct bench_opts *o, const char *name, int nbthread, bool splice,
		     const char *front, int port, const char *back, int target, char *path,
		     size_t size)
{
	FILE *f;

	fwd_scratch(o, name, path, size);
	if (!(f = fopen(path, "w")))
		return -1;
	fprintf(f, "global\n\tnbthread %d\n\tmaxconn 4096\n"
		"defaults\n\tmode tcp\n%s"
		"\ttimeout connect 5s\n\ttimeout client 60s\n\ttimeout server 60s\n"
		"frontend in\n\tbind %s:%d\n\tdefault_backend out\n"
		"backend out\n\tserver target %s:%d\n", nbthread,
		splice ? "\toption splice-request\n\toption splice-response\n" : "", front, port,
		back, target);
	return fclose(f);
}
