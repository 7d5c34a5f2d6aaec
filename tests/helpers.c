#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pty.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/loop.h>
#include <linux/magic.h>
#include <linux/seccomp.h>

#include "cachestat.h"
#include "t.h"

static char scratch[4096], tmpfs_scratch[4096];
static bool tmpfs_mounted;

void t_fail(void)
{
	exit(T_FAIL);
}

static void rm_tree(const char *dir)
{
	char cmd[4200];

	if (!dir[0])
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", dir);
}

static void cleanup(void)
{
	if (getpid() != (pid_t)strtol(getenv("T_MAIN_PID") ? getenv("T_MAIN_PID") : "0", NULL, 10))
		return;
	rm_tree(scratch);
	if (tmpfs_mounted)
		umount2(tmpfs_scratch, MNT_DETACH);
	rm_tree(tmpfs_scratch);
}

static void mark_main(void)
{
	char pid[32];

	if (getenv("T_MAIN_PID") && strtol(getenv("T_MAIN_PID"), NULL, 10) == getpid())
		return;
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	setenv("T_MAIN_PID", pid, 1);
	atexit(cleanup);
}

const char *t_dir(int argc, char **argv)
{
	const char *base = argc > 1 ? argv[1] : getenv("PSPLICE_TEST_DIR");

	if (scratch[0])
		return scratch;
	if (!base)
		base = "/tmp";
	snprintf(scratch, sizeof(scratch), "%s/psplice-t-XXXXXX", base);
	if (!mkdtemp(scratch)) {
		fprintf(stderr, "mkdtemp %s: %s\n", scratch, strerror(errno));
		exit(T_FAIL);
	}
	mark_main();
	return scratch;
}

const char *t_tmpfs_dir(void)
{
	struct statfs s;

	if (tmpfs_scratch[0])
		return tmpfs_scratch;
	if (statfs("/dev/shm", &s) == 0 && s.f_type == TMPFS_MAGIC) {
		snprintf(tmpfs_scratch, sizeof(tmpfs_scratch), "/dev/shm/psplice-t-XXXXXX");
		if (mkdtemp(tmpfs_scratch)) {
			mark_main();
			return tmpfs_scratch;
		}
	}
	snprintf(tmpfs_scratch, sizeof(tmpfs_scratch), "/tmp/psplice-tmpfs-XXXXXX");
	if (!mkdtemp(tmpfs_scratch))
		return NULL;
	mark_main();
	if (mount("tmpfs", tmpfs_scratch, "tmpfs", 0, "size=256m") < 0)
		return NULL;
	tmpfs_mounted = true;
	return tmpfs_scratch;
}

const char *t_path_in(const char *dir, const char *name)
{
	static char paths[8][4200];
	static int next;
	char *p = paths[next++ % 8];

	snprintf(p, 4200, "%s/%s", dir, name);
	return p;
}

const char *t_path(const char *name)
{
	return t_path_in(scratch[0] ? scratch : "/tmp", name);
}

uint8_t t_byte(uint32_t seed, uint64_t i)
{
	uint64_t x = (i >> 3) * 0x9e3779b97f4a7c15ull + seed * 0xbf58476d1ce4e5b9ull + 1;

	x ^= x >> 31;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 29;
	return (uint8_t)(x >> ((i & 7) * 8));
}

void t_gen(uint32_t seed, uint64_t off, void *buf, size_t n)
{
	uint8_t *b = buf;

	for (size_t i = 0; i < n; i++)
		b[i] = t_byte(seed, off + i);
}

int t_make_file(const char *path, uint64_t size, uint32_t seed)
{
	static uint8_t buf[1 << 16];
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	uint64_t done = 0;

	if (fd < 0) {
		fprintf(stderr, "open %s: %s\n", path, strerror(errno));
		exit(T_FAIL);
	}
	while (done < size) {
		size_t n = size - done < sizeof(buf) ? (size_t)(size - done) : sizeof(buf);

		t_gen(seed, done, buf, n);
		if (pwrite(fd, buf, n, (off_t)done) != (ssize_t)n) {
			fprintf(stderr, "write %s: %s\n", path, strerror(errno));
			exit(T_FAIL);
		}
		done += n;
	}
	return fd;
}

