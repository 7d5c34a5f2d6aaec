/* psplice bench: the rows and targets every group records, and what they
 * share to sort and time measurements. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>

#include "bench.h"
#include "sys.h"

#define MAX_ROWS BENCH_MAX_ROWS
#define MAX_TARGETS BENCH_MAX_TARGETS

struct bench_row bench_rows[MAX_ROWS];
int bench_nrows;
struct bench_target bench_targets[MAX_TARGETS];
int bench_ntargets;

void bench_add(const struct bench_row *r)
{
	if (bench_nrows == MAX_ROWS) {
		fprintf(stderr, "psplice bench: more than %d rows; '%s' dropped\n",
			MAX_ROWS, r->variant);
		return;
	}
	bench_rows[bench_nrows++] = *r;
}

static void copy_str(char *dst, size_t size, const char *src)
{
	snprintf(dst, size, "%s", src ? src : "");
}

void bench_row(const char *group, const char *item, const char *variant, int unit,
	       double value, double cpu, bool baseline, const char *note)
{
	struct bench_row r = { .unit = unit, .value = value, .cpu = cpu,
			       .baseline = baseline };

	copy_str(r.group, sizeof(r.group), group);
	copy_str(r.item, sizeof(r.item), item);
	copy_str(r.variant, sizeof(r.variant), variant);
	copy_str(r.note, sizeof(r.note), note);
	bench_add(&r);
}

void bench_skip(const char *group, const char *item, const char *variant,
		const char *fmt, ...)
{
	char why[100], note[120];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	snprintf(note, sizeof(note), "skipped: %s", why);
	fprintf(stderr, "psplice bench: %s: %s: %s: %s\n", group, item, variant, note);
	bench_row(group, item, variant, -1, 0, -1, false, note);
}

const struct bench_row *bench_find(const char *group, const char *item,
				   const char *variant)
{
	int i;

	for (i = 0; i < bench_nrows; i++)
		if (!strcmp(bench_rows[i].group, group) &&
		    !strcmp(bench_rows[i].item, item) &&
		    !strcmp(bench_rows[i].variant, variant) && bench_rows[i].unit >= 0)
			return &bench_rows[i];
	return NULL;
}

static struct bench_target *new_target(const char *what, double goal, bool at_least,
				       const char *why)
{
	struct bench_target *t;

	if (bench_ntargets == MAX_TARGETS) {
		/* Said, not dropped unseen: the list is the run's verdict. */
		fprintf(stderr, "psplice bench: more than %d targets: %s not listed\n",
			MAX_TARGETS, what);
		return NULL;
	}
	t = &bench_targets[bench_ntargets++];
	memset(t, 0, sizeof(*t));
	copy_str(t->what, sizeof(t->what), what);
	copy_str(t->why, sizeof(t->why), why);
	t->goal = goal;
	t->at_least = at_least;
	return t;
}

static void measured(const char *what, double value, double goal, bool at_least,
		     const char *why, bool ratio)
{
	struct bench_target *t = new_target(what, goal, at_least, why);

	if (t) {
		t->value = value;
		t->measured = true;
		t->ratio = ratio;
	}
}

void bench_target_value(const char *what, double value, double goal, bool at_least,
			const char *why)
{
	measured(what, value, goal, at_least, why, false);
}

void bench_target_missing(const char *what, double goal, bool at_least,
			  const char *why)
{
	new_target(what, goal, at_least, why);
}

void bench_target_ratio(const char *what, const char *group, const char *item,
			const char *a, const char *b, bool cpu, double goal,
			bool at_least)
{
	const struct bench_row *ra = bench_find(group, item, a);
	const struct bench_row *rb = bench_find(group, item, b);
	char why[160];
	double va, vb;

	if (!ra || !rb) {
		snprintf(why, sizeof(why), "not measured: %s", !ra ? a : b);
		bench_target_missing(what, goal, at_least, why);
		return;
	}
	va = cpu ? ra->cpu : ra->value;
	vb = cpu ? rb->cpu : rb->value;
	snprintf(why, sizeof(why), "%s%s over %s (%s)", cpu ? "CPU/GiB of " : "", a, b, item);
	if (va < 0 || vb <= 0) {
		bench_target_missing(what, goal, at_least, why);
		return;
	}
	bench_target_ratio_of(what, va / vb, goal, at_least, why);
}

void bench_target_ratio_of(const char *what, double ratio, double goal, bool at_least,
			   const char *why)
{
	measured(what, ratio, goal, at_least, why, true);
}

/* The first word of the file at path, in buf; -1 when it cannot be read. */
static int first_word(const char *path, char *buf, size_t n)
{
	FILE *f = fopen(path, "re");
	int ok;

	if (!f)
		return -1;
	ok = fscanf(f, "%15s", buf) == 1 && n > 15;
	fclose(f);
	return ok ? 0 : -1;
}

/* A kdamond that is on with a scheme whose action is pageout: the machine
 * pages out idle memory, page cache too, on its own. */
bool bench_damon_pageout(void)
{
	static const char root[] = "/sys/kernel/mm/damon/admin/kdamonds";
	char path[256], buf[16];
	int k, c, s;

	for (k = 0; k < 8; k++) {
		snprintf(path, sizeof(path), "%s/%d/state", root, k);
		if (first_word(path, buf, sizeof(buf)) < 0 || strcmp(buf, "on"))
			continue;
		for (c = 0; c < 8; c++)
			for (s = 0; s < 8; s++) {
				snprintf(path, sizeof(path), "%s/%d/contexts/%d/schemes/%d/action",
					 root, k, c, s);
				if (first_word(path, buf, sizeof(buf)) == 0 &&
				    !strcmp(buf, "pageout"))
					return true;
			}
	}
	return false;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

void bench_sort(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
}

double bench_median(double *v, int n)
{
	bench_sort(v, n);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double bench_now(void)
{
	return (double)cli_now_ns() / 1e9;
}

static double tv(struct timeval t)
{
	return (double)t.tv_sec + (double)t.tv_usec / 1e6;
}

double bench_rusage_secs(const struct rusage *ru)
{
	return tv(ru->ru_utime) + tv(ru->ru_stime);
}

double bench_cpu_thread(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_THREAD, &ru) == 0 ? bench_rusage_secs(&ru) : 0;
}

double bench_cpu_self(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_SELF, &ru) == 0 ? bench_rusage_secs(&ru) : 0;
}
