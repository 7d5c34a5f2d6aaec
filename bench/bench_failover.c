/* psplice bench, group "relay-failover": 8 streams through a relay with two
 * targets, one of which is killed mid-run. Each stream is a client of the
 * bench's own that connects through the relay again and again; on each
 * connection the target says which it is (one byte), takes EXCHANGE bytes
 * and answers how many it got. Reported: the time from the kill to the
 * first connection that reached a target afterwards, the connections that
 * were on the killed target (cut: their clients see a reset or a short
 * count), and that every connection begun after the kill succeeded.
 *
 * The targets are child processes with a thread per connection, so that
 * SIGKILL closes every socket of the target at once, as a crashed server's
 * are. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

#include "bench.h"
#include "bench_fwd.h"

#define GROUP "relay-failover"
#define ITEM "8 streams, 1 of 2 targets killed"
/* The counts apart, with no baseline: a ratio to a time means nothing. */
#define ITEM_COUNTS ITEM ": connections"
#define STREAMS 8
#define EXCHANGE (4u << 20)   /* bytes a client sends on each connection */
#define IO_TIMEOUT 5          /* seconds any one send or receive may wait */
#define CHUNK (64u << 10)
/* The rows and targets. */
#define V_BASE "connect to greeting, before the kill (median)"
#define V_FAILOVER "time from the kill to the next connect"
#define T_FAILED "failover: connections failed after the kill"
#define T_TIME "failover: ms from the kill to the next connect"
#define TIME_GOAL 1000.0      /* ms: the bench's own bound, the issue gives none */
#define MAX_LAT 4096          /* connect-to-greeting times kept before the kill */

struct target {
	char tag;                 /* the byte it greets each connection with */
	int port;
	pid_t pid;
};

/* In a target's process: its tag. */
static char target_tag;

/* What the clients saw, under lock. */
struct tally {
	pthread_mutex_t lock;
	double kill_at;           /* when the kill was sent; 0 until then */
	double done_at;           /* when the last of its processes was gone */
	double first_after;       /* the earliest greeting of a connection begun
				   * after the kill, seconds after it; -1: none */
	int before_ok, before_fail, cut, cut_killed, after_ok, after_fail, after_on_killed;
	char killed;
	double stop_at;
	int port;
	/* From connect to greeting, of the connections before the kill: what
	 * a connection takes when nothing fails, the failover's baseline. */
	double lat[MAX_LAT];
	int nlat;
};

/* ---- the targets ---- */

/* One connection: the greeting, then count what comes until the end, and
 * answer the count. */
static void *serve_one(void *arg)
{
	int c = (int)(intptr_t)arg;
	char buf[CHUNK];
	uint64_t got = 0;
	ssize_t n = -1;
	char tag = target_tag;

	if (send(c, &tag, 1, MSG_NOSIGNAL) == 1)
		while ((n = recv(c, buf, sizeof(buf), 0)) > 0)
			got += (uint64_t)n;
	if (n == 0)
		send(c, &got, sizeof(got), MSG_NOSIGNAL);
	close(c);
	return NULL;
}

/* The target's accept loop, a thread per connection: one process, so that
 * once it is reaped every socket of the target is closed. */
static void serve(int l)
{
	pthread_attr_t a;
	pthread_t th;
	int c;

	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	for (;;) {
		c = accept4(l, NULL, NULL, SOCK_CLOEXEC);
		if (c >= 0 && pthread_create(&th, &a, serve_one, (void *)(intptr_t)c) != 0)
			close(c);
	}
}

/* A listener on 127.0.0.1 on a port of the kernel's choice. */
static int listen_any(int *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(l, 128) < 0 ||
	    getsockname(l, (struct sockaddr *)&a, &len) < 0) {
		if (l >= 0)
			close(l);
		return -1;
	}
	*port = ntohs(a.sin_port);
	return l;
}

static int target_start(struct target *t, char tag)
{
	int l = listen_any(&t->port);

	t->tag = tag;
	if (l < 0)
		return -1;
	fflush(NULL);
	/* Forked while this process has one thread, so that the child may
	 * start its own. */
	t->pid = fork();
	if (t->pid == 0) {
		target_tag = tag;
		serve(l);
	}
	close(l);
	return t->pid < 0 ? -1 : 0;
}

