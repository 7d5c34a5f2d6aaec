/* Range sync: sync_file_range(2) with honest durability levels, fallbacks
 * where the call is missing or does nothing, and sticky writeback errors. */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "internal.h"
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

static atomic_bool sfr_missing; /* ENOSYS (WSL1, seccomp): never ask again */

/* Filesystems on which sync_file_range does not write what it says: ZFS keeps
 * its data outside the page cache, network and FUSE filesystems may send
 * nothing. Answers are remembered per filesystem. */
struct fs_memo {
	dev_t dev;
	bool known, honest;
};
static struct fs_memo fs_memo[16];
static pthread_mutex_t memo_lock = PTHREAD_MUTEX_INITIALIZER;

/* Writeback errors seen, per (fd, file): the kernel reports each error to a
 * file description once, so a later fsync would succeed and hide it. */
struct wb_error {
	int fd, err;
	dev_t dev;
	ino_t ino;
};
static struct wb_error *errs;
static size_t nerrs;

static bool magic_is_honest(long magic)
{
	switch ((unsigned long)magic & 0xffffffffu) {
	case ZFS_SUPER_MAGIC: case FUSE_SUPER_MAGIC: case NFS_SUPER_MAGIC:
	case CIFS_SUPER_MAGIC: case SMB2_SUPER_MAGIC: case CEPH_SUPER_MAGIC:
	case V9FS_MAGIC:
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

static int sticky_get(int fd, const struct stat *st)
{
	int err = 0;

	pthread_mutex_lock(&memo_lock);
	for (size_t i = 0; i < nerrs && !err; i++)
		if (errs[i].fd == fd && errs[i].dev == st->st_dev && errs[i].ino == st->st_ino)
			err = errs[i].err;
	pthread_mutex_unlock(&memo_lock);
	return err;
}

static bool is_wb_error(int err)
{
	return err == EIO || err == ENOSPC || err == EDQUOT;
}

static void sticky_set(int fd, const struct stat *st, int err)
{
	struct wb_error *e;

	if (!is_wb_error(err) || sticky_get(fd, st))
		return;
	pthread_mutex_lock(&memo_lock);
	e = realloc(errs, (nerrs + 1) * sizeof(*errs));
	if (e) {
		errs = e;
		errs[nerrs++] = (struct wb_error){ .fd = fd, .err = err,
						   .dev = st->st_dev, .ino = st->st_ino };
	}
	pthread_mutex_unlock(&memo_lock);
}

static int check_args(int fd, int64_t off, int64_t n, unsigned int flags, struct stat *st)
{
	if (fstat(fd, st) < 0)
		return -EBADF;
	if (flags & ~ALL_FLAGS)
		return -EINVAL;
	if (!S_ISREG(st->st_mode) && !S_ISBLK(st->st_mode) && !S_ISDIR(st->st_mode))
		return -ESPIPE;
	if (off < 0 || n < 0 || n > INT64_MAX - off)
		return -EINVAL;
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
	if (fs_honest(fd, st->st_dev)) {
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
