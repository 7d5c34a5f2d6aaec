/* psplice bench, groups "relay" and "relay-proxy": an item's rows, from
 * the runs bench_relay.c made: the figure of each variant with how it was
 * taken, and the item's whole-system CPU twin. */
#include <stdio.h>
#include <string.h>

#include "bench_relay.h"

/* The variant of this name in the item, or NULL. */
static struct fwd *variant(struct relay_ctx *x, const char *name)
{
	int i;

	for (i = 0; i < x->n; i++)
		if (!strcmp(x->f[i].variant, name))
			return &x->f[i];
	return NULL;
}

/* Whose CPU the whole-system figure adds up. */
static const char *system_whose(const struct fwd *f)
{
	switch (f->kind) {
	case F_DIRECT: return "iperf3 client+server";
	case F_RELAY: return f->chain ? "both relays+iperf3 client+server" :
			     "relay+iperf3 client+server";
	case F_SOCAT: return "socat+iperf3 client+server";
	default: return "haproxy+iperf3 client+server";
	}
}

/* The mean size of the data segments sent on to the server, "" when ss
 * gave nothing. */
static void segments_note(const struct fwd *f, char *buf, size_t size)
{
	buf[0] = '\0';
	if (f->segs > 0)
		snprintf(buf, size, "; segs out %.1f KiB", f->sent / f->segs / 1024);
}

/* How the figure was taken, the whole system's CPU per GiB (sys < 0: not
 * known), the segments sent and, for the peers, what they are. */
static void relay_note(const struct relay_ctx *x, const struct fwd *f, int reps,
		       double sys, char *note, size_t size)
{
	char runs[40], system[64] = "", segs[32], full[256];
	size_t n;

	fwd_runs_note(&f->r, reps, runs, sizeof(runs));
	segments_note(f, segs, sizeof(segs));
	if (sys >= 0)
		snprintf(system, sizeof(system), "; system %.2f s/GiB", sys);
	if (f->kind == F_HAPROXY)
		snprintf(full, sizeof(full), "%s%s%s; %.60s", runs, system, segs,
			 x->haproxy_note);
	else
		snprintf(full, sizeof(full), "%s%s%s%s", runs, system, segs,
			 f->kind == F_DIRECT ? "; the ceiling" : "");
	/* A note cut short is still a note. */
	n = strlen(full) < size ? strlen(full) : size - 1;
	memcpy(note, full, n);
	note[n] = '\0';
}

/* The whole-system item: one row per variant, its figure the forwarder's
 * CPU and both iperf3 ends' per GiB received, lower is better. */
static void relay_record_system(struct relay_ctx *x, const char *item, int reps,
				const double *sys, int base)
{
	char sitem[64], note[160], runs[40];
	int i;

	snprintf(sitem, sizeof(sitem), "%s: whole-system CPU", item);
	for (i = 0; i < x->n; i++) {
		struct fwd *f = &x->f[i];

		if (f->why[0] || !f->r.n) {
			bench_skip(x->group, sitem, f->variant, "%s", f->why[0] ? f->why :
				   f->fail[0] ? f->fail : "iperf3 server did not start");
			continue;
		}
		if (sys[i] < 0) {
			bench_skip(x->group, sitem, f->variant, "%s",
				   "iperf3 -J gave no cpu_utilization_percent, or the "
				   "forwarder's CPU is not known");
			continue;
		}
		if (f->r.nsys == f->r.n)
			fwd_runs_note(&f->r, reps, runs, sizeof(runs));
		else
			snprintf(runs, sizeof(runs), "known in %d of %d runs", f->r.nsys,
				 f->r.n);
		snprintf(note, sizeof(note), "%s; %s%s", runs, system_whose(f),
			 f->kind == F_DIRECT ? " only: the floor" : "");
		bench_row(x->group, sitem, f->variant, BENCH_CPUGIB, sys[i], -1, i == base,
			  note);
	}
}

/* The first of the baselines named that was measured, so that the other
 * rows still have their ratios; -1 when none was. */
static int pick_base(struct relay_ctx *x, const char *const *names, const double *sys)
{
	struct fwd *f;

	for (; *names; names++)
		if ((f = variant(x, *names)) && f->r.n && (!sys || sys[f - x->f] >= 0))
			return (int)(f - x->f);
	return -1;
}

void relay_record(struct relay_ctx *x, const char *item, int reps,
		  const char *const *bases)
{
	int base = pick_base(x, bases, NULL), sbase, i;
	double sys[MAX_FWD];
	char note[160];

	for (i = 0; i < x->n; i++) {
		struct fwd *f = &x->f[i];

		sys[i] = f->why[0] ? -1 : fwd_runs_system(&f->r);
		if (f->why[0] || !f->r.n) {
			bench_skip(x->group, item, f->variant, "%s", f->why[0] ? f->why :
				   f->fail[0] ? f->fail : "iperf3 server did not start");
			continue;
		}
		relay_note(x, f, reps, sys[i], note, sizeof(note));
		fwd_runs_row(x->group, item, f->variant, &f->r, i == base, note);
	}
	/* The same baseline, unless it is one without a system figure. */
	sbase = pick_base(x, bases, sys);
	relay_record_system(x, item, reps, sys, sbase);
}
