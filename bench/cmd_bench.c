/* psplice bench: every path and every peer side by side on this machine, as
 * ratios against baselines measured in the same run. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "opts.h"
#include "out.h"


enum { OPT_QUICK = 0x200, OPT_ONLY, OPT_DIR, OPT_OUT, OPT_SECS };

static const struct option longopts[] = {
	{ "quick", no_argument, NULL, OPT_QUICK },
	{ "only", required_argument, NULL, OPT_ONLY },
	{ "dir", required_argument, NULL, OPT_DIR },
	{ "out", required_argument, NULL, OPT_OUT },
	{ "secs", required_argument, NULL, OPT_SECS },
	CLI_COMMON_LONGOPTS
};

/* Each group runs its own --quick subset (o->quick). */
struct group {
	const char *name;
	void (*run)(const struct bench_opts *o);
};

static const struct group groups[] = {
	{ "mechanism", bench_mechanism },
	{ "per-call", bench_percall },
	{ "file-server", bench_fileserver },
	{ "cat", bench_peers_cat },
	{ "cp", bench_peers_cp },
	{ "relay", bench_relay },
	{ "relay-proxy", bench_relay_proxy },
	{ "relay-failover", bench_relay_failover },
	{ "requests", bench_requests },
	{ "pressure", bench_pressure },
	{ "scaling", bench_scaling },
	{ "tee", bench_tee },
	{ "write-behind", bench_writebehind },
	{ "exec", bench_exec },
};
#define N_GROUPS (sizeof(groups) / sizeof(groups[0]))


static bool selected(const char *only, const char *name)
{
	size_t n = strlen(name);
	const char *p;

	if (!only)
		return true;
	for (p = only; (p = strstr(p, name)); p += n)
		if ((p == only || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
			return true;
	return false;
}

/* Every name of the list, however long the list (empty names are skipped). */
static int check_only(const struct cli_cmd *cmd, const char *only)
{
	const char *tok;
	char name[64];
	size_t i, n;

	for (tok = only; *tok; tok += n + (tok[n] != '\0')) {
		n = strcspn(tok, ",");
		for (i = 0; n && i < N_GROUPS; i++)
			if (strlen(groups[i].name) == n && !strncmp(groups[i].name, tok, n))
				break;
		if (n && i == N_GROUPS) {
			snprintf(name, sizeof(name), "%.*s", (int)n, tok);
			cli_usage_error(cmd, "unknown group %s", cli_quote(name));
		}
	}
	return 0;
}


/* The groups mount tmpfs and XFS under the scratch directory: in a mount
 * namespace of the bench's own, a run killed half-way leaves no mount
 * behind (and the loop device goes with its last mount). */
static void private_mounts(void)
{
	if (unshare(CLONE_NEWNS) == 0)
		mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL);
}

static void raise_nofile(void)
{
	struct rlimit r;

	if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
		r.rlim_cur = r.rlim_max;
		setrlimit(RLIMIT_NOFILE, &r);
	}
}

static void run_groups(const struct bench_opts *o, const char *only)
{
	double t0 = bench_now(), t;
	size_t i;

	for (i = 0; i < N_GROUPS; i++) {
		if (!selected(only, groups[i].name))
			continue;
		t = bench_now();
		fprintf(stderr, "psplice bench: %s…\n", groups[i].name);
		groups[i].run(o);
		fprintf(stderr, "psplice bench: %s: %.1f s (%.0f s in all)\n",
			groups[i].name, bench_now() - t, bench_now() - t0);
	}
}

static char *make_scratch(void)
{
	static char tmpl[] = "/var/tmp/psplice-bench.XXXXXX";

	return mkdtemp(tmpl);
}

static void remove_scratch(const char *dir)
{
	char cmd[4200];

	snprintf(cmd, sizeof(cmd), "/bin/rm -rf '%s'", dir);
	bench_sh(cmd, NULL, NULL);
}

/* --out is checked before the run, not after minutes of it. */
static void check_out(const char *out)
{
	if (mkdir(out, 0755) < 0 && errno != EEXIST) {
		cli_error(errno, "cannot create directory %s", cli_quote(out));
		exit(1);
	}
	if (access(out, W_OK | X_OK) < 0) {
		cli_error(errno, "cannot write into %s", cli_quote(out));
		exit(1);
	}
}

static volatile sig_atomic_t child_pid;

static void pass_on(int sig)
{
	if (child_pid > 0)
		kill(child_pid, sig);
}

/* The run goes on in a child; this process waits, passing on SIGINT,
 * SIGTERM and SIGHUP, and removes the scratch directory however the run
 * ended (its mounts went with the child's mount namespace). A run killed
 * by a signal ends this process by the same signal. In the child: 0. */
