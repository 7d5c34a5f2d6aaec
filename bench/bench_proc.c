/* psplice bench: the helpers the groups share to run the peers (spawn,
 * wait, stop), to find loopback ports, and to make and measure files. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "dirty.h"

extern char **environ;

static int status_of(int st)
{
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1;
}

/* Spawn with stdin on /dev/null, stdout on out_fd (or /dev/null) and stderr
 * on errfile (or /dev/null). */
static pid_t spawn(char *const argv[], int out_fd, const char *errfile)
{
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int err;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	if (out_fd >= 0)
		posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
	else
		posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, errfile ? errfile : "/dev/null",
					 O_WRONLY | O_CREAT | O_TRUNC, 0644);
	err = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (err) {
		errno = err;
		return -1;
	}
	return pid;
}

int bench_sh(const char *cmd, double *wall, double *cpu)
{
	char *argv[] = { (char *)"/bin/sh", (char *)"-c", (char *)cmd, NULL };
	struct rusage ru;
	double t0 = bench_now();
	int st;
	pid_t pid = spawn(argv, -1, NULL);

	if (pid < 0)
		return -1;
	while (wait4(pid, &st, 0, &ru) < 0)
		if (errno != EINTR)
			return -1;
	if (wall)
		*wall = bench_now() - t0;
	if (cpu)
		*cpu = bench_rusage_secs(&ru);
	return status_of(st);
}

pid_t bench_spawn(char *const argv[], const char *errfile)
{
	return spawn(argv, -1, errfile);
}

static pid_t reap(pid_t pid, int *st, struct rusage *ru, double timeout)
{
	double end = bench_now() + timeout;
	pid_t r;

	for (;;) {
		r = wait4(pid, st, WNOHANG, ru);
		if (r != 0 || bench_now() > end)
			return r;
		usleep(10000);
	}
}

int bench_stop(pid_t pid, double *cpu)
{
	struct rusage ru;
	int st = 0;
	pid_t r;

	if (pid <= 0)
		return -1;
	kill(pid, SIGTERM);
	r = reap(pid, &st, &ru, 5);
	if (r == 0) {
		kill(pid, SIGKILL);
		r = reap(pid, &st, &ru, 5);
	}
	if (r != pid)
		return -1;
	if (cpu)
		*cpu = bench_rusage_secs(&ru);
	return status_of(st);
}

bool bench_have(const char *prog)
{
	const char *path = getenv("PATH");
	char buf[4096];
	const char *p, *e;

	if (strchr(prog, '/'))
		return access(prog, X_OK) == 0;
	for (p = path ? path : "/usr/bin:/bin"; *p; p = *e ? e + 1 : e) {
		e = strchrnul(p, ':');
		snprintf(buf, sizeof(buf), "%.*s/%s", (int)(e - p), p, prog);
		if (access(buf, X_OK) == 0)
			return true;
	}
	return false;
}

static struct sockaddr_in loopback(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

int bench_wait_port(int port, double timeout)
{
	struct sockaddr_in a = loopback(port);
	double end = bench_now() + timeout;
	int fd, r;

	do {
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -1;
		r = connect(fd, (struct sockaddr *)&a, sizeof(a));
		close(fd);
		if (r == 0)
			return 0;
		usleep(20000);
	} while (bench_now() < end);
	return -1;
}

int bench_nofile(unsigned long need)
{
	struct rlimit r;

	if (getrlimit(RLIMIT_NOFILE, &r) < 0)
		return -1;
	if (r.rlim_cur >= need)
		return 0;
	r.rlim_cur = r.rlim_max < need ? r.rlim_max : need;
	return setrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur >= need ? 0 : -1;
}

int bench_free_port(void)
{
	struct sockaddr_in a = loopback(0);
	socklen_t l = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = -1;

	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &l) == 0)
		port = ntohs(a.sin_port);
	close(fd);
	return port;
}

/* xorshift: data no filesystem or pipe can compress or dedupe. */
static void fill(unsigned char *buf, size_t n, uint64_t *s)
{
	size_t i;

	for (i = 0; i + 8 <= n; i += 8) {
		*s ^= *s << 13;
		*s ^= *s >> 7;
		*s ^= *s << 17;
		memcpy(buf + i, s, 8);
	}
}

static int warm(int fd, uint64_t size)
{
	static unsigned char buf[1 << 20];
	uint64_t off = 0;
	ssize_t n;

	posix_fadvise(fd, 0, (off_t)size, POSIX_FADV_WILLNEED);
	while (off < size) {
		n = pread(fd, buf, sizeof(buf), (off_t)off);
		if (n <= 0)
			return n < 0 ? -1 : (errno = EIO, -1);
		off += (uint64_t)n;
	}
	return 0;
}

static int write_data(int fd, uint64_t size)
{
	static unsigned char buf[1 << 20];
	uint64_t off = 0, seed = 0x9e3779b97f4a7c15ull;
	size_t n;
	ssize_t w;

	while (off < size) {
		n = size - off < sizeof(buf) ? (size_t)(size - off) : sizeof(buf);
		fill(buf, n, &seed);
		w = pwrite(fd, buf, n, (off_t)off);
		if (w <= 0)
			return w < 0 ? -1 : (errno = EIO, -1);
		off += (uint64_t)w;
	}
	return 0;
}

int bench_make_file(const char *path, uint64_t size)
{
	struct stat st;
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644), r = -1;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0)
		goto out;
	if ((uint64_t)st.st_size != size || (uint64_t)st.st_blocks * 512 < size) {
		if (ftruncate(fd, 0) < 0 || write_data(fd, size) < 0)
			goto out;
	}
	r = warm(fd, size);
out:
	if (r < 0) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	close(fd);
	return 0;
}

double bench_meminfo_dirty(void)
{
	static const char *const keys[] = { "Dirty", "Writeback", NULL };
	uint64_t kb[2];

	cli_read_keys("/proc/meminfo", keys, kb);
	return (double)(kb[0] + kb[1]) * 1024;
}

const char *bench_fs_name(const char *dir)
{
	struct statfs s;

	if (statfs(dir, &s) < 0)
		return NULL;
	switch ((unsigned long)s.f_type) {
	case EXT4_SUPER_MAGIC: return "ext4";
	case XFS_SUPER_MAGIC: return "xfs";
	case BTRFS_SUPER_MAGIC: return "btrfs";
	case TMPFS_MAGIC: return "tmpfs";
	case OVERLAYFS_SUPER_MAGIC: return "overlayfs";
	default: return NULL;
	}
}