bool t_check_fd(int fd, int64_t off, uint64_t n, uint32_t seed, uint64_t soff)
{
	static uint8_t buf[1 << 16], want[1 << 16];
	uint64_t done = 0;
	ssize_t r;

	while (done < n) {
		size_t k = n - done < sizeof(buf) ? (size_t)(n - done) : sizeof(buf);

		r = off >= 0 ? pread(fd, buf, k, off + (off_t)done) : read(fd, buf, k);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			fprintf(stderr, "check: short at %llu of %llu (%s)\n",
				(unsigned long long)done, (unsigned long long)n,
				r < 0 ? strerror(errno) : "EOF");
			return false;
		}
		t_gen(seed, soff + done, want, (size_t)r);
		if (memcmp(buf, want, (size_t)r)) {
			for (ssize_t i = 0; i < r; i++)
				if (buf[i] != want[i]) {
					fprintf(stderr, "check: byte %llu differs\n",
						(unsigned long long)(done + (uint64_t)i));
					break;
				}
			return false;
		}
		done += (uint64_t)r;
	}
	return true;
}

bool t_check_file(const char *path, uint64_t n, uint32_t seed)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool ok;

	if (fd < 0 || fstat(fd, &st) < 0)
		return false;
	if ((uint64_t)st.st_size != n) {
		fprintf(stderr, "check: %s has %lld bytes, want %llu\n", path,
			(long long)st.st_size, (unsigned long long)n);
		close(fd);
		return false;
	}
	ok = t_check_fd(fd, 0, n, seed, 0);
	close(fd);
	return ok;
}

void t_tcp_pair(int fds[2])
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t l = sizeof(a);
	int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(ls, 1) < 0 ||
	    getsockname(ls, (struct sockaddr *)&a, &l) < 0) {
		perror("tcp listen");
		exit(T_FAIL);
	}
	fds[0] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fds[0] < 0 || connect(fds[0], (struct sockaddr *)&a, sizeof(a)) < 0) {
		perror("tcp connect");
		exit(T_FAIL);
	}
	fds[1] = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
	if (fds[1] < 0) {
		perror("accept");
		exit(T_FAIL);
	}
	close(ls);
}

void t_unix_pair(int fds[2])
{
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) < 0) {
		perror("socketpair");
		exit(T_FAIL);
	}
}

void t_pipe(int fds[2])
{
	if (pipe2(fds, O_CLOEXEC) < 0) {
		perror("pipe");
		exit(T_FAIL);
	}
}

void t_pty(int *master, int *slave)
{
	struct termios t;

	if (openpty(master, slave, NULL, NULL, NULL) < 0) {
		perror("openpty");
		exit(T_FAIL);
	}
	tcgetattr(*slave, &t);
	cfmakeraw(&t);
	tcsetattr(*slave, TCSANOW, &t);
}

pid_t t_feed(int fd, uint64_t n, uint32_t seed)
{
	static uint8_t buf[1 << 16];
	pid_t pid = fork();
	uint64_t done = 0;

	if (pid != 0)
		return pid;
	signal(SIGPIPE, SIG_DFL);
	while (done < n) {
		size_t k = n - done < sizeof(buf) ? (size_t)(n - done) : sizeof(buf);
		ssize_t w;

		t_gen(seed, done, buf, k);
		w = write(fd, buf, k);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			_exit(1);
		done += (uint64_t)w; /* a short write regenerates from done */
	}
	_exit(0);
}

pid_t t_drain_check(int fd, uint64_t n, uint32_t seed)
{
	pid_t pid = fork();
	char extra;

	if (pid != 0)
		return pid;
	if (!t_check_fd(fd, -1, n, seed, 0))
		_exit(1);
	/* Nothing after the n bytes: the sender closed. */
	if (read(fd, &extra, 1) != 0)
		_exit(2);
	_exit(0);
}

pid_t t_fork_closing(int other, unsigned int secs)
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	T_OK(pid);
	if (pid == 0) {
		close(other);
		alarm(secs);
	}
	return pid;
}

