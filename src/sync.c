/* Range sync: sync_file_range(2) with honest durability levels, fallbacks
 * where the call is missing or does nothing, and sticky writeback errors. */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "psplice.h"
#include "sys.h"

#define RANGE_FLAGS (PSPLICE_SYNC_WAIT_BEFORE | PSPLICE_SYNC_WRITE | PSPLICE_SYNC_WAIT_AFTER)
#define ALL_FLAGS (RANGE_FLAGS | PSPLICE_SYNC_DATA | PSPLICE_SYNC_METADATA)

#ifndef ZFS_SUPER_MAGIC
#define ZFS_SUPER_MAGIC 0x2fc12fc1
#endif
#ifndef FUSE_SUPER_MAGIC
#define FUSE_SUPER_MAGIC 0x65735546
#endif
#ifndef CIFS_SUPER_MAGIC
#define CIFS_SUPER_MAGIC 0xff534d42
#endif
#ifndef SMB2_SUPER_MAGIC
#define SMB2_SUPER_MAGIC 0xfe534d42
#endif
#ifndef CEPH_SUPER_MAGIC
#define CEPH_SUPER_MAGIC 0x00c36400
#endif
#ifndef V9FS_MAGIC
#define V9FS_MAGIC 0x01021997
#endif
#ifndef OVERLAYFS_SUPER_MAGIC
#define OVERLAYFS_SUPER_MAGIC 0x794c7630
#endif

static atomic_bool sfr_missing; /* ENOSYS (WSL1, seccomp): never ask again */

/* Filesystems on which sync_file_range does not write what it says: ZFS keeps
 * its data outside the page cache, network and FUSE filesystems may send
 * nothing, and overlayfs returns 0 without touching the upper file's pages
 * (seen over ext4 on Linux 6.18: 32 MiB stayed dirty until fdatasync).
 * Answers are remembered per filesystem. */
struct fs_memo {
	dev_t dev;
	bool known, honest;
};
static struct fs_memo fs_memo[16];
static pthread_mutex_t memo_lock = PTHREAD_MUTEX_INITIALIZER;

/* Writeback errors seen, per open file description: the kernel reports each
 * error to a description once (errseq_t, since Linux 4.13: merge 088737f44bbf
 * of Jeff Layton's writeback error handling), so a later fsync would succeed
 * and hide it.
 * User space cannot name a description, and an fd number reused for a new
 * open of the same file must not inherit the error; so the entry also
 * records the description's F_SETOWN owner, which is made this process when
 * it had none. A new description has none. The owner only matters for
 * O_ASYNC signals, which regular files and block devices never send, and
 * leases and dnotify, which set it themselves. */
struct wb_error {
	int fd, err;
	dev_t dev;
	ino_t ino;
	struct f_owner_ex owner; /* pid 0: could not be recorded */
};
static struct wb_error *errs;
static size_t nerrs;

static bool magic_is_honest(long magic)
{
	switch ((unsigned long)magic & 0xffffffffu) {
	case ZFS_SUPER_MAGIC: case FUSE_SUPER_MAGIC: case NFS_SUPER_MAGIC:
	case CIFS_SUPER_MAGIC: case SMB2_SUPER_MAGIC: case CEPH_SUPER_MAGIC:
	case V9FS_MAGIC: case OVERLAYFS_SUPER_MAGIC:
		return false;
	}
	return true;
}

static bool probe_honest(int fd)
{
	struct statfs sf;
	int r;

	if (fstatfs(fd, &sf) == 0 && !magic_is_honest(sf.f_type))
		return false;
	/* flags = 0 checks the arguments and does nothing else. */
	r = ps_sync_file_range(fd, 0, 0, 0);
	if (r == -ENOSYS)
		atomic_store(&sfr_missing, true);
	return r == 0;
}

static bool fs_honest(int fd, dev_t dev)
{
	struct fs_memo *m = &fs_memo[(unsigned long)dev % 16];
	bool honest;

	if (atomic_load(&sfr_missing))
		return false;
	pthread_mutex_lock(&memo_lock);
	if (m->known && m->dev == dev) {
		honest = m->honest;
		pthread_mutex_unlock(&memo_lock);
		return honest;
	}
	pthread_mutex_unlock(&memo_lock);
	honest = probe_honest(fd);
	pthread_mutex_lock(&memo_lock);
	*m = (struct fs_memo){ .dev = dev, .known = true, .honest = honest };
	pthread_mutex_unlock(&memo_lock);
	return honest;
}

static struct f_owner_ex owner_of(int fd)
{
	struct f_owner_ex o = { 0 };

	if (fcntl(fd, F_GETOWN_EX, &o) < 0)
		o.pid = 0;
	return o;
}

static bool same_owner(struct f_owner_ex a, struct f_owner_ex b)
{
	return a.type == b.type && a.pid == b.pid;
}

/* Called with memo_lock held. An entry whose fd now names another
 * description is dropped. */
static int sticky_find(int fd, const struct stat *st)
{
	for (size_t i = 0; i < nerrs; i++) {
		struct wb_error *e = &errs[i];

		if (e->fd != fd || e->dev != st->st_dev || e->ino != st->st_ino)
			continue;
		if (e->owner.pid == 0 || same_owner(e->owner, owner_of(fd)))
			return e->err;
		*e = errs[--nerrs];
		return 0;
	}
	return 0;
}

static int sticky_get(int fd, const struct stat *st)
{
	int err;

	pthread_mutex_lock(&memo_lock);
	err = sticky_find(fd, st);
	pthread_mutex_unlock(&memo_lock);
	return err;
}

