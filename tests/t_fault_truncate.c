/* The source file truncated or extended while psplice_copy runs. The
 * result, as psplice_copy(3) defines it: a copy reads the input as it is
 * while it runs, as read(2) would. A copy to end of input stops at the end
 * the file has when the copy gets there: bytes appended before then are
 * copied; a file cut short ahead of the copy ends it at the new end, with
 * success and out_bytes short of a given length (end of input). Bytes
 * already taken are never taken back, and no byte is invented: the output
 * is a prefix of what the file held.
 *
 * Deterministic cases: a copy into a pipe (splice) or a socket (sendfile,
 * splice through the internal pipe, read/write) whose reader has taken a
 * little and stopped, so that the copy waits far behind the point where
 * the file is cut or extended. A racing case for file to file, which never
 * waits: another thread cuts the file at page boundaries and extends it
 * again with the stream's own bytes while copies run through each
 * mechanism; each copy's output must be a prefix of the stream as long as
 * it says, with the positions where it says. */
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "t.h"

#define SEED 41
#define S ((uint64_t)8 << 20)  /* the file at the start */
#define K ((uint64_t)64 << 10) /* what the reader takes before the change */
#define CUT ((uint64_t)4 << 20)
#define GROW ((uint64_t)1 << 20)

enum out_kind { O_PIPE, O_SENDFILE, O_SPLICE_PIPE, O_READWRITE, O_COUNT };

static const unsigned int only[] = {
	0, 0, PSPLICE_F_ONLY(PSPLICE_METHOD_SPLICE_PIPE),
	PSPLICE_F_ONLY(PSPLICE_METHOD_READWRITE)
};
static const int method[] = { PSPLICE_METHOD_SPLICE, PSPLICE_METHOD_SENDFILE,
			      PSPLICE_METHOD_SPLICE_PIPE, PSPLICE_METHOD_READWRITE };

struct copier {
	pthread_t tid;
	int in, out;
	uint64_t len;
	unsigned int flags;
	int rc;
	struct psplice_result r;
};

static void *copier_main(void *arg)
{
	struct copier *c = arg;

	c->rc = psplice_copy(c->in, NULL, c->out, NULL, c->len, c->flags, &c->r);
	close(c->out); /* the reader's end of file */
	return NULL;
}

static int make_src(void)
{
	return t_make_file(t_path("src"), S, SEED);
}

/* The stream's own bytes from `from` to `to`: the file stays a prefix. */
static void grow(int fd, uint64_t from, uint64_t to)
{
	static uint8_t buf[1 << 16];
	size_t n;

	for (uint64_t at = from; at < to; at += n) {
		n = to - at < sizeof(buf) ? (size_t)(to - at) : sizeof(buf);
		t_gen(SEED, at, buf, n);
		T_EQ(pwrite(fd, buf, n, (off_t)at), (ssize_t)n);
	}
}

static void read_exact(int fd, uint8_t *buf, uint64_t n)
{
	uint64_t got = 0;
	ssize_t r;

	while (got < n) {
		r = read(fd, buf + got, n - got);
		T_ASSERT(r > 0);
		got += (uint64_t)r;
	}
}

static uint64_t read_rest(int fd, uint8_t *buf, uint64_t cap)
{
	uint64_t got = 0;
	ssize_t r;

	while ((r = read(fd, buf + got, cap - got)) > 0 && got < cap)
		got += (uint64_t)r;
	T_EQ(r, 0);
	return got;
}

/* The copy's output, with a reader that stalls after K bytes. */
static void open_out(enum out_kind k, int fds[2])
{
	int small = 4096;

	if (k == O_PIPE) {
		t_pipe(fds);
		T_OK(fcntl(fds[1], F_SETPIPE_SZ, 4096));
		/* fds[0] reads, fds[1] is the copy's output */
		return;
	}
	t_unix_pair(fds);
	T_OK(setsockopt(fds[1], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)));
	T_OK(setsockopt(fds[0], SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)));
}

enum change { CUT_AHEAD, CUT_BEHIND, EXTEND };

static void one_case(enum out_kind k, enum change ch, bool to_eof)
{
	uint8_t *buf = malloc(S + GROW);
	struct copier c = { 0 };
	int fds[2], in = make_src();
	uint64_t got, want;

	T_ASSERT(buf);
	open_out(k, fds);
	c = (struct copier){ .in = in, .out = fds[1], .flags = only[k],
			     .len = to_eof ? PSPLICE_TO_EOF : S };
	T_EQ(pthread_create(&c.tid, NULL, copier_main, &c), 0);
	read_exact(fds[0], buf, K);
	if (ch == CUT_AHEAD)
		T_OK(ftruncate(in, (off_t)CUT));
	else if (ch == CUT_BEHIND)
		T_OK(ftruncate(in, (off_t)(K / 2)));
	else
		grow(in, S, S + GROW);
	got = K + read_rest(fds[0], buf + K, S + GROW - K);
	T_EQ(pthread_join(c.tid, NULL), 0);
	T_EQ(c.rc, 0);
	T_EQ(c.r.error, 0);
	T_EQ_U(c.r.in_bytes, c.r.out_bytes);
	T_EQ_U(c.r.out_bytes, got);
	T_EQ(t_pos(in), (int64_t)got);
	if (ch == CUT_AHEAD)
		want = CUT;
	else if (ch == EXTEND)
		want = to_eof ? S + GROW : S;
	else
		want = 0;
	if (want) {
		T_EQ_U(got, want);
		T_ASSERT(t_check_buf(buf, got, SEED, 0));
	} else {
		/* Cut behind the copy: it ends at once; what it had taken
		 * already was delivered (file pages a pipe holds may read as
		 * the cut left them), what it had not is not invented. */
		T_ASSERT(got >= K && got <= K + (2u << 20));
		T_ASSERT(t_check_buf(buf, K, SEED, 0));
	}
	if (c.r.out_bytes)
		T_EQ(c.r.method, method[k]);
	close(fds[0]);
	close(in);
	free(buf);
}

