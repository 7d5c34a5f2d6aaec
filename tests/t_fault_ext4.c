/* ENOSPC on a real disk filesystem: an ext4 made by mkfs.ext4 on a small
 * image file, attached to a loop device and mounted (as root; the mount
 * lives in the test's own mount namespace and the loop device detaches
 * itself once unmounted). t_fail_enospc does the same on tmpfs. Each way
 * into a file that fills up fails with ENOSPC on the output side, and the
 * counts are exact:
 * - file to file, by every mechanism, positional and by position: the
 *   output holds exactly out_bytes, the stream's prefix; the input's
 *   offset or position is just past the last delivered byte;
 * - a socket to file: undelivered bytes are parked, exactly the next
 *   bytes of the stream, and the socket holds the rest;
 * - a pipe to file (splice, no internal pipe): bytes not delivered are
 *   still in the pipe;
 * - a prepared pair socket to file: undelivered bytes are pending in the
 *   pair and taken back in order.
 * Freeing the space lets the copy finish from where it stopped. No fd is
 * left behind. */
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "t.h"

#define SEED 81
#define IMAGE ((uint64_t)32 << 20)
#define N ((uint64_t)48 << 20) /* more than the filesystem holds */
#define SOCK_N 600000u

static const char *fs;
static int src;

static const char *at(const char *name)
{
	return t_path_in(fs, name);
}

