/* psplice relay: forward every connection accepted on LISTEN to TARGET.
 * This file reads the options and runs the main thread: the listeners are
 * made, the workers started (relay_worker.c), signals and the stats line
 * handled until the workers end. Each direction of a connection is a
 * psplice pair, prepared once when it is set up, and moves with
 * psplice_pair_move(PSPLICE_F_NONBLOCK) (relay_conn.c). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <dirent.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/un.h>
#include <unistd.h>

#include "relay.h"
#include "opts.h"
#include "out.h"
#include "parse.h"

enum { OPT_MAX_CONNS = 0x200, OPT_IDLE, OPT_CONNECT, OPT_DRAIN, OPT_STATS, OPT_COPY,
       OPT_LOWAT, OPT_NAGLE, OPT_REUSEPORT, OPT_UNIX_MODE, OPT_LOG_FORMAT, OPT_LOG,
       OPT_BALANCE, OPT_CHECK, OPT_SEND_PROXY, OPT_SEND_PROXY_V2, OPT_ACCEPT_PROXY,
       OPT_REPLACE, OPT_RATE, OPT_RATE_TOTAL };

static const struct option longopts[] = {
	{ "jobs", required_argument, NULL, 'j' },
	{ "max-conns", required_argument, NULL, OPT_MAX_CONNS },
	{ "idle-timeout", required_argument, NULL, OPT_IDLE },
	{ "connect-timeout", required_argument, NULL, OPT_CONNECT },
	{ "drain-timeout", required_argument, NULL, OPT_DRAIN },
	{ "stats-interval", required_argument, NULL, OPT_STATS },
	{ "copy", required_argument, NULL, OPT_COPY },
	{ "notsent-lowat", required_argument, NULL, OPT_LOWAT },
	{ "nagle", no_argument, NULL, OPT_NAGLE },
	{ "reuseport", no_argument, NULL, OPT_REUSEPORT },
	{ "unix-mode", required_argument, NULL, OPT_UNIX_MODE },
	{ "log-format", required_argument, NULL, OPT_LOG_FORMAT },
	{ "log", required_argument, NULL, OPT_LOG },
	{ "balance", required_argument, NULL, OPT_BALANCE },
	{ "check-interval", required_argument, NULL, OPT_CHECK },
	{ "send-proxy", no_argument, NULL, OPT_SEND_PROXY },
	{ "send-proxy-v2", no_argument, NULL, OPT_SEND_PROXY_V2 },
	{ "accept-proxy", no_argument, NULL, OPT_ACCEPT_PROXY },
	{ "replace", required_argument, NULL, OPT_REPLACE },
	{ "rate", required_argument, NULL, OPT_RATE },
	{ "rate-total", required_argument, NULL, OPT_RATE_TOTAL },
	{ "verbose", no_argument, NULL, 'v' },
	CLI_COMMON_LONGOPTS
};

static void print_stats(struct relay *r)
{
	cli_say("relay: connections %" PRIu64 " open, %" PRIu64 " total; bytes %" PRIu64
		" %s, %" PRIu64 " %s; pending %" PRId64 " %s, %" PRId64 " %s; copied %" PRIu64,
		(uint64_t)atomic_load(&r->open), (uint64_t)atomic_load(&r->total),
		(uint64_t)atomic_load(&r->bytes[0]), relay_dir_name[0],
		(uint64_t)atomic_load(&r->bytes[1]), relay_dir_name[1],
		(int64_t)atomic_load(&r->pending[0]), relay_dir_name[0],
		(int64_t)atomic_load(&r->pending[1]), relay_dir_name[1],
		(uint64_t)atomic_load(&r->copied));
}

/* Every connected socket of the process set to close with a reset: the
 * kernel would end each with a FIN when the process dies, and a stream cut
 * there must not look ended to its peer. Only for workers that did not end
 * in time (die_of): they may still run, so the fds are found in /proc
 * rather than in their lists; one closed and reused under us is another of
 * our sockets, cut all the same. A unix socket has no reset: its peer
 * reads an end. */
static void reset_all(void)
{
	struct linger now = { .l_onoff = 1, .l_linger = 0 };
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int fd, listening;
	socklen_t len;

	while (d && (e = readdir(d))) {
		fd = atoi(e->d_name);
		len = sizeof(listening);
		if (fd > STDERR_FILENO && fd != dirfd(d) &&
		    getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) == 0 && !listening)
			(void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &now, sizeof(now));
	}
	if (d)
		closedir(d);
}

