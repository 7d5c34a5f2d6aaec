/* libpsplice-preload.so inside one program, run three times: plain, with
 * the library and its configuration, and with the library alone (off).
 * Each run checks the same things of itself: errno after successful and
 * failing calls, every byte written, a SIGALRM timer without SA_RESTART
 * whose handler writes to a regular file while the program writes (the
 * handler's records complete and in order; a blocked pipe write returns a
 * short count and then EINTR), threads, and a forked child writing the
 * same file, and a file read after the program's own fstat, fstatat or
 * statx of it. Then the runs are compared: the paced run leaves its big file
 * out of the cache, the plain and the off run leave it cached. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "t.h"

#define MIB ((size_t)1 << 20)
#define BIG (64 * MIB)
#define PIECE ((size_t)65536)
#define REC 16

static int hfd = -1;
static volatile sig_atomic_t nrec;

/* The handler writes one record to a regular file: a call the library
 * follows, from signal context. */
static void on_alarm(int sig)
{
	char rec[REC + 1];
	int e = errno;

	(void)sig;
	snprintf(rec, sizeof(rec), "rec %010d\n", (int)nrec);
	if (write(hfd, rec, REC) == REC)
		nrec++;
	errno = e;
}

static void put_all(int fd, uint32_t seed, int64_t off, size_t n, bool positional)
{
	char buf[PIECE];
	size_t done = 0, k;
	ssize_t r;

	while (done < n) {
		k = n - done < PIECE ? n - done : PIECE;
		t_gen(seed, (uint64_t)off + done, buf, k);
		r = positional ? pwrite(fd, buf, k, off + (int64_t)done) : write(fd, buf, k);
		if (r < 0 && errno == EINTR)
			continue;
		T_ASSERT(r > 0);
		done += (size_t)r;
	}
}

static void check_errno(const char *dir)
{
	_Alignas(16) char buf[4096] = { 0 };
	char path[PATH_MAX];
	void *volatile bad = (void *)8;
	int fd, ro;

	snprintf(path, sizeof(path), "%s/errno", dir);
	T_OK(fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644));
	T_OK(ro = open(path, O_RDONLY));
	/* A call that succeeds leaves errno as it found it. */
	errno = ERANGE;
	T_EQ(write(fd, buf, sizeof(buf)), (long)sizeof(buf));
	T_EQ(errno, ERANGE);
	errno = ERANGE;
	T_EQ(pwrite(fd, buf, sizeof(buf), 1 << 20), (long)sizeof(buf));
	T_EQ(errno, ERANGE);
	errno = ERANGE;
	T_EQ(read(ro, buf, sizeof(buf)), (long)sizeof(buf));
	T_EQ(errno, ERANGE);
	/* A call that fails fails with its own errno. */
	T_ERRNO(write(ro, buf, 1), EBADF);
	T_ERRNO(pwrite(fd, buf, 1, -1), EINVAL);
	T_ERRNO(write(fd, bad, 4096), EFAULT);
	T_ERRNO(write(-1, buf, 1), EBADF);
	T_ERRNO(close(-1), EBADF);
	T_ERRNO(dup2(-1, fd), EBADF);
	T_ERRNO(fsync(-1), EBADF);
	T_ERRNO(fdatasync(-1), EBADF);
	/* The stat calls the library reads after: never what a failing call
	 * left (a pointer the kernel refused, an fd that is not one). musl
	 * reads the path and writes struct stat itself, from the kernel's:
	 * there a bad pointer faults in the program, and EFAULT is glibc's. */
#ifdef __GLIBC__
	T_ERRNO(fstat(ro, (struct stat *)bad), EFAULT);
#endif
	T_ERRNO(fstat(-1, (struct stat *)buf), EBADF);
#ifdef __GLIBC__
	T_ERRNO(fstatat(ro, (const char *)bad, (struct stat *)buf, AT_EMPTY_PATH), EFAULT);
#endif
#ifdef STATX_TYPE
	T_ERRNO(statx(ro, (const char *)bad, AT_EMPTY_PATH, STATX_BASIC_STATS,
		      (struct statx *)buf), EFAULT);
	T_ERRNO(statx(ro, "", AT_EMPTY_PATH, STATX_BASIC_STATS, (struct statx *)bad), EFAULT);
#endif
	/* A read judged by the program's own fstat keeps errno too. */
	T_OK(close(ro));
	T_OK(ro = open(path, O_RDONLY));
	T_OK(fstat(ro, (struct stat *)buf));
	errno = ERANGE;
	T_EQ(read(ro, buf, sizeof(buf)), (long)sizeof(buf));
	T_EQ(errno, ERANGE);
	T_OK(close(ro));
	errno = ERANGE;
	T_EQ(close(fd), 0);
	T_EQ(errno, ERANGE);
}

