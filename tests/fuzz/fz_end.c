/* The fuzzer's endpoints: the fds the library is given, and the thread at
 * the other end of each stream (a producer feeding the source, a peer
 * reading the sink: fast, slowly, or closing or resetting early). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <pty.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "fz_int.h"

static const char *const kind_names[FZ_NKINDS] = {
	"tmpfs", "disk", "pipe", "unix", "tcp", "dev", "pty"
};

const char *fz_kind_name(int kind)
{
	return kind >= 0 && kind < FZ_NKINDS ? kind_names[kind] : "?";
}

/* Byte i of the source stream seed (a cheap mix of both). */
uint8_t fz_byte(uint32_t seed, uint64_t i)
{
	uint64_t x = (i >> 3) * 0x9e3779b97f4a7c15ull + seed;

	x ^= x >> 29;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 32;
	return (uint8_t)(x >> ((i & 7) * 8));
}

void fz_gen(uint32_t seed, bool zero, uint64_t off, uint8_t *buf, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		buf[i] = zero ? 0 : fz_byte(seed, off + i);
}

static void msleep_us(long us)
{
	struct timespec ts = { 0, us * 1000 };

	nanosleep(&ts, NULL);
}

static void block_sigpipe(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
}

static int tcp_pair(int fds[2])
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t l = sizeof(a);
	int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), ok;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fds[0] = fds[1] = -1;
	ok = ls >= 0 && bind(ls, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	     listen(ls, 1) == 0 && getsockname(ls, (struct sockaddr *)&a, &l) == 0 &&
	     (fds[0] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0 &&
	     connect(fds[0], (struct sockaddr *)&a, sizeof(a)) == 0 &&
	     (fds[1] = accept4(ls, NULL, NULL, SOCK_CLOEXEC)) >= 0;
	if (ls >= 0)
		close(ls);
	if (ok)
		return 0;
	if (fds[0] >= 0)
		close(fds[0]);
	return -1;
}

static int pty_pair(int *master, int *slave)
{
	struct termios t;

	if (openpty(master, slave, NULL, NULL, NULL) < 0)
		return -1;
	fcntl(*master, F_SETFD, FD_CLOEXEC);
	fcntl(*slave, F_SETFD, FD_CLOEXEC);
	tcgetattr(*slave, &t);
	cfmakeraw(&t);
	tcsetattr(*slave, TCSANOW, &t);
	return 0;
}

/* fds[0] is what reads, fds[1] what writes. */
static int stream_pair(int kind, int fds[2])
{
	switch (kind) {
	case FZ_PIPE:
		return pipe2(fds, O_CLOEXEC);
	case FZ_UNIX:
		return socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds);
	case FZ_TCP:
		return tcp_pair(fds);
	default:
		return pty_pair(&fds[1], &fds[0]);
	}
}