/* Each worker looks at what the main thread changed once woken: the end
 * of its drain, and r->cutting (start_drain). */
static void wake_workers(const struct relay *r, struct worker *w)
{
	uint64_t one = 1;
	int i;

	for (i = 0; i < r->jobs; i++)
		if (write(w[i].wake.fd, &one, sizeof(one)) < 0)
			cli_error(errno, "relay: eventfd");
}

/* Whether every worker ended within CUT_WAIT_MS, on the monotonic clock
 * (a step of the wall clock neither cuts the wait short nor stretches it). */
static bool workers_ended(const struct relay *r, struct worker *w)
{
	struct timespec until;
	int64_t ns;
	int i;

	clock_gettime(CLOCK_MONOTONIC, &until);
	ns = until.tv_nsec + (int64_t)CUT_WAIT_MS * 1000000;
	until.tv_sec += ns / 1000000000;
	until.tv_nsec = ns % 1000000000;
	for (i = 0; i < r->jobs; i++)
		if (pthread_clockjoin_np(w[i].thread, NULL, CLOCK_MONOTONIC, &until))
			return false;
	return true;
}

/* A second stop signal: the connections are not waited for, and each
 * still open is reset. The workers do it (cutting), each connection's
 * record saying so, and end: a connection that ends meanwhile ends as it
 * would have, before the process goes, and is not reset by another thread
 * as it closes, which would drop its unsent tail. A worker stuck past
 * CUT_WAIT_MS (writing to a --log=FILE that does not drain) has the rest
 * reset under it; a standard error that does not drain holds this thread
 * too, at the message below.
 * The relay ends as the signal's default action ends a program, not with
 * an exit status of its own: a shell that sees its child killed by SIGINT
 * stops the script it runs too, as it would for any program interrupted
 * by Ctrl-C (an exit status of 130 would let the script go on). The
 * kernel closes every socket. */
static _Noreturn void die_of(struct relay *r, struct worker *w, int signo)
{
	uint64_t open = atomic_load(&r->open);
	sigset_t set;

	if (open)
		cli_say("relay: stopping now: %" PRIu64 " connection%s cut", open,
			open == 1 ? "" : "s");
	atomic_store(&r->cutting, true);
	wake_workers(r, w);
	if (!workers_ended(r, w))
		reset_all();
	signal(signo, SIG_DFL);
	sigemptyset(&set);
	sigaddset(&set, signo);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	raise(signo);
	_exit(128 + signo);
}

/* SIGTERM, SIGINT or SIGHUP: the first stops accepting and lets the open
 * connections finish, and says so (someone who pressed Ctrl-C would
 * otherwise wait on a silent relay); the second stops at once. */
static void stop(struct relay *r, struct worker *w, int signo)
{
	uint64_t open = atomic_load(&r->open);

	if (atomic_load(&r->draining))
		die_of(r, w, signo);
	if (open)
		cli_say("relay: draining %" PRIu64 " connection%s (again to stop now)", open,
			open == 1 ? "" : "s");
	else if (r->verbose)
		cli_say("relay: stopping: no connections to drain");
	/* The socket file a new relay serves stays. */
	if (r->listen.ss.ss_family == AF_UNIX && !atomic_load(&r->handed_over))
		unlink(((struct sockaddr_un *)&r->listen.ss)->sun_path);
	atomic_store(&r->draining, true);
	wake_workers(r, w);
}

/* A reload under way: the new process and the pipe it says "ready" on;
 * and the process a reload handed the service to, or -1. */
struct reload {
	pid_t pid;
	int fd;
	pid_t successor;
};

/* SIGUSR2: start the new relay, unless one is already starting or this one
 * is draining (its listeners may be closed already). */
static void reload(struct relay *r, struct worker *w, struct reload *re)
{
	if (atomic_load(&r->draining)) {
		cli_say("relay: not reloading: draining");
		return;
	}
	if (re->fd >= 0) {
		cli_say("relay: not reloading: process %ld is starting already",
			(long)re->pid);
		return;
	}
	re->pid = reload_start(r, w, &re->fd);
	if (re->pid < 0)
		cli_say("relay: still serving (process %ld)", (long)getpid());
}

