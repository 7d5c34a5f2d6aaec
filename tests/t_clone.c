/* PSPLICE_F_REFLINK and PSPLICE_F_REFLINK_ONLY on a real XFS with reflink,
 * made by the test on a loop device in a mount namespace of its own (so a
 * killed test leaves no mount behind, and the loop device, set to clear
 * itself, goes with it). Clones share extents (FIEMAP says so) and read
 * back equal; ranges a clone cannot take fall back to a copy, or with
 * REFLINK_ONLY fail with EOPNOTSUPP having moved nothing. */
#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "t.h"

#define BIG ((uint64_t)64 << 20)
#define ODD ((uint64_t)(1u << 20) + 5)
#define BLK 4096
#define NEXT 64

static char mnt[4200];
static bool mounted;

static void unmount(void)
{
	if (mounted && umount2(mnt, 0) < 0)
		umount2(mnt, MNT_DETACH);
	mounted = false;
}

static void on_signal(int sig)
{
	(void)sig;
	exit(T_FAIL); /* through atexit: unmount first */
}

static int run(const char *cmd)
{
	int rc = system(cmd);

	if (rc != 0)
		fprintf(stderr, "'%s' exited %d\n", cmd, rc);
	return rc;
}

static void mount_xfs(void)
{
	char img[4200], cmd[9000];

	snprintf(img, sizeof(img), "%s", t_path("xfs.img"));
	snprintf(mnt, sizeof(mnt), "%s", t_path("xfs"));
	T_SKIP_IF(unshare(CLONE_NEWNS) < 0, "no mount namespace: %s", strerror(errno));
	T_OK(mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL));
	T_OK(mkdir(mnt, 0755));
	snprintf(cmd, sizeof(cmd), "truncate -s 512M '%s' && mkfs.xfs -q -f -m reflink=1 '%s'",
		 img, img);
	T_EQ(run(cmd), 0);
	atexit(unmount);
	signal(SIGTERM, on_signal);
	signal(SIGALRM, on_signal);
	snprintf(cmd, sizeof(cmd), "mount -o loop '%s' '%s'", img, mnt);
	T_EQ(run(cmd), 0);
	mounted = true;
}

static const char *on_xfs(const char *name)
{
	static char paths[4][4300];
	static int next;
	char *p = paths[next++ % 4];

	snprintf(p, sizeof(paths[0]), "%s/%s", mnt, name);
	return p;
}

static int create(const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	T_OK(fd);
	return fd;
}

/* How many extents map [off, off + len) of fd, and whether all are shared
 * with another file; -1 when FIEMAP fails. */
static int shared_extents(int fd, uint64_t off, uint64_t len, bool *all)
{
	/* The header and room for NEXT extents after it: a struct with a
	 * flexible array member may not be a field before another (a GNU
	 * extension that clang warns of). */
	union {
		struct fiemap m;
		char room[sizeof(struct fiemap) + NEXT * sizeof(struct fiemap_extent)];
	} f;
	uint64_t end = off + len;
	int n = 0;

	*all = true;
	for (int round = 0; round < 10000 && off < end; round++) {
		memset(&f, 0, sizeof(f));
		f.m.fm_start = off;
		f.m.fm_length = end - off;
		f.m.fm_flags = FIEMAP_FLAG_SYNC;
		f.m.fm_extent_count = NEXT;
		if (ioctl(fd, FS_IOC_FIEMAP, &f) < 0)
			return -1;
		if (!f.m.fm_mapped_extents)
			break;
		for (unsigned int i = 0; i < f.m.fm_mapped_extents; i++) {
			const struct fiemap_extent *e = &f.m.fm_extents[i];

			if (!(e->fe_flags & FIEMAP_EXTENT_SHARED))
				*all = false;
			n++;
			off = e->fe_logical + e->fe_length;
			if (e->fe_flags & FIEMAP_EXTENT_LAST)
				return n;
		}
	}
	return n;
}

static void assert_shared(int fd, uint64_t off, uint64_t len)
{
	bool all;
	int n = shared_extents(fd, off, len, &all);

	T_ASSERT(n > 0);
	T_ASSERT(all);
}

