/* psplice bench, groups "cat" and "cp": the psplice CLI against the tools
 * people already use for the same job (cat, pv, cp), on the same cached
 * data in the same run. Each command runs through /bin/sh, so its wall
 * time includes starting it and its CPU time is that of every process it
 * waited for. Variants run interleaved (A B C A B C) so that they share
 * the machine's noise, and the fastest run of each counts. */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "bench.h"

#define MiB ((uint64_t)1 << 20)
#define GiB ((uint64_t)1 << 30)
#define RW_BUF (128 * 1024)
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

/* Append s to cmd in single quotes, for /bin/sh. */
static void add_quoted(char *cmd, size_t size, const char *s)
{
	size_t len = strlen(cmd);

	if (len + 1 < size)
		cmd[len++] = '\'';
	for (; *s && len + 5 < size; s++) {
		if (*s == '\'') {
			memcpy(cmd + len, "'\\''", 4);
			len += 4;
		} else {
			cmd[len++] = *s;
		}
	}
	if (len + 1 < size)
		cmd[len++] = '\'';
	cmd[len < size ? len : size - 1] = '\0';
}

static void add(char *cmd, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void add(char *cmd, size_t size, const char *fmt, ...)
{
	size_t len = strlen(cmd);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd + len, size - len, fmt, ap);
	va_end(ap);
}

static struct variant *variant(struct item *it, const char *name, bool baseline,
			       const char *note)
{
	struct variant *v = &it->v[it->n++];

	*v = (struct variant){ .name = name, .baseline = baseline, .note = note };
	return v;
}

/* add() and add_quoted() stop at the end of the buffer; a command cut
 * short there must not run (a long scratch path). */
static void check_len(struct variant *v, const char *buf, size_t size)
{
	if (strlen(buf) + 8 >= size)
		v->skip = "the command is too long (the scratch path?)";
}

/* "exec timeout ... prog": exec, so that no extra shell stays around, and
 * the CPU of everything timeout waited for still reaches wait4. */
static void timed_prefix(struct variant *v)
{
	snprintf(v->cmd, sizeof(v->cmd), "exec timeout -k 5 %d ", RUN_TIMEOUT);
}

/* A command of a program and the item's files: "prog args SRC DST". */
static void command(struct item *it, struct variant *v, const char *prog,
		    const char *args)
{
	timed_prefix(v);
	add_quoted(v->cmd, sizeof(v->cmd), prog);
	add(v->cmd, sizeof(v->cmd), " %s%s", args, *args ? " " : "");
	add_quoted(v->cmd, sizeof(v->cmd), it->src);
	add(v->cmd, sizeof(v->cmd), " ");
	add_quoted(v->cmd, sizeof(v->cmd), it->dst);
	check_len(v, v->cmd, sizeof(v->cmd));
}

/* "A FILE... | B > /dev/null" under bash with pipefail: dash, /bin/sh on
 * Debian, would tell only B's status, and a failing A must not pass for a
 * fast one. */
static void pipeline(struct variant *v, const char *a, const char *b,
		     const char *file, int copies)
{
	char inner[sizeof(v->cmd) / 2] = "set -o pipefail; ";

	add(inner, sizeof(inner), "%s", a);
	for (int i = 0; i < copies; i++) {
		add(inner, sizeof(inner), " ");
		add_quoted(inner, sizeof(inner), file);
	}
	add(inner, sizeof(inner), " | %s > /dev/null", b);
	timed_prefix(v);
	add(v->cmd, sizeof(v->cmd), "bash -c ");
	add_quoted(v->cmd, sizeof(v->cmd), inner);
	check_len(v, inner, sizeof(inner));
	check_len(v, v->cmd, sizeof(v->cmd));
}

/* What cp(1) would do without the kernel's help: read and write 128 KiB at
 * a time, the buffer size coreutils uses. 0, or an errno. */
