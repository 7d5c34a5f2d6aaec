/* Files on a filesystem that keeps its data only in memory are not
 * followed. On tmpfs (also /dev/shm and memfd), ramfs and hugetlbfs the page
 * cache is the file itself: there is no disk to write back to, the kernel
 * gives these superblocks no backing device (noop_backing_dev_info, so
 * generic_fadvise in mm/fadvise.c ignores POSIX_FADV_DONTNEED and
 * sync_file_range starts no writeback), and every page stays until the file
 * is removed. Following such a file only cost calls: cat of a 2 GiB tmpfs
 * file under --read-behind made two more per read (an fstat and an lseek),
 * dd onto tmpfs the same per write (Linux 6.18).
 *
 * A file on a block device (st_dev's major number not 0) is on a disk and
 * costs nothing more to tell: that is ext4, XFS, and a filesystem on a RAM
 * disk (brd, zram) too, whose page cache is a second copy worth dropping.
 * The major number 0 alone does not say memory: btrfs, overlayfs, NFS and
 * FUSE have anonymous devices too. For those, the filesystem's type is
 * asked once (fstatfs) and kept per device, in a table without locks, as
 * any call here may come from a signal handler. Two threads meeting a new
 * filesystem at once may each ask; the answers agree. */
#include <linux/magic.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>

#include "track.h"

/* An entry: the device shifted left by 2, bit 1 set when the filesystem is
 * memory-only, bit 0 set when the entry is used. */
#define PL_NFS 64
static atomic_ullong fs_seen[PL_NFS];

static bool memory_magic(unsigned long magic)
{
	switch (magic & 0xffffffffu) {
	case TMPFS_MAGIC: case RAMFS_MAGIC: case HUGETLBFS_MAGIC:
		return true;
	}
	return false;
}

/* 0: not known (the table is full, or fstatfs failed); 1 or 2: no, yes. */
static int seen(uint64_t key)
{
	unsigned long long e;
	int i;

	for (i = 0; i < PL_NFS; i++) {
		e = atomic_load_explicit(&fs_seen[i], memory_order_relaxed);
		if (!e)
			return 0;
		if (e >> 2 == key)
			return e & 2 ? 2 : 1;
	}
	return 0;
}

static void remember(uint64_t key, bool mem)
{
	unsigned long long want = key << 2 | (mem ? 2 : 0) | 1, e;
	int i;

	for (i = 0; i < PL_NFS; i++) {
		e = 0;
		if (atomic_compare_exchange_strong(&fs_seen[i], &e, want) || e >> 2 == key)
			return;
	}
}

bool pl_memory_only(int fd, dev_t dev)
{
	uint64_t key = (uint64_t)dev;
	struct statfs sf;
	int k;
	bool mem;

	if (major(dev) != 0 || key >> 62)
		return false;
	k = seen(key);
	if (k)
		return k == 2;
	if (fstatfs(fd, &sf) < 0)
		return false;
	mem = memory_magic((unsigned long)sf.f_type);
	remember(key, mem);
	return mem;
}
