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
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "common.h"


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
	{ "cat", bench_peers_cat },
	{ "cp", bench_peers_cp },
	{ "relay", bench_relay },
	{ "pressure", bench_pressure },
	{ "scaling", bench_scaling },
	{ "tee", bench_tee },
	{ "write-behind", bench_writebehind },
	{ "exec", bench_exec },
};
#define N_GROUPS (sizeof(groups) / sizeof(groups[0]))

static const char *const unit_names[BENCH_NUNITS] = {
	[BENCH_GIBPS] = "GiB/s", [BENCH_GBITPS] = "Gbit/s", [BENCH_NSCALL] = "ns/call",
	[BENCH_SECS] = "s", [BENCH_MS] = "ms", [BENCH_MIB] = "MiB",
	[BENCH_CPUGIB] = "CPU s/GiB", [BENCH_BYTESGIB] = "B/GiB", [BENCH_COUNT] = "count",
	[BENCH_KIB] = "KiB",
};

static const char *unit_name(int unit)
{
	return unit >= 0 && unit < BENCH_NUNITS ? unit_names[unit] : "";
}

static bool seen_before(int i, bool item)
{
	int j;

	for (j = 0; j < i; j++)
		if (!strcmp(bench_rows[j].group, bench_rows[i].group) &&
		    (!item || !strcmp(bench_rows[j].item, bench_rows[i].item)))
			return true;
	return false;
}

/* Rows of one item together, items and groups in the order they first
 * came: a group may have recorded its items variant by variant. */
static void regroup(void)
{
	static struct bench_row sorted[BENCH_MAX_ROWS];
	int g, i, j, n = 0;

	for (g = 0; g < bench_nrows; g++) {
		if (seen_before(g, false))
			continue;
		for (i = g; i < bench_nrows; i++) {
			if (strcmp(bench_rows[i].group, bench_rows[g].group) || seen_before(i, true))
				continue;
			for (j = i; j < bench_nrows; j++)
				if (!strcmp(bench_rows[j].group, bench_rows[i].group) &&
				    !strcmp(bench_rows[j].item, bench_rows[i].item))
					sorted[n++] = bench_rows[j];
		}
	}
	memcpy(bench_rows, sorted, (size_t)n * sizeof(sorted[0]));
}

/* Each row over the baseline row of its group and item. */
static void finish(void)
{
	const struct bench_row *b;
	struct bench_row *r;
	int i, j;

	regroup();
	for (i = 0; i < bench_nrows; i++) {
		r = &bench_rows[i];
		for (j = 0, b = NULL; j < bench_nrows && !b; j++)
			if (bench_rows[j].baseline && bench_rows[j].unit >= 0 &&
			    !strcmp(bench_rows[j].group, r->group) &&
			    !strcmp(bench_rows[j].item, r->item))
				b = &bench_rows[j];
		if (!b || r->unit < 0)
			continue;
		r->compared = b->value > 0;
		r->ratio = r->compared ? r->value / b->value : 0;
		r->cpu_ratio = b->cpu > 0 && r->cpu >= 0 ? r->cpu / b->cpu : 0;
	}
}

static bool target_met(const struct bench_target *t)
{
	return t->at_least ? t->value >= t->goal : t->value <= t->goal;
}

static void print_targets(FILE *f)
{
	const struct bench_target *t;
	int i;

	fprintf(f, "\nTargets (ratios measured in this run; nothing asserts them)\n");
	for (i = 0; i < bench_ntargets; i++) {
		t = &bench_targets[i];
		if (!t->measured)
			fprintf(f, "  %-60s %8s  goal %s%.2f   NOT MEASURED: %s\n", t->what,
				"-", t->at_least ? ">=" : "<=", t->goal, t->why);
		else
			fprintf(f, "  %-60s %7.2f%s  goal %s%.2f   %-6s %s\n", t->what,
				t->value, t->ratio ? "x" : " ", t->at_least ? ">=" : "<=",
				t->goal, target_met(t) ? "met" : "MISSED", t->why);
	}
}

static void print_value(FILE *f, const struct bench_row *r)
{
	if (r->unit == BENCH_NSCALL || r->unit == BENCH_MIB || r->unit == BENCH_BYTESGIB ||
	    r->unit == BENCH_COUNT)
		fprintf(f, "%9.0f %-9s", r->value, unit_name(r->unit));
	else
		fprintf(f, "%9.3f %-9s", r->value, unit_name(r->unit));
}

