/* psplice cp: one SOURCE of any kind, and with -r the tree under it,
 * walked by directory descriptors (a path deep in a tree may be longer
 * than PATH_MAX); what becomes of an existing DST; links copied as links
 * or made with -l and -s, hard links kept with --preserve=links; special
 * files made anew. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cp.h"

/* Levels of a tree whose two directories stay open: 64, or an eighth of
 * the descriptors we may open. Below them each level closes its parent's
 * pair and opens it again from its own through "..", so that a tree
 * thousands of levels deep needs no descriptor per level. */
#define CP_OPEN_LEVELS 64

/* One walk from a SOURCE directory to its copy. */
struct cp_tree {
	const struct cp_job *opts;
	const char *top_src, *top_dst;
	struct stat top;  /* of top_dst, once made: not to be copied into itself */
	bool top_known;
	unsigned int open; /* levels whose directories are open */
	unsigned int max_open;
};

/* A directory being copied: both sides open (O_PATH), or -1 while closed. */
struct cp_level {
	struct cp_level *up;
	int src, dst;
	struct stat src_st, dst_st;
	const char *src_path, *dst_path;
};

static char *join(const char *dir, const char *name)
{
	char *p;

	if (asprintf(&p, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", name) < 0)
		return NULL;
	return p;
}

/* ls's letters for the permission bits: "rwsr-x--T" */
static void mode_letters(mode_t m, char s[10])
{
	static const char rwx[] = "rwxrwxrwx";
	int i;

	for (i = 0; i < 9; i++)
		s[i] = m & (0400u >> i) ? rwx[i] : '-';
	if (m & S_ISUID)
		s[2] = s[2] == 'x' ? 's' : 'S';
	if (m & S_ISGID)
		s[5] = s[5] == 'x' ? 's' : 'S';
	if (m & S_ISVTX)
		s[8] = s[8] == 'x' ? 't' : 'T';
	s[9] = '\0';
}

/* -i, on stderr as cp(1) asks: "overwrite 'x'? "; for a DST we may not
 * write (root may write any), "unwritable 'x' (mode 0444, r--r--r--); try
 * anyway? ", or with -f, which would replace it, "replace 'x', overriding
 * mode 0444 (r--r--r--)? ". Yes: a line from stdin that starts with y or Y. */
static bool ask(const struct cp_job *o, const struct cp_at *dst, const struct stat *d)
{
	char *line = NULL, perms[10];
	size_t size = 0;
	bool yes;

	if (S_ISLNK(d->st_mode) || geteuid() == 0 ||
	    faccessat(dst->dir, dst->name, W_OK, AT_EACCESS) == 0) {
		fprintf(stderr, CLI_NAME ": overwrite %s? ", cli_quote(dst->path));
	} else {
		mode_letters(d->st_mode, perms);
		fprintf(stderr, o->force ? CLI_NAME ": replace %s, overriding mode %04o (%s)? " :
			CLI_NAME ": unwritable %s (mode %04o, %s); try anyway? ",
			cli_quote(dst->path), (unsigned int)(d->st_mode & 07777), perms);
	}
	fflush(stderr);
	yes = getline(&line, &size, stdin) > 0 && (line[0] == 'y' || line[0] == 'Y');
	free(line);
	return yes;
}

/* The highest N of an existing "DST.~N~" (0: none). */
static unsigned long last_numbered(const struct cp_at *dst)
{
	char *dir = cp_parent_of(dst->name), *end;
	const char *base = strrchr(dst->name, '/') ? strrchr(dst->name, '/') + 1 : dst->name;
	size_t len = strlen(base);
	unsigned long n, max = 0;
	struct dirent *e;
	int fd = dir ? openat(dst->dir, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	if (fd >= 0 && !d)
		close(fd);
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
static int backup(const struct cp_job *o, const struct cp_at *dst)
{
	unsigned long n = o->backup == CP_BACKUP_SIMPLE ? 0 : last_numbered(dst);
	char *name;
	int rc;

	if (o->backup == CP_BACKUP_NUMBERED || n)
		rc = asprintf(&name, "%s.~%lu~", dst->name, n + 1);
	else
		rc = asprintf(&name, "%s%s", dst->name, o->suffix);
	if (rc < 0) {
		cli_error(ENOMEM, "cannot backup %s", cli_quote(dst->path));
		return -1;
	}
	rc = renameat(dst->dir, dst->name, dst->dir, name);
	if (rc < 0)
		cli_error(errno, "cannot backup %s", cli_quote(dst->path));
	free(name);
	return rc;
}

static int timespec_cmp(const struct timespec *a, const struct timespec *b)
{
	if (a->tv_sec != b->tv_sec)
		return a->tv_sec < b->tv_sec ? -1 : 1;
	return a->tv_nsec < b->tv_nsec ? -1 : a->tv_nsec > b->tv_nsec;
}

int cp_existing(const struct cp_job *o, const char *src, const struct cp_at *dst,
		const struct stat *st, bool through, bool *exists)
{
	struct stat ds, fs;
	const struct stat *d = &ds;
	bool dangling = false;

	*exists = false;
	/* Not there (or not reachable: making it will say why). */
	if (fstatat(dst->dir, dst->name, &ds, AT_SYMLINK_NOFOLLOW) < 0)
		return 1;
	if (through && S_ISLNK(ds.st_mode)) {
		if (fstatat(dst->dir, dst->name, &fs, 0) == 0)
			d = &fs;
		else
			dangling = errno == ENOENT;
	}
	if (cli_same_inode(d, st)) {
		/* -l: already that link, which is what was asked. */
		if (o->link == CP_LINK_HARD)
			return 0;
		cli_error(0, "%s and %s are the same file", cli_quote(src),
			  cli_quote(dst->path));
		return -1;
	}
	if (o->clobber == CP_NO_CLOBBER)
		return 0;
	if (o->update && timespec_cmp(&d->st_mtim, &st->st_mtim) >= 0)
		return 0;
	if (S_ISDIR(d->st_mode)) {
		cli_error(0, "cannot overwrite directory %s with non-directory",
			  cli_quote(dst->path));
		return -1;
	}
	if (o->clobber == CP_INTERACTIVE && !ask(o, dst, d))
		return 0;
	if (o->backup != CP_BACKUP_NONE)
		return backup(o, dst) < 0 ? -1 : 1;
	/* cp(1) will not create a file where a link points to nothing: the
	 * name it would create may be anywhere. */
	if (dangling) {
		cli_error(0, "not writing through dangling symlink %s", cli_quote(dst->path));
		return -1;
	}
	*exists = true;
	return 1;
}


/* A node that is not a file's data takes the place of an existing DST, as
 * cp(1) replaces it; -l and -s only with -f, as cp(1). 1: go on. */
static int make_room(const struct cp_job *o, const struct cp_at *src, const struct cp_at *dst,
		     const struct stat *st, const char *what)
{
	bool exists;
	int rc = cp_existing(o, src->path, dst, st, false, &exists);

	if (rc <= 0 || !exists)
		return rc;
	if (o->link != CP_LINK_NONE && !o->force) {
		cli_error(EEXIST, "cannot create %s %s to %s", what, cli_quote(dst->path),
			  cli_quote(src->path));
		return -1;
	}
	if (unlinkat(dst->dir, dst->name, 0) < 0) {
		cli_error(errno, "cannot remove %s", cli_quote(dst->path));
		return -1;
	}
	return 1;
}

/* A symbolic link is copied as a link, to the same target, as cp -r does:
 * following it could copy a whole other tree, or loop. */
static int cp_symlink(const struct cp_job *o, const struct cp_at *src, const struct cp_at *dst,
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
	rc = make_room(o, src, dst, st, "symbolic link");
	if (rc <= 0)
		goto out;
	rc = -1;
	if (symlinkat(target, dst->dir, dst->name) < 0) {
		cli_error(errno, "cannot create symbolic link %s", cli_quote(dst->path));
		goto out;
	}
	rc = o->keep && cp_preserve_at(o, src, dst, st) < 0 ? -1 : 1;
out:
	free(target);
	return rc;
}

/* FIFOs, devices and sockets are made anew, as cp -r makes them: their
 * "contents" are not data that a copy could read to an end. */
static int cp_special(const struct cp_job *o, const struct cp_at *src, const struct cp_at *dst,
		      const struct stat *st)
{
	int rc = make_room(o, src, dst, st, "special file");

	if (rc <= 0)
		return rc;
	if (mknodat(dst->dir, dst->name, st->st_mode & ~o->umask, st->st_rdev) < 0) {
		cli_error(errno, "cannot create special file %s", cli_quote(dst->path));
		return -1;
	}
	return o->keep && cp_preserve_at(o, src, dst, st) < 0 ? -1 : 1;
}

/* -l: DST another name of SOURCE (of what a link points to when links are
 * followed, as cp -l does unless -P). */
static int cp_hardlink(const struct cp_job *o, const struct cp_at *src, const struct cp_at *dst,
		       const struct stat *st, bool follow)
{
	int rc = make_room(o, src, dst, st, "hard link");

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
static int cp_softlink(const struct cp_job *o, const struct cp_at *src, const struct cp_at *dst,
		       const struct stat *st)
{
	int rc;

	if (src->path[0] != '/' && !in_cwd(dst)) {
		cli_error(0, "%s: can make relative symbolic links only in current directory",
			  cli_quote(dst->path));
		return -1;
	}
	rc = make_room(o, src, dst, st, "symbolic link");
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
 * SOURCE's inode under another of its names, as cp -a keeps hard links. */
static int link_earlier(const struct cp_job *o, const char *earlier, const struct cp_at *src,
			const struct cp_at *dst, const struct stat *st)
{
	const char *base;
	bool exists;
	int rc = cp_existing(o, src->path, dst, st, false, &exists), dir;

	if (rc <= 0)
		return rc;
	if (exists && unlinkat(dst->dir, dst->name, 0) < 0) {
		cli_error(errno, "cannot remove %s", cli_quote(dst->path));
		return -1;
	}
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
static int cp_made(const struct cp_job *o, const struct cp_at *src, const struct cp_at *dst,
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

/* Anything but a directory. st: of SOURCE, followed when follow. With
 * --preserve=links, a name of an inode already copied becomes a link to
 * that copy. cp(1)'s rule for which inodes to remember: those with other
 * names, and with -L any (two links may lead to one file), with -H any
 * given on the command line. Without links followed, an inode is
 * forgotten once all its names were seen; a link followed is one more
 * way to it, which its count does not tell. 1: made, 0: left alone, -1:
 * error. */
static int cp_nondir(const struct cp_job *o, const struct cp_at *src, const struct cp_at *dst,
		     const struct stat *st, bool follow, bool top)
{
	bool counted = o->deref == CP_DEREF_NEVER;
	const char *earlier;
	int rc;

	if (!o->links || o->link == CP_LINK_HARD ||
	    (st->st_nlink < 2 && (o->deref == CP_DEREF_NEVER ||
				  (o->deref == CP_DEREF_ARGS && !top))))
		return cp_made(o, src, dst, st, follow, top);
	earlier = cp_links_find(o->links, st);
	if (earlier) {
		rc = link_earlier(o, earlier, src, dst, st);
		if (rc > 0)
			cp_links_seen(o->links, st);
		return rc;
	}
	rc = cp_made(o, src, dst, st, follow, top);
	if (rc > 0 && cp_links_add(o->links, st, dst->path, counted) < 0) {
		cli_error(ENOMEM, "cannot copy %s", cli_quote(src->path));
		return -1;
	}
	return rc;
}

/* The entries of directory fd, read whole before any is copied: the
 * descriptor that reads them is closed before the walk goes deeper.
 * NULL-ended; NULL with the error said. */
static char **read_names(int fd, const char *src)
{
	char **names = NULL, **more;
	size_t n = 0, size = 0;
	struct dirent *e;
	int rd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dir = rd >= 0 ? fdopendir(rd) : NULL;

	if (!dir) {
		cli_error(errno, "cannot access %s", cli_quote(src));
		if (rd >= 0)
			close(rd);
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

static int cp_node(struct cp_tree *t, struct cp_level *up, const char *name);

/* Make DST, or take the directory that is there. 1: made, 0: there, -1. */
static int make_dir(struct cp_tree *t, const struct cp_at *src, const struct cp_at *dst)
{
	struct stat st;

	/* Ours to fill first: SOURCE's mode may not let us write into it. A
	 * link to a directory is followed when it is DST itself, given on
	 * the command line, never inside the tree: the copy would write
	 * outside it (cp -r refuses too). */
	if (mkdirat(dst->dir, dst->name, 0700) == 0)
		return 1;
	if (errno == EEXIST &&
	    fstatat(dst->dir, dst->name, &st, t->top_known ? AT_SYMLINK_NOFOLLOW : 0) == 0 &&
	    S_ISDIR(st.st_mode))
		return 0;
	if (errno == EEXIST)
		cli_error(0, "cannot overwrite non-directory %s with directory %s",
			  cli_quote(dst->path), cli_quote(src->path));
	else
		cli_error(errno, "cannot create directory %s", cli_quote(dst->path));
	return -1;
}

/* A new directory without --preserve=mode: SOURCE's permissions less the
 * umask, and its sticky bit, as mkdir(2) would give them; set-group-ID
 * only as the parent handed it down (mkdir's rule too, which cp(1) keeps).
 * Set once filled, as SOURCE's mode may not let us write into it. */
static int dir_mode(const struct cp_job *o, const struct cp_at *dst, const struct stat *st,
		    mode_t inherited)
{
	if (fchmodat(dst->dir, dst->name, (st->st_mode & 01777 & ~o->umask) | inherited, 0) < 0) {
		cli_error(errno, "setting permissions for %s", cli_quote(dst->path));
		return -1;
	}
	return 0;
}

/* Both sides of a directory, opened to reach what is in them. */
static int open_level(struct cp_tree *t, struct cp_level *me, const struct cp_at *src,
		      const struct cp_at *dst, bool follow)
{
	const int flags = O_PATH | O_DIRECTORY | O_CLOEXEC;

	me->dst = -1;
	me->src = openat(src->dir, src->name, flags | (follow ? 0 : O_NOFOLLOW));
	if (me->src < 0 || fstat(me->src, &me->src_st) < 0) {
		cli_error(errno, "cannot access %s", cli_quote(src->path));
		goto fail;
	}
	me->dst = openat(dst->dir, dst->name, flags | (t->top_known ? O_NOFOLLOW : 0));
	if (me->dst < 0 || fstat(me->dst, &me->dst_st) < 0) {
		cli_error(errno, "cannot access %s", cli_quote(dst->path));
		goto fail;
	}
	t->open++;
	return 0;
fail:
	if (me->src >= 0)
		close(me->src);
	if (me->dst >= 0)
		close(me->dst);
	me->src = me->dst = -1;
	return -1;
}

static void close_level(struct cp_tree *t, struct cp_level *l)
{
	if (l->src < 0)
		return;
	close(l->src);
	close(l->dst);
	l->src = l->dst = -1;
	t->open--;
}

/* Is up what ".." of me leads to, on both sides? Not when me was reached
 * through a symbolic link (-L, -H), nor when the tree was moved meanwhile. */
static bool up_is_parent(const struct cp_level *up, int src, int dst)
{
	struct stat s, d;

	return fstatat(src, "..", &s, 0) == 0 && fstatat(dst, "..", &d, 0) == 0 &&
	       cli_same_inode(&s, &up->src_st) && cli_same_inode(&d, &up->dst_st);
}

/* Past CP_OPEN_LEVELS, the level above is closed while me is copied, if
 * it can be found again from me. */
static void maybe_close_up(struct cp_tree *t, struct cp_level *me)
{
	if (me->up && t->open > t->max_open && me->up->src >= 0 &&
	    up_is_parent(me->up, me->src, me->dst))
		close_level(t, me->up);
}

/* The level above, closed while me was copied, opened again through "..",
 * and checked to be the same directories. */
static int reopen_up(struct cp_tree *t, struct cp_level *me)
{
	struct cp_level *up = me->up;
	const int flags = O_PATH | O_DIRECTORY | O_CLOEXEC;

	if (!up || up->src >= 0)
		return 0;
	if (me->src < 0) /* lost too: said when it was */
		return -1;
	if (!up_is_parent(up, me->src, me->dst)) {
		cli_error(0, "cannot return to %s: it was moved", cli_quote(up->src_path));
		return -1;
	}
	up->src = openat(me->src, "..", flags);
	up->dst = up->src >= 0 ? openat(me->dst, "..", flags) : -1;
	if (up->dst < 0) {
		cli_error(errno, "cannot return to %s", cli_quote(up->src_path));
		if (up->src >= 0)
			close(up->src);
		up->src = -1;
		return -1;
	}
	t->open++;
	return 0;
}

/* A directory and what it holds. src and dst name it in up's directories
 * (or, at the top, as given). */
static int cp_dir(struct cp_tree *t, struct cp_level *up, const struct cp_at *src,
		  const struct cp_at *dst, const struct stat *st, bool follow)
{
	const struct cp_job *o = t->opts;
	struct cp_level me = { .up = up, .src_path = src->path, .dst_path = dst->path };
	struct cp_at s = *src, d = *dst;
	mode_t inherited = 0;
	char **names, **name;
	int made, rc = 0;

	/* The copy of the top directory is made inside it: copying it would
	 * never end. */
	if (t->top_known && cli_same_inode(st, &t->top)) {
		cli_error(0, "cannot copy a directory, %s, into itself, %s",
			  cli_quote(t->top_src), cli_quote(t->top_dst));
		return -1;
	}
	made = make_dir(t, src, dst);
	if (made < 0 || open_level(t, &me, src, dst, follow) < 0)
		return -1;
	if (made)
		inherited = me.dst_st.st_mode & S_ISGID;
	if (!t->top_known) {
		t->top = me.dst_st;
		t->top_known = true;
	}
	maybe_close_up(t, &me);
	names = read_names(me.src, src->path);
	if (!names)
		rc = -1;
	for (name = names; name && *name; name++) {
		/* A level below that could not find this one again ends it. */
		if (me.src >= 0 && cp_node(t, &me, *name) < 0)
			rc = -1;
		free(*name);
	}
	free(names);
	if (me.src < 0 || reopen_up(t, &me) < 0) {
		close_level(t, &me);
		return -1;
	}
	close_level(t, &me);
	if (up) {
		s.dir = up->src;
		d.dir = up->dst;
	}
	/* Mode and times last: the entries made above changed the mtime. An
	 * existing directory keeps its mode, as with cp -r. */
	if (made && !(o->keep & CP_KEEP_MODE) && dir_mode(o, &d, st, inherited) < 0)
		rc = -1;
	if (o->keep && cp_preserve_at(o, &s, &d, st) < 0)
		rc = -1;
	return rc;
}

/* name, an entry of up: a directory, or anything else. */
static int cp_node(struct cp_tree *t, struct cp_level *up, const char *name)
{
	bool follow = t->opts->deref == CP_DEREF_ALWAYS;
	char *sp = join(up->src_path, name), *dp = join(up->dst_path, name);
	struct cp_at src = { up->src, name, sp }, dst = { up->dst, name, dp };
	struct stat st;
	int rc = -1;

	if (!sp || !dp)
		cli_error(ENOMEM, "cannot copy %s", cli_quote(up->src_path));
	else if (fstatat(up->src, name, &st, follow ? 0 : AT_SYMLINK_NOFOLLOW) < 0)
		cli_error(errno, "cannot stat %s", cli_quote(sp));
	else if (S_ISDIR(st.st_mode))
		rc = cp_dir(t, up, &src, &dst, &st, follow);
	else
		rc = cp_nondir(t->opts, &src, &dst, &st, follow, false);
	free(sp);
	free(dp);
	return rc;
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
	const struct cp_at s = { AT_FDCWD, src, src }, d = { AT_FDCWD, dst, dst };
	bool follow = o->deref != CP_DEREF_NEVER;
	struct rlimit rl;
	struct stat st;

	t.max_open = CP_OPEN_LEVELS;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur / 8 < CP_OPEN_LEVELS)
		t.max_open = rl.rlim_cur / 8 > 1 ? (unsigned int)(rl.rlim_cur / 8) : 1;
	if ((follow ? stat(src, &st) : lstat(src, &st)) < 0) {
		cli_error(errno, "cannot stat %s", cli_quote(src));
		return -1;
	}
	if (!S_ISDIR(st.st_mode))
		return cp_nondir(o, &s, &d, &st, follow, true);
	if (!o->recursive) {
		cli_error(0, "-r not specified; omitting directory %s", cli_quote(src));
		return -1;
	}
	if (into_itself(src, dst)) {
		cli_error(0, "cannot copy a directory, %s, into itself, %s",
			  cli_quote(src), cli_quote(dst));
		return -1;
	}
	return cp_dir(&t, NULL, &s, &d, &st, follow);
}
