/* psplice relay: --pid-file=FILE, the pid of the relay that serves. It is
 * written once the relay serves and has told the relay it replaces
 * (SIGUSR2's or --replace's), which then drains; whole, by a rename, so
 * that a reader never sees it empty or half written. A relay that handed
 * its listeners on leaves the file to the one that took them, whether it
 * has written its pid there yet or not; one that stops removes it only
 * when it holds its own pid. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "relay.h"
#include "out.h"

/* "FILE.tmp.PID", beside FILE: a rename within one directory. */
static char *tmp_name(const char *path)
{
	size_t len = strlen(path) + 32;
	char *tmp = malloc(len);

	if (tmp)
		snprintf(tmp, len, "%s.tmp.%ld", path, (long)getpid());
	return tmp;
}

/* -errno */
static int write_pid(const char *tmp)
{
	char text[32];
	int fd, len, err = 0;

	len = snprintf(text, sizeof(text), "%ld\n", (long)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (write(fd, text, (size_t)len) != len)
		err = errno ? -errno : -EIO;
	if (close(fd) < 0 && !err)
		err = -errno;
	return err;
}

/* The file written, or said why not: the relay serves on all the same. */
void pidfile_write(const struct relay *r)
{
	char *tmp;
	int err;

	if (!r->pid_file)
		return;
	tmp = tmp_name(r->pid_file);
	err = tmp ? write_pid(tmp) : -ENOMEM;
	if (!err && rename(tmp, r->pid_file) < 0)
		err = -errno;
	if (err) {
		if (tmp)
			unlink(tmp);
		cli_error(-err, "relay: cannot write the pid file %s", cli_quote(r->pid_file));
	}
	free(tmp);
}

/* The pid the file holds, or 0. */
static long pid_held(const char *path)
{
	char text[32], *end;
	ssize_t n;
	long pid;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	text[n] = '\0';
	pid = strtol(text, &end, 10);
	return end != text && (*end == '\n' || !*end) ? pid : 0;
}

/* At the relay's end: the file goes if it names this relay and no other
 * took the listeners (that one's pid is, or is about to be, in it). */
void pidfile_remove(const struct relay *r)
{
	if (!r->pid_file || atomic_load(&r->handed_over) || pid_held(r->pid_file) != (long)getpid())
		return;
	if (unlink(r->pid_file) < 0 && errno != ENOENT)
		cli_error(errno, "relay: cannot remove the pid file %s", cli_quote(r->pid_file));
}
