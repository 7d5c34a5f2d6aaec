/* Would-block: an empty input is EAGAIN on the input side, a full output is
 * EAGAIN on the output side, and nothing is lost: a file's offset (or
 * position) ends just past the last delivered byte, bytes taken from a pipe
 * or socket and not delivered are parked, and once the output drains the
 * peer receives the stream in order, each byte once. Ends with an event
 * loop that relies on all of it. */
#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "t.h"

#define FILE_SIZE (4u << 20)  /* more than a full TCP socket frees */
#define SMALL 50000u          /* bytes waiting in a source pipe or socket */
#define BIG_STREAM (1u << 20) /* the same, into TCP */
#define RELAY (2u << 20)      /* the event loop's stream */
#define NB PSPLICE_F_NONBLOCK
#define JUNK_SEED 9
#define DEV_CALLS 200000      /* steps from a device into a drained pipe */
#define DEV_SECS 20           /* and at most this long */
#define EMPTY_CALLS 1000      /* steps from an empty input into one */

static int src;               /* FILE_SIZE bytes of stream 1 */
static int outfile;           /* a file output that must stay empty */

static void check_parked(const struct psplice_result *r, uint32_t seed, uint64_t soff)
{
	T_EQ_U(r->parked_len, r->in_bytes - r->out_bytes);
	T_ASSERT(r->parked_len == 0 || r->parked != NULL);
	T_ASSERT(t_check_buf(r->parked, r->parked_len, seed, soff));
}

/* The call would block on an empty input: nothing moved anywhere. */
static void empty_in(int in, int out, unsigned int flags)
{
	struct psplice_result r;
	struct stat st;

	T_ERRNO(psplice_ex(in, NULL, out, NULL, 4096, flags, &r), EAGAIN);
	T_RESULT(r, EAGAIN, PSPLICE_SIDE_IN, 0, 0);
	T_EQ(r.parked_len, 0);
	T_ERRNO(psplice_copy(in, NULL, out, NULL, PSPLICE_TO_EOF, flags, &r), EAGAIN);
	T_RESULT(r, EAGAIN, PSPLICE_SIDE_IN, 0, 0);
	T_ERRNO(psplice(in, NULL, out, NULL, 4096, flags), EAGAIN);
	T_RESULT(*psplice_last(), EAGAIN, PSPLICE_SIDE_IN, 0, 0);
	T_OK(fstat(outfile, &st));
	T_EQ(st.st_size, 0);
	T_EQ(t_pos(outfile), 0);
}

static void empty_inputs(void)
{
	const unsigned int rw = NB | PSPLICE_F_ONLY(PSPLICE_METHOD_READWRITE);
	int p[2], q[2], u[2], t[2];
	int64_t oo = 0;

	t_pipe(p);
	t_pipe(q);
	t_unix_pair(u);
	t_tcp_pair(t);
	empty_in(p[0], outfile, NB);
	empty_in(p[0], outfile, rw);
	empty_in(p[0], q[1], NB);
	empty_in(p[0], u[0], NB);
	empty_in(u[0], outfile, NB);
	empty_in(u[0], outfile, rw);
	empty_in(t[0], outfile, NB);
	empty_in(t[0], q[1], NB);
	empty_in(u[0], t[0], NB);
	T_ERRNO(psplice_ex(p[0], NULL, outfile, &oo, 10, NB, NULL), EAGAIN);
	T_EQ(oo, 0);
	/* The fd's own O_NONBLOCK says the same without the flag. */
	t_set_nonblock(p[0], true);
	t_set_nonblock(u[0], true);
	empty_in(p[0], outfile, 0);
	empty_in(u[0], outfile, 0);
	empty_in(p[0], u[0], 0);
	T_EQ(t_queued(q[0]), 0);
	T_EQ(t_queued(u[1]), 0);
	T_EQ(t_queued(t[1]), 0);
	t_close_pair(p);
	t_close_pair(q);
	t_close_pair(u);
	t_close_pair(t);
}

/* A stream socket (out) whose buffers are full of JUNK_SEED bytes, and its
 * peer, which nobody reads yet. A Unix socket stays exactly full until its
 * peer reads. TCP frees a little now and then (late acknowledgements, the
 * receiver merging its buffers): there a step may still deliver some bytes
 * before it meets EAGAIN, and the sources are larger than the room that
 * could ever free up. */
struct full {
	int out, peer;
	uint64_t junk;
	bool exact;
};

