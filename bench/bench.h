/* psplice bench: what the benchmark groups (bench/bench_*.c) share. Every
 * figure is a row; a row's ratio is taken against the baseline row of the
 * same group and item, measured in the same run. */
#ifndef CLI_BENCH_H
#define CLI_BENCH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* The command: psplice bench, run by psplice-bench (psplice_bench.c). */
struct cli_cmd;
extern const struct cli_cmd bench_cmd;

#define BENCH_GiB ((double)(1ull << 30))

struct bench_opts {
	bool quick;          /* the ~1 minute subset */
	double secs;         /* how long one measurement runs */
	const char *dir;     /* scratch directory (the filesystem under test) */
	const char *self;    /* this psplice binary, for the peers' pipelines */
	bool root;           /* may mount, install packages, raise limits */
};

enum bench_unit {
	BENCH_GIBPS,   /* GiB/s, higher is better */
	BENCH_GBITPS,  /* Gbit/s, higher is better */
	BENCH_NSCALL,  /* ns per call, lower is better */
	BENCH_SECS,    /* seconds, lower is better */
	BENCH_MS,      /* milliseconds, lower is better */
	BENCH_MIB,     /* MiB, lower is better */
	BENCH_CPUGIB,  /* CPU seconds per GiB moved, lower is better */
	BENCH_BYTESGIB, /* bytes per GiB moved (copied through memory), lower is better */
	BENCH_COUNT,   /* a count (fds, pipes), lower is better */
	BENCH_KIB,     /* KiB, lower is better */
	BENCH_REQPS,   /* requests a second, higher is better */
	BENCH_NUNITS
};

struct bench_row {
	char group[24];    /* one panel of the plot: "mechanism", "cat", "cp", … */
	char item[64];     /* what is compared: "file -> pipe", "ext4, 1 GiB" */
	char variant[48];  /* who does it: "splice", "read/write 128 KiB", "cat | cat" */
	int unit;          /* enum bench_unit */
	double value;      /* in unit */
	double cpu;        /* CPU seconds per GiB moved (getrusage); < 0: not known */
	bool baseline;     /* the row the others in group+item are compared with */
	char note[160];    /* "planner's pick", "skipped: …", "" */
	/* Filled in by bench_finish(): value and cpu over the baseline's. */
	double ratio, cpu_ratio;
	bool compared;     /* a baseline was found: ratio is a figure */
};

/* A target of the issue: the benchmark reports it, nothing asserts it. */
struct bench_target {
	char what[96];     /* "relay vs haproxy splice, throughput" */
	double value;      /* the measured ratio */
	double goal;       /* the ratio aimed for */
	bool at_least;     /* value >= goal is met (else value <= goal) */
	char why[160];     /* what it compares, or why it was not measured */
	bool measured;
	bool ratio;        /* value is a ratio (printed "1.23x"), else a figure */
};

/* Everything recorded so far (bench_util.c), for the output. */
#define BENCH_MAX_ROWS 512
#define BENCH_MAX_TARGETS 256
extern struct bench_row bench_rows[BENCH_MAX_ROWS];
extern int bench_nrows;
extern struct bench_target bench_targets[BENCH_MAX_TARGETS];
extern int bench_ntargets;
/* The rows in order, each compared with its baseline (bench_report.c). */
void bench_finish(void);
/* The machine, the targets and the rows as a table. */
void bench_print(FILE *f, const char *machine);
/* DIR/latest.csv, latest.svg and latest.txt; 0, or 1 (said on stderr). */
int bench_write_outputs(const char *dir, const char *machine);
/* "Linux 6.1 x86_64, 2 CPUs (...), 8 GiB RAM, scratch on ext4" */
void bench_describe_machine(char *buf, size_t size, const char *dir);
/* The plot of the rows (bench_svg.c). */
void bench_svg(FILE *f, const char *machine);

/* Record a row (copied). */
void bench_add(const struct bench_row *r);
/* Shorthand for a measured row. */
void bench_row(const char *group, const char *item, const char *variant, int unit,
	       double value, double cpu, bool baseline, const char *note);
