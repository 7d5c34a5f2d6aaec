/* psplice bench, group "cat": psplice cat | psplice cat against cat | cat
 * and pv | pv, a cached file through two processes and a pipe. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bench_peers.h"

#define CAT_PSPLICE "psplice cat | psplice cat"
#define CAT_CAT "cat | cat"
#define CAT_PV "pv -q | pv -q"

/* How many times each run reads the file so that the baseline takes about
 * want seconds: from one untimed run of it, which also warms everything. */
static int cat_copies(const char *path, uint64_t size, double want)
{
	struct variant probe = { 0 };
	double wall, rate;
	int copies;

	peer_pipeline(&probe, "cat", "cat", path, 1);
	if (bench_sh(probe.cmd, &wall, NULL) != 0 || wall <= 0)
		return 1;
	rate = (double)size / wall;
	copies = (int)(want * rate / (double)size + 0.5);
	return copies < 1 ? 1 : copies > 16 ? 16 : copies;
}

static void cat_variants(struct item *it, const struct bench_opts *o,
			 const char *path, int copies)
{
	static char note[64]; /* the rows are reported after this returns */
	char self[4200];
	struct variant *v;

	snprintf(note, sizeof(note), "%d x the file per run", copies);
	self[0] = '\0';
	peer_add_quoted(self, sizeof(self), o->self);
	peer_add(self, sizeof(self), " cat");
	peer_pipeline(peer_variant(it, CAT_PSPLICE, false, note), self, self, path, copies);
	peer_pipeline(peer_variant(it, CAT_CAT, true, note), "cat", "cat", path, copies);
	v = peer_variant(it, CAT_PV, false, note);
	peer_pipeline(v, "pv -q", "pv -q", path, copies);
	if (!bench_have("pv"))
		v->skip = "pv not found (Debian package pv)";
}

void bench_peers_cat(const struct bench_opts *o)
{
	uint64_t size = o->quick ? 512 * MiB : 2 * GiB;
	struct item it = { .group = "cat", .sync_fd = -1, .reps = o->quick ? 2 : 3 };
	double want = o->secs * 0.75 > 1 ? o->secs * 0.75 : 1;
	char path[4096];
	int copies = 1;

	it.max_reps = it.reps;
	snprintf(it.name, sizeof(it.name), "%s cached file -> pipe -> /dev/null",
		 peer_size_text(size));
	peer_join(path, sizeof(path), o->dir, "peers-cat.dat");
	if (!bench_have("bash")) {
		cat_variants(&it, o, path, 1);
		peer_skip_item(&it, "bash not found (for the pipelines' exit status)");
		goto targets;
	}
	if (bench_make_file(path, size) < 0) {
		cat_variants(&it, o, path, 1);
		peer_skip_item(&it, "cannot make the cached file: %s", strerror(errno));
		goto targets;
	}
	copies = cat_copies(path, size, want);
	it.bytes = size * (uint64_t)copies;
	cat_variants(&it, o, path, copies);
	peer_run_item(&it);
	peer_report(&it);
targets:
	unlink(path);
	bench_target_ratio("psplice cat|psplice cat vs pv|pv", it.group, it.name,
			   CAT_PSPLICE, CAT_PV, false, 1.0, true);
	bench_target_ratio("psplice cat|psplice cat vs cat|cat", it.group, it.name,
			   CAT_PSPLICE, CAT_CAT, false, 1.0, true);
}