static void full_socket(struct full *f, void (*make)(int[2]), bool keep_nonblock)
{
	int s[2], i, calm = 0;

	make(s);
	f->exact = make == t_unix_pair;
	if (f->exact) {
		int small = 1; /* the kernel's minimum */

		T_OK(setsockopt(s[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)));
	}
	t_set_nonblock(s[0], true);
	f->junk = t_fill_full(s[0], JUNK_SEED);
	/* Top TCP up until it stays full for a moment; the junk stream goes
	 * on where it was. */
	for (i = 0; i < 100 && calm < 3 && !f->exact; i++) {
		static uint8_t buf[4096];
		ssize_t w;

		usleep(5000);
		t_gen(JUNK_SEED, f->junk, buf, sizeof(buf));
		w = send(s[0], buf, sizeof(buf), MSG_DONTWAIT | MSG_NOSIGNAL);
		calm = w < 0 ? calm + 1 : 0;
		if (w > 0)
			f->junk += (uint64_t)w;
	}
	t_set_nonblock(s[0], keep_nonblock);
	f->out = s[0];
	f->peer = s[1];
}

/* A child reads the peer: the junk, then total bytes of stream seed from
 * soff, then end of stream. */
static pid_t checker(const struct full *f, uint64_t total, uint32_t seed, uint64_t soff)
{
	pid_t pid = fork();
	char c;

	T_OK(pid);
	if (pid)
		return pid;
	close(f->out);
	if (!t_check_fd(f->peer, -1, f->junk, JUNK_SEED, 0))
		_exit(1);
	if (!t_check_fd(f->peer, -1, total, seed, soff))
		_exit(2);
	_exit(read(f->peer, &c, 1) == 0 ? 0 : 3);
}

static void write_all(int fd, const void *buf, size_t n)
{
	const char *b = buf;
	ssize_t w;

	while (n > 0) {
		w = write(fd, b, n);
		if (w < 0 && errno == EINTR)
			continue;
		T_ASSERT(w > 0);
		b += w;
		n -= (size_t)w;
	}
}

/* What the steps so far did: bytes delivered, and the last result. */
struct steps {
	uint64_t delivered;
	struct psplice_result r;
};

/* Single steps until one would block (a Unix socket: the first), or one
 * psplice_copy. Every step that returned a count took exactly that much. */
static void run(struct steps *st, const struct full *f, int in, int64_t *oi,
		uint64_t len, unsigned int flags, bool copy)
{
	ssize_t n = 0;
	int i;

	st->delivered = 0;
	if (copy) {
		T_ERRNO(psplice_copy(in, oi, f->out, NULL, len, flags, &st->r), EAGAIN);
	} else {
		for (i = 0; i < 10000; i++) {
			n = psplice_ex(in, oi, f->out, NULL, 65536, flags, &st->r);
			if (n < 0)
				break;
			T_ASSERT(n > 0);
			T_EQ_U(st->r.in_bytes, n);
			T_EQ_U(st->r.out_bytes, n);
			st->delivered += (uint64_t)n;
		}
		T_EQ(n, -1);
		T_EQ(errno, EAGAIN);
		if (f->exact)
			T_EQ(i, 0);
	}
	T_EQ(st->r.error, EAGAIN);
	T_EQ(st->r.side, PSPLICE_SIDE_OUT);
	if (f->exact)
		T_EQ(st->r.out_bytes, 0);
	st->delivered += st->r.out_bytes;
}

/* The output drains: deliver the parked bytes, then the rest of the
 * source, and the peer must have seen the junk, then total bytes of the
 * stream from soff, in order. */
static void finish(struct full *f, int in, int64_t *oi, const struct steps *st,
		   uint64_t total, uint32_t seed, uint64_t soff)
{
	uint64_t rest = total - st->delivered - st->r.parked_len;
	struct psplice_result r2;
	pid_t pid = checker(f, total, seed, soff);

	close(f->peer);
	t_set_nonblock(f->out, false);
	write_all(f->out, st->r.parked, st->r.parked_len);
	T_EQ(psplice_copy(in, oi, f->out, NULL, rest, 0, &r2), 0);
	T_RESULT(r2, 0, PSPLICE_SIDE_NONE, rest, rest);
	close(f->out);
	T_ASSERT(t_wait(pid));
}

/* A file into a full socket: whatever was not delivered stays in the file,
 * the offset or position is just past what was. */
