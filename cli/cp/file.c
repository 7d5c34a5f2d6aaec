/* psplice cp: one regular file: its copy opened (made, or an existing
 * DST checked and truncated, or replaced with -f), its data copied
 * (data.c), and a copy that failed removed when it made it. */
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
#include "out.h"
#include "sys.h"

/* -f: a file we may not write (a read-only mode for a user, a running
 * program, a FIFO in a tree that no one reads) can still be replaced, if
 * its directory lets us remove it. The source was already found not to be
 * DST. */
static int replace(struct cp_job *j, mode_t mode)
{
	int fd;

	if (unlinkat(j->dst_dir, j->dst_name, 0) < 0) {
		cli_error(errno, "cannot remove %s", cli_quote(j->dst));
		return -1;
	}
	/* After the copy's line, said already: cp(1)'s order. */
	cp_say_removed(j->o, j->dst);
	fd = openat(j->dst_dir, j->dst_name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	if (fd < 0) {
		cli_error(errno, "cannot create regular file %s", cli_quote(j->dst));
		return -1;
	}
	j->created = j->dst_file = true;
	return fd;
}

/* An existing destination is opened without O_TRUNC and checked against
 * the source first: through a hard or symbolic link it may be the source
 * itself, and truncating it would destroy the data to be copied. In a
 * tree, a FIFO is opened without waiting: cp(1) would wait for a reader
 * that never comes; one that is there gets the data, as with cp(1). */
static int open_existing(struct cp_job *j, mode_t mode, bool top)
{
	struct stat st;
	int fd = openat(j->dst_dir, j->dst_name, O_WRONLY | O_CLOEXEC | (top ? 0 : O_NONBLOCK)), fl;

	if (fd < 0 && j->o->force && errno != EISDIR)
		return replace(j, mode);
	if (fd < 0) {
		if (errno == EISDIR)
			cli_error(0, "cannot overwrite directory %s with non-directory",
				  cli_quote(j->dst));
		else
			cli_error(errno, "cannot create regular file %s", cli_quote(j->dst));
		return -1;
	}
	if (!top && ((fl = fcntl(fd, F_GETFL)) < 0 ||
		     fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0)) {
		cli_error(errno, "cannot open %s for writing", cli_quote(j->dst));
		close(fd);
		return -1;
	}
	if (fstat(fd, &st) == 0 && cli_same_inode(&st, &j->st)) {
		close(fd);
		return cp_refuse_same(j->src, j->dst);
	}
	/* Devices and FIFOs have nothing to truncate; --attributes-only
	 * leaves DST's data as it is. */
	if (S_ISREG(st.st_mode) && !j->o->attrs_only && ftruncate(fd, 0) < 0) {
		cli_error(errno, "cannot truncate %s", cli_quote(j->dst));
		close(fd);
		return -1;
	}
	j->dst_file = S_ISREG(st.st_mode);
	return fd;
}

/* DST, a link to nothing that cp_existing let by (POSIXLY_CORRECT), is
 * written through: its target made, as POSIX asks. Not ours to remove if
 * the copy fails: the link was there. */
static bool dangling(const struct cp_job *j)
{
	struct stat st;

	return getenv("POSIXLY_CORRECT") &&
	       fstatat(j->dst_dir, j->dst_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	       S_ISLNK(st.st_mode) && fstatat(j->dst_dir, j->dst_name, &st, 0) < 0 &&
	       errno == ENOENT;
}

static int open_through(struct cp_job *j, mode_t mode)
{
	int fd = openat(j->dst_dir, j->dst_name, O_WRONLY | O_CREAT | O_CLOEXEC, mode);

	if (fd < 0) {
		cli_error(errno, "cannot create regular file %s", cli_quote(j->dst));
		return -1;
	}
	j->dst_file = true;
	return fd;
}

/* exists: cp_existing found DST there and left it. */
static int open_target(struct cp_job *j, bool exists, bool top)
{
	/* SOURCE's permission bits (less the umask), whatever it is: cp(1)
	 * gives the copy of a device's or a FIFO's contents theirs too. */
	mode_t mode = cp_new_mode(j->o, &j->st, 0777);
	int fd;

	/* A copy that keeps the owner is ours, with our group, until its
	 * data is in: no one else reads it meanwhile (private_end in data.c sets
	 * its mode then), as cp(1) keeps it. */
	if (j->o->keep & CP_KEEP_OWNER)
		mode &= S_IRWXU;

	if (exists)
		return open_existing(j, mode, top);
	fd = openat(j->dst_dir, j->dst_name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	if (fd >= 0) {
		j->created = j->dst_file = true;
		return fd;
	}
	/* Made since it was looked at, or a link to nothing. */
	if (errno == EEXIST)
		return dangling(j) ? open_through(j, mode) : open_existing(j, mode, top);
	cli_error(errno, "cannot create regular file %s", cli_quote(j->dst));
	return -1;
}

static int copy_to(struct cp_job *j, int in, bool top)
{
	const struct cp_at to = { j->dst_dir, j->dst_name, j->dst, j->fresh };
	bool exists = false;
	int out, rc;

	/* In a directory this copy made, DST is made without looking for
	 * it first: should it be there all the same, open_target finds it. */
	rc = j->fresh ? 1 : cp_existing(j->o, j->src, &to, &j->st, true, &exists);
	if (rc <= 0)
		return rc;
	/* Said before it is tried, as cp(1) says it. */
	cp_say(j->o, j->src, j->dst);
	out = open_target(j, exists, top);
	if (out < 0)
		return -1;
	rc = cp_copy_data(j, in, out);
	/* Some filesystems (NFS) report a failed write-back only here. */
	if (close(out) < 0 && rc == 0) {
		cli_error(errno, "error writing %s", cli_quote(j->dst));
		rc = -1;
	}
	if (rc < 0 && j->created && unlinkat(j->dst_dir, j->dst_name, 0) < 0)
		cli_error(errno, "cannot remove %s", cli_quote(j->dst));
	return rc < 0 ? -1 : 1;
}

int cp_file(const struct cp_at *src, const struct cp_at *dst, const struct cp_opts *o,
	    const struct stat *st, bool top)
{
	/* A link the walk did not follow is not followed now either: one
	 * put in the file's place since is refused, not copied through. */
	int flags = st && o->deref != CP_DEREF_ALWAYS ? O_NOFOLLOW : 0;
	struct cp_job j = { .o = o };
	int in, rc = -1;

	j.src = src->path;
	j.dst = dst->path;
	j.dst_dir = dst->dir;
	j.dst_name = dst->name;
	j.fresh = dst->fresh;
	in = openat(src->dir, src->name, O_RDONLY | O_CLOEXEC | flags);
	if (in < 0) {
		cli_error(errno, "cannot open %s", cli_quote(src->path));
		return -1;
	}
	if (st)
		j.st = *st;
	if (!st && fstat(in, &j.st) < 0)
		cli_error(errno, "cannot stat %s", cli_quote(src->path));
	else if (S_ISDIR(j.st.st_mode))
		cli_error(0, "-r not specified; omitting directory %s", cli_quote(src->path));
	else
		rc = copy_to(&j, in, top);
	close(in);
	return rc;
}
