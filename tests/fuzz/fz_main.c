/* fuzz_driver: random sequences of psplice calls against the model, or
 * saved ones replayed.
 *
 *   fuzz_driver [--seed N] [--count N] [--steps N] [--time S] [--save DIR]
 *               [--dir DIR] [--tmpfs DIR] [--replay FILE...] [--tee]
 *
 * --tee runs fan-out sequences (fz_tee.c) instead: one source, up to four
 * sinks, psplice_tee_* calls; a failure prints its seed, which
 * "--tee --seed S --count 1" runs again.
 *
 * Sequence k of a run is made from seed N + k, so "--seed S --count 1"
 * runs again the sequence the run printed for S. A failure is shrunk and,
 * with --save, written to DIR as a sequence that --replay runs. Exit 0 when
 * every sequence agreed with the model, 1 otherwise. */
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fz.h"

static volatile uint64_t current;

static void on_alarm(int sig)
{
	char msg[96];
	int n = snprintf(msg, sizeof(msg), "fuzz: sequence of seed %" PRIu64
			 " hung (no return for 120 s)\n", (uint64_t)current);

	(void)sig;
	if (write(2, msg, (size_t)n) < 0)
		_exit(3);
	_exit(2);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

struct opts {
	uint64_t seed, count;
	size_t steps;
	double time;
	const char *save, *disk, *tmpfs;
	bool tee;
};

static void save(const struct opts *o, const struct fz_seq *s, uint64_t seed)
{
	char path[4096];
	FILE *f;

	fz_write(stderr, s);
	if (!o->save)
		return;
	snprintf(path, sizeof(path), "%s/seed-%" PRIu64 ".seq", o->save, seed);
	f = fopen(path, "w");
	if (!f) {
		perror(path);
		return;
	}
	fprintf(f, "# found by fuzz_driver --seed %" PRIu64 " --steps %zu\n", seed, o->steps);
	fz_write(f, s);
	fclose(f);
	fprintf(stderr, "fuzz: saved as %s\n", path);
}

/* One sequence, and the fd check after it. */
static int one(const struct opts *o, const struct fz_seq *s, uint64_t seed,
	       struct fz_stats *st)
{
	const char *why;
	char msg[160];

	current = seed;
	alarm(120);
	if (fz_run(s, o->disk, o->tmpfs, st, &why) != 0) {
		alarm(0);
		fprintf(stderr, "fuzz: FAIL seed %" PRIu64 ": %s\n", seed, why);
		return -1;
	}
	alarm(0);
	if (fz_fd_check(msg, sizeof(msg)) < 0) {
		fprintf(stderr, "fuzz: FAIL seed %" PRIu64 ": %s\n", seed, msg);
		st->failures++;
		return -1;
	}
	return 0;
}

static int random_run(const struct opts *o)
{
	struct fz_stats st = { 0 };
	double start = now();
	uint64_t k;
	int runs;
	struct fz_seq s;

	printf("fuzz: seed %" PRIu64 ", up to %" PRIu64 " sequences of %zu steps, %.0f s\n",
	       o->seed, o->count, o->steps, o->time);
	fflush(stdout);
	for (k = 0; k < o->count && now() - start < o->time; k++) {
		fz_random(&s, o->seed + k, o->steps);
		if (one(o, &s, o->seed + k, &st) == 0)
			continue;
		runs = fz_shrink(&s, o->disk, o->tmpfs, 300);
		fprintf(stderr, "fuzz: shrunk in %d runs to %zu steps:\n", runs, s.n);
		save(o, &s, o->seed + k);
		break;
	}
	printf("fuzz: %" PRIu64 " sequences, %" PRIu64 " operations, %" PRIu64
	       " bytes delivered, %" PRIu64 " failures, %.1f s\n", st.seqs, st.ops, st.bytes,
	       st.failures, now() - start);
	return st.failures ? 1 : 0;
}

static int tee_run(const struct opts *o)
{
	struct fz_stats st = { 0 };
	double start = now();
	const char *why;
	char msg[256];
	uint64_t k;

	printf("fuzz: tee, seed %" PRIu64 ", up to %" PRIu64 " sequences of %zu steps, %.0f s\n",
	       o->seed, o->count, o->steps, o->time);
	fflush(stdout);
	for (k = 0; k < o->count && now() - start < o->time; k++) {
		current = o->seed + k;
		alarm(120);
		if (fz_tee_run(o->seed + k, o->steps, o->disk, o->tmpfs, &st, &why) < 0) {
			alarm(0);
			fprintf(stderr, "fuzz: tee sequence of seed %" PRIu64 " failed: %s\n",
				o->seed + k, why);
			break;
		}
		alarm(0);
		if (fz_fd_check(msg, sizeof(msg)) < 0) {
			fprintf(stderr, "fuzz: tee sequence of seed %" PRIu64 ": %s\n",
				o->seed + k, msg);
			st.failures++;
			break;
		}
	}
	printf("fuzz: tee: %" PRIu64 " sequences, %" PRIu64 " operations, %" PRIu64
	       " bytes checked, %" PRIu64 " failures, %.1f s\n", st.seqs, st.ops, st.bytes,
	       st.failures, now() - start);
	return st.failures ? 1 : 0;
}

static int replay(const struct opts *o, char **files, int n)
{
	struct fz_stats st = { 0 };
	int i, bad = 0;
	struct fz_seq s;

	for (i = 0; i < n; i++) {
		FILE *f = fopen(files[i], "r");
		int r = f ? fz_read(f, &s) : -1;

		if (f)
			fclose(f);
		if (r < 0) {
			fprintf(stderr, "fuzz: %s: not a sequence\n", files[i]);
			bad++;
		} else if (one(o, &s, 0, &st) < 0) {
			fprintf(stderr, "fuzz: replay of %s failed\n", files[i]);
			bad++;
		}
	}
	printf("fuzz: %d sequences replayed, %" PRIu64 " operations, %d failed\n", n, st.ops, bad);
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "seed", required_argument, NULL, 's' },
		{ "count", required_argument, NULL, 'c' },
		{ "steps", required_argument, NULL, 'n' },
		{ "time", required_argument, NULL, 't' },
		{ "save", required_argument, NULL, 'o' },
		{ "dir", required_argument, NULL, 'd' },
		{ "tmpfs", required_argument, NULL, 'm' },
		{ "replay", no_argument, NULL, 'r' },
		{ "tee", no_argument, NULL, 'T' },
		{ NULL, 0, NULL, 0 }
	};
	struct opts o = { .seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32),
			  .count = UINT64_MAX, .steps = 24, .time = 60, .disk = ".",
			  .tmpfs = "/dev/shm" };
	bool rep = false;
	int c;

	signal(SIGALRM, on_alarm);
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 's': o.seed = strtoull(optarg, NULL, 0); break;
		case 'c': o.count = strtoull(optarg, NULL, 0); break;
		case 'n': o.steps = strtoull(optarg, NULL, 0); break;
		case 't': o.time = strtod(optarg, NULL); break;
		case 'o': o.save = optarg; break;
		case 'd': o.disk = optarg; break;
		case 'm': o.tmpfs = optarg; break;
		case 'r': rep = true; break;
		case 'T': o.tee = true; break;
		default: return 2;
		}
	}
	setvbuf(stderr, NULL, _IOLBF, 0);
	fz_fd_check(NULL, 0);
	if (rep)
		return replay(&o, argv + optind, argc - optind);
	return o.tee ? tee_run(&o) : random_run(&o);
}
