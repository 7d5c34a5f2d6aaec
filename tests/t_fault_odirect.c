/* O_DIRECT inputs and outputs, on the scratch filesystem (ext4 here) and
 * on tmpfs. What psplice does, as psplice(3) says:
 * - an O_DIRECT input is read to its end whatever its size: a last block
 *   shorter than the filesystem's is read by a path that takes it (the
 *   kernel refuses it to copy_file_range with EINVAL);
 * - an O_DIRECT output takes what its filesystem takes: where a write must
 *   be a multiple of the block size, the aligned part is delivered and the
 *   unaligned rest fails with EINVAL on the output side, with exact counts
 *   (a seekable input's position just past the last delivered byte, a
 *   stream's undelivered bytes parked). psplice never clears O_DIRECT on
 *   the caller's file description; the caller finishes the tail through an
 *   fd without it.
 * Every size here is a multiple of 1 MiB, or that plus 7 bytes. */
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "t.h"

#define SEED 51
#define MB ((uint64_t)1 << 20)
#define TAIL 7u

static const unsigned int ways[] = {
	0, PSPLICE_F_ONLY(PSPLICE_METHOD_SENDFILE),
	PSPLICE_F_ONLY(PSPLICE_METHOD_SPLICE_PIPE), PSPLICE_F_ONLY(PSPLICE_METHOD_READWRITE)
};
#define NWAYS (sizeof(ways) / sizeof(ways[0]))

static const char *dir;

static const char *at(const char *name)
{
	return t_path_in(dir, name);
}

static int open_direct(const char *name, int flags)
{
	return open(at(name), flags | O_DIRECT | O_CLOEXEC, 0644);
}

/* Whether this filesystem refuses an unaligned direct write. */
static bool strict(void)
{
	int fd = open_direct("probe", O_RDWR | O_CREAT | O_TRUNC);
	bool refused;

	T_OK(fd);
	refused = pwrite(fd, "0123456", TAIL, 0) < 0 && errno == EINVAL;
	close(fd);
	return refused;
}

