/* psplice cp: one SOURCE of any kind, and with -r the tree under it,
 * walked by path; what becomes of an existing DST; links copied as links
 * or made with -l and -s; special files made anew. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cp.h"

/* One walk from a SOURCE directory to its copy. */
struct cp_tree {
	const struct cp_job *opts;
	const char *top_src, *top_dst;
	struct stat top;  /* of top_dst, once made: not to be copied into itself */
	bool top_known;
};

static char *join(const char *dir, const char *name)
{
	char *p;

	if (asprintf(&p, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", name) < 0)
		return NULL;
	return p;
}

/* -i: "psplice: overwrite 'x'? " on stderr, and a line from stdin that
 * starts with y or Y. */
static bool ask(const char *dst)
{
	char *line = NULL;
	size_t size = 0;
	bool yes;

	fprintf(stderr, CLI_NAME ": overwrite %s? ", cli_quote(dst));
	fflush(stderr);
	yes = getline(&line, &size, stdin) > 0 && (line[0] == 'y' || line[0] == 'Y');
	free(line);
	return yes;
}

/* The highest N of an existing "DST.~N~" (0: none). */
static unsigned long last_numbered(const char *dst)
{
	char *dir = cp_parent_of(dst), *end;
	const char *base = strrchr(dst, '/') ? strrchr(dst, '/') + 1 : dst;
	size_t len = strlen(base);
	unsigned long n, max = 0;
	struct dirent *e;
	DIR *d = dir ? opendir(dir) : NULL;

	while (d && (e = readdir(d))) {
		if (strncmp(e->d_name, base, len) || strncmp(e->d_name + len, ".~", 2) ||
		    e->d_name[len + 2] < '1' || e->d_name[len + 2] > '9')
			continue;
		n = strtoul(e->d_name + len + 2, &end, 10);
		if (!strcmp(end, "~") && n > max)
			max = n;
	}
	if (d)
		closedir(d);
	free(dir);
	return max;
}

/* --backup: DST moved out of the way, to DST~ or DST.~N~. */
static int backup(const struct cp_job *o, const char *dst)
{
	unsigned long n = o->backup == CP_BACKUP_SIMPLE ? 0 : last_numbered(dst);
	char *name;
	int rc;

	if (o->backup == CP_BACKUP_NUMBERED || n)
		rc = asprintf(&name, "%s.~%lu~", dst, n + 1);
	else
		rc = asprintf(&name, "%s%s", dst, o->suffix);
	if (rc < 0) {
		cli_error(ENOMEM, "cannot backup %s", cli_quote(dst));
		return -1;
	}
	rc = rename(dst, name);
	if (rc < 0)
		cli_error(errno, "cannot backup %s", cli_quote(dst));
	free(name);
	return rc;
}

static int timespec_cmp(const struct timespec *a, const struct timespec *b)
{
	if (a->tv_sec != b->tv_sec)
		return a->tv_sec < b->tv_sec ? -1 : 1;
	return a->tv_nsec < b->tv_nsec ? -1 : a->tv_nsec > b->tv_nsec;
}

int cp_existing(const struct cp_job *o, const char *src, const char *dst,
		const struct stat *st, bool through, bool *exists)
{
	struct stat ds, fs;
	const struct stat *d = &ds;
	bool dangling = false;

	*exists = false;
	/* Not there (or not reachable: making it will say why). */
	if (lstat(dst, &ds) < 0)
		return 1;
	if (through && S_ISLNK(ds.st_mode)) {
		if (stat(dst, &fs) == 0)
			d = &fs;
		else
			dangling = errno == ENOENT;
	}
	if (cp_same_inode(d, st)) {
		/* -l: already that link, which is what was asked. */
		if (o->link == CP_LINK_HARD)
			return 0;
		cli_error(0, "%s and %s are the same file", cli_quote(src), cli_quote(dst));
		return -1;
	}
	if (o->clobber == CP_NO_CLOBBER)
		return 0;
	if (o->update && timespec_cmp(&d->st_mtim, &st->st_mtim) >= 0)
		return 0;
	if (S_ISDIR(d->st_mode)) {
		cli_error(0, "cannot overwrite directory %s with non-directory", cli_quote(dst));
		return -1;
	}
	if (o->clobber == CP_INTERACTIVE && !ask(dst))
		return 0;
	if (o->backup != CP_BACKUP_NONE)
		return backup(o, dst) < 0 ? -1 : 1;
	/* cp(1) will not create a file where a link points to nothing: the
	 * name it would create may be anywhere. */
	if (dangling) {
		cli_error(0, "not writing through dangling symlink %s", cli_quote(dst));
		return -1;
	}
	*exists = true;
	return 1;
}

/* A node that is not a file's data takes the place of an existing DST, as
 * cp(1) replaces it; -l and -s only with -f, as cp(1). 1: go on. */
static int make_room(const struct cp_job *o, const char *src, const char *dst,
		     const struct stat *st, const char *what)
{
	bool exists;
	int rc = cp_existing(o, src, dst, st, false, &exists);

	if (rc <= 0 || !exists)
		return rc;
	if (o->link != CP_LINK_NONE && !o->force) {
		cli_error(EEXIST, "cannot create %s %s to %s", what, cli_quote(dst),
			  cli_quote(src));
		return -1;
	}
	if (unlink(dst) < 0) {
		cli_error(errno, "cannot remove %s", cli_quote(dst));
		return -1;
	}
	return 1;
}

/* A symbolic link is copied as a link, to the same target, as cp -r does:
 * following it could copy a whole other tree, or loop. */
static int cp_symlink(const struct cp_job *o, const char *src, const char *dst,
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
	rc = make_room(o, src, dst, st, "symbolic link");
	if (rc <= 0)
		goto out;
	rc = -1;
	if (symlink(target, dst) < 0) {
		cli_error(errno, "cannot create symbolic link %s", cli_quote(dst));
		goto out;
	}
	rc = o->keep ? cp_preserve_path(o, src, dst, st) : 0;
out:
	free(target);
	return rc;
}

/* FIFOs, devices and sockets are made anew, as cp -r makes them: their
 * "contents" are not data that a copy could read to an end. */
static int cp_special(const struct cp_job *o, const char *src, const char *dst,
		      const struct stat *st)
{
	int rc = make_room(o, src, dst, st, "special file");

	if (rc <= 0)
		return rc;
	if (mknod(dst, st->st_mode & ~o->umask, st->st_rdev) < 0) {
		cli_error(errno, "cannot create special file %s", cli_quote(dst));
		return -1;
	}
	return o->keep ? cp_preserve_path(o, src, dst, st) : 0;
}

/* -l: DST another name of SOURCE (of what a link points to when links are
 * followed, as cp -l does unless -P). */
static int cp_hardlink(const struct cp_job *o, const char *src, const char *dst,
		       const struct stat *st, bool follow)
{
	int rc = make_room(o, src, dst, st, "hard link");

	if (rc <= 0)
		return rc;
	if (linkat(AT_FDCWD, src, AT_FDCWD, dst, follow ? AT_SYMLINK_FOLLOW : 0) < 0) {
		cli_error(errno, "cannot create hard link %s to %s", cli_quote(dst),
			  cli_quote(src));
		return -1;
	}
	return 0;
}

/* Is dst's directory the current one? A relative link made anywhere
 * else would point somewhere else. */
static bool in_cwd(const char *dst)
{
	char *dir = cp_parent_of(dst);
	struct stat a, b;
	bool in = dir && (!strcmp(dir, ".") ||
			  (stat(dir, &a) == 0 && stat(".", &b) == 0 && cp_same_inode(&a, &b)));

	free(dir);
	return in;
}

/* -s: DST a symbolic link to SOURCE, as SOURCE was given. */
static int cp_softlink(const struct cp_job *o, const char *src, const char *dst,
		       const struct stat *st)
{
	int rc;

	if (src[0] != '/' && !in_cwd(dst)) {
		cli_error(0, "%s: can make relative symbolic links only in current directory",
			  cli_quote(dst));
		return -1;
	}
	rc = make_room(o, src, dst, st, "symbolic link");
	if (rc <= 0)
		return rc;
	if (symlink(src, dst) < 0) {
		cli_error(errno, "cannot create symbolic link %s to %s", cli_quote(dst),
			  cli_quote(src));
		return -1;
	}
	return 0;
}

/* Anything but a directory. st: of SOURCE, followed when follow. */
static int cp_nondir(const struct cp_job *o, const char *src, const char *dst,
		     const struct stat *st, bool follow, bool top)
{
	if (o->link == CP_LINK_HARD)
		return cp_hardlink(o, src, dst, st, follow);
	if (o->link == CP_LINK_SYMBOLIC)
		return cp_softlink(o, src, dst, st);
	if (S_ISLNK(st->st_mode))
		return cp_symlink(o, src, dst, st);
	/* Outside a tree, a special file's contents are copied (a pipe on
	 * standard input), as cp(1) does without -r. */
	if (S_ISREG(st->st_mode) || !o->recursive)
		return cp_file(src, dst, o, top);
	return cp_special(o, src, dst, st);
}

/* The entries of directory src, read whole before any is copied: a tree
 * thousands of levels deep holds no descriptor per level open. NULL-ended;
 * NULL with the error said. */
static char **read_names(const char *src)
{
	char **names = NULL, **more;
	size_t n = 0, size = 0;
	struct dirent *e;
	DIR *dir = opendir(src);

	if (!dir) {
		cli_error(errno, "cannot access %s", cli_quote(src));
		return NULL;
	}
	for (;;) {
		errno = 0;
		e = readdir(dir);
		if (!e && errno) {
			cli_error(errno, "cannot read directory %s", cli_quote(src));
			goto fail;
		}
		if (e && (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")))
			continue;
		if (n + 1 >= size) {
			size = size ? 2 * size : 16;
			more = realloc(names, size * sizeof(*names));
			if (!more)
				goto nomem;
			names = more;
		}
		if (!e)
			break;
		names[n] = strdup(e->d_name);
		if (!names[n])
			goto nomem;
		n++;
	}
	names[n] = NULL;
	closedir(dir);
	return names;
nomem:
	cli_error(ENOMEM, "cannot read directory %s", cli_quote(src));
fail:
	while (n)
		free(names[--n]);
	free(names);
	closedir(dir);
	return NULL;
}

static int cp_node(struct cp_tree *t, const char *src, const char *dst);

/* Make DST, or take the directory that is there. 1: made, 0: there, -1. */
static int make_dir(struct cp_tree *t, const char *src, const char *dst)
{
	struct stat st;

	/* Ours to fill first: SOURCE's mode may not let us write into it. A
	 * link to a directory is followed when it is DST itself, given on
	 * the command line, never inside the tree: the copy would write
	 * outside it (cp -r refuses too). */
	if (mkdir(dst, 0700) == 0)
		return 1;
	if (errno == EEXIST && (t->top_known ? lstat(dst, &st) : stat(dst, &st)) == 0 &&
	    S_ISDIR(st.st_mode))
		return 0;
	if (errno == EEXIST)
		cli_error(0, "cannot overwrite non-directory %s with directory %s",
			  cli_quote(dst), cli_quote(src));
	else
		cli_error(errno, "cannot create directory %s", cli_quote(dst));
	return -1;
}

/* A new directory without --preserve=mode: SOURCE's permissions less the
 * umask, and its sticky bit, as mkdir(2) would give them; set-group-ID
 * only as the parent handed it down (mkdir's rule too, which cp(1) keeps).
 * Set once filled, as SOURCE's mode may not let us write into it. */
static int dir_mode(const struct cp_job *o, const char *dst, const struct stat *st,
		    mode_t inherited)
{
	if (chmod(dst, (st->st_mode & 01777 & ~o->umask) | inherited) < 0) {
		cli_error(errno, "setting permissions for %s", cli_quote(dst));
		return -1;
	}
	return 0;
}

static int cp_dir(struct cp_tree *t, const char *src, const char *dst,
		  const struct stat *st)
{
	const struct cp_job *o = t->opts;
	struct stat made_st;
	mode_t inherited = 0;
	char **names, **name, *s, *d;
	int made, rc = 0;

	/* The copy of the top directory is made inside it: copying it would
	 * never end. */
	if (t->top_known && cp_same_inode(st, &t->top)) {
		cli_error(0, "cannot copy a directory, %s, into itself, %s",
			  cli_quote(t->top_src), cli_quote(t->top_dst));
		return -1;
	}
	made = make_dir(t, src, dst);
	if (made < 0)
		return -1;
	if (made && lstat(dst, &made_st) == 0)
		inherited = made_st.st_mode & S_ISGID;
	if (!t->top_known) {
		if (stat(dst, &t->top) < 0) {
			cli_error(errno, "cannot stat %s", cli_quote(dst));
			return -1;
		}
		t->top_known = true;
	}
	names = read_names(src);
	if (!names)
		rc = -1;
	for (name = names; name && *name; name++) {
		s = join(src, *name);
		d = join(dst, *name);
		if (!s || !d) {
			cli_error(ENOMEM, "cannot copy %s", cli_quote(src));
			rc = -1;
		} else if (cp_node(t, s, d) < 0) {
			rc = -1;
		}
		free(s);
		free(d);
		free(*name);
	}
	free(names);
	/* Mode and times last: the entries made above changed the mtime. An
	 * existing directory keeps its mode, as with cp -r. */
	if (made && !(o->keep & CP_KEEP_MODE) && dir_mode(o, dst, st, inherited) < 0)
		rc = -1;
	if (o->keep && cp_preserve_path(o, src, dst, st) < 0)
		rc = -1;
	return rc;
}

static int cp_node(struct cp_tree *t, const char *src, const char *dst)
{
	bool follow = t->opts->deref == CP_DEREF_ALWAYS;
	struct stat st;

	if ((follow ? stat(src, &st) : lstat(src, &st)) < 0) {
		cli_error(errno, "cannot stat %s", cli_quote(src));
		return -1;
	}
	if (S_ISDIR(st.st_mode))
		return cp_dir(t, src, dst, &st);
	return cp_nondir(t->opts, src, dst, &st, follow, false);
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

int cp_top(const struct cp_job *o, const char *src, const char *dst)
{
	struct cp_tree t = { .opts = o, .top_src = src, .top_dst = dst };
	bool follow = o->deref != CP_DEREF_NEVER;
	struct stat st;

	if ((follow ? stat(src, &st) : lstat(src, &st)) < 0) {
		cli_error(errno, "cannot stat %s", cli_quote(src));
		return -1;
	}
	if (!S_ISDIR(st.st_mode))
		return cp_nondir(o, src, dst, &st, follow, true);
	if (!o->recursive) {
		cli_error(0, "-r not specified; omitting directory %s", cli_quote(src));
		return -1;
	}
	if (into_itself(src, dst)) {
		cli_error(0, "cannot copy a directory, %s, into itself, %s",
			  cli_quote(src), cli_quote(dst));
		return -1;
	}
	return cp_dir(&t, src, dst, &st);
}
