/* Placeholders until the groups being written land (weak: the real ones win). */
#include "bench.h"
#define PENDING(fn, g) __attribute__((weak)) void fn(const struct bench_opts *o) \
	{ (void)o; bench_skip(g, "all", "-", "not built yet"); }
PENDING(bench_percall, "per-call")
PENDING(bench_peers_cat, "cat")
PENDING(bench_peers_cp, "cp")
PENDING(bench_relay, "relay")
PENDING(bench_scaling, "scaling")
