/* psplice bench, group "cp": psplice cp against cp(1) and a read/write
 * loop, a cached file to a new one on the scratch filesystem and on a
 * tmpfs, until the copy is in the page cache or until it is durable;
 * reflinks on XFS (bench_reflink.c); and cp -a of a tree of small files
 * (bench_cptree.c). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_peers.h"

/* The item's name for the scratch filesystem. */
static const char *fs_name(const char *dir)
{
	const char *name = bench_fs_name(dir);

	return name && strcmp(name, "overlayfs") ? name : "scratch fs";
}

static void cp_target(const struct item *it)
{
	char what[96];

	snprintf(what, sizeof(what), "psplice cp vs cp, %s", it->name);
	bench_target_ratio(what, it->group, it->name, "psplice cp", "cp", false, 1.0, true);
}

static void cp_variants(struct item *it, const struct bench_opts *o)
{
	static const char *const wb = "write-behind past the dirty background threshold; no fsync";

	peer_command(it, peer_variant(it, "cp", true, "coreutils; no fsync"), "cp", "");
	peer_command(it, peer_variant(it, "psplice cp", false, wb), o->self, "cp");
	peer_command(it, peer_variant(it, "psplice cp --write-behind", false, "no fsync"),
		     o->self, "cp --write-behind");
	peer_variant(it, "read/write 128 KiB", false, "in-process loop; no fsync")->inproc = true;
}

/* "cp SRC DST && sync -d DST": coreutils' way to a durable copy. */
static void cp_then_sync(struct item *it, struct variant *v)
{
	char inner[sizeof(v->cmd) / 2] = "cp ";

	peer_add_quoted(inner, sizeof(inner), it->src);
	peer_add(inner, sizeof(inner), " ");
	peer_add_quoted(inner, sizeof(inner), it->dst);
	peer_add(inner, sizeof(inner), " && sync -d ");
	peer_add_quoted(inner, sizeof(inner), it->dst);
	peer_bash(v, inner, sizeof(inner));
}

/* The copy until its data is durable, where write-behind earns its keep:
 * cp leaves the whole file dirty for the final sync to write. */
static void cp_durable_variants(struct item *it, const struct bench_opts *o)
{
	cp_then_sync(it, peer_variant(it, "cp && sync -d", true, "coreutils, then fdatasync"));
	peer_command(it, peer_variant(it, "psplice cp --sync=data", false,
				      "write-behind on (past 8 MiB)"),
		     o->self, "cp --sync=data");
	peer_command(it, peer_variant(it, "psplice cp --no-write-behind --sync=data", false, ""),
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

	snprintf(it.name, sizeof(it.name), "%s, %s%s", fs, peer_size_text(size),
		 durable ? ", until durable" : "");
	peer_join(src, sizeof(src), dir, "peers-cp.src");
	peer_join(dst, sizeof(dst), dir, "peers-cp.dst");
	it.src = src;
	it.dst = dst;
	if (durable)
		cp_durable_variants(&it, o);
	else
		cp_variants(&it, o);
	it.sync_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (it.sync_fd < 0)
		peer_skip_item(&it, "cannot open the directory: %s", strerror(errno));
	else if (bench_make_file(src, size) < 0)
		peer_skip_item(&it, "cannot make the source: %s", strerror(errno));
	else {
		it.bytes = size;
		peer_run_item(&it);
		peer_report(&it);
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
static void cp_tmpfs(const struct bench_opts *o, uint64_t size)
{
	struct item it = { .group = "cp" };
	char dir[4096], why[100];
	int mounted;

	/* The copies on the scratch directory were on tmpfs already. */
	if (!strcmp(fs_name(o->dir), "tmpfs"))
		return;
	/* Source and copy, and room for the filesystem's own pages. */
	mounted = peer_tmpfs_dir(o, 2 * size + 64 * MiB, dir, sizeof(dir), why, sizeof(why));
	if (mounted < 0) {
		snprintf(it.name, sizeof(it.name), "tmpfs, %s", peer_size_text(size));
		cp_variants(&it, o);
		peer_skip_item(&it, "%s", why);
		cp_target(&it);
		return;
	}
	cp_in(o, dir, "tmpfs", size, false);
	if (mounted)
		peer_unmount(dir);
	rmdir(dir);
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
	peer_cp_reflink(o);
	peer_cp_tree(o);
}