/* The handler's file: complete records, numbered in order. */
static void check_records(const char *path)
{
	char want[REC + 1], got[REC];
	int fd, i;
	struct stat st;

	T_OK(fd = open(path, O_RDONLY));
	T_OK(fstat(fd, &st));
	T_EQ(st.st_size, (long long)nrec * REC);
	for (i = 0; i < nrec; i++) {
		snprintf(want, sizeof(want), "rec %010d\n", i);
		T_EQ(read(fd, got, REC), REC);
		T_ASSERT(!memcmp(want, got, REC));
	}
	close(fd);
}

static void pipe_interrupted(void)
{
	static char buf[MIB];
	int p[2];
	ssize_t r;

	t_pipe(p);
	/* The pipe fills, the write blocks, the timer interrupts it: the
	 * bytes it took, then, with the pipe full, EINTR. */
	r = write(p[1], buf, sizeof(buf));
	T_ASSERT(r > 0 && r < (ssize_t)sizeof(buf));
	T_ERRNO(write(p[1], buf, sizeof(buf)), EINTR);
	close(p[0]);
	close(p[1]);
}

static void check_signals(const char *dir, const char *big)
{
	struct sigaction sa = { .sa_handler = on_alarm };
	struct itimerval it = { { 0, 200 }, { 0, 200 } };
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/records", dir);
	T_OK(hfd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644));
	T_OK(sigaction(SIGALRM, &sa, NULL));
	T_OK(setitimer(ITIMER_REAL, &it, NULL));
	T_OK(fd = open(big, O_WRONLY | O_CREAT | O_TRUNC, 0644));
	put_all(fd, 1, 0, BIG / 2, false);
	put_all(fd, 1, BIG / 2, BIG / 2, true);
	T_OK(close(fd));
	pipe_interrupted();
	it = (struct itimerval){ { 0, 0 }, { 0, 0 } };
	T_OK(setitimer(ITIMER_REAL, &it, NULL));
	T_OK(close(hfd));
	T_ASSERT(nrec > 0);
	check_records(path);
}

struct job {
	char path[PATH_MAX];
	uint32_t seed;
};

static void *thread_main(void *arg)
{
	struct job *j = arg;
	int fd, i;

	fd = open(j->path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	T_ASSERT(fd >= 0);
	put_all(fd, j->seed, 0, 8 * MIB, true);
	/* fd numbers closed and opened again meanwhile, by each thread. */
	for (i = 0; i < 50; i++)
		close(dup(fd));
	T_OK(close(fd));
	return NULL;
}

static void check_threads(const char *dir)
{
	struct job jobs[4];
	pthread_t th[4];
	int i;

	for (i = 0; i < 4; i++) {
		snprintf(jobs[i].path, sizeof(jobs[i].path), "%s/thread%d", dir, i);
		jobs[i].seed = 10 + (uint32_t)i;
		T_EQ(pthread_create(&th[i], NULL, thread_main, &jobs[i]), 0);
	}
	for (i = 0; i < 4; i++) {
		T_EQ(pthread_join(th[i], NULL), 0);
		T_ASSERT(t_check_file(jobs[i].path, 8 * MIB, jobs[i].seed));
	}
}

/* Parent and child write one file through one description, in turn. */
static void check_fork(const char *dir)
{
	char path[PATH_MAX];
	int fd, status;
	pid_t pid;

	snprintf(path, sizeof(path), "%s/forked", dir);
	T_OK(fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644));
	put_all(fd, 3, 0, MIB, false);
	pid = fork();
	T_OK(pid);
	if (pid == 0) {
		put_all(fd, 3, MIB, 12 * MIB, false);
		close(fd);
		exit(0);
	}
	T_EQ(waitpid(pid, &status, 0), pid);
	T_EQ(status, 0);
	put_all(fd, 3, 13 * MIB, MIB, false);
	T_OK(close(fd));
	T_ASSERT(t_check_file(path, 14 * MIB, 3));
}

/* statx where the libc has it (glibc 2.28, musl 1.2.5): one without has
 * none for the library to follow. */
#ifdef STATX_TYPE
#define STAT_READERS 3
#else
#define STAT_READERS 2
#endif

/* The program's own fstat, fstatat of "" and statx of "" tell the library
 * what it would otherwise ask itself before the first read; each still
 * returns what the kernel said. With read-behind on, a file read that way
 * is dropped from the cache as it is read, all of it. */
static void check_stat_readers(const char *dir, const char *mode)
{
	static const char *const how[] = { "fstat", "fstatat", "statx" };
	static char buf[PIECE];
	char path[PATH_MAX];
	struct stat st;
#ifdef STATX_TYPE
	struct statx x;
#endif
	struct t_cache c;
	ssize_t n;
	int fd, i;

	snprintf(path, sizeof(path), "%s/stat.%s", dir, mode);
	fd = t_make_file(path, 8 * MIB, 9);
	T_OK(fdatasync(fd));
	T_OK(close(fd));
	for (i = 0; i < STAT_READERS; i++) {
		T_OK(fd = open(path, O_RDONLY));
		T_OK(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED));
		memset(&st, 0, sizeof(st));
		if (i == 0)
			T_OK(fstat(fd, &st));
		else if (i == 1)
			T_OK(fstatat(fd, "", &st, AT_EMPTY_PATH));
#ifdef STATX_TYPE
		else if (statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &x) == 0)
			st.st_size = (off_t)x.stx_size;