static int supervise(const char *scratch)
{
	struct sigaction sa = { .sa_handler = pass_on };
	int st, sig;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid <= 0)
		return pid < 0 ? -1 : 0;
	child_pid = pid;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			exit(1);
	if (scratch)
		remove_scratch(scratch);
	if (WIFSIGNALED(st)) {
		sig = WTERMSIG(st);
		signal(sig, SIG_DFL);
		raise(sig);
	}
	exit(WIFEXITED(st) ? WEXITSTATUS(st) : 1);
}

/* The psplice to measure: the one that ran this program (psplice bench),
 * else the one next to it. */
static const char *find_psplice(char *buf, size_t size)
{
	const char *env = getenv(CLI_BENCH_ENV);
	char *slash;
	ssize_t n;

	if (env && *env)
		return env;
	n = readlink("/proc/self/exe", buf, size - 1);
	if (n > 0) {
		buf[n] = '\0';
		slash = strrchr(buf, '/');
		if (slash && (size_t)(slash - buf) + sizeof("/psplice") <= size) {
			strcpy(slash, "/psplice");
			if (access(buf, X_OK) == 0)
				return buf;
		}
	}
	cli_error(0, "cannot find the psplice command to measure; run 'psplice bench'");
	return NULL;
}

struct args {
	const char *only, *out, *dir;
};

static void parse_args(const struct cli_cmd *cmd, int argc, char **argv,
		       struct bench_opts *o, struct args *a)
{
	int c;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_QUICK: o->quick = true; break;
		case OPT_ONLY: check_only(cmd, optarg); a->only = optarg; break;
		case OPT_DIR: a->dir = optarg; break;
		case OPT_OUT: a->out = optarg; break;
		case OPT_SECS:
			o->secs = strtod(optarg, NULL);
			if (!(o->secs > 0 && o->secs <= 60))
				cli_usage_error(cmd, "invalid --secs %s", cli_quote(optarg));
			break;
		default: cli_common_option(cmd, c);
		}
	}
	if (optind < argc)
		cli_usage_error(cmd, "extra operand %s", cli_quote(argv[optind]));
}

/* The run itself, in the supervised child, with the scratch directory
 * ready; the exit status. */
static int run(const struct bench_opts *o, const struct args *a)
{
	char machine[512];

	/* Servers ignore SIGPIPE, and every peer here measured is one. */
	signal(SIGPIPE, SIG_IGN);
	raise_nofile();
	if (o->root)
		private_mounts();
	bench_describe_machine(machine, sizeof(machine), o->dir);
	fprintf(stderr, "psplice bench %s: %s\n", o->quick ? "--quick" : "(full)", machine);
	run_groups(o, a->only);
	bench_finish();
	bench_print(stdout, machine);
	return a->out ? bench_write_outputs(a->out, machine) : 0;
}

static int bench_main(const struct cli_cmd *cmd, int argc, char **argv)
{
	struct bench_opts o = { .secs = 0 };
	struct args a = { NULL, NULL, NULL };
	char self[4096];

	parse_args(cmd, argc, argv, &o, &a);
	if (cli_parse_only)
		return 0;
	if (!o.secs)
		o.secs = o.quick ? 0.5 : 2;
	o.self = find_psplice(self, sizeof(self));
	if (!o.self)
		return 1;
	o.root = geteuid() == 0;
	if (a.out)
		check_out(a.out);
	o.dir = a.dir ? a.dir : make_scratch();
	if (!o.dir || (a.dir && access(a.dir, W_OK) < 0)) {
		cli_error(errno, "cannot use scratch directory %s",
			  cli_quote(a.dir ? a.dir : "/var/tmp"));
		return 1;
	}
	/* A scratch directory of our own is removed even after Ctrl-C. */
	if (supervise(a.dir ? NULL : o.dir) < 0) {
		cli_error(errno, "cannot start the run");
		return 1;
	}
	return run(&o, &a);
}

const struct cli_cmd bench_cmd = {
	.name = "bench",
	.args = "",
	.summary = "measure every path and peer on this machine",
	.help = "Measure each kernel path psplice can take for each pair of endpoints,\n"
		"and psplice against its peers (cat, pv, cp, tee, socat, haproxy, iperf3),\n"
		"as ratios against a baseline measured in the same run, with the CPU\n"
		"seconds each spends per GiB. A peer that is not installed is skipped\n"
		"with the reason.\n"
		"\n"
		"      --quick       a subset that runs in about a minute\n"
		"      --only LIST   only these groups, comma-separated: mechanism,\n"
		"                    per-call, file-server, cat, cp, relay,\n"
		"                    relay-proxy, relay-failover, requests, pressure,\n"
		"                    scaling, tee, write-behind, exec\n"
		"      --dir DIR     scratch directory, on the filesystem to measure\n"
		"                    (default: a new directory in /var/tmp, removed after)\n"
		"      --out DIR     also write DIR/latest.csv, latest.svg and latest.txt\n"
		"      --secs N      seconds per measurement (default 2; 0.5 with --quick)\n",
	.main = bench_main,
};
