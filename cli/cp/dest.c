/* psplice cp: what becomes of an existing DST: the same file refused,
 * -n, -u, -i, --backup; a node that is not a file's data takes its place. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cp.h"
#include "out.h"
#include "sys.h"

int cp_refuse_same(const char *src, const char *dst)
{
	cli_error(0, "%s and %s are the same file", cli_quote(src), cli_quote(dst));
	return -1;
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
 * anyway? ", or with -f or --remove-destination, which would replace it,
 * "replace 'x', overriding mode 0444 (r--r--r--)? ". Yes (1): a line from
 * stdin that starts with y or Y; no (0) otherwise, and at end of input; -1,
 * said, when stdin cannot be read (closed): a question no one could answer
 * fails the file, as in cp. */
static bool stdin_failed;

static int ask(const struct cp_opts *o, const struct cp_at *dst, const struct stat *d)
{
	char *line = NULL, perms[10];
	size_t size = 0;
	int yes;

	if (S_ISLNK(d->st_mode) || geteuid() == 0 ||
	    faccessat(dst->dir, dst->name, W_OK, AT_EACCESS) == 0) {
		fprintf(stderr, "%s: overwrite %s? ", cli_name, cli_quote(dst->path));
	} else {
		mode_letters(d->st_mode, perms);
		fprintf(stderr, o->force || o->remove_dest ?
			"%s: replace %s, overriding mode %04o (%s)? " :
			"%s: unwritable %s (mode %04o, %s); try anyway? ",
			cli_name, cli_quote(dst->path), (unsigned int)(d->st_mode & 07777), perms);
	}
	fflush(stderr);
	yes = getline(&line, &size, stdin) > 0 && (line[0] == 'y' || line[0] == 'Y');
	if (!yes && ferror(stdin)) {
		/* Said once: the next questions fail the same way (-i runs
		 * one thread, so a plain flag serves). */
		if (!stdin_failed)
			cli_error(errno, "error reading %s", cli_quote("standard input"));
		stdin_failed = true;
		yes = -1;
	}
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

/* The last name of path (with no slash at its end). */
static const char *last_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* Are the paths a and b one directory entry: the same last name in the
 * same directory ("a/f", "./a/f", "a//f")? */
static bool same_entry(const char *a, const char *b)
{
	char *pa = cp_parent_of(a), *pb = cp_parent_of(b);
	struct stat da, db;
	bool same = pa && pb && !strcmp(last_name(a), last_name(b)) && stat(pa, &da) == 0 &&
		    stat(pb, &db) == 0 && cli_same_inode(&da, &db);

	free(pa);
	free(pb);
	return same;
}

/* A simple backup's name may be SOURCE's own entry (`cp -b a~ a`): the
 * rename would put DST in SOURCE's place, SOURCE's name would hold DST's
 * data and the copy SOURCE's: SOURCE lost. Refused, as cp(1) refuses it. */
static bool destroys_source(const char *src, const struct cp_at *dst, const char *suffix)
{
	char *path;
	bool same;

	if (asprintf(&path, "%s%s", dst->path, suffix) < 0)
		return false;
	same = same_entry(src, path);
	free(path);
	return same;
}

/* --backup: DST moved out of the way, to DST~ or DST.~N~; or, keep,
 * linked there, DST staying too. */
static int backup(const struct cp_opts *o, const char *src, const struct cp_at *dst, bool keep)
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
	if (o->backup != CP_BACKUP_NUMBERED && !n && destroys_source(src, dst, o->suffix)) {
		cli_error(0, "backing up %s might destroy source;  %s not copied",
			  cli_quote(dst->path), cli_quote(src));
		free(name);
		return -1;
	}
	rc = keep ? linkat(dst->dir, dst->name, dst->dir, name, 0) :
		    renameat(dst->dir, dst->name, dst->dir, name);
	if (rc < 0)
		cli_error(errno, "cannot backup %s", cli_quote(dst->path));
	else
		cp_say_backup(o, dst->path, name + strlen(dst->name));
	free(name);
	return rc;
}

static int timespec_cmp(const struct timespec *a, const struct timespec *b)
{
	if (a->tv_sec != b->tv_sec)
		return a->tv_sec < b->tv_sec ? -1 : 1;
	return a->tv_nsec < b->tv_nsec ? -1 : a->tv_nsec > b->tv_nsec;
}

/* --remove-destination may replace a DST that is another name of SOURCE's
 * file, as cp(1) does: SOURCE's name keeps the data. Not SOURCE's own name
 * (removing it would lose the file), nor a DST that SOURCE reaches through
 * a symbolic link, which cp(1) refuses too. d: DST, not followed. */