static int open_file(struct fz_end *e, const char *dir, const char *name)
{
	snprintf(e->path, sizeof(e->path), "%s/fz-%d-%s", dir, (int)getpid(), name);
	e->fd = open(e->path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	return e->fd < 0 ? -1 : 0;
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static void *producer(void *arg)
{
	struct fz_end *e = arg;
	uint8_t buf[1 << 16];
	uint64_t done = 0;
	size_t chunk = e->slow ? 1000 : sizeof(buf);

	block_sigpipe();
	while (done < e->size) {
		size_t k = e->size - done < chunk ? (size_t)(e->size - done) : chunk;

		fz_gen(e->seed, false, done, buf, k);
		if (write_all(e->peer, buf, k) < 0)
			break;
		done += k;
		if (e->slow)
			msleep_us(100);
	}
	/* A pty's reader would see the hangup as an error, not an end: its
	 * master stays open until the driver has read what is left. */
	if (e->kind != FZ_PTY) {
		close(e->peer);
		e->peer = -1;
		__atomic_store_n(&e->dead, true, __ATOMIC_RELEASE);
	}
	return NULL;
}

static int keep(struct fz_end *e, const uint8_t *p, size_t n)
{
	if (e->got_len + n > e->got_cap) {
		size_t cap = (e->got_len + n) * 2;
		uint8_t *b = realloc(e->got, cap);

		if (!b)
			return -1;
		e->got = b;
		e->got_cap = cap;
	}
	memcpy(e->got + e->got_len, p, n);
	__atomic_store_n(&e->got_len, e->got_len + n, __ATOMIC_RELEASE);
	return 0;
}

static void hang_up(struct fz_end *e)
{
	struct linger lg = { 1, 0 };

	if (e->mode == FZ_RESET && e->kind == FZ_TCP)
		setsockopt(e->peer, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	__atomic_store_n(&e->dead, true, __ATOMIC_RELEASE);
	close(e->peer);
	e->peer = -1;
}

static void *reader(void *arg)
{
	struct fz_end *e = arg;
	uint8_t buf[1 << 16];
	bool early = e->mode == FZ_CLOSE || e->mode == FZ_RESET;
	int i;

	block_sigpipe();
	for (i = 0; e->mode == FZ_STALL && i < 120000 &&
		    !__atomic_load_n(&e->go, __ATOMIC_ACQUIRE); i++)
		msleep_us(1000);
	for (;;) {
		size_t want = e->mode == FZ_SLOW ? 512 : sizeof(buf);
		ssize_t r;

		if (early && e->got_len + want > e->after)
			want = (size_t)(e->after - e->got_len);
		if (early && !want)
			break;
		r = read(e->peer, buf, want);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0 || keep(e, buf, (size_t)r) < 0)
			break;
		if (e->mode == FZ_SLOW)
			msleep_us(100);
	}
	if (early)
		hang_up(e);
	return NULL;
}

static int start(struct fz_end *e, void *(*fn)(void *))
{
	if (pthread_create(&e->th, NULL, fn, e))
		return -1;
	e->th_on = true;
	return 0;
}

int fz_source_open(struct fz_end *e, const char *disk, const char *tmpfs)
{
	int fds[2];

	switch (e->kind) {
	case FZ_TMPFS:
	case FZ_DISK:
		if (open_file(e, e->kind == FZ_DISK ? disk : tmpfs, "in") < 0)
			return -1;
		return fz_fill(e->fd, e->seed, e->size);
	case FZ_DEV:
		e->fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
		return e->fd < 0 ? -1 : 0;
	}
	if (stream_pair(e->kind, fds) < 0)
		return -1;
	e->fd = fds[0];
	e->peer = fds[1];
	return start(e, producer);
}

int fz_sink_open(struct fz_end *e, const char *disk, const char *tmpfs)
{
	int fds[2];

	switch (e->kind) {
	case FZ_TMPFS:
	case FZ_DISK:
		return open_file(e, e->kind == FZ_DISK ? disk : tmpfs, "out");
	case FZ_DEV:
		e->fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
		return e->fd < 0 ? -1 : 0;
	}
	if (stream_pair(e->kind, fds) < 0)
		return -1;
	e->fd = fds[1];
	e->peer = fds[0];
	return start(e, reader);
}

int fz_fill(int fd, uint32_t seed, uint64_t size)
{
	uint8_t buf[1 << 16];
	uint64_t done = 0;

	while (done < size) {
		size_t k = size - done < sizeof(buf) ? (size_t)(size - done) : sizeof(buf);

		fz_gen(seed, false, done, buf, k);
		if (write_all(fd, buf, k) < 0)
			return -1;
		done += k;
	}
	return lseek(fd, 0, SEEK_SET) == 0 ? 0 : -1;
}

/* A reader that leaves before any byte is gone before the first call:
 * sequences that need a gone reader replay the same way each time. */
void fz_sink_settle(struct fz_end *e)
{
	int i;

	if ((e->mode != FZ_CLOSE && e->mode != FZ_RESET) || e->after || !e->th_on)
		return;
	for (i = 0; i < 5000 && !__atomic_load_n(&e->dead, __ATOMIC_ACQUIRE); i++)
		msleep_us(1000);
}

/* A stalled reader reads from now on. */
void fz_sink_release(struct fz_end *e)
{
	__atomic_store_n(&e->go, true, __ATOMIC_RELEASE);
}

/* The sink's reader has all of n bytes, or is gone (bounded: 10 s). */
void fz_sink_wait(struct fz_end *e, uint64_t n)
{
	int i;

	for (i = 0; i < 10000; i++) {
		if (__atomic_load_n(&e->got_len, __ATOMIC_ACQUIRE) >= n ||
		    __atomic_load_n(&e->dead, __ATOMIC_ACQUIRE))
			return;
		msleep_us(1000);
	}
}

/* Close what the driver holds and join the thread: the end of the stream
 * for a sink's reader. */
void fz_end_close(struct fz_end *e)
{
	fz_sink_release(e);
	if (e->fd >= 0)
		close(e->fd);
	e->fd = -1;
	if (e->th_on)
		pthread_join(e->th, NULL);
	e->th_on = false;
	if (e->peer >= 0)
		close(e->peer);
	e->peer = -1;
	if (e->path[0])
		unlink(e->path);
	e->path[0] = '\0';
	free(e->got);
	e->got = NULL;
	e->got_len = e->got_cap = 0;
}

/* Read up to n bytes from a stream source, to its end, waiting at most
 * 20 s for each piece (a slow producer under a loaded sanitizer build). */
size_t fz_read_rest(int fd, uint8_t *buf, size_t n)
{
	size_t done = 0;

	while (done < n) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t r;

		if (poll(&p, 1, 20000) <= 0)
			break;
		r = read(fd, buf + done, n - done);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r <= 0)
			break;
		done += (size_t)r;
	}
	return done;
}

/* The process's open fds, pipes apart: the library keeps its thread's
 * internal pipe and up to four spare ones (pipepool.c) from one call to
 * the next; any other fd left after a sequence is a leak. */
static void fz_fds(int *pipes, int *others)
{
	DIR *d = opendir("/proc/self/fd");
	char path[300], link[64];
	struct dirent *e;
	ssize_t n;

	*pipes = *others = 0;
	if (!d)
		return;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || atoi(e->d_name) == dirfd(d))
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		link[n > 0 ? n : 0] = '\0';
		if (!strncmp(link, "pipe:", 5))
			(*pipes)++;
		else
			(*others)++;
	}
	closedir(d);
}

/* 0 while the fds are as they were at the first call (pipes: up to the
 * library's five more); -1 with a message otherwise. */
int fz_fd_check(char *msg, size_t size)
{
	static int pipes0 = -1, others0;
	int pipes, others;

	fz_fds(&pipes, &others);
	if (pipes0 < 0) {
		pipes0 = pipes;
		others0 = others;
	}
	if (others == others0 && pipes <= pipes0 + 10)
		return 0;
	snprintf(msg, size, "%d fds and %d pipe ends open, %d and %d before (at most "
		 "the library's 5 pipes more)", others, pipes, others0, pipes0);
	return -1;
}

void fz_once(void (*on_sigpipe)(int), size_t size, uint8_t **a, uint8_t **b)
{
	struct sigaction sa = { .sa_handler = on_sigpipe };

	sigaction(SIGPIPE, &sa, NULL);
	*a = malloc(size);
	*b = malloc(size);
	if (!*a || !*b)
		abort();
}