/* SIGKILL to the target; back once it is reaped, its sockets closed. */
static void target_kill(struct target *t)
{
	if (t->pid <= 0)
		return;
	kill(t->pid, SIGKILL);
	waitpid(t->pid, NULL, 0);
	t->pid = -1;
}

/* ---- the clients ---- */

static int connect_to(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	struct timeval tv = { .tv_sec = IO_TIMEOUT };
	int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (c < 0)
		return -1;
	setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(c, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(c);
		return -1;
	}
	return c;
}

static bool recv_all(int c, void *buf, size_t len)
{
	size_t got = 0;
	ssize_t n;

	while (got < len) {
		n = recv(c, (char *)buf + got, len - got, 0);
		if (n <= 0)
			return false;
		got += (size_t)n;
	}
	return true;
}

static bool send_all(int c, size_t len)
{
	static const char buf[CHUNK];
	ssize_t n;

	while (len) {
		n = send(c, buf, len < sizeof(buf) ? len : sizeof(buf), MSG_NOSIGNAL);
		if (n <= 0)
			return false;
		len -= (size_t)n;
	}
	return true;
}

/* One connection through the relay: whether the target counted every byte;
 * its greeting in *tag ('\0' when none came) and when in *greeted. */
static bool exchange(int port, char *tag, double *greeted)
{
	uint64_t count = 0;
	bool ok;
	int c = connect_to(port);

	*tag = '\0';
	if (c < 0)
		return false;
	ok = recv_all(c, tag, 1);
	*greeted = bench_now();
	ok = ok && send_all(c, EXCHANGE) && shutdown(c, SHUT_WR) == 0 &&
	     recv_all(c, &count, sizeof(count)) && count == EXCHANGE;
	close(c);
	return ok;
}

/* Count one connection begun at t0. A connection begun while the kill was
 * under way (after it was sent, before the target's last process was
 * gone) may have reached the target being killed: it counts with those
 * before the kill, and among the first to reach a target after it. */
static void tally_one(struct tally *t, double t0, bool ok, char tag, double greeted)
{
	pthread_mutex_lock(&t->lock);
	if (ok && t->kill_at && t0 >= t->kill_at &&
	    (t->first_after < 0 || greeted - t->kill_at < t->first_after))
		t->first_after = greeted - t->kill_at;
	if (!t->done_at || t0 < t->done_at) {
		if (ok && !t->kill_at && t->nlat < MAX_LAT)
			t->lat[t->nlat++] = greeted - t0;
		if (ok)
			t->before_ok++;
		else if (!t->kill_at)
			t->before_fail++;
		else {
			t->cut++;
			t->cut_killed += tag == t->killed;
		}
	} else if (ok) {
		t->after_ok++;
		t->after_on_killed += tag == t->killed;
	} else {
		t->after_fail++;
	}
	pthread_mutex_unlock(&t->lock);
}

static void *client(void *arg)
{
	struct tally *t = arg;
	double t0, greeted = 0;
	char tag;
	bool ok;

	while ((t0 = bench_now()) < t->stop_at) {
		ok = exchange(t->port, &tag, &greeted);
		tally_one(t, t0, ok, tag, greeted);
	}
	return NULL;
}

/* ---- the item ---- */

static pid_t relay_start(const struct bench_opts *o, const struct target *t, int *port,
			 char *why, size_t size)
{
	struct fwd_cmdline c;
	char errfile[4096];

	*port = bench_free_port();
	fwd_scratch(o, "failover-relay.log", errfile, sizeof(errfile));
	fwd_cmd_init(&c, o->self);
	fwd_arg(&c, "relay");
	fwd_arg(&c, "-j");
	fwd_arg(&c, "1");
	fwd_arg(&c, "--drain-timeout=1");
	fwd_arg(&c, "--balance=roundrobin");
	fwd_arg(&c, "--check-interval=1");
	fwd_arg(&c, "127.0.0.1:%d", *port);
	fwd_arg(&c, "127.0.0.1:%d", t[0].port);
	fwd_arg(&c, "127.0.0.1:%d", t[1].port);
	return fwd_start_listener(c.argv, *port, errfile, why, size);
}