static void direct_input(uint64_t size)
{
	struct psplice_result r;
	int in, out, u[2];
	pid_t rd;

	close(t_make_file(at("din"), size, SEED));
	in = open_direct("din", O_RDONLY);
	T_OK(in);
	for (size_t w = 0; w < NWAYS; w++) {
		out = open(at("dout"), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		T_OK(out);
		T_OK(lseek(in, 0, SEEK_SET));
		T_EQ(psplice_copy(in, NULL, out, NULL, PSPLICE_TO_EOF, ways[w], &r), 0);
		T_RESULT(r, 0, PSPLICE_SIDE_NONE, size, size);
		T_EQ(t_pos(in), (int64_t)size);
		T_ASSERT(t_check_fd(out, 0, size, SEED, 0));
		close(out);
	}
	/* Into a socket, positional. */
	t_unix_pair(u);
	rd = t_drain_check(u[1], size, SEED);
	close(u[1]);
	T_EQ(psplice_copy(in, &(int64_t){ 0 }, u[0], NULL, PSPLICE_TO_EOF, 0, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, size, size);
	/* The reader's copy of u[0], from the fork, would keep it open. */
	T_OK(shutdown(u[0], SHUT_WR));
	close(u[0]);
	T_ASSERT(t_wait(rd));
	close(in);
}

/* The caller's way to finish: the rest through an fd without O_DIRECT. */
static void finish_tail(int in, const struct psplice_result *r, uint64_t size)
{
	struct psplice_result r2;
	int plain = open(at("dst"), O_WRONLY | O_CLOEXEC);

	T_OK(plain);
	T_OK(lseek(plain, (off_t)r->out_bytes, SEEK_SET));
	T_EQ(psplice_copy(in, NULL, plain, NULL, PSPLICE_TO_EOF, 0, &r2), 0);
	T_EQ_U(r->out_bytes + r2.out_bytes, size);
	close(plain);
}

static void direct_output(uint64_t size, bool refuses)
{
	bool aligned = size % MB == 0;
	struct psplice_result r;
	int in = t_make_file(at("src"), size, SEED), out;
	int rc;

	for (size_t w = 0; w < NWAYS; w++) {
		out = open_direct("dst", O_RDWR | O_CREAT | O_TRUNC);
		T_OK(out);
		T_OK(lseek(in, 0, SEEK_SET));
		rc = psplice_copy(in, NULL, out, NULL, PSPLICE_TO_EOF, ways[w], &r);
		if (aligned || !refuses) {
			T_EQ(rc, 0);
			T_RESULT(r, 0, PSPLICE_SIDE_NONE, size, size);
		} else if (w == 0 || ways[w] == PSPLICE_F_ONLY(PSPLICE_METHOD_READWRITE) ||
			   ways[w] == PSPLICE_F_ONLY(PSPLICE_METHOD_SPLICE_PIPE)) {
			T_EQ(rc, -1);
			T_RESULT(r, EINVAL, PSPLICE_SIDE_OUT, size - TAIL, size - TAIL);
		} else {
			/* sendfile alone has no other way for the tail: the
			 * pair is not supported there, after its aligned part. */
			T_EQ(rc, -1);
			T_EQ_U(r.out_bytes, size - TAIL);
			T_EQ_U(r.in_bytes, size - TAIL);
		}
		T_EQ(t_pos(in), (int64_t)r.out_bytes);
		T_EQ(t_pos(out), (int64_t)r.out_bytes);
		/* The caller's flags are as they were. */
		T_ASSERT(fcntl(out, F_GETFL) & O_DIRECT);
		if (r.out_bytes < size)
			finish_tail(in, &r, size);
		T_ASSERT(t_check_file(at("dst"), size, SEED));
		close(out);
	}
	close(in);
}

/* A stream in pieces of any size into an O_DIRECT file: what the file
 * refuses is parked, exactly the next bytes of the stream. */
static void stream_to_direct(bool refuses)
{
	const uint64_t n = 100000;
	struct psplice_result r;
	int u[2], out = open_direct("sdst", O_RDWR | O_CREAT | O_TRUNC);
	uint64_t delivered;
	int rc;

	T_OK(out);
	t_unix_pair(u);
	T_OK(setsockopt(u[1], SOL_SOCKET, SO_SNDBUF, &(int){ 1 << 20 }, sizeof(int)));
	t_fill_fd(u[1], n, SEED);
	close(u[1]);
	rc = psplice_copy(u[0], NULL, out, NULL, PSPLICE_TO_EOF, 0, &r);
	delivered = r.out_bytes;
	T_EQ_U(r.in_bytes, r.out_bytes + r.parked_len);
	if (!refuses) {
		T_EQ(rc, 0);
		T_EQ_U(delivered, n);
	} else {
		T_EQ(rc, -1);
		T_RESULT(r, EINVAL, PSPLICE_SIDE_OUT, r.in_bytes, delivered);
	}
	T_ASSERT(t_check_file(at("sdst"), delivered, SEED));
	T_ASSERT(t_check_buf(r.parked, r.parked_len, SEED, delivered));
	t_check_rest(u[0], delivered + r.parked_len, n, SEED);
	close(u[0]);
	close(out);
}

static bool run_on(const char *d)
{
	int fd, before = t_count_fds();
	bool refuses;

	dir = d;
	fd = open_direct("probe", O_RDWR | O_CREAT | O_TRUNC);
	if (fd < 0 && errno == EINVAL)
		return false;
	T_OK(fd);
	close(fd);
	refuses = strict();
	direct_input(4 * MB);
	direct_input(4 * MB + TAIL);
	direct_output(4 * MB, refuses);
	direct_output(4 * MB + TAIL, refuses);
	stream_to_direct(refuses);
	T_ASSERT(t_count_fds() <= before + 2); /* this thread's internal pipe */
	return true;
}

int main(int argc, char **argv)
{
	bool ran;

	alarm(120);
	ran = run_on(t_dir(argc, argv));

	if (run_on(t_tmpfs_dir()))
		ran = true;
	T_SKIP_IF(!ran, "neither the scratch filesystem nor tmpfs takes O_DIRECT");
	return T_PASS;
}