/* Process pid serves the listeners: this relay stops accepting and
 * drains, the sockets left listening and a unix socket's file in place
 * for it. Already draining, it goes on as it was: the stop signal that
 * began it is not repeated, which would end it at once. */
static void handed_over(struct relay *r, struct worker *w, pid_t pid, int signo)
{
	if (r->verbose)
		cli_say("relay: process %ld serves in place of this one", (long)pid);
	atomic_store(&r->handed_over, true);
	if (!atomic_load(&r->draining))
		stop(r, w, signo);
}

/* The new relay said it serves, or failed: in the first case this one
 * stops accepting and drains, its listeners left to the new one. */
static void reloaded(struct relay *r, struct worker *w, struct reload *re)
{
	bool ok = reload_ended(r, re->pid, re->fd);

	re->fd = -1;
	if (ok && !atomic_load(&r->draining)) {
		re->successor = re->pid;
		handed_over(r, w, re->pid, SIGUSR2);
	}
}

/* Tell process pid that serving serves its listeners now. */
static void tell_replaced(pid_t pid, pid_t serving)
{
	if (replace_forward(pid, serving) < 0)
		cli_error(errno, "relay: cannot stop process %ld", (long)pid);
}

/* The relay a reload started and that has not said it serves is stopped
 * with this one: it is this relay's child, not handed the service, and
 * would otherwise go on alone. A stop signal stops it with a SIGTERM (the
 * operator asked for none to serve, and this one removes a unix socket's
 * file); a relay started with --replace that serves the listeners now
 * (serving, its pid) is named to it as to this one, so that it leaves
 * them to that relay. */
static void stop_reload(struct reload *re, pid_t serving)
{
	if (re->fd < 0)
		return;
	cli_say("relay: stopping process %ld, which was starting to replace this one",
		(long)re->pid);
	if (serving)
		tell_replaced(re->pid, serving);
	else if (kill(re->pid, SIGTERM) < 0)
		cli_error(errno, "relay: cannot stop process %ld", (long)re->pid);
	close(re->fd);
	re->fd = -1;
}

/* A relay started with --replace took this one's listeners after a reload
 * had handed them on (the two crossed): the reload's relay serves them
 * too, and is told as this one was, so that only the last one serves. */
static void pass_on(struct reload *re, pid_t serving)
{
	if (re->successor < 0 || re->successor == serving)
		return;
	cli_say("relay: process %ld, which serves in place of this one, is replaced too",
		(long)re->successor);
	tell_replaced(re->successor, serving);
	re->successor = -1;
}

static void stop_all(struct relay *r, struct worker *w, struct reload *re, int signo)
{
	stop_reload(re, 0);
	stop(r, w, signo);
}

/* The signal of a relay started with --replace that serves this one's
 * listeners now (relay_replace.c). The same signal without the value is
 * taken as a stop, as its default action would end the process. */
static bool from_replacer(const struct signalfd_siginfo *si)
{
	return (int)si->ssi_signo == HANDOVER_SIGNAL && si->ssi_code == SI_QUEUE &&
	       si->ssi_int == HANDOVER_VALUE;
}

/* One signal the main thread took from the signalfd (supervise). */
static void on_signal(struct relay *r, struct worker *w, struct reload *re,
		      const struct signalfd_siginfo *si)
{
	if (si->ssi_signo == SIGUSR1) {
		print_stats(r);
	} else if (si->ssi_signo == SIGUSR2) {
		reload(r, w, re);
	} else if (from_replacer(si)) {
		stop_reload(re, (pid_t)si->ssi_pid);
		pass_on(re, (pid_t)si->ssi_pid);
		handed_over(r, w, (pid_t)si->ssi_pid, HANDOVER_SIGNAL);
	} else {
		stop_all(r, w, re, (int)si->ssi_signo);
	}
}

/* Wait for the workers; SIGTERM, SIGINT and SIGHUP stop the relay (stop),
 * SIGUSR1 and the stats interval print the counters, SIGUSR2 starts the
 * relay that replaces this one; a relay started with --replace says it
 * has taken this one's listeners. */