struct mutator {
	pthread_t tid;
	int fd;
	atomic_bool stop;
	unsigned long changes;
};

static void *mutator_main(void *arg)
{
	struct mutator *m = arg;
	uint64_t size = S, next;
	uint32_t x = 12345;

	while (!atomic_load(&m->stop)) {
		x = x * 1103515245u + 12345u;
		next = (uint64_t)(x >> 8) % (S / 4096 + 1) * 4096;
		if (next < size)
			T_OK(ftruncate(m->fd, (off_t)next));
		else
			grow(m->fd, size, next);
		size = next;
		m->changes++;
		usleep(50);
	}
	return NULL;
}

/* Through the internal pipe the file's pages travel by reference: a page
 * cut from the file while it waits in the pipe, and written again behind
 * it, arrives as the cut left it, zeros (psplice(3), "A file that changes
 * during a copy"). Every page of out is the stream's or zeros; nothing
 * else is ever delivered. */
static bool stream_or_zero_pages(int fd, uint64_t n)
{
	static uint8_t got[4096], want[4096], zero[4096];
	size_t k;

	for (uint64_t at = 0; at < n; at += k) {
		k = n - at < sizeof(got) ? (size_t)(n - at) : sizeof(got);
		if (pread(fd, got, k, (off_t)at) != (ssize_t)k)
			return false;
		t_gen(SEED, at, want, k);
		if (memcmp(got, want, k) && memcmp(got, zero, k))
			return false;
	}
	return true;
}

/* File to file, with the file changing under every mechanism. */
static void racing(void)
{
	static const unsigned int ways[] = {
		0, PSPLICE_F_ONLY(PSPLICE_METHOD_COPY_FILE_RANGE),
		PSPLICE_F_ONLY(PSPLICE_METHOD_SENDFILE),
		PSPLICE_F_ONLY(PSPLICE_METHOD_SPLICE_PIPE),
		PSPLICE_F_ONLY(PSPLICE_METHOD_READWRITE)
	};
	struct mutator m = { .fd = make_src() };
	struct psplice_result r;
	int in = open(t_path("src"), O_RDONLY | O_CLOEXEC);
	int out = open(t_path("dst"), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	struct stat st;
	int64_t off;

	T_OK(in);
	T_OK(out);
	T_EQ(pthread_create(&m.tid, NULL, mutator_main, &m), 0);
	for (int round = 0; round < 20; round++) {
		for (size_t w = 0; w < sizeof(ways) / sizeof(ways[0]); w++) {
			T_OK(ftruncate(out, 0));
			T_OK(lseek(out, 0, SEEK_SET));
			T_OK(lseek(in, 0, SEEK_SET));
			off = 0;
			/* Positional input on odd rounds, the position on even. */
			T_EQ(psplice_copy(in, round % 2 ? &off : NULL, out, NULL,
					  PSPLICE_TO_EOF, ways[w], &r), 0);
			T_EQ_U(r.in_bytes, r.out_bytes);
			T_OK(fstat(out, &st));
			T_EQ_U((uint64_t)st.st_size, r.out_bytes);
			T_EQ(t_pos(out), (int64_t)r.out_bytes);
			T_EQ(round % 2 ? off : t_pos(in), (int64_t)r.out_bytes);
			if (ways[w] == PSPLICE_F_ONLY(PSPLICE_METHOD_SPLICE_PIPE))
				T_ASSERT(stream_or_zero_pages(out, r.out_bytes));
			else
				T_ASSERT(t_check_fd(out, 0, r.out_bytes, SEED, 0));
		}
	}
	atomic_store(&m.stop, true);
	T_EQ(pthread_join(m.tid, NULL), 0);
	T_ASSERT(m.changes > 0);
	close(m.fd);
	close(in);
	close(out);
}

int main(int argc, char **argv)
{
	t_dir(argc, argv);
	for (int k = 0; k < O_COUNT; k++) {
		one_case((enum out_kind)k, CUT_AHEAD, true);
		one_case((enum out_kind)k, CUT_AHEAD, false);
		one_case((enum out_kind)k, CUT_BEHIND, true);
		one_case((enum out_kind)k, EXTEND, true);
		one_case((enum out_kind)k, EXTEND, false);
	}
	racing();
	return T_PASS;
}