static void print_rows(FILE *f)
{
	const struct bench_row *r;
	const char *group = "", *item = "";
	int i;

	for (i = 0; i < bench_nrows; i++) {
		r = &bench_rows[i];
		if (strcmp(group, r->group)) {
			group = r->group;
			item = "";
			fprintf(f, "\n[%s]\n  %-36s %-40s %7s %19s %9s %6s  %s\n", group,
				"item", "variant", "ratio", "value", "CPU s/GiB", "CPU x",
				"note");
		}
		fprintf(f, "  %-36s %-40s ", strcmp(item, r->item) ? r->item : "",
			r->variant);
		item = r->item;
		if (r->unit < 0) {
			fprintf(f, "%7s %19s %9s %6s  %s\n", "-", "-", "-", "-", r->note);
			continue;
		}
		if (r->baseline)
			fprintf(f, "%7s ", "base");
		else if (r->compared)
			fprintf(f, "%6.2fx ", r->ratio);
		else
			fprintf(f, "%7s ", "-");
		print_value(f, r);
		if (r->cpu >= 0)
			fprintf(f, " %9.3f", r->cpu);
		else
			fprintf(f, " %9s", "-");
		if (r->cpu_ratio > 0 && !r->baseline)
			fprintf(f, " %5.2fx", r->cpu_ratio);
		else
			fprintf(f, " %6s", "-");
		fprintf(f, "  %s\n", r->note);
	}
}

/* RFC 4180: quote every text field, double the quotes inside. */
static void csv_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

/* A number, or an empty field where there is none (an unknown CPU time, a
 * row without a baseline): a reader must not take -1 for a figure. */
static void csv_num(FILE *f, bool known, double v)
{
	if (known)
		fprintf(f, "%.4f", v);
	fputc(',', f);
}

static void write_csv(FILE *f)
{
	const struct bench_row *r;
	const struct bench_target *t;
	int i;

	fprintf(f, "kind,group,item,variant,baseline,unit,value,ratio,cpu_s_per_gib,"
		   "cpu_ratio,note\n");
	for (i = 0; i < bench_nrows; i++) {
		r = &bench_rows[i];
		fputs("row,", f);
		csv_str(f, r->group), fputc(',', f);
		csv_str(f, r->item), fputc(',', f);
		csv_str(f, r->variant), fputc(',', f);
		fprintf(f, "%d,%s,", r->baseline, unit_name(r->unit));
		if (r->unit >= 0) {
			fprintf(f, "%.6g,", r->value);
			csv_num(f, r->compared, r->ratio);
			csv_num(f, r->cpu >= 0, r->cpu);
			csv_num(f, r->cpu_ratio > 0, r->cpu_ratio);
		} else {
			fputs(",,,,", f);
		}
		csv_str(f, r->note), fputc('\n', f);
	}
	for (i = 0; i < bench_ntargets; i++) {
		t = &bench_targets[i];
		fputs("target,\"target\",", f);
		csv_str(f, t->what);
		fprintf(f, ",\"goal %s%.2f\",0,%s,", t->at_least ? ">=" : "<=", t->goal,
			t->ratio ? "x" : "");
		if (t->measured)
			fprintf(f, "%.4f,", t->value);
		else
			fputs(",", f);
		csv_num(f, t->measured && t->ratio, t->value);
		fputs(",,", f);
		csv_str(f, !t->measured ? "not measured" : target_met(t) ? "met" : "missed");
		fputc('\n', f);
	}
}

static void cpu_model(char *buf, size_t size)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[256], *colon;

	snprintf(buf, size, "unknown CPU");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "model name", 10) && (colon = strchr(line, ':'))) {
			colon[strcspn(colon, "\n")] = '\0';
			snprintf(buf, size, "%s", colon + 2);
			break;
		}
	fclose(f);
}

static const char *fs_name(const char *dir)
{
	struct statfs s;

	if (statfs(dir, &s) < 0)
		return "?";
	switch ((unsigned long)s.f_type) {
	case 0xEF53: return "ext4";
	case 0x58465342: return "xfs";
	case 0x9123683E: return "btrfs";
	case 0x01021994: return "tmpfs";
	case 0x794c7630: return "overlayfs";
	default: return "other";
	}
}

