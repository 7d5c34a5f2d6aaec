/* make stress: load and faults for a fixed time, loopback only.
 *
 * 1. psplice relay in front of an echo server this program runs (in a
 *    child process), driven by CONNS (default 1,000) concurrent client
 *    connections of random sizes for STRESS_TIME seconds (default 60): a
 *    third send everything, half-close and check that every byte comes back
 *    in order (each byte is a function of the connection's seed and its
 *    position, so the check is exact, not a hash that could collide); a
 *    third close early with bytes unsent and unread; a third reset
 *    (SO_LINGER 0). The relay's RSS, fds and pipes are sampled after a
 *    warm-up (the baseline), at the peak and after the run, and must come
 *    back to the baseline within a bound.
 * 2. psplice cp -r -v of a tree of 10,000 files onto a small tmpfs that
 *    another process fills at the same time (as root, in a mount namespace
 *    of its own): cp must fail with ENOSPC reported and a non-zero status,
 *    and every file it says it copied must be identical to its source, with
 *    no other file left in the destination.
 * Prints the numbers; exits 1 if a byte was lost or a resource was not
 * back. Usage: stress PSPLICE SCRATCH_DIR */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNS 4096
#define CHUNK 65536

enum kind { K_FULL, K_EARLY, K_RESET };

struct conn {
	int fd;
	enum kind kind;
	uint64_t seed, size, sent, got, cut;
	bool shut, open;
};

struct totals {
	uint64_t started, completed, early, resets, sent, echoed, lost, bad_streams;
	uint64_t peak_open;
};

struct sample {
	long rss_kb;
	int fds, pipes;
};

static struct totals tot;
static struct conn conns[MAX_CONNS];
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t rnd(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

/* Byte i of the stream of a connection with this seed. */
static uint8_t stream_byte(uint64_t seed, uint64_t i)
{
	uint64_t x = (seed + (i >> 3)) * 0x9e3779b97f4a7c15ull;

	x ^= x >> 29;
	return (uint8_t)(x >> ((i & 7) * 8));
}

static void die(const char *what)
{
	perror(what);
	exit(2);
}

static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static int listener(int *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1;

	if (fd < 0)
		die("socket");
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 4096) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) < 0)
		die("listen");
	*port = ntohs(a.sin_port);
	return fd;
}

/* A free loopback port for the relay: bound, read, closed. */
static int free_port(void)
{
	int port, fd = listener(&port);

	close(fd);
	return port;
}

/* The echo server: each connection's bytes back as they come, and its end
 * once the client's end came and everything went back. */
struct echo {
	int fd;
	size_t len;
	bool eof;
	unsigned char buf[CHUNK];
};

static void echo_close(int ep, struct echo *e)
{
	epoll_ctl(ep, EPOLL_CTL_DEL, e->fd, NULL);
	close(e->fd);
	free(e);
}

static void echo_io(int ep, struct echo *e)
{
	struct epoll_event ev = { .data.ptr = e };
	ssize_t n;

	for (;;) {
		if (e->len) {
			n = send(e->fd, e->buf, e->len, MSG_NOSIGNAL | MSG_DONTWAIT);
			if (n < 0 && errno == EAGAIN)
				break;
			if (n <= 0) {
				echo_close(ep, e);
				return;
			}
			memmove(e->buf, e->buf + n, e->len - (size_t)n);
			e->len -= (size_t)n;
			continue;
		}
		if (e->eof) {
			echo_close(ep, e);
			return;
		}
		n = recv(e->fd, e->buf, sizeof(e->buf), MSG_DONTWAIT);
		if (n < 0 && errno == EAGAIN)
			break;
		if (n < 0) {
			echo_close(ep, e);
			return;
		}
		if (n == 0)
			e->eof = true;
		e->len = (size_t)n;
	}
	ev.events = e->len ? EPOLLOUT : EPOLLIN;
	epoll_ctl(ep, EPOLL_CTL_MOD, e->fd, &ev);
}

