/* psplice bench, group "cp", its XFS item: psplice cp --reflink=always and
 * cp --reflink=always sharing the extents of a file, against psplice cp
 * copying it, on an XFS made for the run in an image file and
 * loop-mounted (as root). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "bench_peers.h"

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
	peer_add_quoted(b, sizeof(buf[0]), s);
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
		return peer_fail(why, n, "needs root to mount an XFS image");
	if (!bench_have("mkfs.xfs") || !bench_have("mount"))
		return peer_fail(why, n, "mkfs.xfs (xfsprogs) or mount not found");
	if (statfs(o->dir, &s) < 0 ||
	    (uint64_t)s.f_bavail * (uint64_t)s.f_bsize < 2 * size + GiB)
		return peer_fail(why, n, "less than %s free in the scratch directory",
				 peer_size_text(2 * size + GiB));
	fd = open(x->img, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return peer_fail(why, n, "cannot make the image: %s", strerror(errno));
	x->made = true;
	if (ftruncate(fd, (off_t)img_size) < 0) {
		close(fd);
		return peer_fail(why, n, "cannot size the image: %s", strerror(errno));
	}
	close(fd);
	st = sh("exec timeout 60 mkfs.xfs -q -f -m reflink=1 %s", q(x->img));
	if (st)
		return peer_fail(why, n, "mkfs.xfs -m reflink=1: exit status %d", st);
	if (mkdir(x->mnt, 0700) < 0 && errno != EEXIST)
		return peer_fail(why, n, "mkdir: %s", strerror(errno));
	st = sh("exec timeout 60 mount -o loop,discard %s %s", q(x->img), q(x->mnt));
	if (st)
		return peer_fail(why, n, "mount -o loop,discard: exit status %d", st);
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
		peer_unmount(x->mnt);
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

	snprintf(what, sizeof(what), "reflink copy of %s, seconds%s",
		 peer_size_text(size), size == 4 * GiB ? "" : " (quick: the goal is for 4 GiB)");
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
		return peer_fail(why, n, "cannot write the source on XFS: %s", strerror(err));
	it->sync_fd = open(x->mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (it->sync_fd < 0)
		return peer_fail(why, n, "cannot open the mount point: %s", strerror(errno));
	return 0;
}

/* psplice cp and cp sharing the extents of a file of real data, against
 * psplice cp copying it; GiB/s of the file's size, so that the ratios
 * read as "times faster". */
void peer_cp_reflink(const struct bench_opts *o)
{
	uint64_t size = o->quick ? GiB : 4 * GiB;
	struct item it = { .group = "cp", .sync_fd = -1, .reps = o->quick ? 2 : 3,
			   .budget = o->secs * 2 };
	struct xfs x = { 0 };
	char src[4200], dst[4200], why[100] = "";

	it.max_reps = it.reps + 1;
	snprintf(it.name, sizeof(it.name), "XFS (loop) reflink, %s", peer_size_text(size));
	peer_join(x.img, sizeof(x.img), o->dir, "peers-xfs.img");
	peer_join(x.mnt, sizeof(x.mnt), o->dir, "peers-xfs");
	peer_join(src, sizeof(src), x.mnt, "src");
	peer_join(dst, sizeof(dst), x.mnt, "dst");
	it.src = src;
	it.dst = dst;
	peer_command(&it, peer_variant(&it, RL_PSPLICE, false, "GiB/s of the file's size"),
		     o->self, "cp --reflink=always");
	peer_command(&it, peer_variant(&it, RL_CP, false, "coreutils; GiB/s of the file's size"),
		     "cp", "--reflink=always");
	peer_command(&it, peer_variant(&it, RL_FULL, true, "the full copy; no fsync"),
		     o->self, "cp --reflink=never");
	if (xfs_ready(o, &x, &it, size, why, sizeof(why)) < 0) {
		peer_skip_item(&it, "%s", why);
	} else {
		it.bytes = size;
		peer_run_item(&it);
		peer_report(&it);
	}
	/* An open directory would keep the filesystem busy. */
	if (it.sync_fd >= 0)
		close(it.sync_fd);
	xfs_cleanup(&x);
	reflink_target(&it, size, why[0] ? why : NULL);
}