static void describe_machine(char *buf, size_t size, const char *dir)
{
	struct utsname u;
	char cpu[128];

	uname(&u);
	cpu_model(cpu, sizeof(cpu));
	snprintf(buf, size, "Linux %s %s, %ld CPUs (%s), %.0f GiB RAM, scratch on %s",
		 u.release, u.machine, sysconf(_SC_NPROCESSORS_ONLN), cpu,
		 (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE) / BENCH_GiB,
		 fs_name(dir));
}

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

static FILE *open_out(const char *dir, const char *name)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		cli_error(errno, "cannot create %s", cli_quote(path));
	return f;
}

static int write_outputs(const char *out, const char *machine)
{
	FILE *f;
	int bad = 0;

	if (mkdir(out, 0755) < 0 && errno != EEXIST) {
		cli_error(errno, "cannot create directory %s", cli_quote(out));
		return 1;
	}
	if ((f = open_out(out, "latest.csv"))) {
		write_csv(f);
		bad |= fclose(f) != 0;
	}
	if ((f = open_out(out, "latest.svg"))) {
		bench_svg(f, machine);
		bad |= fclose(f) != 0;
	}
	if ((f = open_out(out, "latest.txt"))) {
		fprintf(f, "%s\n", machine);
		print_targets(f);
		print_rows(f);
		bad |= fclose(f) != 0;
	}
	if (bad)
		cli_error(errno, "error writing into %s", cli_quote(out));
	return bad;
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

static int bench_main(const struct cli_cmd *cmd, int argc, char **argv)
{
	struct bench_opts o = { .secs = 0 };
	const char *only = NULL, *out = NULL, *dir = NULL;
	char self[4096], machine[512];
	int c, status = 0;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_QUICK: o.quick = true; break;
		case OPT_ONLY: check_only(cmd, optarg); only = optarg; break;
		case OPT_DIR: dir = optarg; break;
		case OPT_OUT: out = optarg; break;
		case OPT_SECS:
			o.secs = strtod(optarg, NULL);
			if (!(o.secs > 0 && o.secs <= 60))
				cli_usage_error(cmd, "invalid --secs %s", cli_quote(optarg));
			break;
		default: cli_common_option(cmd, c);
		}
	}
	if (optind < argc)
		cli_usage_error(cmd, "extra operand %s", cli_quote(argv[optind]));
	if (cli_parse_only)
		return 0;
	if (!o.secs)
		o.secs = o.quick ? 0.5 : 2;
	o.self = find_psplice(self, sizeof(self));
	if (!o.self)
		return 1;
	o.root = geteuid() == 0;
	if (out)
		check_out(out);
	o.dir = dir ? dir : make_scratch();
	if (!o.dir || (dir && access(dir, W_OK) < 0)) {
		cli_error(errno, "cannot use scratch directory %s",
			  cli_quote(dir ? dir : "/var/tmp"));
		return 1;
	}
	/* A scratch directory of our own is removed even after Ctrl-C. */
	if (supervise(dir ? NULL : o.dir) < 0) {
		cli_error(errno, "cannot start the run");
		return 1;
	}
	/* Servers ignore SIGPIPE, and every peer here measured is one. */
	signal(SIGPIPE, SIG_IGN);
	raise_nofile();
	if (o.root)
		private_mounts();
	describe_machine(machine, sizeof(machine), o.dir);
	fprintf(stderr, "psplice bench %s: %s\n", o.quick ? "--quick" : "(full)", machine);
	run_groups(&o, only);
	finish();
	printf("%s\n", machine);
	print_targets(stdout);
	print_rows(stdout);
	if (out)
		status = write_outputs(out, machine);
	return status;
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
		"                    per-call, cat, cp, relay, pressure, scaling, tee,\n"
		"                    write-behind, exec\n"
		"      --dir DIR     scratch directory, on the filesystem to measure\n"
		"                    (default: a new directory in /var/tmp, removed after)\n"
		"      --out DIR     also write DIR/latest.csv, latest.svg and latest.txt\n"
		"      --secs N      seconds per measurement (default 2; 0.5 with --quick)\n",
	.main = bench_main,
};