static void echo_server(int lfd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL }, evs[256];
	int ep = epoll_create1(EPOLL_CLOEXEC), n, fd;
	struct echo *e;

	/* Gone with this program, however it ends. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	signal(SIGPIPE, SIG_IGN);
	epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
	for (;;) {
		n = epoll_wait(ep, evs, 256, 1000);
		for (int i = 0; i < n; i++) {
			if (evs[i].data.ptr) {
				echo_io(ep, evs[i].data.ptr);
				continue;
			}
			while ((fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
				e = malloc(sizeof(*e));
				if (!e)
					_exit(2);
				e->fd = fd;
				e->len = 0;
				e->eof = false;
				ev = (struct epoll_event){ .events = EPOLLIN, .data.ptr = e };
				epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
			}
		}
	}
}

static pid_t start_echo(int *port)
{
	int lfd = listener(port);
	pid_t pid = fork();

	if (pid < 0)
		die("fork");
	if (pid == 0)
		echo_server(lfd);
	close(lfd);
	return pid;
}

static pid_t start_relay(const char *bin, const char *log, int lport, int tport)
{
	char l[64], t[64];
	pid_t pid;
	int fd;

	snprintf(l, sizeof(l), "127.0.0.1:%d", lport);
	snprintf(t, sizeof(t), "127.0.0.1:%d", tport);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		/* Its reports of the resets go to a log, not the summary. */
		fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd >= 0)
			dup2(fd, 2);
		execl(bin, bin, "relay", "-j", "2", l, t, (char *)NULL);
		perror("exec relay");
		_exit(2);
	}
	return pid;
}

static struct sample sample_of(pid_t pid)
{
	struct sample s = { 0, 0, 0 };
	char path[64], link[64], line[256];
	struct dirent *de;
	FILE *f;
	DIR *d;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld", &s.rss_kb) == 1)
			break;
	if (f)
		fclose(f);
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	while (d && (de = readdir(d))) {
		char p2[600];

		if (de->d_name[0] == '.')
			continue;
		s.fds++;
		snprintf(p2, sizeof(p2), "%s/%s", path, de->d_name);
		n = readlink(p2, link, sizeof(link) - 1);
		if (n > 0 && (link[n] = 0, strncmp(link, "pipe:", 5) == 0))
			s.pipes++;
	}
	if (d)
		closedir(d);
	return s;
}

/* The relay listens once a connect succeeds. */
static void wait_listening(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

	for (int i = 0; i < 500; i++) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		int ok = connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;

		close(fd);
		if (ok)
			return;
		usleep(10000);
	}
	fprintf(stderr, "stress: the relay does not listen on %d\n", port);
	exit(2);
}

static uint64_t pick_size(void)
{
	uint64_t r = rnd() % 100;

	if (r < 50)
		return rnd() % 4096;
	if (r < 90)
		return rnd() % 65536;
	return rnd() % (1 << 20);
}

static void conn_start(int ep, struct conn *c, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT, .data.ptr = c };

	*c = (struct conn){ .kind = (enum kind)(rnd() % 3), .seed = rnd(),
			    .size = pick_size(), .open = true };
	c->cut = c->size ? rnd() % (c->size + 1) : 0;
	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		die("socket");
	if (connect(c->fd, (struct sockaddr *)&a, sizeof(a)) < 0 && errno != EINPROGRESS)
		die("connect");
	epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev);
	tot.started++;
}

static void conn_end(int ep, struct conn *c, bool reset)
{
	struct linger lg = { 1, 0 };

	if (reset)
		setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	c->open = false;
}

/* A connection that was to get everything back did not: what is missing
 * is lost. */
static void full_failed(int ep, struct conn *c, const char *why)
{
	if (tot.bad_streams < 5)
		fprintf(stderr, "stress: stream of %" PRIu64 " bytes: %s after %" PRIu64
			" back\n", c->size, why, c->got);
	tot.bad_streams++;
	tot.lost += c->size - c->got;
	conn_end(ep, c, false);
}

static void conn_send(int ep, struct conn *c)
{
	static unsigned char buf[CHUNK];
	uint64_t limit = c->kind == K_FULL ? c->size : c->cut;
	size_t n = limit - c->sent > CHUNK ? CHUNK : (size_t)(limit - c->sent);
	ssize_t w;

	for (size_t i = 0; i < n; i++)
		buf[i] = stream_byte(c->seed, c->sent + i);
	w = n ? send(c->fd, buf, n, MSG_NOSIGNAL | MSG_DONTWAIT) : 0;
	if (w < 0 && errno != EAGAIN) {
		if (c->kind == K_FULL)
			full_failed(ep, c, strerror(errno));
		else
			conn_end(ep, c, false);
		return;
	}
	if (w > 0) {
		c->sent += (uint64_t)w;
		tot.sent += (uint64_t)w;
	}
	if (c->sent < limit)
		return;
	if (c->kind == K_EARLY) {
		tot.early++;
		conn_end(ep, c, false);
		return;
	}
	if (c->kind == K_RESET) {
		tot.resets++;
		conn_end(ep, c, true);
		return;
	}
	if (!c->shut) {
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };

		shutdown(c->fd, SHUT_WR);
		c->shut = true;
		epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
	}
}