bool t_wait(pid_t pid)
{
	int st;

	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return false;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

bool t_root(void)
{
	return geteuid() == 0;
}

int64_t t_pos(int fd)
{
	return lseek(fd, 0, SEEK_CUR);
}

static int filled[1 << 16], nfilled;

int t_fill_fds(void)
{
	int fd;

	while (nfilled < (int)(sizeof(filled) / sizeof(filled[0])) &&
	       (fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0)
		filled[nfilled++] = fd;
	return nfilled;
}

void t_unfill_fds(void)
{
	while (nfilled > 0)
		close(filled[--nfilled]);
}

void t_fill_fd(int fd, uint64_t n, uint32_t seed)
{
	static uint8_t buf[1 << 16];
	uint64_t done = 0;
	ssize_t w;

	while (done < n) {
		size_t k = n - done < sizeof(buf) ? (size_t)(n - done) : sizeof(buf);

		t_gen(seed, done, buf, k);
		w = write(fd, buf, k);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			fprintf(stderr, "fill: %s\n", w < 0 ? strerror(errno) : "0");
			exit(T_FAIL);
		}
		done += (uint64_t)w;
	}
}

uint64_t t_fill_full(int fd, uint32_t seed)
{
	static uint8_t buf[1 << 16];
	uint64_t done = 0;
	ssize_t w;

	while (done < (1ull << 30)) {
		t_gen(seed, done, buf, sizeof(buf));
		w = write(fd, buf, sizeof(buf));
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN)
			return done;
		if (w <= 0) {
			fprintf(stderr, "fill: %s\n", w < 0 ? strerror(errno) : "0");
			exit(T_FAIL);
		}
		done += (uint64_t)w;
	}
	fprintf(stderr, "fill: fd %d never filled\n", fd);
	exit(T_FAIL);
}

bool t_check_buf(const void *buf, size_t n, uint32_t seed, uint64_t soff)
{
	const uint8_t *b = buf;

	for (size_t i = 0; i < n; i++)
		if (b[i] != t_byte(seed, soff + i)) {
			fprintf(stderr, "check: byte %zu of %zu differs\n", i, n);
			return false;
		}
	return true;
}

static char mounted[4][4200];
static int nmounted;
static pid_t mount_owner;

static void unmount_all(void)
{
	if (getpid() != mount_owner)
		return;
	while (nmounted > 0)
		umount2(mounted[--nmounted], MNT_DETACH);
}

const char *t_mount_tmpfs(const char *name, const char *size)
{
	char opts[64];

	snprintf(opts, sizeof(opts), "size=%s,mode=0755", size);
	return t_mount(name, "tmpfs", "tmpfs", opts);
}

static int seccomp_ret(long nr, uint32_t ret, int argi, uint64_t argval)
{
#if defined(__x86_64__)
	const uint32_t arch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
	const uint32_t arch = AUDIT_ARCH_AARCH64;
#else
	const uint32_t arch = 0;
#endif
	const uint32_t nr_at = offsetof(struct seccomp_data, nr);
	const uint32_t arg_at = offsetof(struct seccomp_data, args) + 8u * (uint32_t)(argi < 0 ? 0 : argi);
	/* Arguments are compared as two 32-bit halves, low half first on
	 * the little-endian machines we build for. */
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, arch, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, nr_at),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)nr, 0, 5),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, arg_at),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)argval, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, arg_at + 4),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)(argval >> 32), 0, 1),
		BPF_STMT(BPF_RET | BPF_K, ret),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	if (!arch) {
		errno = ENOSYS;
		return -1;
	}
	/* Without an argument test, jump straight from the number match to
	 * the errno return. */
	if (argi < 0)
		f[4].jf = 1, f[5] = f[9], f[6] = f[10], prog.len = 7;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -1;
	return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
}

int t_seccomp_errno(long nr, int err, int argi, uint64_t argval)
{
	return seccomp_ret(nr, SECCOMP_RET_ERRNO | ((uint32_t)err & SECCOMP_RET_DATA),
			   argi, argval);
}

int t_seccomp_kill(long nr)
{
	return seccomp_ret(nr, SECCOMP_RET_KILL_PROCESS, -1, 0);
}

