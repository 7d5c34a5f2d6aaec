/* psplice cp: one SOURCE that is not a directory: links copied as links
 * or made with -l and -s, hard links kept with --preserve=links, special
 * files made anew, regular files copied (file.c). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cp.h"
#include "out.h"
#include "sys.h"

/* A symbolic link is copied as a link, to the same target, as cp -r does:
 * following it could copy a whole other tree, or loop. */
static int cp_symlink(const struct cp_opts *o, const struct cp_at *src, const struct cp_at *dst,
		      const struct stat *st)
{
	size_t size = st->st_size > 0 ? (size_t)st->st_size + 1 : PATH_MAX;
	char *target = malloc(size);
	ssize_t n;
	int rc = -1;

	if (!target) {
		cli_error(ENOMEM, "cannot copy %s", cli_quote(src->path));
		return -1;
	}
	n = readlinkat(src->dir, src->name, target, size);
	if (n < 0 || (size_t)n >= size) {
		cli_error(n < 0 ? errno : ENAMETOOLONG, "cannot read symbolic link %s",
			  cli_quote(src->path));
		goto out;
	}
	target[n] = '\0';
	rc = cp_make_room(o, src, dst, st, "symbolic link");
	if (rc <= 0)
		goto out;
	rc = -1;
	if (symlinkat(target, dst->dir, dst->name) < 0) {
		cli_error(errno, "cannot create symbolic link %s", cli_quote(dst->path));
		goto out;
	}
	rc = o->keep && cp_preserve(o, src, dst, st, NULL) < 0 ? -1 : 1;
out:
	free(target);
	return rc;
}

/* FIFOs, devices and sockets are made anew, as cp -r makes them: their
 * "contents" are not data that a copy could read to an end. */
static int cp_special(const struct cp_opts *o, const struct cp_at *src, const struct cp_at *dst,
		      const struct stat *st)
{
	int rc = cp_make_room(o, src, dst, st, S_ISFIFO(st->st_mode) ? "fifo" : "special file");

	if (rc <= 0)
		return rc;
	mode_t mode = (st->st_mode & S_IFMT) | cp_new_mode(o, st, 07777);

	if (mknodat(dst->dir, dst->name, mode & ~o->umask, st->st_rdev) < 0) {
		cli_error(errno, "cannot create special file %s", cli_quote(dst->path));
		return -1;
	}
	return o->keep && cp_preserve(o, src, dst, st, NULL) < 0 ? -1 : 1;
}

/* -l: DST another name of SOURCE (of what a link points to when links are
 * followed, as cp -l does unless -P). */
static int cp_hardlink(const struct cp_opts *o, const struct cp_at *src, const struct cp_at *dst,
		       const struct stat *st, bool follow)
{
	int rc = cp_make_room(o, src, dst, st, "hard link");

	if (rc <= 0)
		return rc;
	if (linkat(src->dir, src->name, dst->dir, dst->name, follow ? AT_SYMLINK_FOLLOW : 0) < 0) {
		cli_error(errno, "cannot create hard link %s to %s", cli_quote(dst->path),
			  cli_quote(src->path));
		return -1;
	}
	return 1;
}

/* Is dst's directory the current one? A relative link made anywhere
 * else would point somewhere else. */
static bool in_cwd(const struct cp_at *dst)
{
	char *dir = cp_parent_of(dst->name);
	struct stat a, b;
	bool in = dir && ((dst->dir == AT_FDCWD && !strcmp(dir, ".")) ||
			  (fstatat(dst->dir, dir, &a, 0) == 0 && stat(".", &b) == 0 &&
			   cli_same_inode(&a, &b)));

	free(dir);
	return in;
}

/* -s: DST a symbolic link to SOURCE, as SOURCE was given. */
static int cp_softlink(const struct cp_opts *o, const struct cp_at *src, const struct cp_at *dst,
		       const struct stat *st)
{
	int rc;

	if (src->path[0] != '/' && !in_cwd(dst)) {
		cli_error(0, "%s: can make relative symbolic links only in current directory",
			  cli_quote(dst->path));
		return -1;
	}
	rc = cp_make_room(o, src, dst, st, "symbolic link");
	if (rc <= 0)
		return rc;
	if (symlinkat(src->path, dst->dir, dst->name) < 0) {
		cli_error(errno, "cannot create symbolic link %s to %s", cli_quote(dst->path),
			  cli_quote(src->path));
		return -1;
	}
	return 1;
}

/* A path too long for one system call (a copy deep in a tree) is reached
 * a name at a time: the descriptor of its directory, *base its last name;
 * AT_FDCWD for a path that fits. -1 with errno. */