static void conn_recv(int ep, struct conn *c)
{
	static unsigned char buf[CHUNK];
	ssize_t n = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);

	if (n < 0 && errno == EAGAIN)
		return;
	if (c->kind != K_FULL) {
		/* Early closers and resetters read what comes, unchecked. */
		if (n <= 0)
			conn_end(ep, c, false);
		return;
	}
	if (n < 0) {
		full_failed(ep, c, strerror(errno));
		return;
	}
	if (n == 0) {
		if (c->got != c->size) {
			full_failed(ep, c, "early end of file");
			return;
		}
		tot.completed++;
		conn_end(ep, c, false);
		return;
	}
	for (ssize_t i = 0; i < n; i++)
		if (c->got + (uint64_t)i >= c->size ||
		    buf[i] != stream_byte(c->seed, c->got + (uint64_t)i)) {
			full_failed(ep, c, "a wrong byte");
			return;
		}
	c->got += (uint64_t)n;
	tot.echoed += (uint64_t)n;
}

static int open_count(int nconns)
{
	int n = 0;

	for (int i = 0; i < nconns; i++)
		n += conns[i].open;
	return n;
}

/* Keep nconns connections going until `until`, then let them finish (at
 * most 60 s more). Samples the relay every half second into peak. */
static void drive(int port, int nconns, double until, pid_t relay, struct sample *peak)
{
	struct epoll_event evs[512];
	int ep = epoll_create1(EPOLL_CLOEXEC), n, open_now;
	double next_sample = 0, deadline = until + 60;
	struct sample s;

	if (ep < 0)
		die("epoll_create1");
	for (int i = 0; i < nconns; i++)
		conn_start(ep, &conns[i], port);
	while (now() < deadline) {
		n = epoll_wait(ep, evs, 512, 100);
		for (int i = 0; i < n; i++) {
			struct conn *c = evs[i].data.ptr;

			if (c->open && (evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)))
				conn_recv(ep, c);
			if (c->open && (evs[i].events & EPOLLOUT) && !c->shut)
				conn_send(ep, c);
		}
		open_now = 0;
		for (int i = 0; i < nconns; i++) {
			if (!conns[i].open && now() < until)
				conn_start(ep, &conns[i], port);
			open_now += conns[i].open;
		}
		if ((uint64_t)open_now > tot.peak_open)
			tot.peak_open = (uint64_t)open_now;
		if (peak && now() >= next_sample) {
			s = sample_of(relay);
			if (s.rss_kb > peak->rss_kb)
				peak->rss_kb = s.rss_kb;
			if (s.fds > peak->fds)
				peak->fds = s.fds;
			if (s.pipes > peak->pipes)
				peak->pipes = s.pipes;
			next_sample = now() + 0.5;
		}
		if (now() >= until && !open_now)
			break;
	}
	open_now = open_count(nconns);
	if (open_now) {
		fprintf(stderr, "stress: %d connections still open at the deadline\n", open_now);
		for (int i = 0; i < nconns; i++)
			if (conns[i].open && conns[i].kind == K_FULL)
				full_failed(ep, &conns[i], "the deadline");
			else if (conns[i].open)
				conn_end(ep, &conns[i], false);
		tot.bad_streams++;
	}
	close(ep);
}

/* Back to the baseline, within bounds: fds and pipes may differ by what
 * the relay's workers keep for reuse, RSS by what malloc keeps. */
static bool flat(const struct sample *base, const struct sample *after)
{
	return after->fds <= base->fds + 16 && after->pipes <= base->pipes + 16 &&
	       after->rss_kb <= base->rss_kb + 32768;
}

static struct sample settle(pid_t relay, const struct sample *base)
{
	struct sample s = sample_of(relay);