static int rw_copy(const char *src, const char *dst)
{
	static char buf[RW_BUF];
	int in = open(src, O_RDONLY | O_CLOEXEC), out = -1, err = 0;
	ssize_t n, w;

	if (in < 0)
		return errno;
	out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (out < 0) {
		err = errno;
		goto out;
	}
	while ((n = read(in, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = errno;
			goto out;
		}
		for (ssize_t done = 0; done < n; done += w) {
			w = write(out, buf + done, (size_t)(n - done));
			if (w < 0 && errno == EINTR)
				w = 0;
			else if (w <= 0) {
				err = w < 0 ? errno : EIO;
				goto out;
			}
		}
	}
out:
	if (out >= 0 && close(out) < 0 && !err)
		err = errno;
	close(in);
	return err;
}

/* The destination of the previous run goes, and so does its writeback:
 * the dirty pages one run leaves behind must not be written on the next
 * one's time. */
static void settle(const struct item *it)
{
	if (it->dst)
		unlink(it->dst);
	if (it->sync_fd >= 0)
		syncfs(it->sync_fd);
}

static void run_once(const struct item *it, struct variant *v)
{
	double t0, c0, wall, cpu;
	int st;

	settle(it);
	if (v->inproc) {
		c0 = bench_cpu_thread();
		t0 = bench_now();
		st = rw_copy(it->src, it->dst);
		wall = bench_now() - t0;
		cpu = bench_cpu_thread() - c0;
	} else {
		st = bench_sh(v->cmd, &wall, &cpu);
	}
	if (st) {
		v->status = st;
		return;
	}
	if (!v->runs++ || wall < v->wall) {
		v->wall = wall;
		v->cpu = cpu;
	}
}

/* Rounds of every variant still standing, at least it->reps of them, and
 * up to max_reps while the item is within its time budget. */
static void run_item(struct item *it)
{
	double t0 = bench_now();

	for (int rep = 0; rep < it->max_reps; rep++) {
		if (rep >= it->reps && bench_now() - t0 > it->budget)
			break;
		for (int i = 0; i < it->n; i++)
			if (!it->v[i].status && !it->v[i].skip)
				run_once(it, &it->v[i]);
	}
	settle(it);
}

static void report(const struct item *it)
{
	double gib = (double)it->bytes / BENCH_GiB;
	const struct variant *v;
	char note[120];

	for (int i = 0; i < it->n; i++) {
		v = &it->v[i];
		if (v->skip)
			bench_skip(it->group, it->name, v->name, "%s", v->skip);
		else if (v->status == 124)
			bench_skip(it->group, it->name, v->name, "still running after %d s",
				   RUN_TIMEOUT);
		else if (v->status == -1 && !v->inproc)
			bench_skip(it->group, it->name, v->name, "could not start /bin/sh");
		else if (v->status && v->inproc)
			bench_skip(it->group, it->name, v->name, "%s", strerror(v->status));
		else if (v->status)
			bench_skip(it->group, it->name, v->name, "exit status %d", v->status);
		if (v->skip || v->status)
			continue;
		snprintf(note, sizeof(note), "%s%s%.4f s, best of %d", v->note,
			 *v->note ? "; " : "", v->wall, v->runs);
		bench_row(it->group, it->name, v->name, BENCH_GIBPS, gib / v->wall,
			  v->cpu / gib, v->baseline, note);
	}
}

static void skip_item(const struct item *it, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void skip_item(const struct item *it, const char *fmt, ...)
{
	char why[100];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	for (int i = 0; i < it->n; i++)
		bench_skip(it->group, it->name, it->v[i].name, "%s", why);
}

/* "512 MiB", "2 GiB" */
static const char *size_text(uint64_t size)
{
	static char buf[4][24];
	static int next;
	char *b = buf[next++ % 4];

	if (size % GiB == 0)
		snprintf(b, sizeof(buf[0]), "%llu GiB", (unsigned long long)(size / GiB));
	else
		snprintf(b, sizeof(buf[0]), "%llu MiB", (unsigned long long)(size / MiB));
	return b;
}

static void join(char *buf, size_t size, const char *dir, const char *name)
{
	snprintf(buf, size, "%s/%s", dir, name);
}

/* -------- cat: a cached file through two processes and a pipe -------- */

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

	pipeline(&probe, "cat", "cat", path, 1);
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
	add_quoted(self, sizeof(self), o->self);
	add(self, sizeof(self), " cat");
	pipeline(variant(it, CAT_PSPLICE, false, note), self, self, path, copies);
	pipeline(variant(it, CAT_CAT, true, note), "cat", "cat", path, copies);
	v = variant(it, CAT_PV, false, note);
	pipeline(v, "pv -q", "pv -q", path, copies);
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
		 size_text(size));
	join(path, sizeof(path), o->dir, "peers-cat.dat");
	if (!bench_have("bash")) {
		cat_variants(&it, o, path, 1);
		skip_item(&it, "bash not found (for the pipelines' exit status)");
		goto targets;
	}
	if (bench_make_file(path, size) < 0) {
		cat_variants(&it, o, path, 1);
		skip_item(&it, "cannot make the cached file: %s", strerror(errno));
		goto targets;
	}
	copies = cat_copies(path, size, want);
	it.bytes = size * (uint64_t)copies;
	cat_variants(&it, o, path, copies);
	run_item(&it);
	report(&it);
targets:
	unlink(path);
	bench_target_ratio("psplice cat|psplice cat vs pv|pv", it.group, it.name,
			   CAT_PSPLICE, CAT_PV, false, 1.0, true);
	bench_target_ratio("psplice cat|psplice cat vs cat|cat", it.group, it.name,
			   CAT_PSPLICE, CAT_CAT, false, 1.0, true);
}

