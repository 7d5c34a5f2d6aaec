/* psplice_sync semantics: every flag combination reaches exactly the level
 * the contract promises, on ext4 (the scratch directory), and none on tmpfs,
 * where nothing survives a power loss; ranges,
 * nbytes = 0 to the end of the file, and the kernel's errors. */
#include <fcntl.h>
#include <limits.h>
#include <sys/socket.h>
#include <unistd.h>

#include "t.h"

#define RANGE_ALL (PSPLICE_SYNC_WAIT_BEFORE | PSPLICE_SYNC_WRITE | PSPLICE_SYNC_WAIT_AFTER)
#define FILE_SIZE (256 << 10)
#define NOT_SET ((enum psplice_sync_level)77)

/* The contract, from the strongest request down: fsync, fdatasync, all
 * three range flags (every dirty page written and waited on), WRITE
 * (writeback started); waits alone start nothing. */
static bool memory_fs; /* the directory under test is tmpfs */

static enum psplice_sync_level promised(unsigned int flags)
{
	if (memory_fs)
		return PSPLICE_LEVEL_NONE;
	if (flags & PSPLICE_SYNC_METADATA)
		return PSPLICE_LEVEL_FILE_DURABLE;
	if (flags & PSPLICE_SYNC_DATA)
		return PSPLICE_LEVEL_DATA_DURABLE;
	if ((flags & RANGE_ALL) == RANGE_ALL)
		return PSPLICE_LEVEL_WRITTEN;
	if (flags & PSPLICE_SYNC_WRITE)
		return PSPLICE_LEVEL_SUBMITTED;
	return PSPLICE_LEVEL_NONE;
}

static void sync_ok(const char *where, int fd, int64_t off, int64_t n, unsigned int flags)
{
	enum psplice_sync_level got = NOT_SET, want = promised(flags);

	errno = 0;
	if (psplice_sync(fd, off, n, flags, &got) != 0)
		T_FAILED("%s: psplice_sync(off %lld, n %lld, flags %#x): %s", where,
			 (long long)off, (long long)n, flags, strerror(errno));
	if (got != want)
		T_FAILED("%s: psplice_sync(off %lld, n %lld, flags %#x) achieved %s, want %s",
			 where, (long long)off, (long long)n, flags,
			 psplice_sync_level_name(got), psplice_sync_level_name(want));
}

/* Each combination on freshly dirtied pages: the whole file, a range
 * inside it, one crossing its end and one wholly past it. */
static void all_combinations(const char *dir)
{
	char path[4200];
	unsigned int flags;
	int fd;

	snprintf(path, sizeof(path), "%s/combo", dir);
	for (flags = 0; flags < 32; flags++) {
		fd = t_make_file(path, FILE_SIZE, flags);
		sync_ok(dir, fd, 0, 0, flags);
		T_OK(pwrite(fd, "x", 1, 8192));
		sync_ok(dir, fd, 4096, 8192, flags);
		sync_ok(dir, fd, FILE_SIZE - 4096, 1 << 20, flags);
		sync_ok(dir, fd, (int64_t)1 << 40, 4096, flags);
		/* achieved may be NULL. */
		T_EQ(psplice_sync(fd, 0, 0, flags, NULL), 0);
		T_ASSERT(t_check_fd(fd, 16384, FILE_SIZE - 16384, flags, 16384));
		close(fd);
	}
}

#define sync_err(...) sync_err_at(__LINE__, __VA_ARGS__)
static void sync_err_at(int line, int fd, int64_t off, int64_t n, unsigned int flags, int err)
{
	enum psplice_sync_level got = NOT_SET;
	int r, e;

	errno = 0;
	r = psplice_sync(fd, off, n, flags, &got);
	e = errno;
	if (r != -1 || e != err)
		T_FAILED("line %d: psplice_sync(fd %d, off %lld, n %lld, flags %#x): want -1/%s, got %d/%s",
			 line, fd, (long long)off, (long long)n, flags, ps_errname(err),
			 r, e ? ps_errname(e) : "0");
	if (got != PSPLICE_LEVEL_NONE)
		T_FAILED("line %d: failed psplice_sync achieved %s, want none", line,
			 psplice_sync_level_name(got));
}