/* A row that could not be measured, with the reason (printed at once too). */
void bench_skip(const char *group, const char *item, const char *variant,
		const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* The row already recorded for group/item/variant, or NULL. */
const struct bench_row *bench_find(const char *group, const char *item,
				   const char *variant);
/* Report a target: the ratio of two recorded rows' values (a over b), or an
 * unmeasured target with the reason in why. */
void bench_target_ratio(const char *what, const char *group, const char *item,
			const char *a, const char *b, bool cpu, double goal,
			bool at_least);
void bench_target_value(const char *what, double value, double goal, bool at_least,
			const char *why);
void bench_target_missing(const char *what, double goal, bool at_least,
			  const char *why);
/* Report a target whose ratio the caller worked out (a median, say). */
void bench_target_ratio_of(const char *what, double ratio, double goal, bool at_least,
			   const char *why);
/* The machine pages out idle memory on its own (a DAMON pageout scheme). */
bool bench_damon_pageout(void);

/* Sort n figures, smallest first. */
void bench_sort(double *v, int n);
/* The median of n > 0 figures (of an even count, the mean of the middle
 * two); sorts v. */
double bench_median(double *v, int n);

/* The machine's Dirty + Writeback (/proc/meminfo), in bytes. */
double bench_meminfo_dirty(void);

/* The filesystem dir is on: "ext4", "xfs", "btrfs", "tmpfs", "overlayfs";
 * NULL for another or when it cannot be told. */
const char *bench_fs_name(const char *dir);

/* Clocks. */
double bench_now(void);          /* CLOCK_MONOTONIC, seconds */
double bench_cpu_thread(void);   /* this thread's user+system CPU seconds */
double bench_cpu_self(void);     /* the process's */
struct rusage;
/* user+system CPU seconds of a getrusage() or wait4() answer. */
double bench_rusage_secs(const struct rusage *ru);

/* Run "/bin/sh -c cmd" with stdin from /dev/null and stdout/stderr to
 * /dev/null unless out_fd >= 0 (stdout there); wall seconds and the CPU
 * seconds of the whole command (shell, pipeline and everything it waited
 * for, from wait4) in *wall and *cpu. Returns the exit status, -1 on a
 * failure to start, 128+N for signal N. */
int bench_sh(const char *cmd, double *wall, double *cpu);
/* Start argv[0] (searched in PATH) in the background with stdin, stdout and
 * stderr on /dev/null (stderr to errfile when not NULL). -1 on error. */
pid_t bench_spawn(char *const argv[], const char *errfile);
/* SIGTERM (then SIGKILL after 5 s) and reap; *cpu (may be NULL) gets the
 * process's CPU seconds including its reaped children. */
int bench_stop(pid_t pid, double *cpu);
/* Is this program in PATH? */
bool bench_have(const char *prog);
/* Wait until something accepts on 127.0.0.1:port (or the unix path), at
 * most timeout seconds. 0 when it does. */
int bench_wait_port(int port, double timeout);
/* A free TCP port on 127.0.0.1 (bound and closed: it may be taken again
 * before it is used, but not by this run). */
int bench_free_port(void);
/* Raise RLIMIT_NOFILE to need fds if the hard limit allows: 0, or -1. */
int bench_nofile(unsigned long need);

/* A file of size bytes of incompressible data, and its pages read into the
 * cache. Reuses an existing file of that size. 0, or -1 and errno. */
int bench_make_file(const char *path, uint64_t size);

/* The groups. Each adds its rows and targets, skipping with a reason what
 * this machine cannot measure. */
void bench_mechanism(const struct bench_opts *o);
void bench_percall(const struct bench_opts *o);
void bench_fileserver(const struct bench_opts *o);
void bench_peers_cat(const struct bench_opts *o);
void bench_peers_cp(const struct bench_opts *o);
void bench_pressure(const struct bench_opts *o);
void bench_relay(const struct bench_opts *o);
void bench_relay_proxy(const struct bench_opts *o);
void bench_relay_failover(const struct bench_opts *o);
void bench_requests(const struct bench_opts *o);
void bench_scaling(const struct bench_opts *o);
void bench_tee(const struct bench_opts *o);
void bench_writebehind(const struct bench_opts *o);
void bench_exec(const struct bench_opts *o);

#endif
