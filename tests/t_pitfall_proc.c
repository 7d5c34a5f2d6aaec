/* Procfs and sysfs files say st_size 0 (or 4096) whatever
 * they hold, and copy_file_range returns 0 on them. A copy bounded by the
 * size, or one that takes that 0 for end of file, copies nothing. Each copy
 * here must hold exactly what read(2) gives.
 * Seen in systemd/systemd#18810 and tarka/xcp#24 (copy_file_range's 0 on
 * procfs and sysfs), dotnet/runtime#55358 (an fstat size of 0 that cannot be
 * trusted). */
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "t.h"

#define ENV_STRINGS 4
#define ENV_STRING 100000 /* below MAX_ARG_STRLEN (128 KiB) */

static size_t read_all(const char *path, uint8_t *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t got = 0;
	ssize_t n;

	T_OK(fd);
	while (got < cap && (n = read(fd, buf + got, cap - got)) > 0)
		got += (size_t)n;
	T_ASSERT(got < cap);
	close(fd);
	return got;
}

static void check_out(int out, const uint8_t *want, size_t n)
{
	uint8_t *got = malloc(n + 1);
	struct stat st;

	T_OK(fstat(out, &st));
	T_EQ(st.st_size, (int64_t)n);
	T_EQ(pread(out, got, n + 1, 0), (ssize_t)n);
	T_ASSERT(memcmp(got, want, n) == 0);
	free(got);
}

/* Copy path to a new file three ways: through the file positions, with
 * offsets, and with a length far beyond the content. */
static void copy_virtual(const char *path, size_t cap)
{
	uint8_t *want = malloc(cap);
	size_t n = read_all(path, want, cap);
	struct psplice_result r;
	int64_t oi = 0, oo = 0;
	int in, out;

	T_ASSERT(n > 0);
	in = open(path, O_RDONLY | O_CLOEXEC);
	T_OK(in);
	out = open(t_path("copy"), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	T_OK(out);

	T_EQ(psplice_copy(in, NULL, out, NULL, PSPLICE_TO_EOF, 0, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, n, n);
	/* Some path other than copy_file_range's 0 moved the bytes. */
	T_ASSERT(r.method != PSPLICE_METHOD_NONE);
	T_ASSERT(r.method != PSPLICE_METHOD_COPY_FILE_RANGE);
	T_EQ(t_pos(in), (int64_t)n);
	T_EQ(t_pos(out), (int64_t)n);
	check_out(out, want, n);

	T_OK(ftruncate(out, 0));
	T_EQ(psplice_copy(in, &oi, out, &oo, PSPLICE_TO_EOF, 0, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, n, n);
	T_EQ(oi, (int64_t)n);
	T_EQ(oo, (int64_t)n);
	T_EQ(t_pos(in), (int64_t)n);
	check_out(out, want, n);

	/* A length past the content is not an error: end of input. */
	T_OK(ftruncate(out, 0));
	oi = oo = 0;
	T_EQ(psplice_copy(in, &oi, out, &oo, (uint64_t)n + 100000, 0, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, n, n);
	check_out(out, want, n);

	/* One step at offset 0 moves bytes too, not the misleading 0. */
	oi = oo = 0;
	T_ASSERT(psplice(in, &oi, out, &oo, 4096, 0) > 0);
	close(in);
	close(out);
	free(want);
}

/* A process whose environment is ENV_STRINGS * ENV_STRING bytes: its
 * /proc/PID/environ is a procfs file far bigger than a pipe and than one
 * page, and it does not change while the process waits. */
static pid_t big_environ(void)
{
	static char strs[ENV_STRINGS][ENV_STRING + 8];
	char *envp[ENV_STRINGS + 1];
	char *argv[] = { "sleep", "60", NULL };
	pid_t pid;
	int i;

	for (i = 0; i < ENV_STRINGS; i++) {
		memcpy(strs[i], "V0=", 3);
		strs[i][1] = (char)('0' + i);
		for (size_t k = 3; k < ENV_STRING; k++)
			strs[i][k] = (char)('a' + (k * 7 + (size_t)i) % 26);
		strs[i][ENV_STRING] = 0;
		envp[i] = strs[i];
	}
	envp[ENV_STRINGS] = NULL;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execve("/bin/sleep", argv, envp);
		_exit(127);
	}
	T_OK(pid);
	return pid;
}

/* environ reads as empty until exec has set the new environment up. */
static void wait_exec(const char *path, size_t cap)
{
	uint8_t *buf = malloc(cap);
	int i;

	for (i = 0; i < 2000; i++) {
		if (read_all(path, buf, cap) >= ENV_STRINGS * (size_t)ENV_STRING)
			break;
		usleep(5000);
	}
	free(buf);
	T_ASSERT(i < 2000);
}

static const char *sysfs_file(void)
{
	static const char *const stable[] = {
		"/sys/kernel/mm/transparent_hugepage/enabled",
		"/sys/kernel/address_bits",
		"/sys/kernel/profiling",
	};

	for (size_t i = 0; i < sizeof(stable) / sizeof(stable[0]); i++)
		if (access(stable[i], R_OK) == 0)
			return stable[i];
	T_FAILED("no readable sysfs attribute among the stable ones");
	return NULL;
}

int main(int argc, char **argv)
{
	const size_t env_cap = ENV_STRINGS * (ENV_STRING + 16);
	char path[64];
	pid_t pid;

	t_dir(argc, argv);
	copy_virtual("/proc/version", 1 << 16);
	copy_virtual("/proc/self/auxv", 1 << 16);
	/* sysfs says st_size 4096 for a text attribute of a few bytes. */
	copy_virtual(sysfs_file(), 1 << 16);

	pid = big_environ();
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	wait_exec(path, env_cap);
	copy_virtual(path, env_cap);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return T_PASS;
}