static void skip_all(const char *why)
{
	bench_skip(GROUP, ITEM, V_BASE, "%s", why);
	bench_skip(GROUP, ITEM, V_FAILOVER, "%s", why);
	bench_target_missing(T_FAILED, 0, false, why);
	bench_target_missing(T_TIME, TIME_GOAL, false, why);
}

/* Run the clients for two halves of a run, the kill between them. */
static void drive(struct tally *t, struct target *victim, double half)
{
	pthread_t th[STREAMS];
	int i, n = 0;

	t->stop_at = bench_now() + 2 * half;
	for (i = 0; i < STREAMS; i++)
		n += pthread_create(&th[n], NULL, client, t) == 0;
	usleep((useconds_t)(half * 1e6));
	pthread_mutex_lock(&t->lock);
	t->kill_at = bench_now();
	pthread_mutex_unlock(&t->lock);
	target_kill(victim);
	pthread_mutex_lock(&t->lock);
	t->done_at = bench_now();
	pthread_mutex_unlock(&t->lock);
	for (i = 0; i < n; i++)
		pthread_join(th[i], NULL);
}

static void report(struct tally *t)
{
	char note[160];
	bool some = t->first_after >= 0;

	if (t->nlat) {
		bench_sort(t->lat, t->nlat);
		snprintf(note, sizeof(note), "median of %d connections, both targets up",
			 t->nlat);
		bench_row(GROUP, ITEM, V_BASE, BENCH_MS, t->lat[t->nlat / 2] * 1e3, -1, true,
			  note);
	}

	snprintf(note, sizeof(note), "before the kill: %d ok, %d failed; cut: %d (%d on the "
		 "killed target); after: %d ok, %d failed, %d on the killed target",
		 t->before_ok, t->before_fail, t->cut, t->cut_killed, t->after_ok,
		 t->after_fail, t->after_on_killed);
	if (some)
		bench_row(GROUP, ITEM, V_FAILOVER, BENCH_MS, t->first_after * 1e3, -1, false,
			  note);
	else
		bench_skip(GROUP, ITEM, V_FAILOVER,
			   "no connection reached a target after the kill; %.60s", note);
	bench_row(GROUP, ITEM_COUNTS, "connections cut by the kill", BENCH_COUNT, t->cut, -1,
		  false, "begun before the killed target was gone, and failed");
	bench_row(GROUP, ITEM_COUNTS, "connections failed after the kill", BENCH_COUNT,
		  t->after_fail, -1, false, "begun after the kill; 0 is the goal");
	bench_row(GROUP, ITEM_COUNTS, "connections failed before the kill", BENCH_COUNT,
		  t->before_fail, -1, false, "both targets up; 0 is the goal");
	bench_target_value(T_FAILED, t->after_fail, 0, false,
			   "8 streams, each connecting again and again");
	if (some)
		bench_target_value(T_TIME, t->first_after * 1e3, TIME_GOAL, false,
				   "roundrobin over 2 targets, --check-interval=1");
	else
		bench_target_missing(T_TIME, TIME_GOAL, false, "no connection after the kill");
}

void bench_relay_failover(const struct bench_opts *o)
{
	struct tally t = { .lock = PTHREAD_MUTEX_INITIALIZER, .first_after = -1 };
	struct target tg[2] = { { .pid = -1 }, { .pid = -1 } };
	double half = o->secs < 1 ? 1 : o->secs;
	char why[100];
	pid_t relay;
	int st;

	if (target_start(&tg[0], 'A') < 0 || target_start(&tg[1], 'B') < 0) {
		skip_all("cannot start the targets");
		target_kill(&tg[0]);
		return;
	}
	relay = relay_start(o, tg, &t.port, why, sizeof(why));
	if (relay < 0) {
		skip_all(why);
	} else {
		t.killed = tg[0].tag;
		drive(&t, &tg[0], half);
		fwd_stop(relay, &st);
		report(&t);
	}
	target_kill(&tg[0]);
	target_kill(&tg[1]);
}
