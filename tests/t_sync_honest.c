/* Where sync_file_range(2) returns 0 and writes nothing — a file on
 * overlayfs (its pages belong to the upper file), a directory (its entries
 * are filesystem metadata) — psplice_sync still claims only what happened:
 * a wait reaches the disk, and starting writeback claims nothing it did not
 * start. Measured on an ext4 of our own on a loop device, whose
 * sectors-written counter no other process moves. */
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "t.h"

#define RANGE_ALL (PSPLICE_SYNC_WAIT_BEFORE | PSPLICE_SYNC_WRITE | PSPLICE_SYNC_WAIT_AFTER)
#define DIRTY ((uint64_t)64 << 20)

static char stat_path[4200];
static uint64_t page;

/* An ext4 on a loop device over an image in the scratch directory,
 * initialised in full by mkfs so that no lazy init writes behind our back,
 * and with a journal commit interval longer than the test. */
static const char *make_fs(void)
{
	return t_mkfs_mount("fs", (uint64_t)512 << 20, "mkfs.ext4 -q -F -E lazy_itable_init=0,"
			    "lazy_journal_init=0,nodiscard", "ext4", "commit=600");
}

static uint64_t dirty_bytes(int fd)
{
	struct t_cache c;

	T_OK(t_cachestat(fd, 0, 0, &c));
	return c.dirty * page;
}

static uint64_t unsettled(int fd)
{
	struct t_cache c;

	T_OK(t_cachestat(fd, 0, 0, &c));
	return c.dirty + c.writeback;
}

/* Write DIRTY bytes to path and sync them with flags; the pages live in
 * page_path's file (the same file, or the upper file under overlayfs). A
 * level of WRITTEN or more needs the disk to have taken every page that was
 * dirty; SUBMITTED needs none to be left waiting. */
static void sync_claims(const char *what, const char *path, const char *page_path,
			unsigned int flags)
{
	enum psplice_sync_level got = PSPLICE_LEVEL_NONE;
	int fd = t_make_file(path, DIRTY, flags), pfd = open(page_path, O_RDONLY | O_CLOEXEC);
	int64_t before = t_sectors_written(stat_path), after;
	uint64_t dirty = dirty_bytes(pfd);

	T_OK(pfd);
	T_ASSERT(before >= 0);
	T_ASSERT(dirty >= DIRTY / 2);
	T_EQ(psplice_sync(fd, 0, 0, flags, &got), 0);
	after = t_sectors_written(stat_path);
	if (got >= PSPLICE_LEVEL_WRITTEN && (uint64_t)(after - before) < dirty / 512)
		T_FAILED("%s: flags %#x claimed %s after %lld sectors, want >= %llu", what, flags,
			 psplice_sync_level_name(got), (long long)(after - before),
			 (unsigned long long)(dirty / 512));
	if (got == PSPLICE_LEVEL_SUBMITTED && dirty_bytes(pfd) != 0)
		T_FAILED("%s: flags %#x claimed submitted, %llu bytes still dirty", what, flags,
			 (unsigned long long)dirty_bytes(pfd));
	if (flags & PSPLICE_SYNC_WAIT_AFTER) {
		T_ASSERT(got >= PSPLICE_LEVEL_WRITTEN);
		T_EQ(unsettled(pfd), 0);
	}
	T_ASSERT(t_check_fd(pfd, 0, DIRTY, flags, 0));
	close(pfd);
	close(fd);
}

/* A file on the loop device's ext4 itself: the counter works. */
static void plain(const char *fs)
{
	char path[4200];

	snprintf(path, sizeof(path), "%s/plain", fs);
	sync_claims("ext4", path, path, PSPLICE_SYNC_WRITE);
	sync_claims("ext4", path, path, RANGE_ALL);
}

/* Write-behind settles each chunk with the range flags: what it claims at
 * the end must hold for the pages that really hold the data. */
