/* psplice bench, group "pressure", item "1000 conns": connections held
 * open through the relay, each with bytes its client does not read, so
 * that pairs would keep pipes; the relay's fds and pipes at the peak and
 * after the connections closed, and its memory per connection. */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench_pressure.h"

#define CONNS 1000
/* The first CONNS_LOADED connections get CONNS_HOLD bytes their client does
 * not read: more than the relay's send buffer to the client takes (4 MiB
 * at most, tcp_wmem), so that each pair would keep a pipe, and more of them
 * than the default budget of kept pipes (32 with pipe-user-pages-soft at
 * 16384). The rest are idle. 384 MiB in all stays below tcp_mem. */
#define CONNS_LOADED 64
#define CONNS_HOLD (6u << 20)
#define PUSH_BUF (256u << 10)
#define CONNS_TIMEOUT 15.0     /* all connections up by then */
#define SETTLE_SECS 1.0

static int count_fds(pid_t pid, int *fds, int *pipes)
{
	char dir[64], path[320], link[64];
	unsigned long inode[8192];
	int ninode = 0, i;
	struct dirent *e;
	DIR *d;
	ssize_t n;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	d = opendir(dir);
	if (!d)
		return -1;
	*fds = 0;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		++*fds;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		if (strncmp(link, "pipe:[", 6) || ninode == (int)(sizeof(inode) / sizeof(inode[0])))
			continue;
		inode[ninode] = strtoul(link + 6, NULL, 10);
		for (i = 0; i < ninode && inode[i] != inode[ninode]; i++)
			;
		ninode += i == ninode;
	}
	closedir(d);
	/* The stderr of the relay is a file here, not a pipe: every pipe is
	 * the relay's own. */
	*pipes = ninode;
	return 0;
}

/* VmRSS and VmHWM of pid in KiB. */
static int vm_kib(pid_t pid, double *rss, double *hwm)
{
	char path[64], line[256];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	*rss = *hwm = -1;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "VmRSS:", 6))
			*rss = strtod(line + 6, NULL);
		else if (!strncmp(line, "VmHWM:", 6))
			*hwm = strtod(line + 6, NULL);
	}
	fclose(f);
	return *rss < 0 || *hwm < 0 ? -1 : 0;
}

struct snap {
	int fds, pipes;
	double rss, hwm;    /* KiB */
};

static int snapshot(pid_t pid, struct snap *s)
{
	return count_fds(pid, &s->fds, &s->pipes) < 0 || vm_kib(pid, &s->rss, &s->hwm) < 0 ?
	       -1 : 0;
}

/* The ends the bench holds: clients that never read, and the target's side
 * of each connection, which sends CONNS_HOLD bytes and never reads. */
struct conns {
	int client[CONNS], server[CONNS];
	uint32_t sent[CONNS];
	int nclient, nserver;
};

static void conns_close(struct conns *c)
{
	int i;

	for (i = 0; i < c->nclient; i++)
		close(c->client[i]);
	for (i = 0; i < c->nserver; i++)
		close(c->server[i]);
	c->nclient = c->nserver = 0;
}

/* Send what is left of each connection's bytes, as far as it goes without
 * blocking. Bytes sent in this round. */
static uint64_t conns_push(struct conns *c, const char *buf)
{
	uint64_t round = 0;
	ssize_t n;
	int i;

	for (i = 0; i < c->nserver && i < CONNS_LOADED; i++)
		while (c->sent[i] < CONNS_HOLD) {
			n = send(c->server[i], buf, CONNS_HOLD - c->sent[i] < PUSH_BUF ?
				 CONNS_HOLD - c->sent[i] : PUSH_BUF,
				 MSG_DONTWAIT | MSG_NOSIGNAL);
			if (n <= 0)
				break;
			c->sent[i] += (uint32_t)n;
			round += (uint64_t)n;
		}
	return round;
}

