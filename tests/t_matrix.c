/* The transfer matrix: every source kind x every sink kind x {file
 * positions, offsets} x sizes, through the fastest path the planner picks and
 * again through read/write only. Each case checks the bytes, the method, the
 * result's counts and the file positions and offsets. */
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "t.h"

enum src { S_EXT4, S_TMPFS, S_PIPE, S_TCP, S_UNIX, S_ZERO, S_PTY, S_N };
enum dst { D_EXT4, D_TMPFS, D_PIPE, D_TCP, D_UNIX, D_NULL, D_PTY, D_N };

static const char *const src_name[] = {
	"ext4 file", "tmpfs file", "pipe", "tcp", "unix", "/dev/zero", "pty"
};
static const char *const dst_name[] = {
	"ext4 file", "tmpfs file", "pipe", "tcp", "unix", "/dev/null", "pty"
};

/* Which sides get an offset (the others use their file position). */
enum { OFF_NONE, OFF_IN, OFF_OUT, OFF_BOTH, OFF_N };
static const char *const off_name[] = {
	"positions", "offset in", "offset out", "offsets in+out"
};

#define CFR PSPLICE_METHOD_COPY_FILE_RANGE
#define SF  PSPLICE_METHOD_SENDFILE
#define SP  PSPLICE_METHOD_SPLICE
#define SPP PSPLICE_METHOD_SPLICE_PIPE
#define NA  (-1) /* an offset on a side that is not a file: ESPIPE, not here */

/* The fastest path that works for each pair on Linux 6.x, by offset mode
 * (none, input only, output only, both), as probed with the raw syscalls. */