static void file_to_full(void (*make)(int[2]), bool positional, bool nonblock_fd,
			 unsigned int flags, bool copy)
{
	int64_t start = 1000, oi = start, *poi = positional ? &oi : NULL;
	struct steps st;
	struct full f;

	full_socket(&f, make, nonblock_fd);
	T_EQ(lseek(src, positional ? 333 : start, SEEK_SET), positional ? 333 : start);
	run(&st, &f, src, poi, PSPLICE_TO_EOF, flags, copy);
	T_EQ_U(st.r.in_bytes, st.r.out_bytes);
	T_EQ(st.r.parked_len, 0);
	T_EQ(positional ? oi : t_pos(src), start + (int64_t)st.delivered);
	if (positional)
		T_EQ(t_pos(src), 333);
	finish(&f, src, poi, &st, FILE_SIZE - (uint64_t)start, 1, (uint64_t)start);
}

/* A pipe or socket holding n bytes of stream 2, room made for them. */
static void stream_source(int s[2], void (*make)(int[2]), uint64_t n)
{
	int big = (int)(2 * n);

	make(s);
	if (make == t_pipe)
		T_OK(fcntl(s[1], F_SETPIPE_SZ, (int)n));
	else
		T_SKIP_IF(setsockopt(s[1], SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof(big)) < 0,
			  "a socket buffer past wmem_max needs CAP_NET_ADMIN");
	t_fill_fd(s[1], n, 2);
	for (int i = 0; i < 10000 && (uint64_t)t_queued(s[0]) < n; i++)
		usleep(1000);
	T_EQ_U(t_queued(s[0]), n);
	close(s[1]);
}

/* From a pipe or socket into a full socket: what was taken and not
 * delivered is parked, the rest is still in the source. */
static void stream_to_full(void (*make_in)(int[2]), void (*make_out)(int[2]),
			   bool nonblock_fd, unsigned int flags, bool copy)
{
	uint64_t n = make_out == t_unix_pair ? SMALL : BIG_STREAM;
	struct steps st;
	struct full f;
	int s[2];

	full_socket(&f, make_out, nonblock_fd);
	stream_source(s, make_in, n);
	run(&st, &f, s[0], NULL, n, flags, copy);
	check_parked(&st.r, 2, st.delivered);
	T_EQ_U(t_queued(s[0]), n - st.delivered - st.r.parked_len);
	finish(&f, s[0], NULL, &st, n, 2, 0);
	close(s[0]);
}

static void full_outputs(void)
{
	const unsigned int rw = PSPLICE_F_ONLY(PSPLICE_METHOD_READWRITE);
	const unsigned int sp = PSPLICE_F_ONLY(PSPLICE_METHOD_SPLICE_PIPE);
	void (*kinds[])(int[2]) = { t_unix_pair, t_tcp_pair };

	for (int k = 0; k < 2; k++) {
		void (*make)(int[2]) = kinds[k];

		file_to_full(make, true, true, 0, false);
		file_to_full(make, false, true, 0, true);
		file_to_full(make, true, true, NB, true);
		file_to_full(make, false, true, NB | sp, false);
		file_to_full(make, true, true, sp, true);
		file_to_full(make, false, true, rw, false);
		file_to_full(make, true, true, rw, true);
		/* A blocking socket, and the flag says not to wait for it. */
		file_to_full(make, true, false, NB, false);
		file_to_full(make, false, false, NB | rw, true);

		stream_to_full(t_pipe, make, true, 0, false);
		stream_to_full(t_pipe, make, true, rw, true);
		stream_to_full(t_unix_pair, make, true, 0, false);
		stream_to_full(t_unix_pair, make, true, NB, true);
		stream_to_full(t_unix_pair, make, true, rw, false);
		stream_to_full(t_pipe, make, false, NB, false);
		stream_to_full(t_unix_pair, make, false, NB, true);
	}
	stream_to_full(t_tcp_pair, t_unix_pair, true, 0, false);
	stream_to_full(t_tcp_pair, t_unix_pair, false, NB, true);
}

/* Into a full pipe, with the flag on a blocking pipe: the output's EAGAIN;
 * the source keeps what it had. */