static int open_parent(const char *path, const char **base)
{
	const char *p = path, *slash;
	char name[NAME_MAX + 1];
	size_t len;
	int fd, next;

	*base = path;
	if (strlen(path) < PATH_MAX)
		return AT_FDCWD;
	fd = open(*p == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	while (fd >= 0 && (slash = strchr(p, '/'))) {
		len = (size_t)(slash - p);
		if (len > NAME_MAX) {
			close(fd);
			errno = ENAMETOOLONG;
			return -1;
		}
		memcpy(name, p, len);
		name[len] = '\0';
		p = slash + 1;
		if (!len)
			continue;
		next = openat(fd, name, O_PATH | O_DIRECTORY | O_CLOEXEC);
		close(fd);
		fd = next;
	}
	*base = p;
	return fd;
}

/* --preserve=links: DST another name of earlier, the copy made of
 * SOURCE's inode under another of its names, as cp -a keeps hard links.
 * -u does not keep DST, newer or not: the inode's copy is decided, and
 * DST becomes a name of it, as in cp(1). */
static int link_earlier(const struct cp_opts *opts, const char *earlier,
			const struct cp_at *src, const struct cp_at *dst, const struct stat *st)
{
	struct cp_opts no_update = *opts, *o = &no_update;
	const char *base;
	bool exists;
	int rc, dir;

	no_update.update = false;
	rc = cp_existing(o, src->path, dst, st, false, &exists);

	if (rc <= 0)
		return rc;
	if (exists && unlinkat(dst->dir, dst->name, 0) < 0) {
		cli_error(errno, "cannot remove %s", cli_quote(dst->path));
		return -1;
	}
	cp_say(o, src->path, dst->path);
	dir = open_parent(earlier, &base);
	rc = dir == -1 ? -1 : linkat(dir, base, dst->dir, dst->name, 0);
	if (rc < 0)
		cli_error(errno, "cannot create hard link %s to %s", cli_quote(dst->path),
			  cli_quote(earlier));
	if (dir >= 0)
		close(dir);
	return rc < 0 ? -1 : 1;
}

/* Anything but a directory, made anew. */
static int cp_made(const struct cp_opts *o, const struct cp_at *src, const struct cp_at *dst,
		   const struct stat *st, bool follow, bool top)
{
	if (o->link == CP_LINK_HARD)
		return cp_hardlink(o, src, dst, st, follow);
	if (o->link == CP_LINK_SYMBOLIC)
		return cp_softlink(o, src, dst, st);
	if (S_ISLNK(st->st_mode))
		return cp_symlink(o, src, dst, st);
	/* Outside a tree, a special file's contents are copied (a pipe on
	 * standard input), as cp(1) does without -r, and in one with
	 * --copy-contents (a FIFO waits for a writer then, as in cp(1)). In a
	 * tree, the stat that found a regular file serves its copy: a second
	 * one, once it is open, would cost a call a file (and the engine looks
	 * at it anyway). */
	if (S_ISREG(st->st_mode) || !o->recursive || o->copy_contents)
		return cp_file(src, dst, o, top || !S_ISREG(st->st_mode) ? NULL : st, top);
	return cp_special(o, src, dst, st);
}

/* With --preserve=links, a name of an inode already copied becomes a
 * link to that copy. cp(1)'s rule for which inodes to remember: those
 * with other names, and with -L any (two links may lead to one file), with
 * -H any given on the command line. Without links followed, an inode is
 * forgotten once all its names were seen; a link followed is one more way
 * to it, which its count does not tell. */
int cp_nondir(const struct cp_opts *o, const struct cp_at *src, const struct cp_at *dst,
		     const struct stat *st, bool follow, bool top)
{
	bool counted = o->deref == CP_DEREF_NEVER;
	char *earlier;
	int rc;

	if (!o->links || o->link == CP_LINK_HARD ||
	    (st->st_nlink < 2 && (o->deref == CP_DEREF_NEVER ||
				  (o->deref == CP_DEREF_ARGS && !top))))
		return cp_made(o, src, dst, st, follow, top);
	rc = cp_links_claim(o->links, st, dst->path, counted, &earlier);
	if (rc < 0) {
		cli_error(ENOMEM, "cannot copy %s", cli_quote(src->path));
		return -1;
	}
	if (rc > 0) {
		rc = link_earlier(o, earlier, src, dst, st);
		if (rc > 0)
			cp_links_seen(o->links, st);
		free(earlier);
		return rc;
	}
	rc = cp_made(o, src, dst, st, follow, top);
	/* A DST -u left, as newer than SOURCE, stands for its copy: the
	 * other names link to it, as in cp(1) (-n's and -i's do not). */
	cp_links_made(o->links, st, rc > 0 || (rc == 0 && o->update && o->clobber == CP_CLOBBER));
	return rc;
}