static const struct row {
	int src, dst, method[OFF_N];
} table[] = {
	/* Neither ext4 nor tmpfs has a copy_file_range of its own: within one
	 * filesystem the kernel splices page cache to page cache. */
	{ S_EXT4,  D_EXT4,  { CFR, CFR, CFR, CFR } },
	/* Across two filesystems (either way) copy_file_range(2) answers
	 * EXDEV; sendfile(2) then works, but writes only at the output's file
	 * position, so an output offset leaves splice through the internal
	 * pipe. */
	{ S_EXT4,  D_TMPFS, { SF,  SF,  SPP, SPP } },
	{ S_EXT4,  D_PIPE,  { SP,  SP,  NA,  NA } },
	{ S_EXT4,  D_TCP,   { SF,  SF,  NA,  NA } },
	{ S_EXT4,  D_UNIX,  { SF,  SF,  NA,  NA } },
	{ S_EXT4,  D_NULL,  { SF,  SF,  NA,  NA } },
	{ S_EXT4,  D_PTY,   { SF,  SF,  NA,  NA } },
	{ S_TMPFS, D_EXT4,  { SF,  SF,  SPP, SPP } },
	{ S_TMPFS, D_TMPFS, { CFR, CFR, CFR, CFR } },
	{ S_TMPFS, D_PIPE,  { SP,  SP,  NA,  NA } },
	{ S_TMPFS, D_TCP,   { SF,  SF,  NA,  NA } },
	{ S_TMPFS, D_UNIX,  { SF,  SF,  NA,  NA } },
	{ S_TMPFS, D_NULL,  { SF,  SF,  NA,  NA } },
	{ S_TMPFS, D_PTY,   { SF,  SF,  NA,  NA } },
	{ S_PIPE,  D_EXT4,  { SP,  NA,  SP,  NA } },
	{ S_PIPE,  D_TMPFS, { SP,  NA,  SP,  NA } },
	{ S_PIPE,  D_PIPE,  { SP,  NA,  NA,  NA } },
	{ S_PIPE,  D_TCP,   { SP,  NA,  NA,  NA } },
	{ S_PIPE,  D_UNIX,  { SP,  NA,  NA,  NA } },
	{ S_PIPE,  D_NULL,  { SP,  NA,  NA,  NA } },
	{ S_PIPE,  D_PTY,   { SP,  NA,  NA,  NA } },
	/* A socket has no sendfile(2) input side (EINVAL) and splice(2) needs
	 * a pipe on one side: the internal pipe, unless the sink is one. */
	{ S_TCP,   D_EXT4,  { SPP, NA,  SPP, NA } },
	{ S_TCP,   D_TMPFS, { SPP, NA,  SPP, NA } },
	{ S_TCP,   D_PIPE,  { SP,  NA,  NA,  NA } },
	{ S_TCP,   D_TCP,   { SPP, NA,  NA,  NA } },
	{ S_TCP,   D_UNIX,  { SPP, NA,  NA,  NA } },
	{ S_TCP,   D_NULL,  { SPP, NA,  NA,  NA } },
	{ S_TCP,   D_PTY,   { SPP, NA,  NA,  NA } },
	{ S_UNIX,  D_EXT4,  { SPP, NA,  SPP, NA } },
	{ S_UNIX,  D_TMPFS, { SPP, NA,  SPP, NA } },
	{ S_UNIX,  D_PIPE,  { SP,  NA,  NA,  NA } },
	{ S_UNIX,  D_TCP,   { SPP, NA,  NA,  NA } },
	{ S_UNIX,  D_UNIX,  { SPP, NA,  NA,  NA } },
	{ S_UNIX,  D_NULL,  { SPP, NA,  NA,  NA } },
	{ S_UNIX,  D_PTY,   { SPP, NA,  NA,  NA } },
	/* The kernel's sendfile(2) reads /dev/zero too, but it drops whatever
	 * its own pipe holds when the output fails; for a device that is not
	 * seekable only the internal pipe can hand such bytes back. */
	{ S_ZERO,  D_EXT4,  { SPP, NA,  SPP, NA } },
	{ S_ZERO,  D_TMPFS, { SPP, NA,  SPP, NA } },
	{ S_ZERO,  D_PIPE,  { SP,  NA,  NA,  NA } },
	{ S_ZERO,  D_TCP,   { SPP, NA,  NA,  NA } },
	{ S_ZERO,  D_UNIX,  { SPP, NA,  NA,  NA } },
	{ S_ZERO,  D_NULL,  { SPP, NA,  NA,  NA } },
	{ S_ZERO,  D_PTY,   { SPP, NA,  NA,  NA } },
	/* A tty reads into a pipe (splice_read) and is written from one
	 * (splice_write), but sendfile(2) refuses it as an input. */
	{ S_PTY,   D_EXT4,  { SPP, NA,  SPP, NA } },
	{ S_PTY,   D_TMPFS, { SPP, NA,  SPP, NA } },
	{ S_PTY,   D_PIPE,  { SP,  NA,  NA,  NA } },
	{ S_PTY,   D_TCP,   { SPP, NA,  NA,  NA } },
	{ S_PTY,   D_UNIX,  { SPP, NA,  NA,  NA } },
	{ S_PTY,   D_NULL,  { SPP, NA,  NA,  NA } },
	{ S_PTY,   D_PTY,   { SPP, NA,  NA,  NA } },
};

static const uint64_t sizes[] = { 0, 1, 4095, 4096, 65537, (16u << 20) + 3 };
#define MAX_SIZE ((16u << 20) + 3)
#define SEED 0x6d61u
/* Offset mode starts the input and output away from 0 and parks the file
 * positions elsewhere, so a position that moved shows. */
#define K_IN 5
#define K_OUT 3
#define P_IN 2
#define P_OUT 1
/* A child stuck on a broken case must not outlive the test. */
#define CHILD_SECS 120

/* How a case moves its bytes. */
enum shape { EXACT, TO_EOF, STEPS_EX, STEPS_PLAIN };
static const char *const shape_name[] = {
	"psplice_copy(len)", "psplice_copy(TO_EOF)", "psplice_ex steps", "psplice steps"
};