static void write_behind(const char *path, const char *page_path)
{
	static uint8_t buf[1 << 20];
	enum psplice_sync_level got = PSPLICE_LEVEL_NONE;
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644), pfd;
	struct psplice_wb *wb = psplice_wb_new(fd, sizeof(buf), 0);

	T_ASSERT(wb != NULL);
	for (uint64_t off = 0; off < DIRTY / 4; off += sizeof(buf)) {
		t_gen(4, off, buf, sizeof(buf));
		T_EQ(pwrite(fd, buf, sizeof(buf), (off_t)off), (ssize_t)sizeof(buf));
		T_OK(psplice_wb_wrote(wb, (int64_t)off, sizeof(buf)));
	}
	T_OK(psplice_wb_finish(wb, 0, &got));
	T_ASSERT(got >= PSPLICE_LEVEL_WRITTEN);
	pfd = open(page_path, O_RDONLY | O_CLOEXEC);
	T_OK(pfd);
	T_EQ(unsettled(pfd), 0);
	T_ASSERT(t_check_fd(pfd, 0, DIRTY / 4, 4, 0));
	close(pfd);
	close(fd);
}

static void overlay(const char *fs)
{
	char opts[13000], path[4200], upper[4200];
	const char *ov;

	snprintf(opts, sizeof(opts), "lowerdir=%s/lower,upperdir=%s/upper,workdir=%s/work",
		 fs, fs, fs);
	for (const char *d = "lower\0upper\0work\0"; *d; d += strlen(d) + 1) {
		snprintf(path, sizeof(path), "%s/%s", fs, d);
		T_OK(mkdir(path, 0755));
	}
	ov = t_mount("ov", "overlay", "overlay", opts);
	T_SKIP_IF(!ov && errno == ENODEV, "no overlayfs in this kernel");
	if (!ov)
		T_FAILED("mount overlay: %s", strerror(errno));
	snprintf(path, sizeof(path), "%s/f", ov);
	snprintf(upper, sizeof(upper), "%s/upper/f", fs);
	sync_claims("overlayfs", path, upper, PSPLICE_SYNC_WRITE);
	sync_claims("overlayfs", path, upper, RANGE_ALL);
	sync_claims("overlayfs", path, upper, PSPLICE_SYNC_WAIT_AFTER);
	write_behind(path, upper);
}

/* New entries sit in the running journal transaction: only a commit, from
 * fdatasync or fsync, puts them on the disk. */
static void directory(const char *fs)
{
	enum psplice_sync_level got = PSPLICE_LEVEL_FILE_DURABLE;
	char dir[4200], path[4400];
	int64_t before, after;
	int fd;

	snprintf(dir, sizeof(dir), "%s/dir", fs);
	T_OK(mkdir(dir, 0755));
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	T_OK(fd);
	for (int i = 0; i < 2000; i++) {
		snprintf(path, sizeof(path), "%s/an-entry-with-a-long-name-%06d", dir, i);
		close(t_make_file(path, 0, 0));
	}
	before = t_sectors_written(stat_path);
	T_EQ(psplice_sync(fd, 0, 0, PSPLICE_SYNC_WRITE | PSPLICE_SYNC_WAIT_BEFORE, &got), 0);
	after = t_sectors_written(stat_path);
	/* Nothing could be started, so nothing is claimed. */
	if (after == before)
		T_EQ(got, PSPLICE_LEVEL_NONE);
	T_EQ(psplice_sync(fd, 0, 0, RANGE_ALL, &got), 0);
	after = t_sectors_written(stat_path);
	T_ASSERT(got >= PSPLICE_LEVEL_WRITTEN);
	if (after <= before)
		T_FAILED("directory: claimed %s, and nothing was written",
			 psplice_sync_level_name(got));
	close(fd);
}

int main(int argc, char **argv)
{
	const char *fs;
	struct t_cache c;
	int fd;

	t_dir(argc, argv);
	page = (uint64_t)sysconf(_SC_PAGESIZE);
	T_SKIP_IF(!t_root(), "needs root to attach a loop device and mount");
	T_SKIP_IF(system("command -v mkfs.ext4 >/dev/null 2>&1") != 0,
		  "needs mkfs.ext4 (e2fsprogs)");
	fs = make_fs();
	fd = t_make_file(t_path("probe"), 0, 0);
	T_SKIP_IF(t_cachestat(fd, 0, 0, &c) < 0 && errno == ENOSYS,
		  "cachestat(2) needs Linux 6.5");
	close(fd);
	fd = open(fs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	T_OK(fd);
	T_ASSERT(t_disk_stat(fd, stat_path, sizeof(stat_path)) != NULL);
	T_ASSERT(strstr(stat_path, "/loop") != NULL);
	close(fd);
	plain(fs);
	overlay(fs);
	directory(fs);
	return T_PASS;
}
