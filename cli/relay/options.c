/* psplice relay's options and operands, read into a struct relay: from the
 * command line (cmd.c), and from each line of a --config file (config.c),
 * which takes the options of one listener and not those of the process. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "relay.h"
#include "opts.h"
#include "out.h"
#include "parse.h"

enum { OPT_MAX_CONNS = 0x200, OPT_IDLE, OPT_CONNECT, OPT_DRAIN, OPT_STATS, OPT_COPY,
       OPT_LOWAT, OPT_NAGLE, OPT_REUSEPORT, OPT_UNIX_MODE, OPT_LOG_FORMAT, OPT_LOG,
       OPT_BALANCE, OPT_CHECK, OPT_SEND_PROXY, OPT_SEND_PROXY_V2, OPT_ACCEPT_PROXY,
       OPT_REPLACE, OPT_RATE, OPT_RATE_TOTAL, OPT_METRICS, OPT_CONFIG, OPT_CHECK_ONLY,
       OPT_PID_FILE, OPT_PER_SOURCE, OPT_ALLOW, OPT_DENY, OPT_PROXY_FROM };

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
	{ "config", required_argument, NULL, OPT_CONFIG },
	{ "check", no_argument, NULL, OPT_CHECK_ONLY },
	{ "pid-file", required_argument, NULL, OPT_PID_FILE },
	{ "max-conns-per-source", required_argument, NULL, OPT_PER_SOURCE },
	{ "allow", required_argument, NULL, OPT_ALLOW },
	{ "deny", required_argument, NULL, OPT_DENY },
	{ "proxy-from", required_argument, NULL, OPT_PROXY_FROM },
	{ "verbose", no_argument, NULL, 'v' },
	CLI_COMMON_LONGOPTS
};

#define SECS_MAX 1000000000   /* about 31 years: any SEC option's largest */

/* Seconds as decimal digits, to the millisecond: "30", "0.5", ".25",
 * "0.001"; in milliseconds, or -1. Nothing is rounded: a fourth decimal
 * ("0.0004", which would round to 0, "never" to --idle-timeout) is
 * refused, as are a sign, spaces, hexadecimal and exponents ("0x10",
 * "1e9", which strtod takes), and more than SECS_MAX. */
static int64_t parse_secs(const char *s)
{
	size_t whole = strspn(s, "0123456789"), frac = 0, i;
	int64_t ms = 0;

	if (s[whole] == '.' && !(frac = strspn(s + whole + 1, "0123456789")))
		return -1;
	if (s[whole + (frac ? 1 + frac : 0)] || whole + frac == 0 || frac > 3)
		return -1;
	for (i = 0; i < whole; i++)
		if ((ms = ms * 10 + (s[i] - '0')) > SECS_MAX)
			return -1;
	for (i = 0; i < 3; i++)
		ms = ms * 10 + (i < frac ? s[whole + 1 + i] - '0' : 0);
	return ms;
}

/* A count in decimal digits alone: strtoull would take a sign, and " -1"
 * or "-1" would wrap to a number that means "no limit". */
static uint64_t parse_count(const struct cli_cmd *cmd, const char *opt, const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *s < '0' || *s > '9' || *end)
		cli_usage_error(cmd, "invalid %s %s (want a count in decimal digits)", opt,
				cli_quote(s));
	return v;
}

/* A SEC option: 0 means what zero says (NULL: 0 is refused, as
 * --connect-timeout's, which would time out every connect). */
