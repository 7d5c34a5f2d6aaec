/* Fallback honesty: with sync_file_range(2) forced off by a seccomp filter,
 * WAIT_AFTER still returns only once the data is on the disk (fdatasync ran:
 * the disk's sectors-written counter rose by the dirty amount) and says
 * DATA_DURABLE; a request that only starts writeback claims nothing; DATA
 * and METADATA work as before. */
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "t.h"

#define RANGE_ALL (PSPLICE_SYNC_WAIT_BEFORE | PSPLICE_SYNC_WRITE | PSPLICE_SYNC_WAIT_AFTER)
#define DIRTY ((uint64_t)64 << 20)

/* How the kernel path is off. ENOSYS is a kernel without the call (WSL1)
 * or a sandbox; EINVAL a refusal. With probe_passes, only calls that would
 * do something fail, while the flags = 0 probe succeeds: a filesystem or
 * sandbox that checks the arguments and refuses the work. The library then
 * learns it at the call itself, a path the other modes never reach. */
struct mode {
	const char *name;
	int err;
	bool probe_passes;
};

static const struct mode modes[] = {
	{ "ENOSYS", ENOSYS, false },
	{ "EINVAL", EINVAL, false },
	{ "EINVAL after the probe", EINVAL, true },
	{ "ENOSYS after the probe", ENOSYS, true },
};

static char stat_path[4200];

static void force_off(const struct mode *m)
{
	int r = 0;

	if (!m->probe_passes)
		r = t_seccomp_errno(SYS_sync_file_range, m->err, -1, 0);
	/* Argument 3 is flags; the library passes only the range flags. */
	for (uint64_t f = 1; f <= 7 && m->probe_passes && r == 0; f++)
		r = t_seccomp_errno(SYS_sync_file_range, m->err, 3, f);
	T_SKIP_IF(r < 0 && errno == ENOSYS, "no seccomp filter for this architecture");
	if (r < 0)
		T_FAILED("seccomp: %s", strerror(errno));
}

/* The filter is in force: the kernel refuses what the library would ask. */
static void assert_off(const struct mode *m, int fd)
{
	errno = 0;
	T_EQ(syscall(SYS_sync_file_range, fd, 0LL, 0LL, RANGE_ALL), -1);
	T_EQ(errno, m->err);
	errno = 0;
	T_EQ(syscall(SYS_sync_file_range, fd, 0LL, 0LL, 0u), m->probe_passes ? 0 : -1);
	T_EQ(errno, m->probe_passes ? 0 : m->err);
}

/* WAIT_AFTER alone on 64 MiB just written: the wait can only be kept by
 * making the data durable. */
static void wait_after(const struct mode *m, int fd)
{
	enum psplice_sync_level got;
	int64_t before, after;
	uint64_t dirty;

	(void)t_keep_dirty(fd, DIRTY, DIRTY / 2);
	before = t_sectors_written(stat_path);
	dirty = t_dirty_bytes(fd, DIRTY);
	T_ASSERT(before >= 0);
	T_ASSERT(dirty >= DIRTY / 2);
	T_EQ(psplice_sync(fd, 0, 0, PSPLICE_SYNC_WAIT_AFTER, &got), 0);
	after = t_sectors_written(stat_path);
	T_EQ(got, PSPLICE_LEVEL_DATA_DURABLE);
	if ((uint64_t)(after - before) < dirty / 512)
		T_FAILED("%s: %lld sectors written during the call, want >= %llu", m->name,
			 (long long)(after - before), (unsigned long long)(dirty / 512));
	t_assert_settled(fd);
}

/* With the kernel path off: fsync for METADATA, fdatasync for DATA or any
 * wait for writeback; starting writeback alone is skipped, and claimed so. */
static enum psplice_sync_level promised(unsigned int flags)
{
	if (flags & PSPLICE_SYNC_METADATA)
		return PSPLICE_LEVEL_FILE_DURABLE;
	if (flags & (PSPLICE_SYNC_DATA | PSPLICE_SYNC_WAIT_AFTER))
		return PSPLICE_LEVEL_DATA_DURABLE;
	return PSPLICE_LEVEL_NONE;
}

static void combinations(const struct mode *m, int fd)
{
	enum psplice_sync_level got;

	for (unsigned int flags = 0; flags < 32; flags++) {
		T_OK(pwrite(fd, "y", 1, (off_t)(flags * 4096)));
		got = (enum psplice_sync_level)77;
		if (psplice_sync(fd, 4096, 8192, flags, &got) != 0)
			T_FAILED("%s: flags %#x: %s", m->name, flags, strerror(errno));
		if (got != promised(flags))
			T_FAILED("%s: flags %#x achieved %s, want %s", m->name, flags,
				 psplice_sync_level_name(got),
				 psplice_sync_level_name(promised(flags)));
		if (got >= PSPLICE_LEVEL_DATA_DURABLE)
			t_assert_settled(fd);
	}
}

static void fallback(void *arg)
{
	const struct mode *m = arg;
	int fd;

	force_off(m);
	fd = t_make_file(t_path(m->name), DIRTY, (uint32_t)m->err);
	assert_off(m, fd);
	wait_after(m, fd);
	T_ASSERT(t_check_fd(fd, 0, DIRTY, (uint32_t)m->err, 0));
	combinations(m, fd);
	close(fd);
	/* The library learnt the kernel path is off; it still holds. */
	fd = t_make_file(t_path(m->name), DIRTY, 5);
	wait_after(m, fd);
	close(fd);
}

int main(int argc, char **argv)
{
	int fd, r;

	t_dir(argc, argv);
	fd = t_make_file(t_path("probe"), 0, 0);
	T_SKIP_IF(!t_disk_stat(fd, stat_path, sizeof(stat_path)),
		  "the scratch directory's device has no /sys/block/DEV/stat");
	close(fd);
	/* Each mode in a child of its own: a filter cannot be removed, and
	 * the library remembers what it learnt about the kernel. */
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		r = t_child(fallback, (void *)&modes[i]);
		if (r != T_PASS) {
			fprintf(stderr, "mode %s: exit %d\n", modes[i].name, r);
			return r;
		}
	}
	return T_PASS;
}