static int create(const char *name)
{
	int fd = open(at(name), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	T_OK(fd);
	return fd;
}

static uint64_t size_of(int fd)
{
	struct stat st;

	T_OK(fstat(fd, &st));
	return (uint64_t)st.st_size;
}

static void full_file(unsigned int flags, bool positional)
{
	struct psplice_result r;
	int out = create("full");
	int64_t oi = 0, oo = 0;

	T_OK(lseek(src, 0, SEEK_SET));
	T_EQ(psplice_copy(src, positional ? &oi : NULL, out, positional ? &oo : NULL,
			  PSPLICE_TO_EOF, flags, &r), -1);
	if (r.error != ENOSPC)
		T_FAILED("flags %#x%s: %s on side %s after %" PRIu64 " bytes by %s", flags,
			 positional ? ", positional" : "", strerror(r.error),
			 psplice_side_name(r.side), r.out_bytes, psplice_method_name(r.method));
	T_RESULT(r, ENOSPC, PSPLICE_SIDE_OUT, r.out_bytes, r.out_bytes);
	T_ASSERT(r.out_bytes > 0 && r.out_bytes < IMAGE);
	T_EQ_U(size_of(out), r.out_bytes);
	T_ASSERT(t_check_fd(out, 0, r.out_bytes, SEED, 0));
	if (positional) {
		T_EQ(oi, (int64_t)r.out_bytes);
		T_EQ(oo, (int64_t)r.out_bytes);
		T_EQ(t_pos(src), 0);
	} else {
		T_EQ(t_pos(src), (int64_t)r.out_bytes);
		T_EQ(t_pos(out), (int64_t)r.out_bytes);
	}
	close(out);
	T_OK(unlink(at("full")));
}

/* A file that leaves about `room` bytes free: the filesystem's own
 * bookkeeping decides the last blocks. */
static int filler(uint64_t room)
{
	int fd = create("filler");
	struct statvfs v;
	uint64_t avail;

	T_OK(statvfs(fs, &v));
	avail = (uint64_t)v.f_bavail * v.f_frsize;
	T_OK(fallocate(fd, 0, 0, (off_t)(avail > room ? avail - room : 0)));
	T_OK(statvfs(fs, &v));
	if (getenv("T_VERBOSE"))
		fprintf(stderr, "filler: %llu bytes free\n",
			(unsigned long long)v.f_bavail * v.f_frsize);
	return fd;
}

static void socket_in(bool pair)
{
	struct psplice_result r;
	struct psplice_pair *p = NULL;
	uint8_t *buf = malloc(SOCK_N);
	int u[2], out = create("sock"), fill = filler(256 << 10);
	uint64_t held;
	int rc;

	T_ASSERT(buf);
	t_unix_pair(u);
	T_OK(setsockopt(u[1], SOL_SOCKET, SO_SNDBUF, &(int){ 1 << 20 }, sizeof(int)));
	t_fill_fd(u[1], SOCK_N, SEED);
	close(u[1]);
	if (pair) {
		p = psplice_pair_new(u[0], out, 0);
		T_ASSERT(p);
		rc = psplice_pair_copy(p, NULL, NULL, PSPLICE_TO_EOF, 0, &r);
	} else {
		rc = psplice_copy(u[0], NULL, out, NULL, PSPLICE_TO_EOF, 0, &r);
	}
	T_EQ(rc, -1);
	T_EQ(r.error, ENOSPC);
	T_EQ(r.side, PSPLICE_SIDE_OUT);
	T_ASSERT(r.out_bytes < SOCK_N);
	T_EQ_U(size_of(out), r.out_bytes);
	T_ASSERT(t_check_fd(out, 0, r.out_bytes, SEED, 0));
	if (pair) {
		T_EQ(r.parked_len, 0);
		held = psplice_pair_pending(p);
		T_EQ_U(r.in_bytes, r.out_bytes + held);
		T_EQ(psplice_pair_take(p, buf, SOCK_N), (size_t)held);
		T_ASSERT(t_check_buf(buf, held, SEED, r.out_bytes));
		psplice_pair_free(p);
		T_EQ(psplice_last()->parked_len, 0);
	} else {
		held = r.parked_len;
		T_EQ_U(r.in_bytes, r.out_bytes + held);
		T_ASSERT(t_check_buf(r.parked, held, SEED, r.out_bytes));
	}
	t_check_rest(u[0], r.out_bytes + held, SOCK_N, SEED);
	close(u[0]);
	close(out);
	close(fill);
	T_OK(unlink(at("sock")));
	T_OK(unlink(at("filler")));
	free(buf);
}

/* splice(2) from the caller's pipe: what was not written stays in it. */
static void pipe_in(void)
{
	struct psplice_result r;
	int p[2], out = create("pipe"), fill = filler(256 << 10);
	uint8_t *buf = malloc(1 << 20);
	int queued;

	T_ASSERT(buf);
	t_pipe(p);
	T_OK(fcntl(p[1], F_SETPIPE_SZ, 1 << 20));
	t_fill_fd(p[1], 1 << 20, SEED);
	close(p[1]);
	T_EQ(psplice_copy(p[0], NULL, out, NULL, PSPLICE_TO_EOF, 0, &r), -1);
	T_RESULT(r, ENOSPC, PSPLICE_SIDE_OUT, r.out_bytes + r.parked_len, r.out_bytes);
	T_EQ(r.parked_len, 0);
	/* ext4 may refuse the whole of one splice of the pipe when the
	 * space falls short of it: nothing delivered, all still queued. */
	if (r.out_bytes)
		T_EQ(r.method, PSPLICE_METHOD_SPLICE);
	T_EQ_U(size_of(out), r.out_bytes);
	T_ASSERT(t_check_fd(out, 0, r.out_bytes, SEED, 0));
	queued = t_queued(p[0]);
	T_EQ_U(r.out_bytes + (uint64_t)queued, 1u << 20);
	T_EQ(read(p[0], buf, 1 << 20), queued);
	T_ASSERT(t_check_buf(buf, (size_t)queued, SEED, r.out_bytes));
	close(p[0]);
	close(out);
	close(fill);
	T_OK(unlink(at("pipe")));
	T_OK(unlink(at("filler")));
	free(buf);
}

/* Space freed: the copy goes on from where it stopped, to the end. */
static void resume(void)
{
	struct psplice_result r, r2;
	int out = create("resume"), fill = filler(1 << 20);

	T_OK(lseek(src, 0, SEEK_SET));
	T_EQ(psplice_copy(src, NULL, out, NULL, 4 << 20, 0, &r), -1);
	T_EQ(r.error, ENOSPC);
	close(fill);
	T_OK(unlink(at("filler")));
	T_EQ(psplice_copy(src, NULL, out, NULL, (4 << 20) - r.out_bytes, 0, &r2), 0);
	T_EQ_U(r.out_bytes + r2.out_bytes, 4u << 20);
	T_ASSERT(t_check_fd(out, 0, 4 << 20, SEED, 0));
	close(out);
	T_OK(unlink(at("resume")));
}

int main(int argc, char **argv)
{
	static const unsigned int ways[] = {
		0, PSPLICE_F_ONLY(PSPLICE_METHOD_COPY_FILE_RANGE),
		PSPLICE_F_ONLY(PSPLICE_METHOD_SENDFILE),
		PSPLICE_F_ONLY(PSPLICE_METHOD_SPLICE_PIPE),
		PSPLICE_F_ONLY(PSPLICE_METHOD_READWRITE)
	};
	int before;

	t_dir(argc, argv);
	T_SKIP_IF(!t_root(), "needs root to attach a loop device and mount");
	T_SKIP_IF(system("command -v mkfs.ext4 >/dev/null 2>&1") != 0,
		  "needs mkfs.ext4 (e2fsprogs)");
	alarm(250);
	fs = t_mkfs_mount("ext4", IMAGE, "mkfs.ext4 -q -F -m 0", "ext4", NULL);
	src = t_make_file(t_path("src"), N, SEED);
	before = t_count_fds();
	for (size_t w = 0; w < sizeof(ways) / sizeof(ways[0]); w++) {
		/* copy_file_range across filesystems may be refused (EXDEV):
		 * forced alone, it then says the pair is not supported. */
		if (ways[w] == PSPLICE_F_ONLY(PSPLICE_METHOD_COPY_FILE_RANGE)) {
			int probe = create("probe");
			struct psplice_result r;
			int rc = psplice_copy(src, &(int64_t){ 0 }, probe, NULL, 1, ways[w], &r);

			close(probe);
			if (rc < 0)
				continue;
		}
		full_file(ways[w], false);
		/* sendfile(2) writes at the output's position only. */
		if (ways[w] != PSPLICE_F_ONLY(PSPLICE_METHOD_SENDFILE))
			full_file(ways[w], true);
	}
	socket_in(false);
	socket_in(true);
	pipe_in();
	resume();
	T_ASSERT(t_count_fds() <= before + 2); /* this thread's internal pipe */
	close(src);
	return T_PASS;
}