static void bad_fds(void)
{
	int p[2], s[2], fd;

	sync_err(-1, 0, 0, PSPLICE_SYNC_DATA, EBADF);
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	T_OK(fd);
	sync_err(fd, 0, 0, RANGE_ALL, ESPIPE);
	sync_err(fd, 0, 0, 0, ESPIPE);
	close(fd);
	sync_err(fd, 0, 0, RANGE_ALL, EBADF);
	t_pipe(p);
	sync_err(p[0], 0, 0, RANGE_ALL, ESPIPE);
	sync_err(p[1], 0, 0, PSPLICE_SYNC_METADATA, ESPIPE);
	/* As in the kernel, bad arguments are EINVAL even on a pipe. */
	sync_err(p[1], -1, 0, PSPLICE_SYNC_WRITE, EINVAL);
	sync_err(p[1], 0, 0, 32, EINVAL);
	t_unix_pair(s);
	sync_err(s[0], 0, 0, PSPLICE_SYNC_WRITE, ESPIPE);
	close(s[0]), close(s[1]);
	t_tcp_pair(s);
	sync_err(s[1], 0, 4096, PSPLICE_SYNC_DATA, ESPIPE);
	close(s[0]), close(s[1]);
	close(p[0]), close(p[1]);
}

static void bad_args(int fd)
{
	sync_err(fd, 0, 0, 32, EINVAL);
	sync_err(fd, 0, 0, RANGE_ALL | 64, EINVAL);
	sync_err(fd, 0, 0, 1u << 31, EINVAL);
	sync_err(fd, -1, 0, RANGE_ALL, EINVAL);
	sync_err(fd, INT64_MIN, 4096, PSPLICE_SYNC_DATA, EINVAL);
	sync_err(fd, 0, -1, RANGE_ALL, EINVAL);
	sync_err(fd, 4096, INT64_MIN, 0, EINVAL);
	sync_err(fd, INT64_MAX, 1, RANGE_ALL, EINVAL);
	sync_err(fd, 1, INT64_MAX, PSPLICE_SYNC_WRITE, EINVAL);
	sync_err(fd, INT64_MAX / 2 + 1, INT64_MAX / 2 + 1, 0, EINVAL);
	/* The largest ranges the kernel accepts end exactly at INT64_MAX. */
	sync_ok("edge", fd, INT64_MAX - 4096, 4096, RANGE_ALL);
	sync_ok("edge", fd, INT64_MAX, 0, RANGE_ALL | PSPLICE_SYNC_DATA);
	sync_ok("edge", fd, 0, INT64_MAX, RANGE_ALL);
}

static void level_names(void)
{
	static const char *const names[] = {
		"none", "submitted", "written", "data-durable", "file-durable"
	};
	int levels[] = {
		PSPLICE_LEVEL_NONE, PSPLICE_LEVEL_SUBMITTED, PSPLICE_LEVEL_WRITTEN,
		PSPLICE_LEVEL_DATA_DURABLE, PSPLICE_LEVEL_FILE_DURABLE
	};

	for (int i = 0; i < 5; i++)
		if (strcmp(psplice_sync_level_name(levels[i]), names[i]))
			T_FAILED("level %d is named \"%s\", want \"%s\"", levels[i],
				 psplice_sync_level_name(levels[i]), names[i]);
	T_EQ(strcmp(psplice_sync_level_name(-1), "?"), 0);
	T_EQ(strcmp(psplice_sync_level_name(PSPLICE_LEVEL_FILE_DURABLE + 1), "?"), 0);
	T_EQ(strcmp(psplice_sync_level_name(INT_MAX), "?"), 0);
	T_EQ(strcmp(psplice_sync_level_name(INT_MIN), "?"), 0);
}