static int64_t secs_arg(const struct cli_cmd *cmd, const char *opt, const char *s,
			const char *zero)
{
	int64_t ms = parse_secs(s);

	if (ms < 0 || (!ms && !zero))
		cli_usage_error(cmd, "invalid %s %s (want seconds from 0.001 to %d, to the "
				"millisecond%s%s)", opt, cli_quote(s), SECS_MAX,
				zero ? ", or 0: " : "", zero ? zero : "");
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

/* An octal mode, as chmod(1) takes it: 660, 0600; octal digits alone
 * (strtoul would take spaces and a sign: "-0"). */
static int mode_arg(const struct cli_cmd *cmd, const char *s)
{
	unsigned long m = strtoul(s, NULL, 8);

	if (!*s || s[strspn(s, "01234567")] || m > 07777)
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

/* The name of option c, for a message. */
static const char *opt_name(int c)
{
	const struct option *o;

	for (o = longopts; o->name; o++)
		if (o->val == c)
			return o->name;
	return "?";
}

/* In a config line, an option that is not a listener's: getopt_long has
 * said what was wrong (after the line's FILE:N, its argv[0]), or it is
 * the process's. */
static void line_option(const struct cli_cmd *cmd, int c)
{
	if (c == '?')
		cli_usage_error(cmd, NULL);
	cli_usage_error(cmd, "--%s applies to the whole relay: give it on the command line",
			opt_name(c));
}

/* The options of one listener into r; false when c is not one. */
static bool listener_option(const struct cli_cmd *cmd, int c, struct relay *r)
{
	switch (c) {
	case OPT_MAX_CONNS: r->max_conns = parse_count(cmd, "--max-conns", optarg); break;
	case OPT_IDLE: r->idle_ms = secs_arg(cmd, "--idle-timeout", optarg, "never"); break;
	case OPT_CONNECT:
		r->connect_ms = secs_arg(cmd, "--connect-timeout", optarg, NULL);
		break;
	case OPT_COPY: r->pair_flags = copy_arg(cmd, optarg); break;
	case OPT_LOWAT: r->notsent_lowat = lowat_arg(cmd, optarg); break;
	case OPT_NAGLE: r->nagle = true; break;
	case OPT_REUSEPORT: r->reuseport = true; break;
	case OPT_UNIX_MODE: r->unix_mode = mode_arg(cmd, optarg); break;
	case OPT_BALANCE: r->balance = balance_arg(cmd, optarg); break;
	case OPT_CHECK:
		r->check_ms = secs_arg(cmd, "--check-interval", optarg, "no probes");
		break;
	case OPT_SEND_PROXY: r->send_proxy = 1; break;
	case OPT_SEND_PROXY_V2: r->send_proxy = 2; break;
	case OPT_ACCEPT_PROXY: r->accept_proxy = true; break;
	case OPT_RATE: rate_arg(cmd, "--rate", optarg, &r->rate); break;
	case OPT_RATE_TOTAL: rate_arg(cmd, "--rate-total", optarg, &r->rate_total); break;
	case OPT_PER_SOURCE:
		r->per_source = parse_count(cmd, "--max-conns-per-source", optarg);
		break;
	default: return false;
	}
	return true;
}

/* --allow, --deny, --proxy-from: each adds entries to its list. given:
 * the lists given in this parse; the first of each replaces what the
 * list held, so that a config line's list is its own, not the command
 * line's with more. */
static bool acl_option(const struct cli_cmd *cmd, int c, struct relay *r, unsigned int *given)
{
	struct acl *a = c == OPT_ALLOW ? &r->allow : c == OPT_DENY ? &r->deny :
			c == OPT_PROXY_FROM ? &r->proxy_from : NULL;
	unsigned int bit;
	char why[256];

	if (!a)
		return false;
	bit = 1u << (c - OPT_ALLOW);
	if (!(*given & bit))
		a->n = 0;
	*given |= bit;
	if (acl_parse(optarg, a, why, sizeof(why)))
		cli_usage_error(cmd, "invalid --%s %s: %s", opt_name(c), cli_quote(optarg), why);
	return true;
}

/* The options of the process, on the command line alone. */
static void process_option(const struct cli_cmd *cmd, int c, struct relay *r,
			   struct relay_opts *o)
{
	switch (c) {
	case 'j':
		o->jobs = parse_count(cmd, "--jobs", optarg);
		if (!o->jobs || o->jobs > 1024)
			cli_usage_error(cmd, "invalid --jobs %s (1 to 1024)", cli_quote(optarg));
		break;
	case OPT_DRAIN:
		r->drain_ms = secs_arg(cmd, "--drain-timeout", optarg, "cut at once");
		break;
	case OPT_STATS: r->stats_ms = secs_arg(cmd, "--stats-interval", optarg, "never"); break;
	case OPT_LOG_FORMAT: r->json = json_arg(cmd, optarg); break;
	case OPT_LOG: o->log = optarg; break;
	case OPT_REPLACE: r->replace_pid = pid_arg(cmd, optarg); break;
	case OPT_METRICS: metrics_arg(cmd, optarg, r); break;
	case OPT_CONFIG: o->config = optarg; break;
	case OPT_CHECK_ONLY: o->check = true; break;
	case OPT_PID_FILE: r->pid_file = optarg; break;
	case 'v': r->verbose = true; break;
	default: cli_common_option(cmd, c);
	}
}

/* The options into r and o: the command line's, or (o NULL) a config
 * line's, which may hold a listener's alone. */
void relay_options(const struct cli_cmd *cmd, int argc, char **argv, struct relay *r,
		   struct relay_opts *o)
{
	unsigned int given = 0;
	int c;

	while ((c = getopt_long(argc, argv, "j:v", longopts, NULL)) != -1) {
		if (acl_option(cmd, c, r, &given) || listener_option(cmd, c, r))
			continue;
		if (!o)
			line_option(cmd, c);
		process_option(cmd, c, r, o);
	}
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

/* Entries that could never match a client of r's LISTEN: uid and gid on
 * TCP, networks on a unix LISTEN (unless a PROXY header names the client),
 * and lists a PROXY header would make any client able to pass. */
static void check_gate(const struct cli_cmd *cmd, const struct relay *r)
{
	bool unix_listen = r->listen.ss.ss_family == AF_UNIX, ip, ids;

	if (r->proxy_from.n && !r->accept_proxy)
		cli_usage_error(cmd, "--proxy-from applies with --accept-proxy");
	if (r->accept_proxy && !r->proxy_from.n && (r->allow.n || r->deny.n || r->per_source))
		cli_usage_error(cmd, "--allow, --deny and --max-conns-per-source with "
				"--accept-proxy judge the client a PROXY header names: give "
				"--proxy-from, the senders whose headers are believed");
	if (r->inherited)
		return;
	ip = acl_has(&r->allow, AF_INET) || acl_has(&r->allow, AF_INET6) ||
	     acl_has(&r->deny, AF_INET) || acl_has(&r->deny, AF_INET6);
	ids = acl_has(&r->allow, ACL_UID) || acl_has(&r->allow, ACL_GID) ||
	      acl_has(&r->deny, ACL_UID) || acl_has(&r->deny, ACL_GID);
	if (!unix_listen && (ids || acl_has(&r->proxy_from, ACL_UID) ||
			     acl_has(&r->proxy_from, ACL_GID)))
		cli_usage_error(cmd, "uid: and gid: judge the clients of a unix LISTEN, and "
				"%s is not one", cli_quote(r->listen.text));
	if (unix_listen && (acl_has(&r->proxy_from, AF_INET) ||
			    acl_has(&r->proxy_from, AF_INET6) || (ip && !r->accept_proxy)))
		cli_usage_error(cmd, "the clients of a unix LISTEN have no IP address: "
				"judge them by uid: or gid:");
}

/* LISTEN and each TARGET. */
/* The first of seen[0..i) at the address seen[i] is, or -1. A target
 * given twice would have two series of the same name in --metrics, which
 * makes a scrape fail. */
static int same_target(const struct cli_addr *seen, int i)
{
	int k;

	for (k = 0; k < i; k++)
		if (seen[k].len == seen[i].len && !memcmp(&seen[k].ss, &seen[i].ss, seen[i].len))
			return k;
	return -1;
}

void relay_operands(const struct cli_cmd *cmd, int argc, char **argv, struct relay *r)
{
	struct cli_addr seen[MAX_TARGETS];
	const char *why = NULL;
	int i, k, n = argc - optind - 1;

	if (n < 1)
		cli_usage_error(cmd, n ? "missing LISTEN and TARGET operands" :
				"missing TARGET operand");
	if (n > MAX_TARGETS)
		cli_usage_error(cmd, "too many targets (at most %d)", MAX_TARGETS);
	/* A config line may bind a listener the relay replaced has not. */
	if (r->replace_pid && !r->config)
		check_replace(cmd, r);
	if (!strcmp(argv[optind], "-"))
		take_inherited(cmd, r);
	else if (cli_parse_addr(argv[optind], &r->listen, true, &why) < 0)
		cli_usage_error(cmd, "invalid address %s: %s", cli_quote(argv[optind]), why);
	check_gate(cmd, r);
	/* Every address checked before the table is made: a usage error
	 * leaves nothing allocated behind it. */
	for (i = 0; i < n; i++) {
		const char *a = argv[optind + 1 + i];

		if (cli_parse_addr(a, &seen[i], false, &why) < 0)
			cli_usage_error(cmd, "invalid address %s: %s", cli_quote(a), why);
		if ((k = same_target(seen, i)) >= 0 && !strcmp(a, seen[k].text))
			cli_usage_error(cmd, "TARGET %s is given twice: give each target once",
					cli_quote(a));
		if (k >= 0)
			cli_usage_error(cmd, "TARGET %s is %s again: give each target once",
					cli_quote(a), cli_quote(seen[k].text));
	}
	r->targets = calloc((size_t)n, sizeof(*r->targets));
	if (!r->targets)
		cli_usage_error(cmd, "%s", strerror(ENOMEM));
	for (i = 0; i < n; i++)
		cli_parse_addr(argv[optind + 1 + i], &r->targets[i].addr, false, &why);
	r->ntargets = n;
	r->target = r->targets[0].addr;
}

