/* psplice cp: where each SOURCE goes, from the operands: SOURCE DEST,
 * SOURCE... DIRECTORY, -t DIRECTORY SOURCE..., -T SOURCE DEST; with
 * --parents, DIRECTORY/SOURCE and the directories between. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cp.h"
#include "out.h"

/* "dir" + "x/y/" -> "dir/y" */
static char *path_in_dir(const char *dir, const char *src)
{
	size_t len = strlen(src), dlen = strlen(dir);
	const char *base;
	char *p;

	while (len > 1 && src[len - 1] == '/')
		len--;
	base = memrchr(src, '/', len);
	base = base ? base + 1 : src;
	len -= (size_t)(base - src);
	p = malloc(dlen + len + 2);
	if (!p)
		return NULL;
	memcpy(p, dir, dlen);
	if (!dlen || dir[dlen - 1] != '/')
		p[dlen++] = '/';
	memcpy(p + dlen, base, len);
	p[dlen + len] = '\0';
	return p;
}

/* --parents: dst, DIRECTORY/SOURCE, and skip, where SOURCE starts in it. */
static char *parents_join(const char *dir, const char *src, size_t *skip)
{
	char *dst;

	while (*src == '/')
		src++;
	if (asprintf(&dst, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", src) < 0) {
		cli_error(ENOMEM, "cannot copy %s", cli_quote(src));
		return NULL;
	}
	*skip = strlen(dst) - strlen(src);
	return dst;
}

/* One directory of the path, dst (its SOURCE at dst + skip): made when
 * missing, with the mode of the directory it stands for (less the umask,
 * unless the mode is kept, which parents_keep gives it). SOURCE's must be
 * a directory, looked at before anything is made. */
static int parent_dir(const struct cp_opts *o, const char *dst, size_t skip)
{
	struct stat st;

	if (stat(dst + skip, &st) < 0 || (!S_ISDIR(st.st_mode) && (errno = ENOTDIR))) {
		cli_error(errno, "failed to get attributes of %s", cli_quote(dst + skip));
		return -1;
	}
	if (mkdir(dst, cp_new_mode(o, &st, 07777) & ~o->umask) == 0) {
		/* cp(1)'s words for it, unquoted. */
		if (o->verbose)
			printf("%s -> %s\n", dst + skip, dst);
		return 0;
	}
	if (errno == EEXIST && stat(dst, &st) == 0 && S_ISDIR(st.st_mode))
		return 0;
	cli_error(errno == EEXIST ? ENOTDIR : errno, "cannot make directory %s", cli_quote(dst));
	return -1;
}

/* --parents: "dir" + "a/b/f" -> "dir/a/b/f", with dir/a and dir/a/b made
 * when missing; *skip: where SOURCE starts in it. */
static char *parents_path(const struct cp_opts *o, const char *dir, const char *src,
			  size_t *skip)
{
	char *dst = parents_join(dir, src, skip), *slash;
	int rc = 0;

	for (slash = dst ? strchr(dst + *skip, '/') : NULL; slash && !rc;
	     slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		rc = parent_dir(o, dst, *skip);
		*slash = '/';
	}
	if (rc < 0) {
		free(dst);
		return NULL;
	}
	return dst;
}

/* --parents with --preserve: each directory of the path, made or there
 * already, gets its SOURCE's attributes, as cp(1) gives them, once the
 * copy is in (which changed the last one's times). */
static int parents_keep(const struct cp_opts *o, char *dst, size_t skip)
{
	struct stat st;
	char *slash;
	int rc = 0;

	for (slash = strchr(dst + skip, '/'); slash; slash = strchr(slash + 1, '/')) {
		const struct cp_at from = { AT_FDCWD, dst + skip, dst + skip, false },
				   to = { AT_FDCWD, dst, dst, false };

		*slash = '\0';
		if (stat(dst + skip, &st) < 0) {
			cli_error(errno, "failed to get attributes of %s", cli_quote(dst + skip));
			rc = -1;
		} else if (cp_preserve(o, &from, &to, &st, NULL) < 0) {
			rc = -1;
		}
		*slash = '/';
	}
	return rc;
}

/* DST/ names a directory: one that is not there, or a file, is "Not a
 * directory" (open(2) with O_CREAT says EISDIR for a trailing slash). */
static bool slash_ok(const char *dst)
{
	size_t n = strlen(dst);
	struct stat st;

	if (!n || dst[n - 1] != '/' || stat(dst, &st) == 0)
		return true;
	if (errno == ENOENT)
		cli_error(ENOTDIR, "cannot create regular file %s", cli_quote(dst));
	else
		cli_error(errno, "cannot stat %s", cli_quote(dst));
	return false;
}

/* SOURCE DEST: a DEST that is not there is made; one that cannot be
 * looked at (a file on its path, a loop of links, a directory we may not
 * search) is said so first, as cp(1) says it. A loop of links is a DEST
 * that -f and --remove-destination replace, as in cp(1). */
static bool dest_ok(const struct cp_opts *o, const char *dst)
{
	struct stat st;

	if (stat(dst, &st) == 0 || errno == ENOENT ||
	    (errno == ELOOP && (o->force || o->remove_dest)))
		return true;
	cli_error(errno, "cannot stat %s", cli_quote(dst));
	return false;
}

static bool is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The DIRECTORY that SOURCEs are copied into; what says how it was given:
 * "target" or "target directory" (-t), as cp(1)'s messages. */
static bool target_ok(const char *dir, const char *what)
{
	struct stat st;

	if (stat(dir, &st) < 0) {
		cli_error(errno, "%s %s", what, cli_quote(dir));
		return false;
	}
	if (!S_ISDIR(st.st_mode)) {
		cli_error(ENOTDIR, "%s %s", what, cli_quote(dir));
		return false;
	}
	return true;
}

/* --strip-trailing-slashes: "ld/" -> "ld", so that a symbolic link to a
 * directory is copied as the link (with -P), not as what it leads to; "/"
 * stays. */
static void strip_slashes(char *path)
{
	size_t len = strlen(path);

	while (len > 1 && path[len - 1] == '/')
		path[--len] = '\0';
}

/* The copy of one SOURCE operand made at dst: remembered, so that a
 * later operand does not overwrite it. A directory is not: directories of
 * one name merge, as in cp(1). */
static int remember(const struct cp_opts *o, const char *src, const char *dst)
{
	struct stat s, d;

	if (lstat(dst, &d) < 0 || S_ISDIR(d.st_mode) ||
	    (o->deref == CP_DEREF_NEVER ? lstat(src, &s) : stat(src, &s)) < 0)
		return 0;
	if (cp_made_add(o->made, &d, src, &s) < 0) {
		cli_error(ENOMEM, "cannot copy %s", cli_quote(src));
		return -1;
	}
	return 0;
}

/* Each SOURCE into dir: under its name, or its whole path with --parents.
 * Only here are SOURCEs stripped of trailing slashes, as cp(1) strips them
 * (SOURCE DEST keeps them). */
static int cp_into(const struct cp_opts *opts, char **srcs, int n, const char *dir)
{
	struct cp_opts with = *opts, *o = &with;
	char *dst;
	size_t skip = 0;
	int i, made, rc = 0;

	if (n > 1 && !(with.made = cp_made_new())) {
		cli_error(ENOMEM, "cannot copy");
		return -1;
	}
	for (i = 0; i < n; i++) {
		if (o->strip_slashes)
			strip_slashes(srcs[i]);
		dst = o->parents ? parents_path(o, dir, srcs[i], &skip) : path_in_dir(dir, srcs[i]);
		if (!dst) {
			if (!o->parents)
				cli_error(ENOMEM, "cannot copy %s", cli_quote(srcs[i]));
			rc = -1;
			continue;
		}
		made = cp_top(o, srcs[i], dst);
		if (made < 0 || (made > 0 && o->made && remember(o, srcs[i], dst) < 0))
			rc = -1;
		if (made >= 0 && o->parents && o->keep && parents_keep(o, dst, skip) < 0)
			rc = -1;
		free(dst);
	}
	cp_made_free(with.made);
	return rc;
}

int cp_operands(const struct cli_cmd *cmd, const struct cp_args *a)
{
	const struct cp_opts *o = &a->opts;
	char **ops = a->ops;
	int n = a->n_ops;

	if (a->target_dir && a->no_target)
		cli_usage_error(cmd, "cannot combine --target-directory (-t) and "
				"--no-target-directory (-T)");
	if (n == 0)
		cli_usage_error(cmd, "missing file operand");
	if (a->target_dir) {
		if (!target_ok(a->target_dir, "target directory"))
			return -1;
		return cp_into(o, ops, n, a->target_dir);
	}
	if (n == 1)
		cli_usage_error(cmd, "missing destination file operand after %s",
				cli_quote(ops[0]));
	if (a->no_target && n > 2)
		cli_usage_error(cmd, "extra operand %s", cli_quote(ops[2]));
	if (o->parents && !is_dir(ops[n - 1]))
		cli_usage_error(cmd, "with --parents, the destination must be a directory");
	if (a->no_target || (n == 2 && !is_dir(ops[1]))) {
		if (!dest_ok(o, ops[1]) || (!o->recursive && !slash_ok(ops[1])))
			return -1;
		return cp_top(o, ops[0], ops[1]);
	}
	if (!target_ok(ops[n - 1], "target"))
		return -1;
	return cp_into(o, ops, n - 1, ops[n - 1]);
}
