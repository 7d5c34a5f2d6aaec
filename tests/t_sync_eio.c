/* Sticky writeback errors, with a real I/O error: a loop device whose image
 * file is made immutable, so every write the loop driver passes on fails.
 * The kernel reports such an error once per open file description, and a
 * later fsync(2) succeeds; psplice_sync keeps reporting it on that fd. A new
 * description of the device, once it works again, starts clean. */
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/loop.h> /* LOOP_CLR_FD */
#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "t.h"

#define RANGE_ALL (PSPLICE_SYNC_WAIT_BEFORE | PSPLICE_SYNC_WRITE | PSPLICE_SYNC_WAIT_AFTER)
#define IMAGE_SIZE ((off_t)64 << 20)
#define WRITE_SIZE ((size_t)1 << 20)

static char img_path[4200], loop_path[64];
static volatile sig_atomic_t immutable_set;
static int loop_fd = -1;

static int set_immutable(int fd, bool on)
{
	int flags;

	if (ioctl(fd, FS_IOC_GETFLAGS, &flags) < 0)
		return -1;
	flags = on ? flags | FS_IMMUTABLE_FL : flags & ~FS_IMMUTABLE_FL;
	return ioctl(fd, FS_IOC_SETFLAGS, &flags);
}

/* Undo what the test did to the system, with system calls alone: it also
 * runs from a signal handler. An immutable image could not be removed with
 * the scratch directory. The loop device was attached with AUTOCLEAR, so
 * it detaches once its last opener is gone, even after a crash. */
static void undo(void)
{
	int fd;

	if (immutable_set) {
		fd = open(img_path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0 && set_immutable(fd, false) == 0)
			immutable_set = 0;
		if (fd >= 0)
			close(fd);
	}
	if (loop_fd >= 0) {
		(void)ioctl(loop_fd, LOOP_CLR_FD, 0);
		close(loop_fd);
		loop_fd = -1;
	}
}

static void on_signal(int sig)
{
	undo();
	signal(sig, SIG_DFL);
	raise(sig);
}

static void attach(int img)
{
	loop_fd = t_loop_attach(img, loop_path, sizeof(loop_path));
	T_SKIP_IF(loop_fd < 0 && (errno == ENOENT || errno == ENODEV),
		  "no loop devices (%s)", strerror(errno));
	if (loop_fd < 0)
		T_FAILED("attaching %s to a loop device: %s", img_path, strerror(errno));
}

static void sync_fails(int fd, unsigned int flags, const char *what)
{
	enum psplice_sync_level got = PSPLICE_LEVEL_FILE_DURABLE;
	int r, e;

	errno = 0;
	r = psplice_sync(fd, 0, 0, flags, &got);
	e = errno;
	if (r != -1 || e != EIO)
		T_FAILED("%s: psplice_sync(flags %#x): want -1/EIO, got %d/%s", what, flags, r,
			 e ? ps_errname(e) : "0");
	T_EQ(got, PSPLICE_LEVEL_NONE);
}

/* A buffered write the device cannot keep: the first sync sees EIO, every
 * later one on that fd too, though fsync forgets it after one report. */
static int write_and_fail(off_t at, unsigned int flags, uint32_t seed)
{
	static uint8_t buf[WRITE_SIZE];
	int fd = open(loop_path, O_RDWR | O_CLOEXEC);

	T_OK(fd);
	t_gen(seed, 0, buf, sizeof(buf));
	T_EQ(pwrite(fd, buf, sizeof(buf), at), (ssize_t)sizeof(buf));
	sync_fails(fd, flags, "first sync");
	sync_fails(fd, flags, "second sync");
	T_EQ(fsync(fd), 0);
	sync_fails(fd, PSPLICE_SYNC_DATA, "after fsync");
	sync_fails(fd, 0, "flags 0");
	return fd;
}

/* The image is writable again; a new open of the device, which gets the
 * first failed fd's number back, writes and syncs cleanly, and the bytes
 * reach the image. */
static void recovered(int img, int old_fd, int other_fd)
{
	static uint8_t buf[WRITE_SIZE];
	enum psplice_sync_level got = PSPLICE_LEVEL_NONE;
	int fd;

	T_EQ(set_immutable(img, false), 0);
	immutable_set = 0;
	close(old_fd);
	close(other_fd);
	fd = open(loop_path, O_RDWR | O_CLOEXEC);
	T_EQ(fd, old_fd);
	t_gen(3, 0, buf, sizeof(buf));
	T_EQ(pwrite(fd, buf, sizeof(buf), 4 * (off_t)WRITE_SIZE), (ssize_t)sizeof(buf));
	T_OK(psplice_sync(fd, 0, 0, RANGE_ALL | PSPLICE_SYNC_DATA, &got));
	T_EQ(got, PSPLICE_LEVEL_DATA_DURABLE);
	T_ASSERT(t_check_fd(img, 4 * (off_t)WRITE_SIZE, WRITE_SIZE, 3, 0));
	close(fd);
}

int main(int argc, char **argv)
{
	int sigs[] = { SIGTERM, SIGINT, SIGHUP, SIGABRT, SIGSEGV };
	int img, fd_range, fd_data;

	t_dir(argc, argv);
	T_SKIP_IF(!t_root(), "needs root for a loop device and the immutable flag");
	snprintf(img_path, sizeof(img_path), "%s", t_path("image"));
	img = open(img_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	T_OK(img);
	T_OK(ftruncate(img, IMAGE_SIZE));
	atexit(undo); /* runs before the scratch directory is removed */
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		signal(sigs[i], on_signal);
	attach(img);
	immutable_set = 1;
	if (set_immutable(img, true) < 0) {
		immutable_set = 0;
		T_SKIP_IF(errno == ENOTTY || errno == EOPNOTSUPP,
			  "the scratch filesystem has no immutable flag");
		T_FAILED("FS_IOC_SETFLAGS: %s", strerror(errno));
	}
	/* The image refuses writes even through a descriptor opened before. */
	T_ERRNO(pwrite(img, "x", 1, 0), EPERM);

	fd_range = write_and_fail(0, RANGE_ALL, 1);
	fd_data = write_and_fail(2 * (off_t)WRITE_SIZE, PSPLICE_SYNC_DATA, 2);
	T_ASSERT(fd_data != fd_range);
	/* The first fd still reports its error after the second one's. */
	sync_fails(fd_range, RANGE_ALL, "first fd again");
	recovered(img, fd_range, fd_data);
	close(img);
	return T_PASS;
}