static void supervise(struct relay *r, struct worker *w, int sfd)
{
	struct pollfd p[3] = { { .fd = sfd, .events = POLLIN },
			       { .fd = r->done_fd, .events = POLLIN },
			       { .fd = -1, .events = POLLIN } };
	struct signalfd_siginfo si;
	struct reload re = { .pid = -1, .fd = -1, .successor = -1 };
	int running = r->jobs;
	uint64_t v;
	int64_t next_stats = r->stats_ms ? now_ms() + r->stats_ms : NEVER, now;

	while (running > 0) {
		now = now_ms();
		if (now >= next_stats) {
			print_stats(r);
			next_stats = now + r->stats_ms;
		}
		p[2].fd = re.fd;
		if (poll(p, 3, next_stats == NEVER ? -1 : (int)(next_stats - now)) < 0)
			continue;
		if ((p[1].revents & POLLIN) && read(r->done_fd, &v, sizeof(v)) == sizeof(v))
			running -= (int)v;
		/* The signal first: a stop or a takeover that came with the
		 * new relay's "ready" stops that relay rather than hand it
		 * the service. */
		if ((p[0].revents & POLLIN) && read(sfd, &si, sizeof(si)) == sizeof(si))
			on_signal(r, w, &re, &si);
		if (p[2].revents && re.fd >= 0)
			reloaded(r, w, &re);
	}
	if (re.fd >= 0)
		close(re.fd);
}

/* Signals go to the signalfd alone: workers inherit the mask. A peer that
 * went away must not end the relay: SIGPIPE is ignored before any pair is
 * prepared, so the pairs' moves need no guard against it
 * (psplice_pair_new(3)). The signalfd, or -1. */
static int take_signals(void)
{
	sigset_t set;

	signal(SIGPIPE, SIG_IGN);
	/* Inherited as ignored, SIGCHLD would have a reload's relay reaped
	 * as it ends, and its pid, which this one may still signal, free to
	 * be another process's. */
	signal(SIGCHLD, SIG_DFL);
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	sigaddset(&set, HANDOVER_SIGNAL);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	return signalfd(-1, &set, SFD_CLOEXEC);
}

/* "relay: listening on 127.0.0.1:8080, forwarding to ...": each listener,
 * those a service manager passed with their names. */
static void say_listening(const struct relay *r, const struct worker *w)
{
	char where[1024], one[300], to[1024];
	size_t used = 0;
	int k;

	where[0] = '\0';
	for (k = 0; k < r->nlisten && used < sizeof(where); k++) {
		listener_text(r, w, k, one, sizeof(one));
		used += (size_t)snprintf(where + used, sizeof(where) - used, "%s%s",
					 k ? ", " : "", one);
	}
	targets_text(r, to, sizeof(to));
	cli_say("relay: listening on %s, forwarding to %s, %d worker%s", where, to, r->jobs,
		r->jobs == 1 ? "" : "s");
}

static void start_workers(const struct relay *r, struct worker *w)
{
	int i, err;

	for (i = 0; i < r->jobs; i++) {
		err = pthread_create(&w[i].thread, NULL, worker_main, &w[i]);
		if (err) {
			/* Workers already running use w: leave without freeing. */
			cli_error(err, "relay: cannot start a worker");
			exit(1);
		}
	}
}

static int serve(struct relay *r, struct worker *w)
{
	int sfd, i, status = 0;

	if (make_listeners(r, w) < 0)
		return 1;
	sfd = take_signals();
	r->done_fd = eventfd(0, EFD_CLOEXEC);
	if (sfd < 0 || r->done_fd < 0) {
		cli_error(errno, "relay");
		return 1;
	}
	for (i = 0; i < r->jobs; i++)
		if (worker_init(r, &w[i]) < 0) {
			cli_error(errno, "relay: epoll");
			return 1;
		}
	if (r->verbose)
		say_listening(r, w);
	if ((i = checker_start(r)))
		cli_error(i, "relay: cannot start the target checker");
	start_workers(r, w);
	/* The relay replaced must not be left serving alongside this one
	 * unknowing, nor this one serve when the one that started it is
	 * gone (stopped meanwhile): this one goes, the sockets left as
	 * they are. */
	if (reload_say_ready(r) < 0 || replace_finish(r) < 0) {
		atomic_store(&r->handed_over, true);
		stop(r, w, SIGTERM);
		status = 1;
	}
	supervise(r, w, sfd);
	for (i = 0; i < r->jobs; i++)
		pthread_join(w[i].thread, NULL);
	if (atomic_load(&r->listener_lost))
		status = 1;
	checker_stop(r);
	note_flush(&r->accept_failed, true);
	if (r->verbose)
		print_stats(r);
	return status;
}