/* -------- cp: a cached file to a new one on the same filesystem -------- */

static const char *fs_name(const char *dir)
{
	struct statfs s;

	if (statfs(dir, &s) < 0)
		return "scratch fs";
	switch ((unsigned long)s.f_type) {
	case EXT4_SUPER_MAGIC: return "ext4";
	case XFS_SUPER_MAGIC: return "xfs";
	case BTRFS_SUPER_MAGIC: return "btrfs";
	case TMPFS_MAGIC: return "tmpfs";
	default: return "scratch fs";
	}
}

static void cp_target(const struct item *it)
{
	char what[96];

	snprintf(what, sizeof(what), "psplice cp vs cp, %s", it->name);
	bench_target_ratio(what, it->group, it->name, "psplice cp", "cp", false, 1.0, true);
}

static void cp_variants(struct item *it, const struct bench_opts *o)
{
	command(it, variant(it, "cp", true, "coreutils; no fsync"), "cp", "");
	command(it, variant(it, "psplice cp", false,
			    "write-behind past the dirty background threshold; no fsync"),
		o->self, "cp");
	command(it, variant(it, "psplice cp --write-behind", false, "no fsync"),
		o->self, "cp --write-behind");
	variant(it, "read/write 128 KiB", false, "in-process loop; no fsync")->inproc = true;
}

/* "cp SRC DST && sync -d DST": coreutils' way to a durable copy. */
static void cp_then_sync(struct item *it, struct variant *v)
{
	char inner[sizeof(v->cmd) / 2] = "cp ";

	add_quoted(inner, sizeof(inner), it->src);
	add(inner, sizeof(inner), " ");
	add_quoted(inner, sizeof(inner), it->dst);
	add(inner, sizeof(inner), " && sync -d ");
	add_quoted(inner, sizeof(inner), it->dst);
	timed_prefix(v);
	add(v->cmd, sizeof(v->cmd), "bash -c ");
	add_quoted(v->cmd, sizeof(v->cmd), inner);
	check_len(v, inner, sizeof(inner));
	check_len(v, v->cmd, sizeof(v->cmd));
}

/* The copy until its data is durable, where write-behind earns its keep:
 * cp leaves the whole file dirty for the final sync to write. */