#endif
		T_EQ(st.st_size, (off_t)(8 * MIB));
		while ((n = read(fd, buf, sizeof(buf))) > 0)
			;
		T_EQ(n, 0);
		T_OK(close(fd));
		T_OK(fd = open(path, O_RDONLY));
		if (!strcmp(mode, "paced") && t_cachestat(fd, 0, 0, &c) == 0 &&
		    c.cached * (uint64_t)sysconf(_SC_PAGESIZE) > PIECE)
			T_FAILED("read after %s: %llu pages still cached", how[i],
				 (unsigned long long)c.cached);
		T_OK(close(fd));
	}
	T_ASSERT(t_check_file(path, 8 * MIB, 9));
}

static int child(const char *dir, const char *mode)
{
	char big[PATH_MAX], out[PATH_MAX];
	struct t_cache c;
	FILE *f;
	int fd;

	snprintf(big, sizeof(big), "%s/big.%s", dir, mode);
	check_errno(dir);
	check_signals(dir, big);
	check_threads(dir);
	check_fork(dir);
	check_stat_readers(dir, mode);
	/* How much of the big file the run left in the cache. */
	T_OK(fd = open(big, O_RDONLY));
	/* cachestat counts pages. */
	if (t_cachestat(fd, 0, 0, &c) < 0)
		c.cached = (uint64_t)-1;
	else
		c.cached *= (uint64_t)sysconf(_SC_PAGESIZE);
	close(fd);
	T_ASSERT(t_check_file(big, BIG, 1));
	snprintf(out, sizeof(out), "%s/cached.%s", dir, mode);
	f = fopen(out, "w");
	T_ASSERT(f && fprintf(f, "%lld\n", (long long)c.cached) > 0 && fclose(f) == 0);
	return 0;
}

static long long run(const char *self, const char *dir, const char *mode, const char *lib)
{
	char asan[512], out[PATH_MAX];
	long long cached = -2;
	int status;
	pid_t pid;
	FILE *f;

	pid = fork();
	T_OK(pid);
	if (pid == 0) {
		unsetenv("PSPLICE_EXEC");
		if (lib) {
			setenv("LD_PRELOAD", lib, 1);
			/* An ASan build wants its runtime first; the library is
			 * loaded before it here on purpose. */
			snprintf(asan, sizeof(asan), "%s%sverify_asan_link_order=0",
				 getenv("ASAN_OPTIONS") ? getenv("ASAN_OPTIONS") : "",
				 getenv("ASAN_OPTIONS") ? ":" : "");
			setenv("ASAN_OPTIONS", asan, 1);
		}
		if (!strcmp(mode, "paced"))
			setenv("PSPLICE_EXEC", "chunk=65536,min=0,sync=none,read-behind=1,verbose=0", 1);
		execl(self, self, "--child", dir, mode, (char *)NULL);
		_exit(127);
	}
	T_EQ(waitpid(pid, &status, 0), pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		T_FAILED("the %s run: status %#x", mode, status);
	snprintf(out, sizeof(out), "%s/cached.%s", dir, mode);
	f = fopen(out, "r");
	T_ASSERT(f && fscanf(f, "%lld", &cached) == 1);
	fclose(f);
	return cached;
}

int main(int argc, char **argv)
{
	char self[PATH_MAX], dirbuf[PATH_MAX], lib[PATH_MAX + 32];
	long long plain, paced, off;
	const char *dir;

	if (argc == 4 && !strcmp(argv[1], "--child"))
		return child(argv[2], argv[3]);
	dir = t_dir(argc, argv);
	T_ASSERT(realpath("/proc/self/exe", self));
	memcpy(dirbuf, self, sizeof(dirbuf));
	snprintf(lib, sizeof(lib), "%s/../libpsplice-preload.so", dirname(dirbuf));
	T_SKIP_IF(access(lib, R_OK) < 0, "%s is not built", lib);
	plain = run(self, dir, "plain", NULL);
	paced = run(self, dir, "paced", lib);
	off = run(self, dir, "off", lib);
	T_SKIP_IF(paced == -1, "cachestat(2) needs Linux 6.5");
	/* Two 64 KiB chunks in flight, a page or two at the edges. */
	T_ASSERT(paced <= (long long)MIB);
	/* Off means off: the big file stays cached as in the plain run. */
	if (plain >= (long long)(BIG / 2))
		T_ASSERT(off >= (long long)(BIG / 2));
	return 0;
}