struct tcase {
	int src, dst, offs, method;
	uint64_t n;
	bool rw;
	enum shape shape;
};

/* One side of a case: the fd psplice sees, the pty master the parent keeps
 * open, and the child that feeds or drains the other end. */
struct end {
	int fd, peer;
	pid_t child;
};

static uint8_t *stream, *zeros;
static const char *scratch, *tmpfs;
static char src_paths[S_TMPFS + 1][2][4200];
static char current[256];

static void say_case(void)
{
	if (current[0])
		fprintf(stderr, "in case: %s\n", current);
}

static bool is_file_src(int s)
{
	return s == S_EXT4 || s == S_TMPFS;
}

static bool is_file_dst(int d)
{
	return d == D_EXT4 || d == D_TMPFS;
}

/* Sources whose writer closes, so reading on finds the end of input. */
static bool reaches_eof(int s)
{
	return s != S_ZERO && s != S_PTY;
}

static int64_t start_in(const struct tcase *c)
{
	return c->offs & OFF_IN ? K_IN : 0;
}

static int64_t start_out(const struct tcase *c)
{
	return c->offs & OFF_OUT ? K_OUT : 0;
}

/* Compare n bytes of fd, at off or from its position when off < 0, with
 * want; reports the first difference. */
static bool same_bytes(int fd, int64_t off, const uint8_t *want, uint64_t n)
{
	static uint8_t buf[1 << 16];
	uint64_t done = 0;
	ssize_t r;

	while (done < n) {
		size_t k = n - done < sizeof(buf) ? (size_t)(n - done) : sizeof(buf);

		r = off >= 0 ? pread(fd, buf, k, off + (off_t)done) : read(fd, buf, k);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			fprintf(stderr, "short at %" PRIu64 " of %" PRIu64 " (%s)\n",
				done, n, r < 0 ? strerror(errno) : "end of input");
			return false;
		}
		if (memcmp(buf, want + done, (size_t)r)) {
			for (ssize_t i = 0; i < r; i++)
				if (buf[i] != want[done + (uint64_t)i]) {
					fprintf(stderr, "byte %" PRIu64 " differs\n",
						done + (uint64_t)i);
					break;
				}
			return false;
		}
		done += (uint64_t)r;
	}
	return true;
}

/* In a child: hold no fd but stdio and the one it works on, so that the
 * parent's closes are the ends of file the other sides wait for. */
static void child_keep(int fd)
{
	/* close_range by its number: musl has no wrapper. */
	if (fd > 3)
		syscall(SYS_close_range, 3u, (unsigned int)fd - 1, 0u);
	syscall(SYS_close_range, (unsigned int)fd + 1, ~0u, 0u);
	alarm(CHILD_SECS);
}

static pid_t fork_or_fail(void)
{
	pid_t pid = fork();

	if (pid < 0) {
		perror("fork");
		t_fail();
	}
	return pid;
}

/* A child writes n bytes of the stream into fd. */
static pid_t feed(int fd, uint64_t n)
{
	pid_t pid = fork_or_fail();
	uint64_t done = 0;
	ssize_t w;

	if (pid)
		return pid;
	child_keep(fd);
	while (done < n) {
		size_t k = n - done < (1u << 16) ? (size_t)(n - done) : (1u << 16);

		w = write(fd, stream + done, k);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			_exit(1);
		done += (uint64_t)w;
	}
	_exit(0);
}

/* A child reads n bytes from fd and checks they are want; with eof, also
 * that nothing follows them. */
static pid_t drain(int fd, const uint8_t *want, uint64_t n, bool eof)
{
	pid_t pid = fork_or_fail();
	char extra;

	if (pid)
		return pid;
	child_keep(fd);
	if (!same_bytes(fd, -1, want, n))
		_exit(1);
	if (eof && read(fd, &extra, 1) != 0) {
		fprintf(stderr, "bytes after the %" PRIu64 " expected\n", n);
		_exit(2);
	}
	_exit(0);
}

