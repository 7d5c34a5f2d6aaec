/* psplice bench, groups "cat" and "cp": what they share. Each item's
 * variants are shell commands (or the in-process read/write loop), run in
 * rounds (A B C A B C) so that they share the machine's noise; the fastest
 * run of each counts (bench_peers.c). */
#ifndef BENCH_PEERS_H
#define BENCH_PEERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench.h"

#define MiB ((uint64_t)1 << 20)
#define GiB ((uint64_t)1 << 30)
/* A command still running after this long is killed (timeout(1)) and its
 * variant skipped: a hung peer must not hang the benchmark. */
#define RUN_TIMEOUT 60
#define MAX_VARIANTS 4

struct variant {
	const char *name;
	char cmd[16384];    /* the shell command; unused when inproc */
	bool inproc;        /* the read/write loop, timed in this process */
	bool baseline;
	const char *note;   /* what the row should say besides the time */
	const char *skip;   /* why it is not run at all, or NULL */
	double wall, cpu;   /* of the fastest run */
	int runs;
	int status;         /* the first failure: exit status, or errno if inproc */
};

/* One item of a group: its variants, run in rounds. */
struct item {
	const char *group;
	char name[64];
	uint64_t bytes;      /* moved by one run */
	struct variant v[MAX_VARIANTS];
	int n;
	const char *src, *dst; /* dst is removed before each run, when set */
	int sync_fd;         /* a filesystem synced before each run, or -1 */
	int reps, max_reps;  /* at least reps rounds; more while within budget */
	double budget;       /* seconds */
};

/* Append s to cmd in single quotes, for /bin/sh; append a formatted text.
 * Both stop at the end of the buffer. */
void peer_add_quoted(char *cmd, size_t size, const char *s);
void peer_add(char *cmd, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The item's next variant, cleared. */
struct variant *peer_variant(struct item *it, const char *name, bool baseline,
			     const char *note);
/* A command of a program and the item's files: "prog args SRC DST". */
void peer_command(struct item *it, struct variant *v, const char *prog, const char *args);
/* v's command: "bash -c INNER" under timeout; INNER was built in a buffer
 * of size bytes. A command cut short by either buffer is skipped. */
void peer_bash(struct variant *v, const char *inner, size_t size);
/* "A FILE... | B > /dev/null" (copies times FILE) with the status of both. */
void peer_pipeline(struct variant *v, const char *a, const char *b, const char *file,
		   int copies);
/* Rounds of every variant still standing, at least it->reps of them, and
 * up to max_reps while the item is within its time budget. */
void peer_run_item(struct item *it);
/* A row for each variant: GiB/s of its fastest run, or why it has none. */
void peer_report(const struct item *it);
/* Every variant of the item skipped for one reason. */
void peer_skip_item(const struct item *it, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* "512 MiB", "2 GiB", in one of a few static buffers. */
const char *peer_size_text(uint64_t size);
/* buf = dir/name */
void peer_join(char *buf, size_t size, const char *dir, const char *name);
/* Unmount what we mounted, waiting a moment for it to be free. */
void peer_unmount(const char *dir);
/* why = the message; -1 */
int peer_fail(char *why, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* A tmpfs of need bytes for a copy: our own mount, as root, so that it is
 * empty and large enough; else a new directory in /dev/shm when it is a
 * tmpfs with the room. 1 when mounted, 0 when not, -1 with
 * why. */
int peer_tmpfs_dir(const struct bench_opts *o, uint64_t need, char *dir, size_t n, char *why,
		   size_t wn);
/* The cp group's item on XFS (bench_reflink.c). */
void peer_cp_reflink(const struct bench_opts *o);
/* The cp group's tree of small files (bench_cptree.c). */
void peer_cp_tree(const struct bench_opts *o);

#endif
