/* psplice cp -p: SOURCE's mode, owner and times on the copy. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cp.h"

/* -p, once the data is in: times last, since writing changes mtime, and
 * before any sync, so that the sync covers them. The owner before the
 * mode: chown clears the set-user-ID and set-group-ID bits. Only root may
 * give a file away; anyone else keeps their own files, and gets SOURCE's
 * group only if they are in it, as with cp -p. Only a regular DST: a
 * device or a FIFO cp writes into is not cp's to change. */
int cp_preserve_fd(const struct cp_job *j, int out)
{
	const struct timespec times[2] = { j->st.st_atim, j->st.st_mtim };
	struct stat st;

	if (fstat(out, &st) < 0 || !S_ISREG(st.st_mode))
		return 0;
	if (geteuid() == 0) {
		if (fchown(out, j->st.st_uid, j->st.st_gid) < 0) {
			cli_error(errno, "failed to preserve ownership for %s",
				  cli_quote(j->dst));
			return -1;
		}
	} else if (fchown(out, (uid_t)-1, j->st.st_gid) < 0) {
		/* Not in SOURCE's group: the copy keeps ours. */
	}
	if (fchmod(out, j->st.st_mode & 07777) < 0) {
		cli_error(errno, "preserving permissions for %s", cli_quote(j->dst));
		return -1;
	}
	if (futimens(out, times) < 0) {
		cli_error(errno, "preserving times for %s", cli_quote(j->dst));
		return -1;
	}
	return 0;
}

/* -p for what cp_file does not open: a directory, a symbolic link (which
 * has no mode of its own to set) or a special file. By path: none of them
 * is open here. */
int cp_preserve_path(const char *dst, const struct stat *st)
{
	const struct timespec times[2] = { st->st_atim, st->st_mtim };

	if (geteuid() == 0 && lchown(dst, st->st_uid, st->st_gid) < 0) {
		cli_error(errno, "failed to preserve ownership for %s", cli_quote(dst));
		return -1;
	}
	if (!S_ISLNK(st->st_mode) &&
	    chmod(dst, st->st_mode & 07777) < 0) {
		cli_error(errno, "preserving permissions for %s", cli_quote(dst));
		return -1;
	}
	if (utimensat(AT_FDCWD, dst, times, AT_SYMLINK_NOFOLLOW) < 0) {
		cli_error(errno, "preserving times for %s", cli_quote(dst));
		return -1;
	}
	return 0;
}