static void full_pipe(void)
{
	struct psplice_result r;
	int64_t oi = 50;
	int in[2], out[2], u[2];
	uint64_t junk;

	t_pipe(out);
	t_set_nonblock(out[1], true);
	junk = t_fill_full(out[1], JUNK_SEED);
	t_set_nonblock(out[1], false);

	t_pipe(in);
	t_fill_fd(in[1], SMALL, 2);
	T_ERRNO(psplice_ex(in[0], NULL, out[1], NULL, SMALL, NB, &r), EAGAIN);
	T_RESULT(r, EAGAIN, PSPLICE_SIDE_OUT, 0, 0);
	T_ERRNO(psplice_copy(in[0], NULL, out[1], NULL, SMALL, NB, &r), EAGAIN);
	T_RESULT(r, EAGAIN, PSPLICE_SIDE_OUT, 0, 0);
	T_EQ(t_queued(in[0]), SMALL);

	T_ERRNO(psplice_ex(src, &oi, out[1], NULL, SMALL, NB, &r), EAGAIN);
	T_RESULT(r, EAGAIN, PSPLICE_SIDE_OUT, 0, 0);
	T_EQ(oi, 50);
	T_EQ(lseek(src, 60, SEEK_SET), 60);
	T_ERRNO(psplice_copy(src, NULL, out[1], NULL, SMALL, NB, &r), EAGAIN);
	T_RESULT(r, EAGAIN, PSPLICE_SIDE_OUT, 0, 0);
	T_EQ(t_pos(src), 60);

	t_unix_pair(u);
	t_fill_fd(u[1], SMALL, 2);
	T_ERRNO(psplice_ex(u[0], NULL, out[1], NULL, SMALL, NB, &r), EAGAIN);
	T_EQ(r.side, PSPLICE_SIDE_OUT);
	T_EQ(r.out_bytes, 0);
	check_parked(&r, 2, 0);
	T_EQ_U(t_queued(u[0]), SMALL - r.in_bytes);

	/* The full pipe holds only the junk. */
	T_EQ_U(t_queued(out[0]), junk);
	T_ASSERT(t_check_fd(out[0], -1, junk, JUNK_SEED, 0));
	T_ASSERT(t_check_fd(in[0], -1, SMALL, 2, 0));
	t_close_pair(in);
	t_close_pair(out);
	t_close_pair(u);
}

/* Move some of the peer's waiting bytes into the check, less than a step
 * moves, so that the output fills up now and then; returns how many. */
static uint64_t drain_check(int fd, uint64_t got)
{
	static uint8_t buf[16384];
	ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);

	if (n < 0 && errno == EAGAIN)
		return 0;
	T_ASSERT(n > 0);
	T_ASSERT(t_check_buf(buf, (size_t)n, 3, got));
	return (uint64_t)n;
}

/* An event loop: a child feeds a socket, the loop moves it with NONBLOCK
 * into a socket with small buffers and reads the far end itself. On EAGAIN
 * it waits for the side named, keeps the parked bytes and sends them first
 * next time. Every byte arrives once, in order. */
static void relay(void (*make_in)(int[2]), void (*make_out)(int[2]))
{
	static uint8_t held[1 << 21];
	uint64_t got = 0, held_off = 0;
	size_t held_len = 0;
	int s[2], d[2], small = 32768, sides[3] = { 0 };
	struct psplice_result r;
	struct pollfd pin;
	pid_t feeder;
	ssize_t n;
	long i;

	make_out(d);
	T_OK(setsockopt(d[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)));
	T_OK(setsockopt(d[1], SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)));
	t_set_nonblock(d[0], true);
	make_in(s);
	feeder = t_feed(s[1], RELAY, 3);
	close(s[1]);
	pin = (struct pollfd){ .fd = s[0], .events = POLLIN };
	for (i = 0; i < 10000000 && got < RELAY; i++) {
		if (held_len) {
			n = send(d[0], held + held_off, held_len, MSG_DONTWAIT | MSG_NOSIGNAL);
			T_ASSERT(n > 0 || errno == EAGAIN);
			if (n > 0) {
				held_off += (uint64_t)n;
				held_len -= (size_t)n;
			}
		} else {
			n = psplice_ex(s[0], NULL, d[0], NULL, 65536, NB, &r);
			if (n < 0) {
				T_EQ(errno, EAGAIN);
				T_EQ(r.error, EAGAIN);
				sides[r.side]++;
				T_EQ_U(r.parked_len, r.in_bytes - r.out_bytes);
				T_ASSERT(r.parked_len <= sizeof(held));
				if (r.parked_len)
					memcpy(held, r.parked, r.parked_len);
				held_off = 0;
				held_len = r.parked_len;
				if (r.side == PSPLICE_SIDE_IN)
					T_OK(poll(&pin, 1, 1000));
			}
		}
		got += drain_check(d[1], got);
	}
	T_EQ_U(got, RELAY);
	T_EQ(sides[PSPLICE_SIDE_NONE], 0);
	T_ASSERT(sides[PSPLICE_SIDE_OUT] > 0);
	T_ASSERT(t_wait(feeder));
	t_close_pair(s);
	t_close_pair(d);
}