static bool other_name(const char *src, const struct cp_at *dst, const struct stat *d)
{
	char *sdir, *ddir;
	struct stat s, a, b;
	bool other;

	if (d->st_nlink < 2 || lstat(src, &s) < 0 || !cli_same_inode(&s, d))
		return false;
	sdir = cp_parent_of(src);
	ddir = cp_parent_of(dst->name);
	other = sdir && ddir && stat(sdir, &a) == 0 && fstatat(dst->dir, ddir, &b, 0) == 0 &&
		(!cli_same_inode(&a, &b) || strcmp(last_name(src), last_name(dst->name)));
	free(sdir);
	free(ddir);
	return other;
}

/* --remove-destination: DST goes before anything is made in its place,
 * where -f would have tried to open it first. */
static int remove_dest(const struct cp_opts *o, const struct cp_at *dst)
{
	if (unlinkat(dst->dir, dst->name, 0) < 0) {
		if (errno == ENOENT)
			return 1;
		cli_error(errno, "cannot remove %s", cli_quote(dst->path));
		return -1;
	}
	cp_say_removed(o, dst->path);
	return 1;
}

/* DST is what an earlier SOURCE operand of this command made: the second
 * of two SOURCEs of one name would overwrite the first's copy, and one
 * written through a link the command made could land anywhere. Refused, as
 * cp(1) refuses both. d: DST, not followed. */
static int refuse_made(const char *src, const struct cp_at *dst, const struct stat *d,
		       bool through)
{
	if (through && S_ISLNK(d->st_mode))
		cli_error(0, "will not copy %s through just-created symlink %s", cli_quote(src),
			  cli_quote(dst->path));
	else
		cli_error(0, "will not overwrite just-created %s with %s", cli_quote(dst->path),
			  cli_quote(src));
	return -1;
}

/* Was DST (ds, not followed) made by an earlier SOURCE operand? 0: no; 1
 * or 2, cp_made_by's answer; -1 when src is that operand given again
 * (`cp a ./a dir`), said, to be left out. A hard link of the first, in
 * another directory or under another name, is another SOURCE, as in
 * cp(1). */
static int made_before(const struct cp_opts *o, const char *src, const struct stat *ds,
		       const struct stat *st)
{
	const char *first = NULL;
	int made = o->made ? cp_made_by(o->made, ds, st, &first) : 0;

	if (made == 2 && o->backup == CP_BACKUP_NONE && same_entry(src, first)) {
		cli_error(0, "warning: source file %s specified more than once", cli_quote(src));
		return -1;
	}
	return made;
}

/* SOURCE, a link followed, leads to DST's own entry: backing DST up would
 * leave SOURCE leading nowhere; cp(1) refuses it, even with -f. */