static int run(struct relay *r)
{
	struct worker *w = calloc((size_t)r->jobs, sizeof(*w));
	int status;

	if (!w) {
		cli_error(ENOMEM, "relay");
		return 1;
	}
	status = serve(r, w);
	if (r->replace_fd >= 0)
		close(r->replace_fd);
	free_listeners(r, w);
	reload_free(r);
	free(w);
	return status;
}

/* Seconds, fractions allowed ("0.5"); -1 when malformed. */
static int64_t parse_secs(const char *s)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= 0) || v > 1e9)
		return -1;
	return (int64_t)(v * 1000 + 0.5);
}

static uint64_t parse_count(const struct cli_cmd *cmd, const char *opt, const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || *s == '-')
		cli_usage_error(cmd, "invalid %s %s", opt, cli_quote(s));
	return v;
}

static int64_t secs_arg(const struct cli_cmd *cmd, const char *opt, const char *s)
{
	int64_t ms = parse_secs(s);

	if (ms < 0)
		cli_usage_error(cmd, "invalid %s %s (want seconds)", opt, cli_quote(s));
	return ms;
}

/* --copy=splice (the engine's choice) or readwrite (through user memory,
 * for comparison and for fds the kernel cannot splice). */
static unsigned int copy_arg(const struct cli_cmd *cmd, const char *s)
{
	if (!strcmp(s, "splice"))
		return 0;
	if (!strcmp(s, "readwrite"))
		return PSPLICE_F_ONLY(PSPLICE_METHOD_READWRITE);
	cli_usage_error(cmd, "invalid --copy %s (want splice or readwrite)", cli_quote(s));
	return 0;
}

static int lowat_arg(const struct cli_cmd *cmd, const char *s)
{
	int64_t n = cli_parse_size(s);

	if (n < 0 || n > INT32_MAX)
		cli_usage_error(cmd, "invalid --notsent-lowat %s (want a size, e.g. 128K)",
				cli_quote(s));
	return (int)n;
}

/* Bytes a second as a size ("50M", powers of 1024), "/s" allowed after
 * it ("50M/s"): from 1 to RATE_MAX. */
static void rate_arg(const struct cli_cmd *cmd, const char *opt, const char *s,
		     struct rate *rt)
{
	char text[32];
	size_t len = strlen(s);
	int64_t n = -1;

	if (len > 2 && !strcmp(s + len - 2, "/s"))
		len -= 2;
	if (len < sizeof(text)) {
		memcpy(text, s, len);
		text[len] = '\0';
		n = cli_parse_size(text);
	}
	if (n <= 0 || (uint64_t)n > RATE_MAX)
		cli_usage_error(cmd, "invalid %s %s (want bytes a second from 1 to 1T, "
				"e.g. 10M or 10M/s)", opt, cli_quote(s));
	rate_init(rt, (uint64_t)n);
}

/* An octal mode, as chmod(1) takes it: 660, 0600. */
static int mode_arg(const struct cli_cmd *cmd, const char *s)
{
	char *end;
	unsigned long m = strtoul(s, &end, 8);

	if (!*s || *end || m > 07777)
		cli_usage_error(cmd, "invalid --unix-mode %s (want an octal mode, e.g. 660)",
				cli_quote(s));
	return (int)m;
}

/* --log-format=text (the lines of old) or json (a record per connection). */
static bool json_arg(const struct cli_cmd *cmd, const char *s)
{
	if (strcmp(s, "text") && strcmp(s, "json"))
		cli_usage_error(cmd, "invalid --log-format %s (want text or json)", cli_quote(s));
	return !strcmp(s, "json");
}

