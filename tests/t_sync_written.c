/* WAIT_BEFORE|WRITE|WAIT_AFTER really writes: after 64 MiB of buffered
 * writes, the disk's sectors-written counter has risen by at least the dirty
 * amount by the time psplice_sync returns, and no page of the file is left
 * dirty or under writeback. WRITE alone starts the writeback and says so. */
#include <fcntl.h>
#include <unistd.h>

#include "t.h"

#define RANGE_ALL (PSPLICE_SYNC_WAIT_BEFORE | PSPLICE_SYNC_WRITE | PSPLICE_SYNC_WAIT_AFTER)
#define DIRTY ((uint64_t)64 << 20)

static uint64_t page;

static void written(const char *stat, int fd)
{
	enum psplice_sync_level got;
	int64_t before, after;
	uint64_t dirty;

	/* Dirty bytes are read after the counter: a page dirty now reaches
	 * the disk only later. */
	(void)t_keep_dirty(fd, DIRTY, DIRTY / 2);
	before = t_sectors_written(stat);
	dirty = t_dirty_bytes(fd, DIRTY);
	T_ASSERT(before >= 0);
	/* Less would mean something else already wrote most of the file
	 * back, and the counter would prove little. */
	T_ASSERT(dirty >= DIRTY / 2);
	T_EQ(psplice_sync(fd, 0, (int64_t)DIRTY, RANGE_ALL, &got), 0);
	after = t_sectors_written(stat);
	T_EQ(got, PSPLICE_LEVEL_WRITTEN);
	if ((uint64_t)(after - before) < dirty / 512)
		T_FAILED("%s: %lld sectors written during the call, want >= %llu", stat,
			 (long long)(after - before), (unsigned long long)(dirty / 512));
	t_assert_settled(fd);
}

static void submitted(int fd)
{
	enum psplice_sync_level got;
	struct t_cache c;

	T_EQ(psplice_sync(fd, 0, 0, PSPLICE_SYNC_WRITE, &got), 0);
	T_EQ(got, PSPLICE_LEVEL_SUBMITTED);
	/* Started: nothing of the file is waiting to be written. */
	if (t_cachestat(fd, 0, 0, &c) == 0)
		T_EQ(c.dirty, 0);
	T_EQ(psplice_sync(fd, 0, 0, RANGE_ALL, &got), 0);
	T_EQ(got, PSPLICE_LEVEL_WRITTEN);
	t_assert_settled(fd);
}

int main(int argc, char **argv)
{
	char stat[4200];
	int fd;

	t_dir(argc, argv);
	page = (uint64_t)sysconf(_SC_PAGESIZE);
	fd = t_make_file(t_path("probe"), 0, 0);
	T_SKIP_IF(!t_disk_stat(fd, stat, sizeof(stat)),
		  "the scratch directory's device has no /sys/block/DEV/stat");
	close(fd);
	fd = t_make_file(t_path("dirty"), DIRTY, 1);
	written(stat, fd);
	T_ASSERT(t_check_fd(fd, 0, DIRTY, 1, 0));
	close(fd);
	fd = t_make_file(t_path("dirty"), DIRTY, 2);
	submitted(fd);
	T_ASSERT(t_check_fd(fd, 0, DIRTY, 2, 0));
	close(fd);
	return T_PASS;
}
