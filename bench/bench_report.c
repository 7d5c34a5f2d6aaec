/* psplice bench: the results of a run, ordered and compared with their
 * baselines, printed as a table and written as CSV, SVG and text; and the
 * line that describes the machine they were measured on. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "bench.h"
#include "out.h"

static const char *const unit_names[BENCH_NUNITS] = {
	[BENCH_GIBPS] = "GiB/s", [BENCH_GBITPS] = "Gbit/s", [BENCH_NSCALL] = "ns/call",
	[BENCH_SECS] = "s", [BENCH_MS] = "ms", [BENCH_MIB] = "MiB",
	[BENCH_CPUGIB] = "CPU s/GiB", [BENCH_BYTESGIB] = "B/GiB", [BENCH_COUNT] = "count",
	[BENCH_KIB] = "KiB", [BENCH_REQPS] = "req/s",
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
void bench_finish(void)
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
	    r->unit == BENCH_COUNT || r->unit == BENCH_REQPS)
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

void bench_print(FILE *f, const char *machine)
{
	fprintf(f, "%s\n", machine);
	print_targets(f);
	print_rows(f);
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

void bench_describe_machine(char *buf, size_t size, const char *dir)
{
	struct utsname u;
	char cpu[128];

	uname(&u);
	cpu_model(cpu, sizeof(cpu));
	snprintf(buf, size, "Linux %s %s, %ld CPUs (%s), %.0f GiB RAM, scratch on %s",
		 u.release, u.machine, sysconf(_SC_NPROCESSORS_ONLN), cpu,
		 (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE) / BENCH_GiB,
		 bench_fs_name(dir) ? bench_fs_name(dir) : "other");
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

int bench_write_outputs(const char *out, const char *machine)
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
		bench_print(f, machine);
		bad |= fclose(f) != 0;
	}
	if (bad)
		cli_error(errno, "error writing into %s", cli_quote(out));
	return bad;
}
