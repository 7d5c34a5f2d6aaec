/* psplice bench, group "tee": psplice tee against GNU tee, 1 GiB from a
 * pipe to 1, 2 and 4 files on tmpfs and to /dev/null alone (standard
 * output is /dev/null in every item). A feeder process vmsplices one
 * buffer into the pipe over and over, so that making the bytes costs
 * little and nothing of it is counted: the figures are the tee process's
 * own (wait4), from its start to its exit. Variants run interleaved and
 * the fastest run of each counts. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <linux/magic.h>
#include <unistd.h>

#include "bench.h"

#define MiB ((uint64_t)1 << 20)
#define GiB ((uint64_t)1 << 30)
#define FEED_BUF (1u << 20)
#define MAX_FILES 4
#define PS_TEE "psplice tee"
#define GNU_TEE "tee"

static const char *const file_names[MAX_FILES] = { "t1", "t2", "t3", "t4" };

/* The feeder: size bytes of one random buffer, vmspliced (no copy). */
static void feed(int fd, uint64_t size)
{
	static unsigned char *buf;
	uint64_t done = 0;
	struct iovec iov;
	ssize_t n;

	buf = aligned_alloc(4096, FEED_BUF);
	if (!buf)
		_exit(1);
	for (size_t i = 0; i < FEED_BUF; i++)
		buf[i] = (unsigned char)(random() >> 7);
	while (done < size) {
		iov.iov_base = buf + done % FEED_BUF;
		iov.iov_len = FEED_BUF - done % FEED_BUF;
		if (iov.iov_len > size - done)
			iov.iov_len = (size_t)(size - done);
		n = vmsplice(fd, &iov, 1, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			_exit(1);
		done += (uint64_t)n;
	}
	_exit(0);
}

static pid_t start(int in, const char *dir, char *const argv[])
{
	pid_t pid = fork();
	int null;

	if (pid)
		return pid;
	null = open("/dev/null", O_WRONLY);
	if (null < 0 || dup2(in, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0 ||
	    chdir(dir) < 0)
		_exit(126);
	execvp(argv[0], argv);
	_exit(127);
}

/* One run of argv on size bytes: wall seconds and the CPU seconds of the
 * tee process. 0, or the exit status. */
static int run_once(char *const argv[], const char *dir, uint64_t size, double *wall,
		    double *cpu)
{
	struct rusage ru = { 0 };
	pid_t feeder, tee;
	int p[2], st = 0, fst = 0;
	double t0;

	if (pipe2(p, O_CLOEXEC) < 0)
		return errno;
	feeder = fork();
	if (feeder == 0) {
		close(p[0]);
		feed(p[1], size);
	}
	close(p[1]);
	t0 = bench_now();
	tee = feeder < 0 ? -1 : start(p[0], dir, argv);
	close(p[0]);
	if (tee < 0 || wait4(tee, &st, 0, &ru) < 0)
		st = -1;
	*wall = bench_now() - t0;
	*cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	if (feeder > 0)
		waitpid(feeder, &fst, 0);
	if (st)
		return WIFEXITED(st) ? WEXITSTATUS(st) : st;
	return WIFEXITED(fst) && !WEXITSTATUS(fst) ? 0 : 125;
}

struct variant {
	const char *name;
	char *argv[MAX_FILES + 3];
	double wall, cpu;
	int runs, status;
};

static void remove_files(const char *dir)
{
	char path[4200];

	for (int i = 0; i < MAX_FILES; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, file_names[i]);
		unlink(path);
	}
}

static void item(const struct bench_opts *o, const char *dir, int files, uint64_t size)
{
	struct variant v[2] = { { .name = PS_TEE }, { .name = GNU_TEE } };
	double gib = (double)size / BENCH_GiB, wall = 0, cpu = 0;
	char name[64], note[96];
	int reps = o->quick ? 2 : 3, st;

	if (files)
		snprintf(name, sizeof(name), "%.0f MiB pipe -> %d file%s on tmpfs",
			 (double)size / MiB, files, files > 1 ? "s" : "");
	else
		snprintf(name, sizeof(name), "%.0f MiB pipe -> /dev/null", (double)size / MiB);
	v[0].argv[0] = (char *)o->self;
	v[0].argv[1] = "tee";
	v[1].argv[0] = "tee";
	for (int i = 0; i < files; i++) {
		v[0].argv[2 + i] = (char *)file_names[i];
		v[1].argv[1 + i] = (char *)file_names[i];
	}
	for (int r = 0; r < reps; r++)
		for (int i = 0; i < 2; i++) {
			if (v[i].status)
				continue;
			remove_files(dir);
			st = run_once(v[i].argv, dir, size, &wall, &cpu);
			if (st) {
				v[i].status = st;
				continue;
			}
			if (!v[i].runs++ || wall < v[i].wall) {
				v[i].wall = wall;
				v[i].cpu = cpu;
			}
		}
	remove_files(dir);
	for (int i = 0; i < 2; i++) {
		if (v[i].status) {
			bench_skip("tee", name, v[i].name, "exit status %d", v[i].status);
			continue;
		}
		snprintf(note, sizeof(note), "%s%.4f s, best of %d; the tee process only",
			 i ? "coreutils; " : "", v[i].wall, v[i].runs);
		bench_row("tee", name, v[i].name, BENCH_GIBPS, gib / v[i].wall,
			  v[i].cpu / gib, i == 1, note);
	}
}

/* A tmpfs of our own as root (empty, large enough), else /dev/shm. 1 when
 * mounted, 0 when not, -1 when there is none. */
static int tmpfs_dir(const struct bench_opts *o, uint64_t need, char *dir, size_t n)
{
	char opts[64];
	struct statfs s;

	if (o->root) {
		snprintf(dir, n, "%s/tee-tmpfs", o->dir);
		snprintf(opts, sizeof(opts), "size=%lluk,mode=0700",
			 (unsigned long long)(need >> 10));
		if ((mkdir(dir, 0700) == 0 || errno == EEXIST) &&
		    mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV, opts) == 0)
			return 1;
		rmdir(dir);
	}
	if (statfs("/dev/shm", &s) < 0 || (unsigned long)s.f_type != TMPFS_MAGIC ||
	    (uint64_t)s.f_bavail * (uint64_t)s.f_bsize < need)
		return -1;
	snprintf(dir, n, "/dev/shm/psplice-bench-tee.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

void bench_tee(const struct bench_opts *o)
{
	static const int files[] = { 0, 1, 2, 4 };
	uint64_t size = o->quick ? 256 * MiB : GiB;
	char dir[4200], item4[64], what[96];
	int mounted;

	snprintf(item4, sizeof(item4), "%.0f MiB pipe -> 4 files on tmpfs",
		 (double)size / MiB);
	mounted = tmpfs_dir(o, MAX_FILES * size + 64 * MiB, dir, sizeof(dir));
	if (mounted < 0 || !bench_have("tee")) {
		for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
			char name[64];

			snprintf(name, sizeof(name), files[i] ? "%d file(s)" : "/dev/null",
				 files[i]);
			bench_skip("tee", name, PS_TEE, "%s", mounted < 0 ?
				   "no tmpfs with room (not root, /dev/shm too small)" :
				   "GNU tee not found");
		}
	} else {
		for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
			item(o, dir, files[i], size);
		if (mounted)
			umount2(dir, MNT_DETACH);
		rmdir(dir);
	}
	snprintf(what, sizeof(what), "psplice tee vs tee, 4 files, speed");
	bench_target_ratio(what, "tee", item4, PS_TEE, GNU_TEE, false, 3.0, true);
	snprintf(what, sizeof(what), "psplice tee vs tee, 4 files, CPU per GiB");
	bench_target_ratio(what, "tee", item4, PS_TEE, GNU_TEE, true, 0.3, false);
}