static void conns_accept(struct conns *c, int lfd)
{
	int fd;

	while (c->nserver < CONNS &&
	       (fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		c->sent[c->nserver] = 0;
		c->server[c->nserver++] = fd;
	}
}

/* Open CONNS clients through the relay, and wait until the target has
 * accepted every one (the relay connects once it accepted). */
static int conns_open(struct conns *c, int lfd, int port, char *why, size_t wsize)
{
	double end = bench_now() + CONNS_TIMEOUT;
	struct pollfd p = { .fd = lfd, .events = POLLIN };
	int fd;

	while (c->nclient < CONNS) {
		/* A tiny receive buffer: the relay's side fills at once. */
		fd = pressure_connect_to(port, SOCK_NONBLOCK, 4096);
		if (fd < 0) {
			snprintf(why, wsize, "connect: %s", strerror(errno));
			return -1;
		}
		c->client[c->nclient++] = fd;
		if (c->nclient % 50 == 0)
			conns_accept(c, lfd);
	}
	while (c->nserver < CONNS && bench_now() < end) {
		poll(&p, 1, 100);
		conns_accept(c, lfd);
	}
	if (c->nserver < CONNS) {
		snprintf(why, wsize, "%d of %d connections reached the target", c->nserver,
			 CONNS);
		return -1;
	}
	return 0;
}

struct conns_result {
	struct snap before, peak, after;
	double pending;     /* bytes the relay held at the peak, from its stats */
};

/* Until the relay's fd count is back to what it was before the
 * connections, or has stopped falling for a moment (the library keeps some
 * empty pipes for reuse), bounded. */
static void wait_closed(pid_t pid, int fds)
{
	double end = bench_now() + 10;
	int n, last = -1, same = 0, pipes;

	while (bench_now() < end && count_fds(pid, &n, &pipes) == 0 && n > fds &&
	       same < 5) {
		same = n == last ? same + 1 : 0;
		last = n;
		usleep(100000);
	}
}

static int conns_measure(pid_t relay, struct conns *c, int lfd, int port, const char *log,
			 struct conns_result *res, char *why, size_t wsize)
{
	static char buf[PUSH_BUF];
	double end, copied;

	if (snapshot(relay, &res->before) < 0 || conns_open(c, lfd, port, why, wsize) < 0)
		return -1;
	/* Push until a round moves nothing: the bytes are where they stay. */
	end = bench_now() + 5;
	while (conns_push(c, buf) && bench_now() < end)
		usleep(20000);
	usleep((useconds_t)(SETTLE_SECS * 1e6));
	conns_push(c, buf);
	kill(relay, SIGUSR1);
	if (snapshot(relay, &res->peak) < 0) {
		snprintf(why, wsize, "cannot read /proc of the relay");
		return -1;
	}
	usleep(100000);
	if (pressure_relay_stats(log, &res->pending, &copied) < 0)
		res->pending = -1;
	conns_close(c);
	wait_closed(relay, res->before.fds);
	if (snapshot(relay, &res->after) < 0) {
		snprintf(why, wsize, "cannot read /proc of the relay");
		return -1;
	}
	return 0;
}

static int conns_run(const struct bench_opts *o, int v, struct conns_result *res,
		     char *why, size_t wsize)
{
	static struct conns c;
	char log[4096];
	int lfd, target, port, r, st;
	pid_t relay;

	lfd = pressure_listen_any(&target, SOCK_NONBLOCK);
	if (lfd < 0) {
		snprintf(why, wsize, "target: %s", strerror(errno));
		return -1;
	}
	relay = pressure_relay_start(o, v, target, &port, log, sizeof(log), why, wsize);
	if (relay < 0) {
		close(lfd);
		return -1;
	}
	memset(&c, 0, sizeof(c));
	r = conns_measure(relay, &c, lfd, port, log, res, why, wsize);
	conns_close(&c);
	close(lfd);
	fwd_stop(relay, &st);
	return r;
}

/* Room for the bench's ends (two per connection) and the relay's, which
 * inherits the limit (two per connection and its pipes). */
static int enough_fds(void)
{
	return bench_nofile(CONNS * 4 + 256);
}

enum { M_FDS_PEAK, M_PIPES_PEAK, M_FDS_AFTER, M_PIPES_AFTER, M_KIB, NM };

static const char *const mitems[NM] = {
	[M_FDS_PEAK] = "1000 conns: relay fds at peak",
	[M_PIPES_PEAK] = "1000 conns: relay pipes at peak",
	[M_FDS_AFTER] = "1000 conns: relay fds after close",
	[M_PIPES_AFTER] = "1000 conns: relay pipes after close",
	[M_KIB] = "1000 conns: relay KiB per conn",
};

static void conns_figures(const struct conns_result *r, double *m)
{
	m[M_FDS_PEAK] = r->peak.fds;
	m[M_PIPES_PEAK] = r->peak.pipes;
	m[M_FDS_AFTER] = r->after.fds;
	m[M_PIPES_AFTER] = r->after.pipes;
	m[M_KIB] = (r->peak.rss - r->before.rss) / CONNS;
}

/* fs.pipe-user-pages-soft, from which the library's default budget of
 * kept pipes derives (half of it, in pipes of 1 MiB); -1 unknown. */
static long pipe_pages_soft(void)
{
	FILE *f = fopen("/proc/sys/fs/pipe-user-pages-soft", "r");
	long v = -1;

	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static void conns_record(double (*m)[NM][MAX_REPS], const int *n, double *hwm,
			 double *pending, char (*why)[100])
{
	static const int units[NM] = { BENCH_COUNT, BENCH_COUNT, BENCH_COUNT, BENCH_COUNT,
				       BENCH_KIB };
	char note[160];
	int v, k;

	for (k = 0; k < NM; k++)
		for (v = 0; v < NV; v++) {
			if (!n[v]) {
				bench_skip(GROUP, mitems[k], vnames[v], "%s", why[v]);
				continue;
			}
			if (k == M_KIB)
				snprintf(note, sizeof(note), "VmRSS delta over %d conns (bytes "
					 "held in memory count); VmHWM %.0f KiB per conn", CONNS,
					 hwm[v]);
			else if (k == M_PIPES_PEAK)
				snprintf(note, sizeof(note), "%d conns sent %u MiB unread; "
					 "relay held %.0f MiB; pipe-user-pages-soft %ld",
					 CONNS_LOADED, CONNS_HOLD >> 20, pending[v] / (1 << 20),
					 pipe_pages_soft());
			else if (k == M_PIPES_AFTER)
				snprintf(note, sizeof(note), "median of %d runs; empty pipes "
					 "the library keeps for reuse count here", n[v]);
			else
				snprintf(note, sizeof(note), "median of %d runs", n[v]);
			bench_row(GROUP, mitems[k], vnames[v], units[k], bench_median(m[v][k], n[v]),
				  -1, v == V_READWRITE, note);
		}
}

void pressure_conns_item(const struct bench_opts *o, int reps)
{
	static double m[NV][NM][MAX_REPS];
	double fig[NM], hwm[NV] = { 0 }, pending[NV] = { 0 };
	char why[NV][100];
	struct conns_result r;
	int n[NV] = { 0 }, rep, v, k;

	if (enough_fds() < 0) {
		for (k = 0; k < NM; k++)
			for (v = 0; v < NV; v++)
				bench_skip(GROUP, mitems[k], vnames[v], "RLIMIT_NOFILE below %d",
					   CONNS * 4 + 256);
		return;
	}
	for (rep = 0; rep < reps; rep++)
		for (v = 0; v < NV; v++) {
			if (conns_run(o, v, &r, why[v], sizeof(why[v])) < 0) {
				fprintf(stderr, "psplice bench: %s: %s: %s\n", GROUP, vnames[v],
					why[v]);
				continue;
			}
			conns_figures(&r, fig);
			for (k = 0; k < NM; k++)
				m[v][k][n[v]] = fig[k];
			/* The worst of the runs: the peak is what must fit. */
			if ((r.peak.hwm - r.before.hwm) / CONNS > hwm[v])
				hwm[v] = (r.peak.hwm - r.before.hwm) / CONNS;
			if (r.pending > pending[v])
				pending[v] = r.pending;
			n[v]++;
		}
	conns_record(m, n, hwm, pending, why);
}
