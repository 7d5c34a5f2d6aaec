/* psplice bench: what the groups that measure forwarders ("relay",
 * "scaling") share: their runs' figures, the command lines they start, and
 * starting and stopping a forwarder with its own CPU. */
#ifndef CLI_BENCH_FWD_H
#define CLI_BENCH_FWD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "bench.h"

#define FWD_MAX_REPS 3 /* rounds of each variant, unless an item asks more */
#define FWD_MAX_RUNS 7 /* the most an item may ask */
#define FWD_START_TIMEOUT 5.0 /* a forwarder must listen by then */

/* path = o->dir/name: each run's files in the filesystem under test. */
void fwd_scratch(const struct bench_opts *o, const char *name, char *buf, size_t size);
/* The first line of a file, "" when there is none: a program's complaint,
 * short enough for a skip reason. */
void fwd_first_line(const char *path, char *buf, size_t size);
/* A whole small file (at most max bytes), NUL-terminated, to free; NULL
 * when unreadable or empty. */
char *fwd_slurp(const char *path, size_t max);

/* The figures of the runs of one variant that worked. */
struct fwd_runs {
	double gbps[FWD_MAX_RUNS];
	double cpu[FWD_MAX_RUNS]; /* s per GiB, of the runs that know it */
	double sys[FWD_MAX_RUNS]; /* the whole system's s per GiB, where known */
	int n, ncpu, nsys;
};

/* Keep a run's Gbit/s and CPU s/GiB (cpu < 0: not known); past
 * FWD_MAX_RUNS runs, the rest are dropped. */
void fwd_runs_add(struct fwd_runs *r, double gbps, double cpu);
/* Keep a run's whole-system CPU s/GiB (the forwarder's and its peers');
 * sys < 0 is not known. Past FWD_MAX_RUNS runs, the rest are dropped. */
void fwd_runs_add_system(struct fwd_runs *r, double sys);
/* The typical whole-system figure (as fwd_runs_row takes the CPU's), -1
 * when no run knew it. Sorts r's system figures. */
double fwd_runs_system(struct fwd_runs *r);
/* The row's note, "median of 3 runs", saying when some of reps failed. */
void fwd_runs_note(const struct fwd_runs *r, int reps, char *note, size_t size);
/* Record the runs as one Gbit/s row: the median, or of an even count the
 * better middle figure, since noise on a shared machine only makes a
 * figure worse. Sorts r's figures. */
void fwd_runs_row(const char *group, const char *item, const char *variant,
		  struct fwd_runs *r, bool baseline, const char *note);

/* HAProxy in TCP mode, as the groups run it: nbthread threads, listening
 * on front:port and forwarding to back:target, its configuration written
 * to o->dir/name (path). With splice, splice is forced both ways (option
 * splice-request and splice-response); without, HAProxy's defaults. 0, or
 * -1 when the file cannot be written. */
int fwd_haproxy_conf(const struct bench_opts *o, const char *name, int nbthread, bool splice,
		     const char *front, int port, const char *back, int target, char *path,
		     size_t size);

/* An argv built piece by piece, each argument in its own storage, so that
 * a caller need not keep the strings it formatted. */
struct fwd_cmdline {
	char *argv[24];
	char buf[23][200];
	int n;
};

/* Start an argv with prog, which is not copied (a path may be longer than
 * an argument) and must outlive c. */
void fwd_cmd_init(struct fwd_cmdline *c, const char *prog);
/* The same in network namespace ns (ip netns exec, which execs prog: the
 * pid started is prog's); ns NULL is this process's namespace. ns is not
 * copied either. */
void fwd_cmd_init_in(struct fwd_cmdline *c, const char *ns, const char *prog);
/* Append one formatted argument; past the room there is, dropped. */
void fwd_arg(struct fwd_cmdline *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Wait, at most timeout seconds, until pid listens on port (in pid's own
 * network namespace): true when it does, false when it ended or did not. Reads the kernel's table rather
 * than connecting, since a probe would disturb iperf3 -s. */
bool fwd_wait_listening(pid_t pid, int port, double timeout);
/* Start argv (stderr to errfile) and wait until it listens on port. Its
 * pid, or -1 with why set (its first line of complaint, if any) when it did
 * not come up; a forwarder that did not is stopped. */
pid_t fwd_start_listener(char *const argv[], int port, const char *errfile,
			 char *why, size_t size);
/* Stop a forwarder after its run, once its forked children (socat's) are
 * reaped so that their CPU counts too. Its CPU seconds, or -1 when it could
 * not be reaped; its bench_stop status in *status. */
double fwd_stop(pid_t pid, int *status);

#endif
