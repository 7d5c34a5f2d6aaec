/* psplice relay: forward every connection accepted on LISTEN to TARGET.
 * This file has the options and operands read into a struct relay
 * (options.c), or a --config file's lines into one each (config.c), opens
 * the log, and hands the relays to the main thread (supervise.c). Each
 * direction of a connection is a psplice pair, prepared once when it is
 * set up, and moves with psplice_pair_move(PSPLICE_F_NONBLOCK) (conn.c). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "relay.h"
#include "opts.h"
#include "out.h"
#include "parse.h"

/* --jobs, or the number of CPUs. */
static int jobs_of(uint64_t jobs)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return jobs ? (int)jobs : n > 0 ? (int)n : 1;
}

/* --check: the options and the file are good; the number of listeners
 * said for a file. */
static void say_good(const struct relay_opts *o, const struct relay *r)
{
	int n = 0;

	if (!o->config)
		return;
	for (; r; r = r->next)
		n++;
	printf("%s: %d listener%s\n", o->config, n, n == 1 ? "" : "s");
}

/* The options into base; the relays to run, base itself or a config
 * file's lines made from it. */
static struct relay *read_relays(const struct cli_cmd *cmd, int argc, char **argv,
				 struct relay *base, struct relay_opts *o)
{
	cli_usage_where = NULL;
	relay_options(cmd, argc, argv, base, o);
	base->jobs = jobs_of(o->jobs);
	if (!o->config) {
		relay_operands(cmd, argc, argv, base);
		return base;
	}
	if (optind < argc)
		cli_usage_error(cmd, "LISTEN and TARGET come from --config %s, not the command "
				"line", cli_quote(o->config));
	base->config = o->config;
	return config_read(cmd, o->config, base);
}

static void free_relays(struct relay *base, struct relay *r)
{
	if (r != base)
		config_free(r);
	free(base->targets);
}

static int relay_main(const struct cli_cmd *cmd, int argc, char **argv)
{
	struct relay base = { .connect_ms = 10000, .check_ms = 2000, .drain_ms = 10000,
			      .unix_mode = -1, .log_fd = STDERR_FILENO, .ready_fd = -1,
			      .replace_fd = -1,
			      .fork_lock = CLI_RWLOCK_WRITER_FIRST,
			      .accept_failed = { .lock = PTHREAD_MUTEX_INITIALIZER,
						 .what = "accept" } };
	struct relay_opts o = { 0 };
	struct relay *r = read_relays(cmd, argc, argv, &base, &o), *x;
	int status, log_fd = STDERR_FILENO;

	if (o.check || cli_parse_only) {
		if (o.check)
			say_good(&o, r);
		free_relays(&base, r);
		return 0;
	}
	/* O_APPEND: each record one write(2) at the end, whole even when
	 * another relay or a rotation tool writes the same file. */
	if (o.log && (log_fd = open(o.log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666)) < 0) {
		cli_error(errno, "cannot open %s", cli_quote(o.log));
		free_relays(&base, r);
		return 1;
	}
	for (x = r; x; x = x->next)
		x->log_fd = log_fd;
	/* Started by a reload: the listeners are the old relay's. A relay that
	 * cannot read its command line serves all the same: a reload says so. */
	r->ready_fd = reload_ready_fd();
	/* A reload runs the command line again, --replace included: the
	 * process it names was replaced long ago, its pid maybe another's. */
	if (r->ready_fd >= 0)
		for (x = r; x; x = x->next)
			x->replace_pid = 0;
	reload_prepare(r);
	nofile_raise(r);
	log_start(r);
	status = relay_run(r);
	log_stop();
	free_relays(&base, r);
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
	"--config=FILE serves several listeners in one process: a line of FILE for\n"
	"each, its words those of a command line: LISTEN TARGET... [OPTION]...; a\n"
	"reload reads FILE again (see psplice-relay(1), CONFIG FILE).\n"
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
	"      --proxy-from=LIST    with --accept-proxy: believe the headers of these\n"
	"                           senders alone, refuse the others; --allow, --deny\n"
	"                           and --max-conns-per-source judge the client a\n"
	"                           header names\n"
	"      --allow=LIST         serve only the clients that match an entry of LIST:\n"
	"                           networks (10.0.0.0/8, 2001:db8::/32, ::1) or, on a\n"
	"                           unix LISTEN, uid:N and gid:N; others are reset\n"
	"      --deny=LIST          refuse the clients that match an entry of LIST,\n"
	"                           whatever --allow says\n"
	"      --max-conns-per-source=N  refuse a client whose source (an IPv4\n"
	"                           address, an IPv6 /64, a unix client's uid) has N\n"
	"                           connections open already (0: no limit)\n"
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
	"      --config=FILE        the listeners of FILE, each line LISTEN TARGET...\n"
	"                           and its own options; no operands then\n"
	"      --check              read the options (and FILE), say what is wrong,\n"
	"                           start nothing\n"
	"      --pid-file=FILE      write the pid of the relay that serves to FILE,\n"
	"                           across reloads and --replace; removed at the end\n"
	"  -v, --verbose            log each connection's open and close with byte counts\n"
	"\n"
	"Examples: " CLI_NAME " relay -v 127.0.0.1:8080 127.0.0.1:80\n"
	"  " CLI_NAME " relay --balance=first 127.0.0.1:8080 10.0.0.1:80 10.0.0.2:80\n"
	"  systemd-socket-activate -l 8080 " CLI_NAME " relay - 127.0.0.1:80\n"
	"  " CLI_NAME " relay --replace=4242 -j 8 127.0.0.1:8080 127.0.0.1:81\n"
	"  " CLI_NAME " relay --check --config=/etc/psplice/relay.conf\n",
	.main = relay_main,
};
