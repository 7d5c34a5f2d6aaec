/* psplice bench, group "pressure", item "stalled readers": clients that
 * connect and never read, the target sending STALLED_SIZE to each, through
 * psplice relay and through HAProxy (TCP mode, nbthread 1: its defaults,
 * a 16 KiB buffer a direction, and with splice forced, its pipes), one
 * after the other in each round. Once the target can send no more, the
 * forwarder's resident memory (VmRSS) and the machine's MemAvailable have
 * moved by so much a connection: MemAvailable counts what the kernel holds
 * for the connections too (socket buffers, pipe pages), which VmRSS does
 * not, and the whole machine's, so another process's change shows in it.
 * The target's bytes fill the machine's TCP memory (tcp_mem) before they
 * fill the sockets, as they do for a proxy with thousands of stalled
 * clients. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench_pressure.h"
#include "dirty.h"

#define STALLED 1000
#define STALLED_QUICK 250
#define STALLED_SIZE (8u << 20)
#define STALLED_PUSH (256u << 10)
#define STALLED_SECS 30.0   /* a run's pushing ends by then */
#define STALLED_STILL 1.0   /* nothing sent for this long: settled */

enum { S_RELAY, S_HAPROXY, S_HAPROXY_SPLICE, NS };

static const char *const snames[NS] = {
	[S_RELAY] = "psplice relay -j 1",
	[S_HAPROXY] = "haproxy nbthread 1",
	[S_HAPROXY_SPLICE] = "haproxy nbthread 1 splice",
};

/* The bench's ends: the clients, and the target's side of each
 * connection with what it sent. */
struct stalled {
	int client[STALLED], server[STALLED];
	uint32_t sent[STALLED];
	int n, nclient, nserver;
};

static double rss_kib(pid_t pid)
{
	static const char *const keys[] = { "VmRSS", NULL };
	char path[64];
	uint64_t kb = 0;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	cli_read_keys(path, keys, &kb);
	return kb ? (double)kb : -1;
}

static double avail_kib(void)
{
	static const char *const keys[] = { "MemAvailable", NULL };
	uint64_t kb = 0;

	cli_read_keys("/proc/meminfo", keys, &kb);
	return (double)kb;
}

static void stalled_close(struct stalled *s)
{
	int i;

	for (i = 0; i < s->nclient; i++)
		close(s->client[i]);
	for (i = 0; i < s->nserver; i++)
		close(s->server[i]);
	s->nclient = s->nserver = 0;
}