static void cp_durable_variants(struct item *it, const struct bench_opts *o)
{
	cp_then_sync(it, variant(it, "cp && sync -d", true, "coreutils, then fdatasync"));
	command(it, variant(it, "psplice cp --sync=data", false, "write-behind on (past 8 MiB)"),
		o->self, "cp --sync=data");
	command(it, variant(it, "psplice cp --no-write-behind --sync=data", false, ""),
		o->self, "cp --no-write-behind --sync=data");
}

/* cp, psplice cp and a read/write loop, each copying a cached file of size
 * bytes in dir to a new file there; the time of the copy only, or with
 * durable until the copy's data is durable. */
static void cp_in(const struct bench_opts *o, const char *dir, const char *fs,
		  uint64_t size, bool durable)
{
	struct item it = { .group = "cp", .reps = o->quick ? 2 : 3,
			   .max_reps = o->quick ? 4 : 6, .budget = o->secs * 2 };
	char src[4096], dst[4096];

	snprintf(it.name, sizeof(it.name), "%s, %s%s", fs, size_text(size),
		 durable ? ", until durable" : "");
	join(src, sizeof(src), dir, "peers-cp.src");
	join(dst, sizeof(dst), dir, "peers-cp.dst");
	it.src = src;
	it.dst = dst;
	if (durable)
		cp_durable_variants(&it, o);
	else
		cp_variants(&it, o);
	it.sync_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (it.sync_fd < 0)
		skip_item(&it, "cannot open the directory: %s", strerror(errno));
	else if (bench_make_file(src, size) < 0)
		skip_item(&it, "cannot make the source: %s", strerror(errno));
	else {
		it.bytes = size;
		run_item(&it);
		report(&it);
	}
	if (it.sync_fd >= 0)
		close(it.sync_fd);
	unlink(src);
	unlink(dst);
	if (durable)
		bench_target_ratio("psplice cp --sync=data vs cp && sync -d", it.group,
				   it.name, "psplice cp --sync=data", "cp && sync -d", false,
				   1.0, true);
	else
		cp_target(&it);
}

/* Unmount what we mounted: a file still open in it (a killed command's)
 * may keep it busy for a moment; detached at last, it goes when it is
 * free. */
static void unmount(const char *dir)
{
	for (int i = 0; i < 20; i++) {
		if (umount2(dir, 0) == 0 || errno != EBUSY)
			return;
		usleep(100000);
	}
	umount2(dir, MNT_DETACH);
}

/* why = the message; -1 */
static int fail(char *why, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail(char *why, size_t n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, n, fmt, ap);
	va_end(ap);
	return -1;
}

/* A tmpfs for the copy: our own mount, as root, so that it is empty and
 * large enough; else /dev/shm when it is a tmpfs with the room. 1 when
 * mounted, 0 when not, -1 with why. */
static int tmpfs_dir(const struct bench_opts *o, uint64_t need, char *dir, size_t n,
		     char *why, size_t wn)
{
	char opts[64];
	struct statfs s;

	if (o->root) {
		join(dir, n, o->dir, "peers-tmpfs");
		snprintf(opts, sizeof(opts), "size=%lluk,mode=0700",
			 (unsigned long long)(need >> 10));
		if ((mkdir(dir, 0700) < 0 && errno != EEXIST) ||
		    mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0) {
			fail(why, wn, "cannot mount a tmpfs: %s", strerror(errno));
			rmdir(dir);
			return -1;
		}
		return 1;
	}
	if (statfs("/dev/shm", &s) < 0 || (unsigned long)s.f_type != TMPFS_MAGIC ||
	    (uint64_t)s.f_bavail * (uint64_t)s.f_bsize < need)
		return fail(why, wn, "not root, and /dev/shm is no tmpfs with %s free",
			    size_text(need));
	snprintf(dir, n, "/dev/shm/psplice-bench.XXXXXX");
	if (!mkdtemp(dir))
		return fail(why, wn, "cannot make a directory in /dev/shm: %s",
			    strerror(errno));
	return 0;
}

