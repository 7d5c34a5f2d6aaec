/* psplice bench, group "cp", item "tree": cp -a of a tree of many small
 * files, psplice cp -a against GNU cp -a, in alternating rounds on a
 * tmpfs, each copy into a new directory. A tree of small files costs
 * system calls, not bytes: the figures are the median CPU seconds (the
 * command's and its children's, from wait4) and wall seconds of the
 * rounds; the targets are at most 0.8x cp's CPU and 1.0x its wall. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench_peers.h"

#define TREE_DIRS 40    /* directories at the top, each with TREE_SUBS */
#define TREE_SUBS 25
#define TREE_MAX 16384  /* the largest file's bytes */
#define TREE_ROUNDS 15  /* at most */

/* One of the two copies, and its rounds. */
struct side {
	const char *name;
	char cmd[9000];
	double wall[TREE_ROUNDS], cpu[TREE_ROUNDS];
	int runs, status;
};

/* A directory that may be there already. */
static int mkdir_at(char *path, size_t n, const char *fmt, const char *root, int a, int b)
{
	if ((size_t)snprintf(path, n, fmt, root, a, b) >= n) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return mkdir(path, 0755) < 0 && errno != EEXIST ? -1 : 0;
}

/* File i of the tree: a size from 0 to TREE_MAX bytes, drawn from x, and
 * bytes of data that does not compress, from buf at an offset of its own. */