static void open_file_source(struct end *e, const struct tcase *c)
{
	e->fd = open(src_paths[c->src][!!(c->offs & OFF_IN)], O_RDONLY | O_CLOEXEC);
	T_OK(e->fd);
	if (c->offs & OFF_IN)
		T_EQ(lseek(e->fd, P_IN, SEEK_SET), P_IN);
}

/* fd reads what a child writes into writer, which closes when done. */
static void fed_by_child(struct end *e, int fd, int writer, uint64_t n)
{
	e->fd = fd;
	e->child = feed(writer, n);
	close(writer);
}

static void open_source(struct end *e, const struct tcase *c)
{
	int fds[2];

	*e = (struct end){ .fd = -1, .peer = -1 };
	switch (c->src) {
	case S_EXT4:
	case S_TMPFS:
		open_file_source(e, c);
		break;
	case S_PIPE:
		t_pipe(fds);
		fed_by_child(e, fds[0], fds[1], c->n);
		break;
	case S_TCP:
		t_tcp_pair(fds);
		fed_by_child(e, fds[1], fds[0], c->n);
		break;
	case S_UNIX:
		t_unix_pair(fds);
		fed_by_child(e, fds[1], fds[0], c->n);
		break;
	case S_ZERO:
		e->fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
		break;
	case S_PTY:
		/* The parent keeps the master open: the feeder's exit must not
		 * hang up the slave before its input was read. */
		t_pty(&e->peer, &e->fd);
		e->child = feed(e->peer, c->n);
		break;
	}
	T_OK(e->fd);
}

/* The bytes the sink must receive. */
static const uint8_t *expected(const struct tcase *c)
{
	if (c->src == S_ZERO)
		return zeros;
	return is_file_src(c->src) ? stream + start_in(c) : stream;
}

static void open_file_sink(struct end *e, const struct tcase *c)
{
	char path[4200];

	if (c->dst == D_EXT4)
		snprintf(path, sizeof(path), "%s", t_path("sink"));
	else
		snprintf(path, sizeof(path), "%s/sink", tmpfs);
	e->fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	T_OK(e->fd);
	if (c->offs & OFF_OUT)
		T_EQ(lseek(e->fd, P_OUT, SEEK_SET), P_OUT);
}

/* fd writes into the end a child drains; the parent's close is its EOF. */
static void drained_by_child(struct end *e, int fd, int reader,
			     const struct tcase *c, bool eof)
{
	e->fd = fd;
	e->child = drain(reader, expected(c), c->n, eof);
	close(reader);
}

static void open_sink(struct end *e, const struct tcase *c)
{
	int fds[2], master;

	*e = (struct end){ .fd = -1, .peer = -1 };
	switch (c->dst) {
	case D_EXT4:
	case D_TMPFS:
		open_file_sink(e, c);
		break;
	case D_PIPE:
		t_pipe(fds);
		drained_by_child(e, fds[1], fds[0], c, true);
		break;
	case D_TCP:
		t_tcp_pair(fds);
		drained_by_child(e, fds[0], fds[1], c, true);
		break;
	case D_UNIX:
		t_unix_pair(fds);
		drained_by_child(e, fds[0], fds[1], c, true);
		break;
	case D_NULL:
		e->fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
		break;
	case D_PTY:
		/* A raw pty has no end of file: the child reads exactly n. */
		t_pty(&master, &e->fd);
		drained_by_child(e, e->fd, master, c, false);
		break;
	}
	T_OK(e->fd);
}

static unsigned int flags_of(const struct tcase *c)
{
	return c->rw ? PSPLICE_F_ONLY(PSPLICE_METHOD_READWRITE) : 0;
}

static void check_method(int got, int want)
{
	if (got != want)
		T_FAILED("method %s, want %s", psplice_method_name(got),
			 psplice_method_name(want));
}