bool t_under_valgrind(void)
{
	const char *p = getenv("LD_PRELOAD");

	return p && strstr(p, "vgpreload");
}

int t_child(void (*fn)(void *), void *arg)
{
	pid_t pid;
	int st;

	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return T_FAIL;
	}
	if (pid == 0) {
		fn(arg);
		exit(T_PASS);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return T_FAIL;
	if (WIFSIGNALED(st)) {
		fprintf(stderr, "child killed by signal %d (%s)\n", WTERMSIG(st),
			strsignal(WTERMSIG(st)));
		return T_FAIL;
	}
	return WEXITSTATUS(st);
}

int t_count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1; /* the directory's own fd */
}

int t_cachestat(int fd, uint64_t off, uint64_t len, struct t_cache *c)
{
	struct ps_cachestat cs;
	int r = ps_cachestat(fd, off, len, &cs);

	if (r < 0) {
		errno = -r;
		return -1;
	}
	c->cached = cs.cache;
	c->dirty = cs.dirty;
	c->writeback = cs.writeback;
	return 0;
}

const char *t_disk_stat(int fd, char *buf, size_t n)
{
	char link[64], dev[4096], probe[4200];
	struct stat st;

	if (fstat(fd, &st) < 0)
		return NULL;
	snprintf(link, sizeof(link), "/sys/dev/block/%u:%u", major(st.st_dev), minor(st.st_dev));
	if (!realpath(link, dev))
		return NULL;
	/* A partition's directory sits inside its disk's directory. */
	snprintf(probe, sizeof(probe), "%s/partition", dev);
	if (access(probe, F_OK) == 0)
		*strrchr(dev, '/') = '\0';
	snprintf(buf, n, "%s/stat", dev);
	return access(buf, R_OK) == 0 ? buf : NULL;
}

int64_t t_sectors_written(const char *stat_path)
{
	unsigned long long f[7];
	FILE *fp = fopen(stat_path, "re");
	int got;

	if (!fp)
		return -1;
	got = fscanf(fp, "%llu %llu %llu %llu %llu %llu %llu",
		     &f[0], &f[1], &f[2], &f[3], &f[4], &f[5], &f[6]);
	fclose(fp);
	return got == 7 ? (int64_t)f[6] : -1;
}

static int loop_configure(int fd, int img_fd)
{
	struct loop_config cfg = { .fd = (uint32_t)img_fd,
				   .info.lo_flags = LO_FLAGS_AUTOCLEAR };
	struct loop_info64 info = { .lo_flags = LO_FLAGS_AUTOCLEAR };

	if (ioctl(fd, LOOP_CONFIGURE, &cfg) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOTTY)
		return -1;
	/* Before Linux 5.8: in two steps. */
	if (ioctl(fd, LOOP_SET_FD, img_fd) < 0)
		return -1;
	if (ioctl(fd, LOOP_SET_STATUS64, &info) == 0)
		return 0;
	(void)ioctl(fd, LOOP_CLR_FD, 0);
	return -1;
}

int t_loop_attach(int img_fd, char *path, size_t n)
{
	int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC), fd = -1, nr, err = ENOENT;

	if (ctl < 0)
		return -1;
	/* Another process may take the free device first: ask again. */
	for (int tries = 0; tries < 20 && fd < 0; tries++) {
		nr = ioctl(ctl, LOOP_CTL_GET_FREE);
		if (nr < 0) {
			err = errno;
			break;
		}
		snprintf(path, n, "/dev/loop%d", nr);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0) {
			err = errno;
			usleep(10000); /* a new device's node may be on its way */
			continue;
		}
		if (loop_configure(fd, img_fd) == 0)
			break;
		err = errno;
		close(fd);
		fd = -1;
		if (err != EBUSY)
			break;
	}
	close(ctl);
	if (fd < 0)
		errno = err;
	return fd;
}