static void assert_size(int fd, uint64_t n)
{
	struct stat st;

	T_OK(fstat(fd, &st));
	T_EQ_U(st.st_size, n);
}

/* A whole file: cloned, with offsets and through the file positions. */
static void whole(void)
{
	const char *a = on_xfs("a"), *b = on_xfs("b"), *c = on_xfs("c");
	int in = t_make_file(a, BIG, 21), out = create(b), out2 = create(c);
	struct psplice_result r;
	int64_t oi = 0, oo = 0;
	bool all;

	T_OK(fsync(in));
	T_EQ(shared_extents(in, 0, BIG, &all) > 0, 1);
	T_ASSERT(!all); /* nothing shared yet: the check can fail */

	T_EQ(psplice_copy(in, &oi, out, &oo, PSPLICE_TO_EOF, PSPLICE_F_REFLINK, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, BIG, BIG);
	T_EQ(r.method, PSPLICE_METHOD_CLONE);
	T_EQ_U(oi, BIG);
	T_EQ_U(oo, BIG);
	T_EQ(t_pos(in), 0);
	assert_shared(out, 0, BIG);
	assert_shared(in, 0, BIG);
	T_ASSERT(t_check_file(b, BIG, 21));

	T_EQ(psplice_copy(in, NULL, out2, NULL, PSPLICE_TO_EOF, PSPLICE_F_REFLINK_ONLY, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, BIG, BIG);
	T_EQ(r.method, PSPLICE_METHOD_CLONE);
	T_EQ_U(t_pos(in), BIG);
	T_EQ_U(t_pos(out2), BIG);
	assert_shared(out2, 0, BIG);
	T_ASSERT(t_check_file(c, BIG, 21));
	close(in);
	close(out);
	close(out2);
}

/* A size that is not a block multiple: the range ends at end of file, which
 * a clone may; a single step clones it too. */
static void odd_size(void)
{
	const char *a = on_xfs("odd"), *b = on_xfs("odd.clone");
	int in = t_make_file(a, ODD, 22), out = create(b);
	int64_t oi = 0, oo = 0;

	T_OK(fsync(in));
	T_EQ(psplice(in, &oi, out, &oo, SIZE_MAX, PSPLICE_F_REFLINK_ONLY), (ssize_t)ODD);
	T_EQ(psplice_last()->method, PSPLICE_METHOD_CLONE);
	T_EQ_U(oi, ODD);
	assert_size(out, ODD);
	assert_shared(out, 0, ODD);
	T_ASSERT(t_check_file(b, ODD, 22));
	close(in);
	close(out);
}

/* A source that grows while it is cloned: the counts and the offsets say
 * what the clones shared, and the copy reaches the end the input has when
 * a step finds no more (as the other paths do). */
#define GROW_CHUNK (64u << 10)
#define GROW_TO (32u << 20)

static volatile int grown_done;
static size_t grow_by; /* a block multiple, or not */

static void *grow(void *arg)
{
	static unsigned char buf[GROW_CHUNK];
	int fd = *(int *)arg;

	/* Small steps: a shorter file, or the rounds would take long. */
	uint64_t to = grow_by == GROW_CHUNK ? GROW_TO : GROW_TO / 16;

	for (uint64_t off = GROW_CHUNK; off < to; off += grow_by) {
		t_gen(23, off, buf, grow_by);
		if (pwrite(fd, buf, grow_by, (off_t)off) != (ssize_t)grow_by)
			break;
		usleep(20);
	}
	grown_done = 1;
	return NULL;
}

static void growing(void)
{
	const char *a = on_xfs("grow"), *b = on_xfs("grow.clone");
	struct psplice_result r;
	int in, out;
	pthread_t th;
	struct stat st;
	int64_t oo = 0;

	for (int round = 0; round < 4; round++) {
		grow_by = round % 2 ? 1000 : GROW_CHUNK;
		in = t_make_file(a, GROW_CHUNK, 23);
		out = create(b);
		grown_done = 0;
		T_EQ(pthread_create(&th, NULL, grow, &in), 0);
		oo = 0;
		T_EQ(psplice_copy(in, NULL, out, &oo, PSPLICE_TO_EOF, PSPLICE_F_REFLINK_ONLY,
				  &r), 0);
		T_OK(fstat(out, &st));
		T_EQ_U(r.out_bytes, st.st_size);
		T_EQ_U(r.in_bytes, r.out_bytes);
		T_EQ(oo, st.st_size);
		T_EQ(t_pos(in), st.st_size);
		T_ASSERT(t_check_fd(out, 0, (uint64_t)st.st_size, 23, 0));
		pthread_join(th, NULL);
		close(in);
		close(out);
		/* A single step shares what it says, too, step after step. */
		in = t_make_file(a, GROW_CHUNK, 23);
		grown_done = 0;
		T_EQ(pthread_create(&th, NULL, grow, &in), 0);
		for (int steps = 0; !grown_done && steps < 100000; steps++) {
			int64_t oi = 0;
			ssize_t n;

			out = create(b);
			oo = 0;
			n = psplice_ex(in, &oi, out, &oo, SIZE_MAX, PSPLICE_F_REFLINK_ONLY, &r);
			T_ASSERT(n > 0);
			T_OK(fstat(out, &st));
			T_EQ(n, st.st_size);
			T_EQ(oo, n);
			T_EQ(oi, n);
			close(out);
		}
		pthread_join(th, NULL);
		close(in);
		close(out);
	}
}

/* Ranges inside a file. Block aligned: cloned. Unaligned: REFLINK falls
 * back to a copy, REFLINK_ONLY refuses and moves nothing. */
static void ranges(void)
{
	const char *a = on_xfs("src"), *b = on_xfs("ranges");
	int in = t_make_file(a, ODD, 23), out = create(b);
	struct psplice_result r;
	int64_t oi = 3 * BLK, oo = 5 * BLK;

	T_OK(fsync(in));
	T_EQ(psplice_copy(in, &oi, out, &oo, 10 * BLK, PSPLICE_F_REFLINK, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, 10 * BLK, 10 * BLK);
	T_EQ(r.method, PSPLICE_METHOD_CLONE);
	T_EQ(oi, 13 * BLK);
	T_EQ(oo, 15 * BLK);
	assert_shared(out, 5 * BLK, 10 * BLK);
	T_ASSERT(t_check_fd(out, 5 * BLK, 10 * BLK, 23, 3 * BLK));

	oi = 1000;
	oo = 20 * BLK + 7;
	T_EQ(psplice_copy(in, &oi, out, &oo, 100000, PSPLICE_F_REFLINK_ONLY, &r), -1);
	T_EQ(errno, EOPNOTSUPP);
	T_RESULT(r, EOPNOTSUPP, PSPLICE_SIDE_NONE, 0, 0);
	T_EQ(oi, 1000);
	T_EQ(oo, 20 * BLK + 7);
	assert_size(out, 15 * BLK);

	T_EQ(psplice_copy(in, &oi, out, &oo, 100000, PSPLICE_F_REFLINK, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, 100000, 100000);
	T_ASSERT(r.method != PSPLICE_METHOD_CLONE);
	T_EQ(oi, 101000);
	T_EQ(oo, 20 * BLK + 7 + 100000);
	T_ASSERT(t_check_fd(out, 20 * BLK + 7, 100000, 23, 1000));
	/* The clone before it is untouched. */
	T_ASSERT(t_check_fd(out, 5 * BLK, 10 * BLK, 23, 3 * BLK));
	close(in);
	close(out);
}

/* A filesystem without reflink (ext4, the scratch directory's here; or
 * tmpfs), and a clone across filesystems. */
static void no_reflink(const char *dir)
{
	char src[4200], dst[4200];
	int in, out, xout = create(on_xfs("cross"));
	struct psplice_result r;
	int64_t oi = 0, oo = 0;

	snprintf(src, sizeof(src), "%s/plain", dir);
	snprintf(dst, sizeof(dst), "%s/plain.out", dir);
	in = t_make_file(src, ODD, 24);
	out = create(dst);
	T_EQ(psplice_copy(in, &oi, out, &oo, PSPLICE_TO_EOF, PSPLICE_F_REFLINK_ONLY, &r), -1);
	T_EQ(errno, EOPNOTSUPP);
	T_RESULT(r, EOPNOTSUPP, PSPLICE_SIDE_NONE, 0, 0);
	T_EQ(oi, 0);
	T_EQ(oo, 0);
	assert_size(out, 0);
	T_ERRNO(psplice(in, NULL, out, NULL, 4096, PSPLICE_F_REFLINK_ONLY), EOPNOTSUPP);
	T_EQ(t_pos(in), 0);
	assert_size(out, 0);

	T_EQ(psplice_copy(in, &oi, xout, &oo, PSPLICE_TO_EOF, PSPLICE_F_REFLINK_ONLY, &r), -1);
	T_RESULT(r, EOPNOTSUPP, PSPLICE_SIDE_NONE, 0, 0);
	assert_size(xout, 0);

	/* Without ONLY, the copy happens by the next path. */
	T_EQ(psplice_copy(in, &oi, out, &oo, PSPLICE_TO_EOF, PSPLICE_F_REFLINK, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, ODD, ODD);
	T_EQ(r.method, PSPLICE_METHOD_COPY_FILE_RANGE);
	T_ASSERT(t_check_file(dst, ODD, 24));
	close(in);
	close(out);
	close(xout);
	unlink(src);
	unlink(dst);
}

/* After a filesystem without reflink refused a clone (no_reflink), which
 * the engine remembers so as not to ask it once a file, files on XFS are
 * shared still: the refusal is that filesystem's alone. And the one that
 * refused still refuses, by the same error. */
static void refusal_apart(const char *dir)
{
	const char *a = on_xfs("again"), *b = on_xfs("again.clone");
	char src[4200], dst[4200];
	int in = t_make_file(a, ODD, 25), out = create(b), pin, pout;
	struct psplice_result r;

	snprintf(src, sizeof(src), "%s/plain2", dir);
	snprintf(dst, sizeof(dst), "%s/plain2.out", dir);
	pin = t_make_file(src, 4096, 26);
	pout = create(dst);
	T_EQ(psplice_copy(pin, NULL, pout, NULL, PSPLICE_TO_EOF, PSPLICE_F_REFLINK, &r), 0);
	T_EQ(r.method, PSPLICE_METHOD_COPY_FILE_RANGE);

	T_EQ(psplice_copy(in, NULL, out, NULL, PSPLICE_TO_EOF, PSPLICE_F_REFLINK, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, ODD, ODD);
	T_EQ(r.method, PSPLICE_METHOD_CLONE);
	T_OK(fsync(out));
	assert_shared(out, 0, ODD);

	T_OK(ftruncate(pout, 0));
	T_EQ(psplice_copy(pin, &(int64_t){ 0 }, pout, &(int64_t){ 0 }, PSPLICE_TO_EOF,
			  PSPLICE_F_REFLINK_ONLY, &r), -1);
	T_RESULT(r, EOPNOTSUPP, PSPLICE_SIDE_NONE, 0, 0);
	close(in);
	close(out);
	close(pin);
	close(pout);
	unlink(src);
	unlink(dst);
}

int main(int argc, char **argv)
{
	const char *dir = t_dir(argc, argv);
	struct statfs s;

	T_SKIP_IF(!t_root(), "a loop mount needs root");
	T_SKIP_IF(system("command -v mkfs.xfs >/dev/null 2>&1") != 0,
		  "mkfs.xfs is missing (Debian package xfsprogs)");
	alarm(55);
	mount_xfs();
	whole();
	odd_size();
	growing();
	ranges();
	T_OK(statfs(dir, &s));
	if (s.f_type != EXT4_SUPER_MAGIC && s.f_type != TMPFS_MAGIC)
		dir = t_tmpfs_dir();
	T_ASSERT(dir != NULL);
	no_reflink(dir);
	refusal_apart(dir);
	unmount();
	return T_PASS;
}
