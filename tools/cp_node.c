/* psplice cp -r: a tree, walked by path; links copied as links, special
 * files made anew. */
#include <dirent.h>
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

/* -r: one walk from a SOURCE directory to its copy. */
struct cp_tree {
	const struct cp_job *opts;
	const char *top_src, *top_dst;
	struct stat top;  /* of top_dst, once made: not to be copied into itself */
	bool top_known;
	mode_t umask;
};

static char *join(const char *dir, const char *name)
{
	char *p;

	if (asprintf(&p, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", name) < 0)
		return NULL;
	return p;
}

/* An existing DST in a tree: skipped with -n, removed with -f so that
 * the new node can take its name, else an error. 1: go on, 0: skip. */
static int make_room(const struct cp_tree *t, const char *dst, const char *what)
{
	if (t->opts->no_clobber)
		return 0;
	if (t->opts->force && unlink(dst) == 0)
		return 1;
	cli_error(EEXIST, "cannot create %s %s", what, cli_quote(dst));
	return -1;
}

/* A symbolic link is copied as a link, to the same target, as cp -r does:
 * following it could copy a whole other tree, or loop. */
static int cp_symlink(const struct cp_tree *t, const char *src, const char *dst,
		      const struct stat *st)
{
	size_t size = st->st_size > 0 ? (size_t)st->st_size + 1 : PATH_MAX;
	char *target = malloc(size);
	ssize_t n;
	int rc = -1;

	if (!target) {
		cli_error(ENOMEM, "cannot copy %s", cli_quote(src));
		return -1;
	}
	n = readlink(src, target, size);
	if (n < 0 || (size_t)n >= size) {
		cli_error(n < 0 ? errno : ENAMETOOLONG, "cannot read symbolic link %s",
			  cli_quote(src));
		goto out;
	}
	target[n] = '\0';
	while (symlink(target, dst) < 0) {
		if (errno != EEXIST) {
			cli_error(errno, "cannot create symbolic link %s", cli_quote(dst));
			goto out;
		}
		rc = make_room(t, dst, "symbolic link");
		if (rc <= 0)
			goto out;
		rc = -1;
	}
	rc = t->opts->preserve ? cp_preserve_path(dst, st) : 0;
out:
	free(target);
	return rc;
}

/* FIFOs, devices and sockets are made anew, as cp -r makes them: their
 * "contents" are not data that a copy could read to an end. */
static int cp_special(const struct cp_tree *t, const char *dst, const struct stat *st)
{
	int rc;

	while (mknod(dst, st->st_mode & ~t->umask, st->st_rdev) < 0) {
		if (errno != EEXIST) {
			cli_error(errno, "cannot create special file %s", cli_quote(dst));
			return -1;
		}
		rc = make_room(t, dst, "special file");
		if (rc <= 0)
			return rc;
	}
	return t->opts->preserve ? cp_preserve_path(dst, st) : 0;
}

static int cp_node(struct cp_tree *t, const char *src, const char *dst);

static int cp_dir(struct cp_tree *t, const char *src, const char *dst,
		  const struct stat *st)
{
	struct dirent *e;
	struct stat dst_st;
	bool made = false;
	char *s, *d;
	DIR *dir;
	int rc = 0;

	/* The copy of the top directory is made inside it: copying it would
	 * never end. */
	if (t->top_known && cp_same_inode(st, &t->top)) {
		cli_error(0, "cannot copy a directory, %s, into itself, %s",
			  cli_quote(t->top_src), cli_quote(t->top_dst));
		return -1;
	}
	/* Ours to fill first: SOURCE's mode may not let us write into it. A
	 * link to a directory is followed when it is DST itself, given on the
	 * command line, never inside the tree: the copy would write outside
	 * it (cp -r refuses too). */
	if (mkdir(dst, 0700) == 0) {
		made = true;
	} else if (errno != EEXIST ||
		   (t->top_known ? lstat(dst, &dst_st) : stat(dst, &dst_st)) < 0 ||
		   !S_ISDIR(dst_st.st_mode)) {
		if (errno == EEXIST)
			cli_error(0, "cannot overwrite non-directory %s with directory %s",
				  cli_quote(dst), cli_quote(src));
		else
			cli_error(errno, "cannot create directory %s", cli_quote(dst));
		return -1;
	}
	if (!t->top_known) {
		if (stat(dst, &t->top) < 0) {
			cli_error(errno, "cannot stat %s", cli_quote(dst));
			return -1;
		}
		t->top_known = true;
	}
	dir = opendir(src);
	if (!dir) {
		cli_error(errno, "cannot access %s", cli_quote(src));
		rc = -1;
	}
	while (dir) {
		errno = 0;
		e = readdir(dir);
		if (!e) {
			if (errno) {
				cli_error(errno, "cannot read directory %s", cli_quote(src));
				rc = -1;
			}
			break;
		}
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		s = join(src, e->d_name);
		d = join(dst, e->d_name);
		if (!s || !d) {
			cli_error(ENOMEM, "cannot copy %s", cli_quote(src));
			rc = -1;
		} else if (cp_node(t, s, d) < 0) {
			rc = -1;
		}
		free(s);
		free(d);
	}
	if (dir)
		closedir(dir);
	/* Mode and times last: the entries made above changed the mtime. An
	 * existing directory keeps its mode, as with cp -r. */
	if (t->opts->preserve) {
		if (cp_preserve_path(dst, st) < 0)
			rc = -1;
	} else if (made && chmod(dst, st->st_mode & 0777 & ~t->umask) < 0) {
		cli_error(errno, "setting permissions for %s", cli_quote(dst));
		rc = -1;
	}
	return rc;
}

static int cp_node(struct cp_tree *t, const char *src, const char *dst)
{
	struct stat st;

	if (lstat(src, &st) < 0) {
		cli_error(errno, "cannot stat %s", cli_quote(src));
		return -1;
	}
	if (S_ISDIR(st.st_mode))
		return cp_dir(t, src, dst, &st);
	if (S_ISLNK(st.st_mode))
		return cp_symlink(t, src, dst, &st);
	if (S_ISREG(st.st_mode))
		return cp_file(src, dst, t->opts, true);
	return cp_special(t, dst, &st);
}

/* Would the copy of directory src be made inside src? Then it would copy
 * itself, without end: refused before anything is made, as cp -r does. */
static bool into_itself(const char *src, const char *dst)
{
	char *parent = cp_parent_of(dst), *rs = realpath(src, NULL), *rp = NULL;
	size_t n;
	bool in = false;

	if (parent && rs)
		rp = realpath(parent, NULL);
	if (rp) {
		n = strlen(rs);
		in = !strncmp(rp, rs, n) && (rp[n] == '\0' || rp[n] == '/' || n == 1);
	}
	free(parent);
	free(rs);
	free(rp);
	return in;
}

/* -r: SOURCE is copied as it is, a link as a link; DST as for a file:
 * into it when it is a directory. Anything but a directory or a link at
 * the top is a plain copy. */
int cp_tree(const char *src, const char *dst, const struct cp_job *opts)
{
	struct cp_tree t = { .opts = opts };
	struct stat st;
	char *target;
	int rc;

	if (lstat(src, &st) < 0) {
		cli_error(errno, "cannot stat %s", cli_quote(src));
		return -1;
	}
	if (!S_ISDIR(st.st_mode) && !S_ISLNK(st.st_mode))
		return cp_file(src, dst, opts, false);
	target = cp_target_path(src, dst);
	if (!target) {
		cli_error(ENOMEM, "cannot copy %s", cli_quote(src));
		return -1;
	}
	if (S_ISDIR(st.st_mode) && into_itself(src, target)) {
		cli_error(0, "cannot copy a directory, %s, into itself, %s",
			  cli_quote(src), cli_quote(target));
		free(target);
		return -1;
	}
	t.umask = umask(0);
	umask(t.umask);
	t.top_src = src;
	t.top_dst = target;
	rc = cp_node(&t, src, target);
	free(target);
	return rc;
}