const char *t_mount(const char *name, const char *source, const char *fstype,
		    const char *opts)
{
	char *dir;

	if (!scratch[0] || nmounted == 4) {
		errno = EINVAL;
		return NULL;
	}
	if (!mount_owner) {
		/* In a namespace of its own, a test killed before its exit
		 * handlers run leaves no mount behind. */
		if (unshare(CLONE_NEWNS) == 0)
			(void)mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL);
		mount_owner = getpid();
		atexit(unmount_all); /* runs before the scratch dir is removed */
	}
	dir = mounted[nmounted];
	snprintf(dir, sizeof(mounted[0]), "%s/%s", scratch, name);
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return NULL;
	if (mount(source, dir, fstype, 0, opts) < 0)
		return NULL;
	nmounted++;
	return dir;
}

int t_queued(int fd)
{
	int n = -1;

	T_OK(ioctl(fd, FIONREAD, &n));
	return n;
}

void t_set_nonblock(int fd, bool on)
{
	int fl = fcntl(fd, F_GETFL);

	T_OK(fl);
	T_OK(fcntl(fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK));
}

void t_close_pair(int fds[2])
{
	close(fds[0]);
	close(fds[1]);
}

uint64_t t_dirty_bytes(int fd, uint64_t if_unknown)
{
	struct t_cache c;

	if (t_cachestat(fd, 0, 0, &c) < 0) {
		T_EQ(errno, ENOSYS);
		return if_unknown;
	}
	return c.dirty * (uint64_t)sysconf(_SC_PAGESIZE);
}

uint64_t t_keep_dirty(int fd, uint64_t size, uint64_t want)
{
	static uint8_t buf[1 << 16];
	uint64_t dirty = t_dirty_bytes(fd, size), off;
	ssize_t n;

	for (int tries = 0; dirty < want && tries < 5; tries++) {
		for (off = 0; off < size; off += (uint64_t)n) {
			n = pread(fd, buf, sizeof(buf), (off_t)off);
			T_ASSERT(n > 0);
			T_EQ(pwrite(fd, buf, (size_t)n, (off_t)off), n);
		}
		dirty = t_dirty_bytes(fd, size);
	}
	return dirty;
}

void t_assert_settled(int fd)
{
	struct t_cache c;

	if (t_cachestat(fd, 0, 0, &c) < 0)
		return;
	T_EQ(c.dirty, 0);
	T_EQ(c.writeback, 0);
}

const char *t_mkfs_mount(const char *name, uint64_t size, const char *mkfs,
			 const char *fstype, const char *opts)
{
	char dev[64], cmd[512], img_name[64];
	const char *dir;
	int img, loop;

	snprintf(img_name, sizeof(img_name), "%.40s.img", name);
	img = open(t_path(img_name), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	T_OK(img);
	T_OK(ftruncate(img, (off_t)size));
	loop = t_loop_attach(img, dev, sizeof(dev));
	T_SKIP_IF(loop < 0 && (errno == ENOENT || errno == ENODEV), "no loop devices");
	T_OK(loop);
	close(img);
	snprintf(cmd, sizeof(cmd), "%s %s >/dev/null 2>&1", mkfs, dev);
	T_EQ(system(cmd), 0);
	dir = t_mount(name, dev, fstype, opts);
	if (!dir)
		T_FAILED("mount %s: %s", dev, strerror(errno));
	/* The mount holds the device now; it detaches once unmounted. */
	close(loop);
	return dir;
}

void t_recv_check(int fd, uint64_t from, uint64_t n, uint32_t seed)
{
	uint8_t *buf = malloc(n ? n : 1);
	ssize_t got;

	T_ASSERT(buf);
	got = recv(fd, buf, n, MSG_WAITALL);
	T_EQ_U((uint64_t)(got > 0 ? got : 0), n);
	T_ASSERT(t_check_buf(buf, n, seed, from));
	free(buf);
}

void t_check_rest(int fd, uint64_t from, uint64_t total, uint32_t seed)
{
	size_t want = (size_t)(total - from);
	uint8_t *buf = malloc(want + 1);
	ssize_t n;

	T_ASSERT(buf);
	n = recv(fd, buf, want + 1, MSG_DONTWAIT | MSG_WAITALL);
	T_EQ_U(from + (uint64_t)(n > 0 ? n : 0), total);
	if (n > 0)
		T_ASSERT(t_check_buf(buf, (size_t)n, seed, from));
	free(buf);
}