static bool through_link(const char *src, const struct cp_at *dst, const struct stat *st)
{
	struct stat s, d;

	return !S_ISLNK(st->st_mode) && lstat(src, &s) == 0 && S_ISLNK(s.st_mode) &&
	       fstatat(dst->dir, dst->name, &d, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISLNK(d.st_mode);
}

/* DST (d, followed when the copy writes through it) is SOURCE's file (st).
 * cp(1)'s rules: a backup keeps DST's data, so another name of the file is
 * backed up and replaced, and SOURCE's own entry too with -f (`cp -bf F F`
 * copies F's data to a new F, F.~1~ the old); a link copied as a link onto
 * another name of itself is already what was asked, as -l is (`-bfl F F`
 * still backs F up, by a link: F and F.~1~ one file). --remove-destination
 * may replace another name of it (other_name). 1: go on, 0: nothing to do,
 * -1: refused. */
static int same_file(const struct cp_opts *o, const char *src, const struct cp_at *dst,
		     const struct stat *d, const struct stat *st)
{
	bool own = same_entry(src, dst->path);

	if (o->link == CP_LINK_HARD) {
		if (o->backup != CP_BACKUP_NONE && o->force && own)
			return backup(o, src, dst, true) < 0 ? -1 : 0;
		return 0;
	}
	if (o->backup != CP_BACKUP_NONE && (!own || o->force) && !through_link(src, dst, st))
		return 1;
	if (S_ISLNK(d->st_mode) && S_ISLNK(st->st_mode) && !own)
		return 0;
	if (!o->remove_dest || !other_name(src, dst, d))
		return cp_refuse_same(src, dst->path);
	return 1;
}

int cp_existing(const struct cp_opts *o, const char *src, const struct cp_at *dst,
		const struct stat *st, bool through, bool *exists)
{
	struct stat ds, fs;
	const struct stat *d = &ds;
	bool dangling = false;
	int answer, made;

	*exists = false;
	/* Not there (or not reachable: making it will say why). */
	if (fstatat(dst->dir, dst->name, &ds, AT_SYMLINK_NOFOLLOW) < 0)
		return 1;
	/* --remove-destination replaces a link, never writes through it. */
	if (through && !o->remove_dest && S_ISLNK(ds.st_mode)) {
		if (fstatat(dst->dir, dst->name, &fs, 0) == 0)
			d = &fs;
		else
			dangling = errno == ENOENT;
	}
	if (cli_same_inode(d, st) && (answer = same_file(o, src, dst, d, st)) <= 0)
		return answer;
	if ((made = made_before(o, src, &ds, st)) < 0)
		return 0;
	if (o->clobber == CP_NO_CLOBBER ||
	    (o->update && timespec_cmp(&d->st_mtim, &st->st_mtim) >= 0))
		return 0;
	/* Asked first, even about a directory, as cp(1) asks: no keeps it. */
	if (o->clobber == CP_INTERACTIVE && (answer = ask(o, dst, d)) <= 0)
		return answer;
	if (S_ISDIR(d->st_mode)) {
		cli_error(0, "cannot overwrite directory %s with non-directory",
			  cli_quote(dst->path));
		return -1;
	}
	if (made)
		return refuse_made(src, dst, &ds, through && !o->remove_dest);
	if (o->backup != CP_BACKUP_NONE)
		return backup(o, src, dst, false) < 0 ? -1 : 1;
	/* cp(1) will not create a file where a link points to nothing: the
	 * name it would create may be anywhere. POSIX asks it to, and cp(1)
	 * does with POSIXLY_CORRECT set: then file.c makes the target. */
	if (dangling && !getenv("POSIXLY_CORRECT")) {
		cli_error(0, "not writing through dangling symlink %s", cli_quote(dst->path));
		return -1;
	}
	if (o->remove_dest)
		return remove_dest(o, dst);
	*exists = !dangling;
	return 1;
}

/* SOURCE, a symbolic link copied as a link (st its lstat), leads to DST
 * itself: a link put in DST's place would point at its own name, and DST's
 * data would be gone. Refused as the same file, as cp(1) refuses it; with
 * -l, DST already is what the link leads to, so nothing is done. A DST that
 * is itself a link holds no data, and --backup keeps DST under another
 * name: both go on. 1: go on, 0: nothing to do, -1: refused. */
static int link_onto_target(const struct cp_opts *o, const struct cp_at *src,
			    const struct cp_at *dst, const struct stat *st)
{
	struct stat to, d;

	if (!S_ISLNK(st->st_mode) || o->backup != CP_BACKUP_NONE ||
	    fstatat(dst->dir, dst->name, &d, AT_SYMLINK_NOFOLLOW) < 0 || S_ISLNK(d.st_mode) ||
	    fstatat(src->dir, src->name, &to, 0) < 0 || !cli_same_inode(&to, &d))
		return 1;
	if (o->link == CP_LINK_HARD)
		return 0;
	return cp_refuse_same(src->path, dst->path);
}

/* -v: the node about to be made; 1. */
static int said(const struct cp_opts *o, const struct cp_at *src, const struct cp_at *dst)
{
	cp_say(o, src->path, dst->path);
	return 1;
}

int cp_make_room(const struct cp_opts *o, const struct cp_at *src, const struct cp_at *dst,
		 const struct stat *st, const char *what)
{
	bool exists;
	int rc;

	/* Nothing there to ask about, keep or remove. */
	if (dst->fresh)
		return said(o, src, dst);
	rc = link_onto_target(o, src, dst, st);
	if (rc <= 0)
		return rc;
	rc = cp_existing(o, src->path, dst, st, false, &exists);
	if (rc <= 0)
		return rc;
	if (!exists)
		return said(o, src, dst);
	/* -l of a link copied as a link replaces DST, as cp(1) does. */
	if (o->link != CP_LINK_NONE && !o->force &&
	    !(o->link == CP_LINK_HARD && S_ISLNK(st->st_mode))) {
		cli_error(EEXIST, "cannot create %s %s to %s", what, cli_quote(dst->path),
			  cli_quote(src->path));
		return -1;
	}
	/* --attributes-only promises an existing DST its data: a node is
	 * not put in its place unless -f asks (--remove-destination has
	 * removed it already), as cp(1) keeps it. */
	if (o->attrs_only && !o->force) {
		cli_error(EEXIST, "cannot create %s %s", what, cli_quote(dst->path));
		return -1;
	}
	if (unlinkat(dst->dir, dst->name, 0) < 0) {
		cli_error(errno, "cannot remove %s", cli_quote(dst->path));
		return -1;
	}
	cp_say_removed(o, dst->path);
	return said(o, src, dst);
}