	for (int i = 0; i < 100 && !flat(base, &s); i++) {
		usleep(100000);
		s = sample_of(relay);
	}
	return s;
}

static int relay_phase(const char *bin, const char *scratch, double secs, int nconns)
{
	struct sample base, peak = { 0, 0, 0 }, after;
	int tport, lport = free_port(), st;
	char log[4200];
	pid_t echo = start_echo(&tport), relay;

	snprintf(log, sizeof(log), "%s/relay.log", scratch);
	relay = start_relay(bin, log, lport, tport);
	double t0;
	bool ok;

	wait_listening(lport);
	/* A warm-up: the workers' own pipes and buffers exist after it. */
	drive(lport, nconns / 4 ? nconns / 4 : 1, now() + 2, 0, NULL);
	memset(&tot, 0, sizeof(tot));
	base = settle(relay, &(struct sample){ 1L << 40, 1 << 30, 1 << 30 });
	t0 = now();
	drive(lport, nconns, t0 + secs, relay, &peak);
	after = settle(relay, &base);
	ok = flat(&base, &after);
	printf("relay: %.0f s, %d concurrent connections (peak %" PRIu64 " open)\n",
	       now() - t0, nconns, tot.peak_open);
	printf("  connections: %" PRIu64 " started, %" PRIu64 " echoed in full and checked, %"
	       PRIu64 " closed early, %" PRIu64 " reset\n", tot.started, tot.completed,
	       tot.early, tot.resets);
	printf("  bytes moved: %" PRIu64 " client->target, %" PRIu64 " back (checked)\n",
	       tot.sent, tot.echoed);
	printf("  faults injected: %" PRIu64 " (%" PRIu64 " early closes, %" PRIu64 " resets)\n",
	       tot.early + tot.resets, tot.early, tot.resets);
	printf("  bytes lost: %" PRIu64 " (in %" PRIu64 " streams)\n", tot.lost, tot.bad_streams);
	printf("  relay rss kB / fds / pipes: baseline %ld / %d / %d, peak %ld / %d / %d, "
	       "after %ld / %d / %d: %s\n", base.rss_kb, base.fds, base.pipes, peak.rss_kb,
	       peak.fds, peak.pipes, after.rss_kb, after.fds, after.pipes,
	       ok ? "back to the baseline" : "NOT back");
	kill(relay, SIGTERM);
	kill(echo, SIGTERM);
	waitpid(relay, &st, 0);
	waitpid(echo, NULL, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		printf("  relay exit: status %#x\n", st);
		ok = false;
	}
	return ok && !tot.lost && !tot.bad_streams && tot.completed ? 0 : 1;
}

/* ---- cp -r onto a disk that fills ---- */

static void write_file(const char *path, uint64_t size, uint64_t seed)
{
	static unsigned char buf[16384];
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0)
		die(path);
	for (uint64_t i = 0; i < size; i++)
		buf[i] = stream_byte(seed, i);
	if (write(fd, buf, size) != (ssize_t)size)
		die(path);
	close(fd);
}

/* The tree's bytes. */
static uint64_t make_tree(const char *root, int files)
{
	uint64_t total = 0, size;
	char p[4200];

	mkdir(root, 0755);
	for (int i = 0; i < files; i++) {
		if (i % 100 == 0) {
			snprintf(p, sizeof(p), "%s/d%03d", root, i / 100);
			mkdir(p, 0755);
		}
		snprintf(p, sizeof(p), "%s/d%03d/f%05d", root, i / 100, i);
		size = rnd() % 16384;
		write_file(p, size, (uint64_t)i);
		total += size;
	}
	return total;
}

static bool same_file(const char *a, const char *b)
{
	static unsigned char x[65536], y[65536];
	FILE *fa = fopen(a, "re"), *fb = fopen(b, "re");
	bool same = fa && fb;
	size_t na, nb;

	while (same) {
		na = fread(x, 1, sizeof(x), fa);
		nb = fread(y, 1, sizeof(y), fb);
		same = na == nb && memcmp(x, y, na) == 0;
		if (!na || !nb)
			break;
	}
	if (fa)
		fclose(fa);
	if (fb)
		fclose(fb);
	return same;
}