static void cp_tmpfs(const struct bench_opts *o, uint64_t size)
{
	struct item it = { .group = "cp" };
	char dir[4096], why[100];
	int mounted;

	/* The copies on the scratch directory were on tmpfs already. */
	if (!strcmp(fs_name(o->dir), "tmpfs"))
		return;
	/* Source and copy, and room for the filesystem's own pages. */
	mounted = tmpfs_dir(o, 2 * size + 64 * MiB, dir, sizeof(dir), why, sizeof(why));
	if (mounted < 0) {
		snprintf(it.name, sizeof(it.name), "tmpfs, %s", size_text(size));
		cp_variants(&it, o);
		skip_item(&it, "%s", why);
		cp_target(&it);
		return;
	}
	cp_in(o, dir, "tmpfs", size, false);
	if (mounted)
		unmount(dir);
	rmdir(dir);
}

/* -------- cp --reflink on XFS: sharing extents against copying -------- */

#define RL_PSPLICE "psplice cp --reflink=always"
#define RL_CP "cp --reflink=always"
#define RL_FULL "psplice cp --reflink=never"

/* An XFS made for the run in an image file on the scratch filesystem. */
struct xfs {
	char img[4096], mnt[4096];
	bool made;      /* the image file */
	bool mounted;
};

/* s quoted for /bin/sh, in one of a few static buffers. */
static const char *q(const char *s)
{
	static char buf[3][8300];
	static int next;
	char *b = buf[next++ % 3];

	b[0] = '\0';
	add_quoted(b, sizeof(buf[0]), s);
	return b;
}

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[17000];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return bench_sh(cmd, NULL, NULL);
}

/* Room for the source and its full copy, and the log and metadata; the
 * image is sparse, and discard gives back what a deleted copy used. */