/* --balance=roundrobin (HAProxy's default), first or leastconn. */
static enum balance balance_arg(const struct cli_cmd *cmd, const char *s)
{
	if (!strcmp(s, "roundrobin"))
		return BAL_ROUNDROBIN;
	if (!strcmp(s, "first"))
		return BAL_FIRST;
	if (!strcmp(s, "leastconn"))
		return BAL_LEASTCONN;
	cli_usage_error(cmd, "invalid --balance %s (want roundrobin, first or leastconn)",
			cli_quote(s));
	return BAL_ROUNDROBIN;
}

/* --replace=PID: a process id (pid_max is at most 2^22). */
static pid_t pid_arg(const struct cli_cmd *cmd, const char *s)
{
	uint64_t pid = parse_count(cmd, "--replace", s);

	if (!pid || pid > INT32_MAX)
		cli_usage_error(cmd, "invalid --replace %s (want a process id)", cli_quote(s));
	return (pid_t)pid;
}

/* --replace takes the listeners as the relay replaced made them: the
 * options that would make them otherwise are refused rather than ignored,
 * before LISTEN "-" refuses them for a service manager's sockets. LISTEN
 * "-" is then every listener the relay replaced has. */
static void check_replace(const struct cli_cmd *cmd, struct relay *r)
{
	if (r->reuseport)
		cli_usage_error(cmd, "--reuseport does not apply with --replace: the listeners "
				"are taken as the relay replaced made them (with its "
				"--reuseport, one per worker)");
	if (r->unix_mode >= 0)
		cli_usage_error(cmd, "--unix-mode does not apply with --replace: the socket "
				"file is the one the relay replaced made (change its mode "
				"with chmod)");
}

/* The options into r; --jobs is returned, 0 when not given. */
static uint64_t parse_options(const struct cli_cmd *cmd, int argc, char **argv,
			      struct relay *r, const char **log)
{
	uint64_t jobs = 0;
	int c;

	while ((c = getopt_long(argc, argv, "j:v", longopts, NULL)) != -1) {
		switch (c) {
		case 'j':
			jobs = parse_count(cmd, "--jobs", optarg);
			if (!jobs || jobs > 1024)
				cli_usage_error(cmd, "invalid --jobs %s (1 to 1024)",
						cli_quote(optarg));
			break;
		case OPT_MAX_CONNS:
			r->max_conns = parse_count(cmd, "--max-conns", optarg);
			break;
		case OPT_IDLE: r->idle_ms = secs_arg(cmd, "--idle-timeout", optarg); break;
		case OPT_CONNECT: r->connect_ms = secs_arg(cmd, "--connect-timeout", optarg); break;
		case OPT_DRAIN: r->drain_ms = secs_arg(cmd, "--drain-timeout", optarg); break;
		case OPT_STATS: r->stats_ms = secs_arg(cmd, "--stats-interval", optarg); break;
		case OPT_COPY: r->pair_flags = copy_arg(cmd, optarg); break;
		case OPT_LOWAT: r->notsent_lowat = lowat_arg(cmd, optarg); break;
		case OPT_NAGLE: r->nagle = true; break;
		case OPT_REUSEPORT: r->reuseport = true; break;
		case OPT_UNIX_MODE: r->unix_mode = mode_arg(cmd, optarg); break;
		case OPT_LOG_FORMAT: r->json = json_arg(cmd, optarg); break;
		case OPT_LOG: *log = optarg; break;
		case OPT_BALANCE: r->balance = balance_arg(cmd, optarg); break;
		case OPT_CHECK: r->check_ms = secs_arg(cmd, "--check-interval", optarg); break;
		case OPT_SEND_PROXY: r->send_proxy = 1; break;
		case OPT_SEND_PROXY_V2: r->send_proxy = 2; break;
		case OPT_ACCEPT_PROXY: r->accept_proxy = true; break;
		case OPT_REPLACE: r->replace_pid = pid_arg(cmd, optarg); break;
		case OPT_RATE: rate_arg(cmd, "--rate", optarg, &r->rate); break;
		case OPT_RATE_TOTAL: rate_arg(cmd, "--rate-total", optarg, &r->rate_total); break;
		case 'v': r->verbose = true; break;
		default: cli_common_option(cmd, c);
		}
	}
	return jobs;
}

/* LISTEN "-": the sockets a service manager passed. They are made as its
 * unit says, so the options that would make them otherwise are refused
 * rather than ignored. */