/* Fill the filesystem at dir, 256 KiB every 10 ms, until it is full. */
static pid_t start_filler(const char *dir)
{
	static unsigned char buf[1 << 20];
	char p[4200];
	pid_t pid = fork();
	int fd;

	if (pid)
		return pid;
	snprintf(p, sizeof(p), "%s/.filler", dir);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	memset(buf, 0xa5, sizeof(buf));
	while (fd >= 0 && write(fd, buf, sizeof(buf) / 4) > 0)
		usleep(10000);
	_exit(0);
}

static int cp_phase(const char *bin, const char *scratch, int files)
{
	char src[2048], mnt[2048], dst[2100], cmd[13000], line[9000], a[4200], b[4200];
	char opts[64];
	uint64_t tree, claimed = 0, bad = 0, present = 0, enospc = 0;
	FILE *f;
	int st, rc;
	pid_t fill;

	if (geteuid() != 0 || unshare(CLONE_NEWNS) < 0 ||
	    mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
		printf("cp -r: SKIP (needs root and a mount namespace for a small tmpfs)\n");
		return 0;
	}
	snprintf(src, sizeof(src), "%s/tree", scratch);
	snprintf(mnt, sizeof(mnt), "%s/small", scratch);
	snprintf(dst, sizeof(dst), "%s/copy", mnt);
	tree = make_tree(src, files);
	mkdir(mnt, 0755);
	/* Room for about half the tree: the filler takes some of it too. */
	snprintf(opts, sizeof(opts), "size=%" PRIu64 "k,nr_inodes=100000", tree / 2048 + 1024);
	if (mount("tmpfs", mnt, "tmpfs", 0, opts) < 0)
		die("mount tmpfs");
	fill = start_filler(mnt);
	snprintf(cmd, sizeof(cmd), "'%s' cp -r -v '%s' '%s' 2>'%s/cp.err'", bin, src, dst,
		 scratch);
	st = system(cmd);
	rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
	waitpid(fill, NULL, 0);
	snprintf(line, sizeof(line), "%s/cp.err", scratch);
	f = fopen(line, "re");
	while (f && fgets(line, sizeof(line), f)) {
		if (strstr(line, "No space left on device"))
			enospc++;
		if (sscanf(line, "psplice: '%4199[^']' -> '%4199[^']':", a, b) == 2) {
			claimed++;
			if (!same_file(a, b)) {
				if (bad < 5)
					fprintf(stderr, "cp -r: %s claimed, differs\n", b);
				bad++;
			}
		}
	}
	if (f)
		fclose(f);
	/* Every file in the destination is one cp claimed. */
	snprintf(cmd, sizeof(cmd), "find '%s' -type f | wc -l", dst);
	f = popen(cmd, "r");
	if (!f || fscanf(f, "%" SCNu64, &present) != 1)
		present = UINT64_MAX;
	if (f)
		pclose(f);
	printf("cp -r: %d files (%" PRIu64 " bytes) onto a tmpfs of %s filled by another "
	       "process: exit %d, %" PRIu64 " ENOSPC reported, %" PRIu64 " files claimed copied, %" PRIu64
	       " differ, %" PRIu64 " files in the destination\n", files, tree, opts, rc, enospc,
	       claimed, bad, present);
	umount2(mnt, MNT_DETACH);
	if (rc == 0 || !enospc || bad || present != claimed) {
		printf("  FAIL: want a non-zero exit, ENOSPC reported, no claimed file "
		       "different and no unclaimed file left\n");
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *t = getenv("STRESS_TIME"), *c = getenv("STRESS_CONNS");
	const char *fl = getenv("STRESS_FILES");
	double secs = t ? atof(t) : 60;
	int nconns = c ? atoi(c) : 1000, files = fl ? atoi(fl) : 10000, rc;

	if (argc != 3 || nconns < 1 || nconns > MAX_CONNS || secs <= 0 || files < 1) {
		fprintf(stderr, "usage: STRESS_TIME=S STRESS_CONNS=N STRESS_FILES=N "
			"stress PSPLICE SCRATCH_DIR\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	raise_nofile();
	setvbuf(stdout, NULL, _IOLBF, 0);
	rc = relay_phase(argv[1], argv[2], secs, nconns);
	rc |= cp_phase(argv[1], argv[2], files);
	printf("stress: %s\n", rc ? "FAIL" : "ok");
	return rc;
}
