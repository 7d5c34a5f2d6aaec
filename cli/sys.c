/* The process and its descriptors: closed standard descriptors filled,
 * death by SIGPIPE, the clock, the same inode, a pipe's size. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "out.h"
#include "sys.h"

/* A standard descriptor left closed by the caller would be taken by the
 * next file or socket opened here: what was meant for the terminal would
 * be written into a copy, a prompt answered from a file, a socket read as
 * standard input. Each closed one gets /dev/null the wrong way round (0
 * for writing, 1 and 2 for reading), so that our own use of it fails with
 * EBADF, as on the closed descriptor, and GNU tools' messages follow.
 * Close-on-exec: a program run from here is handed its standard
 * descriptors as they came to us, closed. */
void cli_std_fds(void)
{
	int fd, got;

	for (fd = STDIN_FILENO; fd <= STDERR_FILENO; fd++) {
		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
			continue;
		/* The lower ones are open by now: this takes fd itself. */
		got = open("/dev/null", (fd == STDIN_FILENO ? O_WRONLY : O_RDONLY) | O_CLOEXEC);
		if (got != fd) {
			cli_error(got < 0 ? errno : 0, "cannot open %s on a closed descriptor %d",
				  cli_quote("/dev/null"), fd);
			exit(1);
		}
	}
}

/* A reader that went away ends psplice as it ends cat: by SIGPIPE, which
 * the engine kept from us. When our caller ignores SIGPIPE, it is an error
 * like any other and is reported. */
void cli_die_of_sigpipe(void)
{
	struct sigaction sa;
	sigset_t set;

	if (sigaction(SIGPIPE, NULL, &sa) < 0 || sa.sa_handler != SIG_DFL)
		return;
	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	raise(SIGPIPE);
}

int64_t cli_now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

bool cli_same_inode(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* A pipe holds 64 KiB unless asked for more, and each splice moves at most
 * what fits: 1 MiB halves the calls' cost per byte on both sides of it.
 * Where the limit (fs.pipe-max-size, or the user's pipe pages) says no, the
 * pipe stays as it is. */
void cli_grow_pipe(int fd)
{
	struct stat st;

	if (fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode) &&
	    fcntl(fd, F_GETPIPE_SZ) < CLI_PIPE_SIZE)
		fcntl(fd, F_SETPIPE_SZ, CLI_PIPE_SIZE);
}