static int make_file(const char *root, int i, const unsigned char *buf, uint32_t *x,
		     uint64_t *bytes)
{
	char path[4200];
	size_t size, len;
	int fd;
	ssize_t n;

	if (mkdir_at(path, sizeof(path), "%s/d%02d", root, i % TREE_DIRS, 0) < 0 ||
	    mkdir_at(path, sizeof(path), "%s/d%02d/e%02d", root, i % TREE_DIRS,
		     (i / TREE_DIRS) % TREE_SUBS) < 0)
		return -1;
	len = strlen(path);
	if ((size_t)snprintf(path + len, sizeof(path) - len, "/f%05d", i) >= sizeof(path) - len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	*x = *x * 1103515245u + 12345u;
	size = (*x >> 8) % (TREE_MAX + 1);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	n = write(fd, buf + (size_t)i % TREE_MAX, size);
	close(fd);
	*bytes += size;
	return n == (ssize_t)size ? 0 : -1;
}

/* nfiles files under root, spread over TREE_DIRS x TREE_SUBS directories;
 * their bytes in *bytes. 0, or -1 and errno. */
static int make_tree(const char *root, int nfiles, uint64_t *bytes)
{
	static unsigned char buf[2 * TREE_MAX];
	uint32_t x = 2026;

	for (size_t i = 0; i < sizeof(buf); i++) {
		x = x * 1103515245u + 12345u;
		buf[i] = (unsigned char)(x >> 16);
	}
	*bytes = 0;
	if (mkdir(root, 0755) < 0 && errno != EEXIST)
		return -1;
	for (int i = 0; i < nfiles; i++)
		if (make_file(root, i, buf, &x, bytes) < 0)
			return -1;
	return 0;
}

/* "exec timeout ... PROG cp -a SRC DST" */
static void side_command(struct side *s, const char *prog, const char *src, const char *dst)
{
	snprintf(s->cmd, sizeof(s->cmd), "exec timeout -k 5 %d ", RUN_TIMEOUT);
	peer_add_quoted(s->cmd, sizeof(s->cmd), prog);
	peer_add(s->cmd, sizeof(s->cmd), "%s -a ", strcmp(prog, "cp") ? " cp" : "");
	peer_add_quoted(s->cmd, sizeof(s->cmd), src);
	peer_add(s->cmd, sizeof(s->cmd), " ");
	peer_add_quoted(s->cmd, sizeof(s->cmd), dst);
}

/* The last copy goes, and its writeback with it: a round must not pay
 * for the one before. */
static void clear(const char *dst, int sync_fd)
{
	char cmd[4400] = "exec rm -rf ";

	peer_add_quoted(cmd, sizeof(cmd), dst);
	bench_sh(cmd, NULL, NULL);
	if (sync_fd >= 0)
		syncfs(sync_fd);
}

static void run_side(struct side *s, const char *dst, int sync_fd)
{
	double wall, cpu;
	int st;

	if (s->status)
		return;
	clear(dst, sync_fd);
	st = bench_sh(s->cmd, &wall, &cpu);
	if (st) {
		s->status = st;
		return;
	}
	s->wall[s->runs] = wall;
	s->cpu[s->runs++] = cpu;
}

static double median(const double *v, int n)
{
	double s[TREE_ROUNDS];

	memcpy(s, v, (size_t)n * sizeof(*v));
	bench_sort(s, n);
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

static double best(const double *v, int n)
{
	double m = v[0];

	for (int i = 1; i < n; i++)
		if (v[i] < m)
			m = v[i];
	return m;
}

static void report_side(const char *item, const struct side *s, bool baseline, double gib)
{
	char note[160];

	if (s->status) {
		bench_skip("cp", item, s->name, "exit status %d", s->status);
		return;
	}
	snprintf(note, sizeof(note),
		 "0-16 KiB each; median of %d rounds (best %.3f s); CPU %.3f s (best %.3f s)",
		 s->runs, best(s->wall, s->runs), median(s->cpu, s->runs),
		 best(s->cpu, s->runs));
	bench_row("cp", item, s->name, BENCH_SECS, median(s->wall, s->runs),
		  median(s->cpu, s->runs) / gib, baseline, note);
}

static const char cpu_what[] = "psplice cp -a vs cp -a, tree of small files, CPU";
static const char wall_what[] = "psplice cp -a vs cp -a, tree of small files, wall";

/* The item and its targets not measured, and why. */
static void tree_skip(const char *item, const char *fmt, ...)
{
	char why[100];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	bench_skip("cp", item, "all", "%s", why);
	bench_target_missing(cpu_what, 0.8, false, why);
	bench_target_missing(wall_what, 1.0, false, why);
}

static void tree_targets(const char *item, const struct side *cp, const struct side *ps)
{
	char why[160];

	if (cp->status || ps->status || !cp->runs || !ps->runs) {
		bench_target_missing(cpu_what, 0.8, false, "not measured: a copy failed");
		bench_target_missing(wall_what, 1.0, false, "not measured: a copy failed");
		return;
	}
	snprintf(why, sizeof(why), "median CPU seconds over %d rounds (%s)", ps->runs, item);
	bench_target_ratio_of(cpu_what, median(ps->cpu, ps->runs) / median(cp->cpu, cp->runs),
			      0.8, false, why);
	snprintf(why, sizeof(why), "median wall seconds over %d rounds (%s)", ps->runs, item);
	bench_target_ratio_of(wall_what,
			      median(ps->wall, ps->runs) / median(cp->wall, cp->runs), 1.0,
			      false, why);
}

/* Rounds of both, cp first in one round and psplice first in the next, so
 * that neither always meets what the other left behind. */
static void run_tree(const struct bench_opts *o, const char *item, const char *src,
		     const char *dst, uint64_t bytes)
{
	struct side cp = { .name = "cp -a" }, ps = { .name = "psplice cp -a" };
	int rounds = o->quick ? 5 : 9;
	int sync_fd = open(o->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	side_command(&cp, "cp", src, dst);
	side_command(&ps, o->self, src, dst);
	for (int r = 0; r < rounds && r < TREE_ROUNDS; r++) {
		run_side(r % 2 ? &ps : &cp, dst, sync_fd);
		run_side(r % 2 ? &cp : &ps, dst, sync_fd);
	}
	clear(dst, sync_fd);
	if (sync_fd >= 0)
		close(sync_fd);
	report_side(item, &cp, true, (double)bytes / BENCH_GiB);
	report_side(item, &ps, false, (double)bytes / BENCH_GiB);
	tree_targets(item, &cp, &ps);
}

/* On a tmpfs, where the copy costs its system calls and nothing else: on
 * ext4, a tree made again where one was just removed spends most of its
 * time looking for inodes not recently deleted (recently_deleted), in cp
 * and psplice alike, whatever either does. */
static void tree_in(const struct bench_opts *o, const char *dir, const char *item, int nfiles)
{
	struct bench_opts on = *o;
	char src[4200], dst[4200];
	uint64_t bytes = 0;

	on.dir = dir;
	peer_join(src, sizeof(src), dir, "peers-tree.src");
	peer_join(dst, sizeof(dst), dir, "peers-tree.dst");
	if (make_tree(src, nfiles, &bytes) < 0)
		tree_skip(item, "cannot make the tree: %s", strerror(errno));
	else
		run_tree(&on, item, src, dst, bytes);
	clear(src, -1);
}

void peer_cp_tree(const struct bench_opts *o)
{
	int nfiles = o->quick ? 5000 : 20000;
	char item[64], dir[4096], why[100];
	int mounted;

	snprintf(item, sizeof(item), "tmpfs tree, %d files", nfiles);
	if (bench_sh("cp --version 2>/dev/null | grep -q 'GNU coreutils'", NULL, NULL) != 0) {
		tree_skip(item, "cp is not GNU cp");
		return;
	}
	/* The tree twice, and room for the filesystem's own pages. */
	mounted = peer_tmpfs_dir(o, 2 * (uint64_t)nfiles * TREE_MAX + 64 * MiB, dir,
				 sizeof(dir), why, sizeof(why));
	if (mounted < 0) {
		tree_skip(item, "%s", why);
		return;
	}
	tree_in(o, dir, item, nfiles);
	if (mounted)
		peer_unmount(dir);
	rmdir(dir);
}