/* A read-only descriptor can be synced, as with fsync(2). */
static void read_only(void)
{
	int fd = open(t_path("combo"), O_RDONLY | O_CLOEXEC);

	T_OK(fd);
	sync_ok("read-only fd", fd, 0, 0, RANGE_ALL | PSPLICE_SYNC_DATA);
	sync_ok("read-only fd", fd, 0, 0, RANGE_ALL);
	sync_ok("read-only fd", fd, 0, 0, PSPLICE_SYNC_WRITE);
	close(fd);
}

/* A directory's entries are filesystem metadata, outside its page cache:
 * the range flags would write nothing, so a wait is kept by fdatasync and
 * starting writeback alone claims nothing. */
static enum psplice_sync_level promised_dir(unsigned int flags)
{
	if (memory_fs)
		return PSPLICE_LEVEL_NONE;
	if (flags & PSPLICE_SYNC_METADATA)
		return PSPLICE_LEVEL_FILE_DURABLE;
	if (flags & (PSPLICE_SYNC_DATA | PSPLICE_SYNC_WAIT_AFTER))
		return PSPLICE_LEVEL_DATA_DURABLE;
	return PSPLICE_LEVEL_NONE;
}

static void directory(const char *dir)
{
	enum psplice_sync_level got;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char name[4200];

	T_OK(fd);
	for (unsigned int flags = 0; flags < 32; flags++) {
		snprintf(name, sizeof(name), "%s/entry-%u", dir, flags);
		close(t_make_file(name, 0, 0));
		got = NOT_SET;
		if (psplice_sync(fd, 0, 0, flags, &got) != 0)
			T_FAILED("%s: directory, flags %#x: %s", dir, flags, strerror(errno));
		if (got != promised_dir(flags))
			T_FAILED("%s: directory, flags %#x achieved %s, want %s", dir, flags,
				 psplice_sync_level_name(got),
				 psplice_sync_level_name(promised_dir(flags)));
	}
	close(fd);
}

static uint64_t unsettled(int fd, uint64_t off, uint64_t len)
{
	struct t_cache c;

	if (t_cachestat(fd, off, len, &c) < 0) {
		T_SKIP_IF(errno == ENOSYS, "cachestat(2) needs Linux 6.5 (range checks)");
		T_FAILED("cachestat: %s", strerror(errno));
	}
	return c.dirty + c.writeback;
}

/* What the range flags leave behind on ext4, counted by the page cache:
 * after all three, no page of the range is dirty or under writeback; with
 * nbytes = 0 that range runs to the end of the file. Only clean pages are
 * asserted: the flusher may clean more, never fewer. */
static void ranges_written(void)
{
	int fd = t_make_file(t_path("range"), 4 << 20, 7);

	sync_ok("range", fd, 1 << 20, 1 << 20, RANGE_ALL);
	T_EQ(unsettled(fd, 1 << 20, 1 << 20), 0);
	sync_ok("to eof", fd, 3 << 20, 0, RANGE_ALL);
	T_EQ(unsettled(fd, 3 << 20, 0), 0);
	sync_ok("past eof", fd, 2 << 20, 1 << 30, RANGE_ALL);
	T_EQ(unsettled(fd, 2 << 20, 0), 0);
	sync_ok("whole", fd, 0, 0, RANGE_ALL);
	T_EQ(unsettled(fd, 0, 0), 0);
	T_ASSERT(t_check_fd(fd, 0, 4 << 20, 7, 0));
	close(fd);
}

int main(int argc, char **argv)
{
	const char *dir = t_dir(argc, argv), *shm = t_tmpfs_dir();
	int fd;

	T_ASSERT(shm != NULL);
	level_names();
	all_combinations(dir);
	memory_fs = true;
	all_combinations(shm);
	memory_fs = false;
	fd = t_make_file(t_path("args"), FILE_SIZE, 3);
	bad_args(fd);
	close(fd);
	bad_fds();
	read_only();
	directory(dir);
	memory_fs = true;
	directory(shm);
	memory_fs = false;
	ranges_written();
	return T_PASS;
}
