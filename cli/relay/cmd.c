/* psplice relay: forward every connection accepted on LISTEN to TARGET.
 * This file reads the options and operands into a struct relay, opens the
 * log, and hands the relay to its main thread (supervise.c). Each
 * direction of a connection is a psplice pair, prepared once when it is
 * set up, and moves with psplice_pair_move(PSPLICE_F_NONBLOCK) (conn.c). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "relay.h"
#include "opts.h"
#include "out.h"
#include "parse.h"

enum { OPT_MAX_CONNS = 0x200, OPT_IDLE, OPT_CONNECT, OPT_DRAIN, OPT_STATS, OPT_COPY,
       OPT_LOWAT, OPT_NAGLE, OPT_REUSEPORT, OPT_UNIX_MODE, OPT_LOG_FORMAT, OPT_LOG,
       OPT_BALANCE, OPT_CHECK, OPT_SEND_PROXY, OPT_SEND_PROXY_V2, OPT_ACCEPT_PROXY,
       OPT_REPLACE, OPT_RATE, OPT_RATE_TOTAL, OPT_METRICS };

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
	{ "metrics", required_argument, NULL, OPT_METRICS },
	{ "verbose", no_argument, NULL, 'v' },
	CLI_COMMON_LONGOPTS
};

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

/* --metrics=ADDR: a TCP address to listen on, as LISTEN takes one
 * (HOST:PORT, [IPv6]:PORT, :PORT); Prometheus scrapes no unix socket. */
static void metrics_arg(const struct cli_cmd *cmd, const char *s, struct relay *r)
{
	const char *why = NULL;

	if (!strncmp(s, "unix:", 5))
		cli_usage_error(cmd, "invalid --metrics %s (want HOST:PORT, not a unix socket)",
				cli_quote(s));
	if (cli_parse_addr(s, &r->metrics_addr, true, &why) < 0)
		cli_usage_error(cmd, "invalid --metrics %s: %s", cli_quote(s), why);
	r->metrics_text = s;
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
		case OPT_METRICS: metrics_arg(cmd, optarg, r); break;
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
			   .fork_lock = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP,
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
	status = relay_run(&r);
	free(r.targets);
	return status;
}

const struct cli_cmd cli_cmd_relay = {
	.name = "relay",
	.args = "LISTEN TARGET...",
	.summary = "forward every connection accepted on LISTEN to a TARGET",
	.help =
	"Accept connections on LISTEN and forward each to TARGET, both directions\n"
	"by splice through the kernel. Addresses: HOST:PORT, [IPv6]:PORT, unix:PATH;\n"
	"LISTEN :PORT is every IPv4 address. Streams only: UDP is not relayed.\n"
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
	"      --metrics=ADDR       serve the counters to Prometheus over HTTP on ADDR\n"
	"                           (HOST:PORT, [IPv6]:PORT, :PORT): GET /metrics\n"
	"  -v, --verbose            log each connection's open and close with byte counts\n"
	"\n"
	"Examples: " CLI_NAME " relay -v 127.0.0.1:8080 127.0.0.1:80\n"
	"  " CLI_NAME " relay --balance=first 127.0.0.1:8080 10.0.0.1:80 10.0.0.2:80\n"
	"  systemd-socket-activate -l 8080 " CLI_NAME " relay - 127.0.0.1:80\n"
	"  " CLI_NAME " relay --replace=4242 -j 8 127.0.0.1:8080 127.0.0.1:81\n",
	.main = relay_main,
};