static int xfs_setup(const struct bench_opts *o, struct xfs *x, uint64_t size,
		     char *why, size_t n)
{
	uint64_t img_size = 2 * size + size / 2 + 512 * MiB;
	struct statfs s;
	int fd, st;

	if (!o->root)
		return fail(why, n, "needs root to mount an XFS image");
	if (!bench_have("mkfs.xfs") || !bench_have("mount"))
		return fail(why, n, "mkfs.xfs (xfsprogs) or mount not found");
	if (statfs(o->dir, &s) < 0 ||
	    (uint64_t)s.f_bavail * (uint64_t)s.f_bsize < 2 * size + GiB)
		return fail(why, n, "less than %s free in the scratch directory",
			    size_text(2 * size + GiB));
	fd = open(x->img, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return fail(why, n, "cannot make the image: %s", strerror(errno));
	x->made = true;
	if (ftruncate(fd, (off_t)img_size) < 0) {
		close(fd);
		return fail(why, n, "cannot size the image: %s", strerror(errno));
	}
	close(fd);
	st = sh("exec timeout 60 mkfs.xfs -q -f -m reflink=1 %s", q(x->img));
	if (st)
		return fail(why, n, "mkfs.xfs -m reflink=1: exit status %d", st);
	if (mkdir(x->mnt, 0700) < 0 && errno != EEXIST)
		return fail(why, n, "mkdir: %s", strerror(errno));
	st = sh("exec timeout 60 mount -o loop,discard %s %s", q(x->img), q(x->mnt));
	if (st)
		return fail(why, n, "mount -o loop,discard: exit status %d", st);
	x->mounted = true;
	return 0;
}

/* Whatever setup got to, undone. mount -o loop sets the loop device to
 * clear itself on unmount; one left bound to the image all the same (a
 * mount that failed half way) is detached by name. */
static void xfs_cleanup(struct xfs *x)
{
	if (!x->made)
		return;
	if (x->mounted)
		unmount(x->mnt);
	sh("for d in $(losetup -n -O NAME -j %s); do losetup -d \"$d\"; done",
	   q(x->img));
	rmdir(x->mnt);
	unlink(x->img);
}

/* The target: a reflink copy of 4 GiB in under 0.1 s. */
static void reflink_target(const struct item *it, uint64_t size, const char *skipped)
{
	const struct variant *v = &it->v[0];
	char what[96], why[160];

	snprintf(what, sizeof(what), "reflink copy of %s, seconds%s", size_text(size),
		 size == 4 * GiB ? "" : " (quick: the goal is for 4 GiB)");
	if (!v->runs || v->status || v->skip) {
		snprintf(why, sizeof(why), "%s", skipped ? skipped :
			 RL_PSPLICE " failed (see the cp rows)");
		bench_target_missing(what, 0.1, false, why);
		return;
	}
	snprintf(why, sizeof(why), RL_PSPLICE " on XFS (loop): wall time, starting "
		 "the process included; best of %d", v->runs);
	bench_target_value(what, v->wall, 0.1, false, why);
}

/* The source goes to the disk before anything is timed: a reflink of
 * dirty pages would write them back first, on its own time. */
static int make_source(const char *path, uint64_t size)
{
	int fd, err = 0;

	if (bench_make_file(path, size) < 0)
		return errno;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	if (fsync(fd) < 0)
		err = errno;
	close(fd);
	return err;
}

/* The XFS mounted, the item's source written on it and its directory
 * open for syncfs. -1 with why. */
static int xfs_ready(const struct bench_opts *o, struct xfs *x, struct item *it,
		     uint64_t size, char *why, size_t n)
{
	int err;

	if (xfs_setup(o, x, size, why, n) < 0)
		return -1;
	err = make_source(it->src, size);
	if (err)
		return fail(why, n, "cannot write the source on XFS: %s", strerror(err));
	it->sync_fd = open(x->mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (it->sync_fd < 0)
		return fail(why, n, "cannot open the mount point: %s", strerror(errno));
	return 0;
}

/* psplice cp and cp sharing the extents of a file of real data, against
 * psplice cp copying it; GiB/s of the file's size, so that the ratios
 * read as "times faster". */
static void cp_reflink(const struct bench_opts *o)
{
	uint64_t size = o->quick ? GiB : 4 * GiB;
	struct item it = { .group = "cp", .sync_fd = -1, .reps = o->quick ? 2 : 3,
			   .budget = o->secs * 2 };
	struct xfs x = { 0 };
	char src[4200], dst[4200], why[100] = "";

	it.max_reps = it.reps + 1;
	snprintf(it.name, sizeof(it.name), "XFS (loop) reflink, %s", size_text(size));
	join(x.img, sizeof(x.img), o->dir, "peers-xfs.img");
	join(x.mnt, sizeof(x.mnt), o->dir, "peers-xfs");
	join(src, sizeof(src), x.mnt, "src");
	join(dst, sizeof(dst), x.mnt, "dst");
	it.src = src;
	it.dst = dst;
	command(&it, variant(&it, RL_PSPLICE, false, "GiB/s of the file's size"), o->self,
		"cp --reflink=always");
	command(&it, variant(&it, RL_CP, false, "coreutils; GiB/s of the file's size"),
		"cp", "--reflink=always");
	command(&it, variant(&it, RL_FULL, true, "the full copy; no fsync"), o->self,
		"cp --reflink=never");
	if (xfs_ready(o, &x, &it, size, why, sizeof(why)) < 0) {
		skip_item(&it, "%s", why);
	} else {
		it.bytes = size;
		run_item(&it);
		report(&it);
	}
	/* An open directory would keep the filesystem busy. */
	if (it.sync_fd >= 0)
		close(it.sync_fd);
	xfs_cleanup(&x);
	reflink_target(&it, size, why[0] ? why : NULL);
}

void bench_peers_cp(const struct bench_opts *o)
{
	uint64_t size = o->quick ? 256 * MiB : GiB;

	/* Both below the dirty background threshold of most machines, where
	 * psplice cp leaves the copy to the page cache as cp does. */
	if (!o->quick)
		cp_in(o, o->dir, fs_name(o->dir), 256 * MiB, false);
	cp_in(o, o->dir, fs_name(o->dir), size, false);
	cp_in(o, o->dir, fs_name(o->dir), size, true);
	cp_tmpfs(o, size);
	cp_reflink(o);
}