static void take_inherited(const struct cli_cmd *cmd, struct relay *r)
{
	r->inherited = true;
	r->listen.text = "-";
	if (r->reuseport)
		cli_usage_error(cmd, "--reuseport does not apply to LISTEN '-': the workers "
				"share the sockets passed (set ReusePort= in the socket unit)");
	if (r->unix_mode >= 0)
		cli_usage_error(cmd, "--unix-mode does not apply to LISTEN '-' "
				"(set SocketMode= in the socket unit)");
}

/* LISTEN and each TARGET. */
static void parse_operands(const struct cli_cmd *cmd, int argc, char **argv,
			   struct relay *r)
{
	const char *why = NULL;
	int i, n = argc - optind - 1;

	if (n < 1)
		cli_usage_error(cmd, n ? "missing LISTEN and TARGET operands" :
				"missing TARGET operand");
	if (n > MAX_TARGETS)
		cli_usage_error(cmd, "too many targets (at most %d)", MAX_TARGETS);
	if (r->replace_pid)
		check_replace(cmd, r);
	if (!strcmp(argv[optind], "-"))
		take_inherited(cmd, r);
	else if (cli_parse_addr(argv[optind], &r->listen, true, &why) < 0)
		cli_usage_error(cmd, "invalid address %s: %s", cli_quote(argv[optind]), why);
	/* Every address checked before the table is made: a usage error
	 * leaves nothing allocated behind it. */
	for (i = 0; i < n; i++) {
		const char *a = argv[optind + 1 + i];
		struct cli_addr check;

		if (cli_parse_addr(a, &check, false, &why) < 0)
			cli_usage_error(cmd, "invalid address %s: %s", cli_quote(a), why);
	}
	r->targets = calloc((size_t)n, sizeof(*r->targets));
	if (!r->targets)
		cli_usage_error(cmd, "%s", strerror(ENOMEM));
	for (i = 0; i < n; i++)
		cli_parse_addr(argv[optind + 1 + i], &r->targets[i].addr, false, &why);
	r->ntargets = n;
	r->target = r->targets[0].addr;
}

static int relay_main(const struct cli_cmd *cmd, int argc, char **argv)
{
	struct relay r = { .connect_ms = 10000, .check_ms = 2000, .drain_ms = 10000, .unix_mode = -1,
			   .log_fd = STDERR_FILENO, .ready_fd = -1, .replace_fd = -1,
			   .accept_failed = { .lock = PTHREAD_MUTEX_INITIALIZER, .what = "accept" } };
	const char *log = NULL;
	uint64_t jobs = parse_options(cmd, argc, argv, &r, &log);
	int status;

	parse_operands(cmd, argc, argv, &r);
	if (cli_parse_only) {
		free(r.targets);
		return 0;
	}
	/* O_APPEND: each record one write(2) at the end, whole even when
	 * another relay or a rotation tool writes the same file. */
	if (log && (r.log_fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666)) < 0) {
		cli_error(errno, "cannot open %s", cli_quote(log));
		free(r.targets);
		return 1;
	}
	if (!jobs) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		jobs = n > 0 ? (uint64_t)n : 1;
	}
	r.jobs = (int)jobs;
	/* Started by a reload: the listeners are the old relay's. A relay that
	 * cannot read its command line serves all the same: a reload says so. */
	r.ready_fd = reload_ready_fd();
	/* A reload runs the command line again, --replace included: the
	 * process it names was replaced long ago, its pid maybe another's. */
	if (r.ready_fd >= 0)
		r.replace_pid = 0;
	reload_prepare(&r);
	status = run(&r);
	free(r.targets);
	return status;
}