static int want_method(const struct tcase *c)
{
	return c->n ? c->method : PSPLICE_METHOD_NONE;
}

static void copy_whole(const struct tcase *c, int in, int64_t *oi, int out,
		       int64_t *oo)
{
	uint64_t len = c->shape == TO_EOF ? PSPLICE_TO_EOF : c->n;
	struct psplice_result r;

	if (psplice_copy(in, oi, out, oo, len, flags_of(c), &r) != 0)
		T_FAILED("psplice_copy: %s on side %s after %" PRIu64 "/%" PRIu64,
			 strerror(r.error), psplice_side_name(r.side), r.in_bytes,
			 r.out_bytes);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, c->n, c->n);
	T_EQ(r.parked_len, 0);
	T_ASSERT(r.parked == NULL);
	check_method(r.method, want_method(c));
}

static ssize_t one_step(const struct tcase *c, int in, int64_t *oi, int out,
			int64_t *oo, size_t len, struct psplice_result *r)
{
	ssize_t got;

	if (c->shape == STEPS_EX)
		return psplice_ex(in, oi, out, oo, len, flags_of(c), r);
	got = psplice(in, oi, out, oo, len, flags_of(c));
	*r = *psplice_last();
	return got;
}

/* Single steps until n bytes moved, each returning what it delivered; then,
 * where the input ends, one more step that finds the end and returns 0. */