static void stalled_accept(struct stalled *s, int lfd)
{
	int fd;

	while (s->nserver < s->n &&
	       (fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		s->sent[s->nserver] = 0;
		s->server[s->nserver++] = fd;
	}
}

/* What the target sends without blocking in one round over its sockets. */
static uint64_t stalled_push(struct stalled *s, const char *buf)
{
	uint64_t round = 0;
	size_t want;
	ssize_t n;
	int i;

	for (i = 0; i < s->nserver; i++)
		while (s->sent[i] < STALLED_SIZE) {
			want = STALLED_SIZE - s->sent[i];
			n = send(s->server[i], buf, want < STALLED_PUSH ? want : STALLED_PUSH,
				 MSG_DONTWAIT | MSG_NOSIGNAL);
			if (n <= 0)
				break;
			s->sent[i] += (uint32_t)n;
			round += (uint64_t)n;
		}
	return round;
}

/* The clients connect (a default receive buffer; none ever reads) while
 * the target accepts and sends, until a second passes with nothing sent. */
static int stalled_fill(struct stalled *s, int lfd, int port, char *why, size_t wsize)
{
	static char buf[STALLED_PUSH];
	double end = bench_now() + STALLED_SECS, still = bench_now();
	struct pollfd p = { .fd = lfd, .events = POLLIN };

	while (s->nclient < s->n) {
		s->client[s->nclient] = pressure_connect_to(port, SOCK_NONBLOCK, 0);
		if (s->client[s->nclient] < 0) {
			snprintf(why, wsize, "connect: %s", strerror(errno));
			return -1;
		}
		if (++s->nclient % 50 == 0)
			stalled_accept(s, lfd);
	}
	while (bench_now() < end && bench_now() - still < STALLED_STILL) {
		poll(&p, 1, 20);
		stalled_accept(s, lfd);
		if (stalled_push(s, buf))
			still = bench_now();
	}
	if (s->nserver < s->n) {
		snprintf(why, wsize, "%d of %d connections reached the target", s->nserver,
			 s->n);
		return -1;
	}
	return 0;
}

static pid_t haproxy_start(const struct bench_opts *o, bool splice, int target, int *port,
			   char *why, size_t wsize)
{
	char err[4096], conf[4096];
	struct fwd_cmdline c;

	*port = bench_free_port();
	fwd_scratch(o, "stalled-haproxy.err", err, sizeof(err));
	if (fwd_haproxy_conf(o, "stalled-haproxy.cfg", 1, splice, "127.0.0.1", *port,
			     "127.0.0.1", target, conf, sizeof(conf)) < 0) {
		snprintf(why, wsize, "cannot write haproxy's configuration");
		return -1;
	}
	fwd_cmd_init(&c, "haproxy");
	fwd_arg(&c, "-db");
	fwd_arg(&c, "-f");
	fwd_arg(&c, "%s", conf);
	return fwd_start_listener(c.argv, *port, err, why, wsize);
}

static pid_t stalled_start(const struct bench_opts *o, int v, int target, int *port,
			   char *why, size_t wsize)
{
	char log[4096];

	if (v == S_RELAY)
		return pressure_relay_start(o, V_PSPLICE, target, port, log, sizeof(log), why,
					    wsize);
	return haproxy_start(o, v == S_HAPROXY_SPLICE, target, port, why, wsize);
}

/* One run of variant v: KiB a connection of VmRSS (m[0]) and of
 * MemAvailable (m[1]), and the MiB the target sent (m[2]). */
static int stalled_run(const struct bench_opts *o, int v, int n, double *m, char *why,
		       size_t wsize)
{
	static struct stalled s;
	double rss0, rss1, avail0, sent = 0;
	int lfd, target, port, r, st, i;
	pid_t pid;

	lfd = pressure_listen_any(&target, SOCK_NONBLOCK);
	if (lfd < 0) {
		snprintf(why, wsize, "target: %s", strerror(errno));
		return -1;
	}
	pid = stalled_start(o, v, target, &port, why, wsize);
	if (pid < 0) {
		close(lfd);
		return -1;
	}
	memset(&s, 0, sizeof(s));
	s.n = n;
	rss0 = rss_kib(pid);
	avail0 = avail_kib();
	r = stalled_fill(&s, lfd, port, why, wsize);
	rss1 = rss_kib(pid);
	m[0] = (rss1 - rss0) / n;
	m[1] = (avail0 - avail_kib()) / n;
	for (i = 0; i < s.nserver; i++)
		sent += s.sent[i];
	m[2] = sent / (1 << 20);
	stalled_close(&s);
	close(lfd);
	fwd_stop(pid, &st);
	if (r == 0 && (rss0 < 0 || rss1 < 0))
		snprintf(why, wsize, "cannot read the forwarder's VmRSS");
	return r < 0 || rss0 < 0 || rss1 < 0 ? -1 : 0;
}

static const char *const sitems[2] = {
	"stalled readers: forwarder RSS KiB per conn",
	"stalled readers: MemAvailable drop KiB per conn",
};

static void stalled_record(double (*m)[3][MAX_REPS], const int *got, int n,
			   char (*why)[100])
{
	char note[200];
	int v, k;

	for (k = 0; k < 2; k++)
		for (v = 0; v < NS; v++) {
			if (!got[v]) {
				bench_skip(GROUP, sitems[k], snames[v], "%s", why[v]);
				continue;
			}
			snprintf(note, sizeof(note), "%d clients that never read, %u MiB sent to "
				 "each; the target sent %.0f MiB in all; median of %d runs", n,
				 STALLED_SIZE >> 20, bench_median(m[v][2], got[v]), got[v]);
			bench_row(GROUP, sitems[k], snames[v], BENCH_KIB,
				  bench_median(m[v][k], got[v]), -1, v == S_HAPROXY, note);
		}
}

void pressure_stalled_item(const struct bench_opts *o, int reps)
{
	static double m[NS][3][MAX_REPS];
	int n = o->quick ? STALLED_QUICK : STALLED, got[NS] = { 0 }, rep, v, k;
	char why[NS][100];
	double fig[3];

	for (v = 0; v < NS; v++)
		snprintf(why[v], sizeof(why[v]), "RLIMIT_NOFILE below %d", n * 4 + 256);
	if (bench_nofile((unsigned long)n * 4 + 256) < 0) {
		stalled_record(m, got, n, why);
		return;
	}
	for (rep = 0; rep < reps; rep++)
		for (v = 0; v < NS; v++) {
			if (stalled_run(o, v, n, fig, why[v], sizeof(why[v])) < 0) {
				fprintf(stderr, "psplice bench: %s: %s: %s\n", GROUP, snames[v],
					why[v]);
				continue;
			}
			for (k = 0; k < 3; k++)
				m[v][k][got[v]] = fig[k];
			got[v]++;
		}
	stalled_record(m, got, n, why);
}