/* The owner that will tell this description from a later one. */
static struct f_owner_ex mark_owner(int fd)
{
	struct f_owner_ex o = owner_of(fd);

	if (o.pid != 0)
		return o;
	o = (struct f_owner_ex){ .type = F_OWNER_PID, .pid = getpid() };
	if (fcntl(fd, F_SETOWN_EX, &o) < 0)
		o.pid = 0;
	return o;
}

static bool is_wb_error(int err)
{
	return err == EIO || err == ENOSPC || err == EDQUOT;
}

static void sticky_set(int fd, const struct stat *st, int err)
{
	struct wb_error *e;

	if (!is_wb_error(err))
		return;
	pthread_mutex_lock(&memo_lock);
	if (!sticky_find(fd, st)) {
		e = realloc(errs, (nerrs + 1) * sizeof(*errs));
		if (e) {
			errs = e;
			errs[nerrs++] = (struct wb_error){ .fd = fd, .err = err,
				.dev = st->st_dev, .ino = st->st_ino, .owner = mark_owner(fd) };
		}
	}
	pthread_mutex_unlock(&memo_lock);
}

static int check_args(int fd, int64_t off, int64_t n, unsigned int flags, struct stat *st)
{
	if (fstat(fd, st) < 0)
		return -EBADF;
	/* In the kernel's order: bad arguments are EINVAL even on a pipe. */
	if (flags & ~ALL_FLAGS)
		return -EINVAL;
	if (off < 0 || n < 0 || n > INT64_MAX - off)
		return -EINVAL;
	if (!S_ISREG(st->st_mode) && !S_ISBLK(st->st_mode) && !S_ISDIR(st->st_mode))
		return -ESPIPE;
	return 0;
}

/* The level the range flags reach when the kernel does what they say. Only
 * all three together write every page that was dirty (WB_SYNC_ALL); WRITE
 * alone skips pages already under writeback. */
static int range_level(unsigned int flags)
{
	if ((flags & RANGE_FLAGS) == RANGE_FLAGS)
		return PSPLICE_LEVEL_WRITTEN;
	return flags & PSPLICE_SYNC_WRITE ? PSPLICE_LEVEL_SUBMITTED : PSPLICE_LEVEL_NONE;
}

static int sync_range(int fd, const struct stat *st, int64_t off, int64_t n,
		      unsigned int flags, int *level)
{
	int r;

	if (!(flags & RANGE_FLAGS))
		return 0;
	/* A directory's entries live in the filesystem's metadata, not in
	 * its page cache: the call succeeds and writes nothing. */
	if (!S_ISDIR(st->st_mode) && fs_honest(fd, st->st_dev)) {
		r = ps_sync_file_range(fd, off, n, flags & RANGE_FLAGS);
		if (r == 0) {
			*level = range_level(flags);
			return 0;
		}
		if (r != -ENOSYS && r != -EINVAL)
			return r;
		if (r == -ENOSYS)
			atomic_store(&sfr_missing, true);
	}
	/* Waiting for writeback cannot be done here, so it is done the only
	 * honest way left: make the data durable. Starting writeback alone is
	 * a hint, and skipping it harms nothing. */
	if (!(flags & PSPLICE_SYNC_WAIT_AFTER))
		return 0;
	if (fdatasync(fd) < 0)
		return -errno;
	*level = PSPLICE_LEVEL_DATA_DURABLE;
	return 0;
}

static int sync_file(int fd, unsigned int flags, int *level)
{
	if (flags & PSPLICE_SYNC_METADATA) {
		if (fsync(fd) < 0)
			return -errno;
		*level = PSPLICE_LEVEL_FILE_DURABLE;
	} else if (flags & PSPLICE_SYNC_DATA) {
		if (*level >= PSPLICE_LEVEL_DATA_DURABLE)
			return 0;
		if (fdatasync(fd) < 0)
			return -errno;
		*level = PSPLICE_LEVEL_DATA_DURABLE;
	}
	return 0;
}

/* tmpfs and ramfs keep files in memory alone: the calls succeed, and
 * nothing of it would survive a power loss. A block device's node lives on
 * devtmpfs, and the device itself is what a sync reaches. */
static bool in_memory(int fd, const struct stat *st)
{
	struct statfs sf;

	if (S_ISBLK(st->st_mode))
		return false;
	return fstatfs(fd, &sf) == 0 && ((unsigned long)sf.f_type == TMPFS_MAGIC ||
					 (unsigned long)sf.f_type == RAMFS_MAGIC);
}

int psplice_sync(int fd, int64_t offset, int64_t nbytes, unsigned int flags,
		 enum psplice_sync_level *achieved)
{
	int level = PSPLICE_LEVEL_NONE, r;
	struct stat st;

	r = check_args(fd, offset, nbytes, flags, &st);
	if (r == 0)
		r = -sticky_get(fd, &st);
	if (r == 0)
		r = sync_range(fd, &st, offset, nbytes, flags, &level);
	if (r == 0)
		r = sync_file(fd, flags, &level);
	if (r < 0)
		sticky_set(fd, &st, -r);
	if (level > PSPLICE_LEVEL_NONE && in_memory(fd, &st))
		level = PSPLICE_LEVEL_NONE;
	if (achieved)
		*achieved = (enum psplice_sync_level)level;
	if (r < 0) {
		errno = -r;
		return -1;
	}
	return 0;
}

const char *psplice_sync_level_name(int level)
{
	static const char *const names[] = {
		"none", "submitted", "written", "data-durable", "file-durable"
	};

	if (level < 0 || level > PSPLICE_LEVEL_FILE_DURABLE)
		return "?";
	return names[level];
}