/* A child reads the pipe p until its end, a page at a time: slower than
 * the steps that fill it, so that the pipe is full now and then, and makes
 * room while the step that met it full still looks. */
static pid_t drainer(int p[2])
{
	static char buf[4096];
	pid_t pid = fork();

	T_OK(pid);
	if (pid) {
		close(p[0]);
		return pid;
	}
	close(p[1]);
	while (read(p[0], buf, sizeof(buf)) > 0)
		;
	_exit(0);
}

/* Steps from in into a pipe that a child drains, until the given number of
 * calls or DEV_SECS seconds; counts each side that EAGAIN named. */
static void count_sides(int in, bool nonblock_out, unsigned int flags, long calls,
			int sides[3])
{
	struct psplice_result r;
	time_t end = time(NULL) + DEV_SECS;
	ssize_t n;
	pid_t pid;
	int p[2];

	t_pipe(p);
	t_set_nonblock(p[1], nonblock_out);
	pid = drainer(p);
	for (long i = 0; i < calls && (i % 1024 || time(NULL) < end); i++) {
		n = psplice_ex(in, NULL, p[1], NULL, 65536, flags, &r);
		if (n >= 0) {
			T_ASSERT(n > 0);
			continue;
		}
		T_EQ(errno, EAGAIN);
		T_EQ(r.error, EAGAIN);
		T_EQ_U(r.out_bytes, 0);
		sides[r.side]++;
	}
	close(p[1]);
	T_ASSERT(t_wait(pid));
}

/* /dev/zero never runs dry, and an fd of it opened without O_NONBLOCK
 * neither waits nor says EAGAIN (splice(2): SPLICE_F_NONBLOCK makes the
 * pipe operations nonblocking, not the file). Every EAGAIN is the full
 * pipe's, even when its reader has made room by the time the call looks. */
static void device_into_drained_pipe(bool nonblock_out, unsigned int flags)
{
	int zero = open("/dev/zero", O_RDONLY | O_CLOEXEC), sides[3] = { 0 };

	T_OK(zero);
	count_sides(zero, nonblock_out, flags, DEV_CALLS, sides);
	T_EQ(sides[PSPLICE_SIDE_IN], 0);
	T_EQ(sides[PSPLICE_SIDE_NONE], 0);
	T_ASSERT(sides[PSPLICE_SIDE_OUT] > 0);
	close(zero);
}

/* A character device that does wait: a terminal with nothing typed. Its
 * own O_NONBLOCK, or the flag on a blocking one, says EAGAIN on its side;
 * so does an empty pipe, into the same drained pipe. */
static void empty_device_into_drained_pipe(void)
{
	int master, slave, p[2], sides[3] = { 0 };

	t_pty(&master, &slave);
	count_sides(slave, false, NB, EMPTY_CALLS, sides);
	t_set_nonblock(slave, true);
	count_sides(slave, true, 0, EMPTY_CALLS, sides);
	t_pipe(p);
	t_set_nonblock(p[0], true);
	count_sides(p[0], false, NB, EMPTY_CALLS, sides);
	count_sides(p[0], true, 0, EMPTY_CALLS, sides);
	T_EQ(sides[PSPLICE_SIDE_OUT], 0);
	T_EQ(sides[PSPLICE_SIDE_NONE], 0);
	T_ASSERT(sides[PSPLICE_SIDE_IN] > 0);
	t_close_pair(p);
	close(master);
	close(slave);
}

int main(int argc, char **argv)
{
	t_dir(argc, argv);
	src = t_make_file(t_path("src"), FILE_SIZE, 1);
	outfile = open(t_path("out"), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	T_OK(outfile);

	empty_inputs();
	full_pipe();
	full_outputs();
	device_into_drained_pipe(false, NB);
	device_into_drained_pipe(true, 0);
	device_into_drained_pipe(true, NB);
	empty_device_into_drained_pipe();
	relay(t_unix_pair, t_unix_pair);
	relay(t_tcp_pair, t_unix_pair);
	relay(t_unix_pair, t_tcp_pair);
	relay(t_pipe, t_tcp_pair);
	return T_PASS;
}