const struct cli_cmd cli_cmd_relay = {
	.name = "relay",
	.args = "LISTEN TARGET...",
	.summary = "forward every connection accepted on LISTEN to a TARGET",
	.help =
	"Accept connections on LISTEN and forward each to TARGET, both directions\n"
	"by splice through the kernel. Addresses: HOST:PORT, [IPv6]:PORT, unix:PATH.\n"
	"LISTEN '-': the listening sockets systemd passed (socket activation,\n"
	"LISTEN_FDS), every one served.\n"
	"A half-close is passed on; SIGTERM, SIGINT or SIGHUP stops accepting and lets open\n"
	"connections finish, a second one stops at once; SIGUSR1 prints the counters.\n"
	"SIGUSR2 replaces the relay: its command line runs again from the same path\n"
	"(a new binary there), takes the listening sockets, and the old relay drains\n"
	"once the new one serves; if the new one fails, the old one serves on.\n"
	"--replace=PID does the same with a relay started by hand, its options its own.\n"
	"With several TARGETs, each connection goes to one chosen by --balance; a\n"
	"target that refuses or does not answer within --connect-timeout is marked\n"
	"down and the next one tried (the client's bytes wait, unread), and the\n"
	"client is closed only when every target failed.\n"
	"A connection the relay ends before its streams did (a peer's error, the drain\n"
	"timeout, an idle timeout that drops bytes) is reset on both sides, not closed.\n"
	"\n"
	"  -j, --jobs=N             worker threads (default: number of CPUs)\n"
	"      --max-conns=N        accept no more than N open connections (0: no limit)\n"
	"      --idle-timeout=SEC   close a connection idle for SEC seconds (0: never)\n"
	"      --connect-timeout=SEC  give up connecting to TARGET (default 10)\n"
	"      --drain-timeout=SEC  after SIGTERM, close what is still open (default 10)\n"
	"      --stats-interval=SEC print connections and bytes every SEC seconds\n"
	"      --copy=HOW           splice (default): socket to pipe to socket in the\n"
	"                           kernel; readwrite: read and write through a buffer,\n"
	"                           for comparison or for fds the kernel cannot splice\n"
	"      --notsent-lowat=SIZE bound the bytes each TCP socket queues unsent\n"
	"                           (TCP_NOTSENT_LOWAT; default: the system's)\n"
	"      --nagle              leave Nagle's algorithm on (default: TCP_NODELAY)\n"
	"      --reuseport          share LISTEN with another process listening there\n"
	"                           (SO_REUSEPORT); without it, that is refused\n"
	"      --unix-mode=MODE     the mode of a unix LISTEN socket (octal, e.g. 660)\n"
	"      --log-format=FORMAT  text (default): a line for each connection that\n"
	"                           fails or is cut; json: an object for each closed\n"
	"                           connection (addresses, start, duration, bytes,\n"
	"                           how it ended, the mechanism)\n"
	"      --log=FILE           the connections' records to FILE (appended), not\n"
	"                           standard error\n"
	"      --balance=HOW        with several targets: roundrobin (default): each in\n"
	"                           turn; first: the first one up; leastconn: the one\n"
	"                           with the fewest open connections\n"
	"      --check-interval=SEC probe the down targets with a connect every SEC\n"
	"                           seconds and bring back those that answer\n"
	"                           (default 2; 0: only a connection that tries them)\n"
	"      --send-proxy         begin each connection to TARGET with a PROXY\n"
	"                           protocol header (version 1, text) naming the client\n"
	"      --send-proxy-v2      the same in version 2 (binary)\n"
	"      --accept-proxy       each client begins with a PROXY header (version 1\n"
	"                           or 2), which names the client for the log and for\n"
	"                           --send-proxy*; one without a valid header within\n"
	"                           3 seconds is dropped, nothing of it forwarded\n"
	"      --replace=PID        take the listening sockets of the running relay PID\n"
	"                           that LISTEN names ('-': all of them), serve them,\n"
	"                           then tell PID to drain; on any error PID serves on\n"
	"      --rate=RATE          at most RATE bytes a second in each direction of\n"
	"                           each connection (K, M, G: powers of 1024; \"/s\"\n"
	"                           may follow: 10M/s); a burst of a tenth of a second's\n"
	"                           worth, 64 KiB to 1 MiB, may go at once\n"
	"      --rate-total=RATE    at most RATE bytes a second in each direction, all\n"
	"                           connections together\n"
	"  -v, --verbose            log each connection's open and close with byte counts\n"
	"\n"
	"Examples: " CLI_NAME " relay -v 127.0.0.1:8080 127.0.0.1:80\n"
	"  " CLI_NAME " relay --balance=first 127.0.0.1:8080 10.0.0.1:80 10.0.0.2:80\n"
	"  systemd-socket-activate -l 8080 " CLI_NAME " relay - 127.0.0.1:80\n"
	"  " CLI_NAME " relay --replace=4242 -j 8 127.0.0.1:8080 127.0.0.1:81\n",
	.main = relay_main,
};