static void copy_steps(const struct tcase *c, int in, int64_t *oi, int out,
		       int64_t *oo)
{
	struct psplice_result r;
	uint64_t done = 0;
	ssize_t got;

	for (uint64_t i = 0; done < c->n; i++) {
		T_ASSERT(i < c->n); /* each step moves at least one byte */
		got = one_step(c, in, oi, out, oo, (size_t)(c->n - done), &r);
		if (got <= 0 || (uint64_t)got > c->n - done)
			T_FAILED("step %" PRIu64 " at %" PRIu64 ": %zd (%s)", i, done,
				 got, strerror(r.error));
		T_RESULT(r, 0, PSPLICE_SIDE_NONE, got, got);
		T_EQ(r.parked_len, 0);
		check_method(r.method, c->method);
		done += (uint64_t)got;
	}
	if (!reaches_eof(c->src))
		return;
	T_EQ(one_step(c, in, oi, out, oo, 4096, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, 0, 0);
	T_EQ(r.parked_len, 0);
}

/* Offsets advanced by n, file positions untouched; or, without offsets,
 * the file positions advanced by n. */
static void check_positions(const struct tcase *c, int in, int64_t oi, int out,
			    int64_t oo)
{
	int64_t n = (int64_t)c->n;

	if (is_file_src(c->src) && (c->offs & OFF_IN)) {
		T_EQ(oi, K_IN + n);
		T_EQ(t_pos(in), P_IN);
	} else if (is_file_src(c->src)) {
		T_EQ(t_pos(in), n);
	}
	if (is_file_dst(c->dst) && (c->offs & OFF_OUT)) {
		T_EQ(oo, K_OUT + n);
		T_EQ(t_pos(out), P_OUT);
	} else if (is_file_dst(c->dst)) {
		T_EQ(t_pos(out), n);
	}
}

/* The sink file holds the bytes at the start offset, zeros before them,
 * and nothing after. */
static void check_file_sink(const struct tcase *c, int fd)
{
	int64_t at = start_out(c);
	struct stat st;

	T_OK(fstat(fd, &st));
	T_EQ(st.st_size, c->n ? at + (int64_t)c->n : 0);
	if (!c->n)
		return;
	T_ASSERT(same_bytes(fd, 0, zeros, (uint64_t)at));
	T_ASSERT(same_bytes(fd, at, expected(c), c->n));
}

/* Close the parent's ends, then collect the children. A pty sink's child
 * reads on after psplice returned, so its slave stays open until then. */
static void finish(const struct tcase *c, struct end *in, struct end *out)
{
	close(in->fd);
	if (in->child)
		T_ASSERT(t_wait(in->child));
	if (in->peer >= 0)
		close(in->peer);
	if (c->dst != D_PTY)
		close(out->fd);
	if (out->child)
		T_ASSERT(t_wait(out->child));
	if (c->dst == D_PTY)
		close(out->fd);
}

static void run_case(const struct tcase *c)
{
	int64_t oi = K_IN, oo = K_OUT;
	int64_t *poi = c->offs & OFF_IN ? &oi : NULL, *poo = c->offs & OFF_OUT ? &oo : NULL;
	struct end in, out;

	snprintf(current, sizeof(current), "%s -> %s, %s, %" PRIu64 " bytes, %s, %s",
		 src_name[c->src], dst_name[c->dst], off_name[c->offs], c->n,
		 c->rw ? "read/write only" : "fast paths", shape_name[c->shape]);
	open_source(&in, c);
	open_sink(&out, c);
	if (c->shape == EXACT || c->shape == TO_EOF)
		copy_whole(c, in.fd, poi, out.fd, poo);
	else
		copy_steps(c, in.fd, poi, out.fd, poo);
	check_positions(c, in.fd, oi, out.fd, oo);
	if (is_file_dst(c->dst))
		check_file_sink(c, out.fd);
	finish(c, &in, &out);
	current[0] = 0;
}

/* Step shapes for a few sizes only: one byte and an odd size through the
 * splice(2)-shaped call, a size past one pipe buffer through psplice_ex. */
static bool steps_for(uint64_t n, enum shape *s)
{
	if (n <= 1) {
		*s = STEPS_PLAIN;
		return true;
	}
	if (n == 65537) {
		*s = STEPS_EX;
		return true;
	}
	return false;
}

static void run_row(const struct row *w, uint64_t n)
{
	struct tcase c = { .src = w->src, .dst = w->dst, .n = n };

	for (c.offs = OFF_NONE; c.offs < OFF_N; c.offs++) {
		if (w->method[c.offs] == NA)
			continue;
		for (int rw = 0; rw < 2; rw++) {
			c.rw = rw;
			c.method = rw ? PSPLICE_METHOD_READWRITE : w->method[c.offs];
			c.shape = EXACT;
			run_case(&c);
			c.shape = TO_EOF;
			if (reaches_eof(c.src))
				run_case(&c);
			if (steps_for(n, &c.shape))
				run_case(&c);
		}
	}
}

/* For each filesystem, a file read from 0 (n bytes) and one read from K_IN
 * (K_IN + n bytes), both the stream from its start. */
static void make_sources(uint64_t n)
{
	for (int s = S_EXT4; s <= S_TMPFS; s++)
		for (int k = 0; k < 2; k++) {
			const char *dir = s == S_EXT4 ? scratch : tmpfs;

			snprintf(src_paths[s][k], sizeof(src_paths[s][k]), "%s/src%d", dir, k);
			close(t_make_file(src_paths[s][k], n + (k ? K_IN : 0), SEED));
		}
}

int main(int argc, char **argv)
{
	scratch = t_dir(argc, argv);
	tmpfs = t_tmpfs_dir();
	T_ASSERT(tmpfs != NULL);
	atexit(say_case);
	stream = malloc(MAX_SIZE + K_IN);
	zeros = calloc(1, MAX_SIZE);
	T_ASSERT(stream && zeros);
	t_gen(SEED, 0, stream, MAX_SIZE + K_IN);
	/* The table names every pair once. */
	T_EQ(sizeof(table) / sizeof(table[0]), S_N * D_N);
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		T_EQ(table[i].src * D_N + table[i].dst, (long long)i);
	for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
		make_sources(sizes[z]);
		for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
			run_row(&table[i], sizes[z]);
	}
	free(stream);
	free(zeros);
	return T_PASS;
}
