/* GNU's cp, cat or tee replaced by psplice's, for GNU's tests
 * (tests/gnu/run.sh): run by a link named NAME, this runs
 * `PSPLICE_BIN NAME ARGS...` and reads its messages as NAME's.
 *
 * psplice names itself "psplice:" in its messages where GNU's programs
 * say "cp:"; GNU's tests compare messages. Its stderr comes through a
 * pipe: "psplice:" at the start of a line becomes "NAME:", and "Try
 * 'psplice NAME --help'" becomes "Try 'NAME --help'". Nothing else
 * differs from running psplice itself: stdin and stdout are its own (this
 * process closes its copies), a signal sent to this process goes on to
 * psplice, and this process ends as psplice ended (the same status, or
 * killed by the same signal) once psplice's messages are all written,
 * so that a test that reads them after the command finds them whole. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef PSPLICE_BIN
#error "build with -DPSPLICE_BIN='\"/path/to/psplice\"'"
#endif

static volatile pid_t child;

static void forward(int sig)
{
	if (child > 0)
		kill(child, sig);
}

/* Each signal that may end a test's command, unless ignored (psplice
 * inherits the ignoring, as it would from the test). */
static void catch_signals(void)
{
	static const int sigs[] = { SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2,
				    SIGALRM, SIGCONT, SIGTSTP };
	struct sigaction sa = { .sa_handler = forward, .sa_flags = SA_RESTART };
	struct sigaction old;

	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
			sigaction(sigs[i], &sa, NULL);
}

static void put(const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(2, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

/* One line (or the start of one too long for the buffer), renamed. */
static void put_line(const char *line, size_t n, int at_start, const char *name)
{
	char try[256];
	const char *p;
	size_t len;

	if (at_start && n >= 8 && !memcmp(line, "psplice:", 8)) {
		put(name, strlen(name));
		line += 7;
		n -= 7;
	}
	snprintf(try, sizeof(try), "'psplice %s --help'", name);
	len = strlen(try);
	p = n >= len ? memmem(line, n, try, len) : NULL;
	if (p) {
		put(line, (size_t)(p - line));
		put("'", 1);
		put(try + 9, len - 9);
		n -= (size_t)(p - line) + len;
		line = p + len;
	}
	put(line, n);
}

/* psplice's stderr, from the pipe to ours, line by line, until its end. */
static void relay(int fd, const char *name)
{
	char buf[8192];
	size_t have = 0;
	int at_start = 1;

	for (;;) {
		ssize_t r = read(fd, buf + have, sizeof(buf) - have);
		char *nl;

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		have += (size_t)r;
		while ((nl = memchr(buf, '\n', have)) || have == sizeof(buf)) {
			size_t n = nl ? (size_t)(nl - buf) + 1 : have;

			put_line(buf, n, at_start, name);
			at_start = nl != NULL;
			memmove(buf, buf + n, have - n);
			have -= n;
		}
	}
	if (have)
		put_line(buf, have, at_start, name);
}

int main(int argc, char **argv)
{
	const char *name = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
	char **args = calloc((size_t)argc + 2, sizeof(*args));
	int fds[2], status;

	if (!args || pipe(fds) < 0) {
		perror(name);
		return 1;
	}
	args[0] = "psplice";
	args[1] = (char *)name;
	memcpy(args + 2, argv + 1, (size_t)argc * sizeof(*args));
	catch_signals();
	child = fork();
	if (child < 0) {
		perror(name);
		return 1;
	}
	if (child == 0) {
		dup2(fds[1], 2);
		close(fds[0]);
		close(fds[1]);
		execv(PSPLICE_BIN, args);
		fprintf(stderr, "psplice: cannot run %s: %s\n", PSPLICE_BIN, strerror(errno));
		_exit(126);
	}
	close(fds[1]);
	close(0);
	close(1);
	relay(fds[0], name);
	while (waitpid(child, &status, 0) < 0)
		if (errno != EINTR)
			return 1;
	if (WIFSIGNALED(status)) {
		signal(WTERMSIG(status), SIG_DFL);
		raise(WTERMSIG(status));
		return 128 + WTERMSIG(status);
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
