/* psplice cp --preserve: SOURCE's owner, extended attributes, mode (with
 * its ACLs) and times on the copy. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "cp.h"
#include "out.h"

#define ACL_ACCESS "system.posix_acl_access"
#define ACL_DEFAULT "system.posix_acl_default"

/* One side of an attribute copy: an open file, or a name in the open
 * directory dir (not followed when it is a symbolic link that is copied as
 * a link). Attributes have no *at calls: they go by path, the path given
 * when it fits, else through the directory's /proc/self/fd entry. */
struct xa_end {
	int fd;
	int dir;
	const char *name;
	const char *path;  /* for the attribute calls */
	const char *shown; /* for messages */
	bool nofollow;
	/* DST only: its stat, taken after its data was written (NULL: not
	 * taken), and whether it has no ACL (cp_at.fresh). */
	const struct stat *now;
	bool bare;
};

static ssize_t xa_list(const struct xa_end *e, char *buf, size_t size)
{
	if (e->fd >= 0)
		return flistxattr(e->fd, buf, size);
	return e->nofollow ? llistxattr(e->path, buf, size) : listxattr(e->path, buf, size);
}

static ssize_t xa_get(const struct xa_end *e, const char *name, void *buf, size_t size)
{
	if (e->fd >= 0)
		return fgetxattr(e->fd, name, buf, size);
	return e->nofollow ? lgetxattr(e->path, name, buf, size) :
			     getxattr(e->path, name, buf, size);
}

static int xa_set(const struct xa_end *e, const char *name, const void *val, size_t size)
{
	if (e->fd >= 0)
		return fsetxattr(e->fd, name, val, size, 0);
	return e->nofollow ? lsetxattr(e->path, name, val, size, 0) :
			     setxattr(e->path, name, val, size, 0);
}

static int xa_remove(const struct xa_end *e, const char *name)
{
	if (e->fd >= 0)
		return fremovexattr(e->fd, name);
	return e->nofollow ? lremovexattr(e->path, name) : removexattr(e->path, name);
}

/* The value of name on e, in *val (malloc'd); its size, or -errno. The
 * size asked first may grow before the read: then again. */
static ssize_t xa_value(const struct xa_end *e, const char *name, char **val)
{
	ssize_t n;

	for (;;) {
		n = xa_get(e, name, NULL, 0);
		if (n < 0)
			return -errno;
		*val = malloc((size_t)n + 1);
		if (!*val)
			return -ENOMEM;
		n = xa_get(e, name, *val, (size_t)n + 1);
		if (n >= 0)
			return n;
		free(*val);
		*val = NULL;
		if (errno != ERANGE)
			return -errno;
	}
}

/* The names on e, NUL-separated, in *names; their length, or -errno. */
static ssize_t xa_names(const struct xa_end *e, char **names)
{
	ssize_t n;

	*names = NULL;
	for (;;) {
		n = xa_list(e, NULL, 0);
		if (n <= 0)
			return n < 0 ? -errno : 0;
		*names = malloc((size_t)n);
		if (!*names)
			return -ENOMEM;
		n = xa_list(e, *names, (size_t)n);
		if (n >= 0)
			return n;
		free(*names);
		*names = NULL;
		if (errno != ERANGE)
			return -errno;
	}
}

/* Copy one attribute; 0, or -errno of whichever side failed. */
static int copy_one(const struct xa_end *from, const struct xa_end *to, const char *name)
{
	char *val;
	ssize_t n = xa_value(from, name, &val);
	int rc = 0;

	if (n < 0)
		return n == -ENODATA ? 0 : (int)n; /* removed meanwhile */
	if (xa_set(to, name, val, (size_t)n) < 0)
		rc = -errno;
	free(val);
	return rc;
}

/* Attributes that are not data of the file: ACLs go with the mode, NFSv4
 * ACLs and EVM signatures make no sense on another inode, as attr(5)'s
 * xattr.conf says (and cp --preserve=xattr skips them too). */
static bool xattr_skipped(const char *name)
{
	return !strncmp(name, "system.posix_acl_", 17) || !strcmp(name, "system.nfs4_acl") ||
	       !strcmp(name, "system.nfs4acl") || !strcmp(name, "security.evm") ||
	       !strncmp(name, "trusted.SGI_", 12) || !strncmp(name, "xfsroot.", 8);
}

/* --preserve=xattr: each attribute SOURCE has. A filesystem without them
 * is an error only when they were asked for by name, as with cp(1); -a and
 * --preserve=all copy what they can, silently. */
static int copy_xattrs(const struct cp_opts *o, const struct xa_end *from,
		       const struct xa_end *to, const char *dst, const char *names, ssize_t len)
{
	const char *name;
	int rc = 0, err;

	if (len < 0 && len != -ENOTSUP && o->xattr_loud) {
		cli_error((int)-len, "listing attributes of %s", cli_quote(from->shown));
		return -1;
	}
	for (name = names; len > 0 && name < names + len; name += strlen(name) + 1) {
		if (xattr_skipped(name))
			continue;
		err = copy_one(from, to, name);
		if (!err || !o->xattr_loud)
			continue;
		rc = -1;
		if (err == -ENOTSUP) {
			cli_error(ENOTSUP, "setting attributes for %s", cli_quote(dst));
			break;
		}
		cli_error(-err, "setting attribute %s for %s", cli_quote(name), cli_quote(dst));
	}
	return rc;
}

/* Does the filesystem of fd (st_dev dev) list a file's POSIX ACLs among
 * its extended attributes? The kernel's own disk and memory filesystems
 * do; CIFS serves a legacy POSIX ACL to getxattr alone, and others may
 * too. Asked once per filesystem, for the one last asked about. */
static bool lists_acls(int fd, dev_t dev)
{
	static __thread struct { dev_t dev; bool known, lists; } last;
	struct statfs sf;

	if (last.known && last.dev == dev)
		return last.lists;
	if (fstatfs(fd, &sf) < 0)
		return false;
	switch ((unsigned long)sf.f_type) {
	case EXT4_SUPER_MAGIC: case XFS_SUPER_MAGIC: case BTRFS_SUPER_MAGIC:
	case TMPFS_MAGIC:
		last.lists = true;
		break;
	default:
		last.lists = false;
	}
	last.dev = dev;
	last.known = true;
	return last.lists;
}

/* SOURCE's access ACL, as its names (len bytes, or -errno) show it: 1
 * there, 0 not, -1 not told (asked for by name then). */
static int acl_listed(const struct xa_end *from, const struct stat *st, const char *names,
		      ssize_t len)
{
	ssize_t off;

	if (from->fd < 0 || len < 0 || !lists_acls(from->fd, st->st_dev))
		return -1;
	for (off = 0; off < len; off += (ssize_t)strlen(names + off) + 1)
		if (!strcmp(names + off, ACL_ACCESS))
			return 1;
	return 0;
}

/* The mode's ACLs (a directory's default ACL too). SOURCE without one:
 * DST has none either (an existing DST may have had one). SOURCE with one
 * and a filesystem that cannot keep it: the permissions are not what
 * SOURCE's are, an error as with cp -p. */
static int copy_acls(const struct xa_end *from, const struct xa_end *to, const char *dst,
		     bool dir, int listed)
{
	static const char *const names[] = { ACL_ACCESS, ACL_DEFAULT };
	char *val;
	ssize_t n;
	int i;

	for (i = 0; i < (dir ? 2 : 1); i++) {
		/* A file's access ACL that its names do not show: none. */
		n = i == 0 && listed == 0 ? -ENODATA : xa_value(from, names[i], &val);
		if (n == -ENODATA || n == -ENOTSUP) {
			if (!to->bare && xa_remove(to, names[i]) < 0) {
				/* none to remove, or no ACLs there at all */
			}
			continue;
		}
		if (n >= 0) {
			n = xa_set(to, names[i], val, (size_t)n) < 0 ? -errno : 0;
			free(val);
		}
		if (n < 0) {
			cli_error((int)-n, "preserving permissions for %s", cli_quote(dst));
			return -1;
		}
	}
	return 0;
}

static int end_chown(const struct xa_end *e, uid_t uid, gid_t gid)
{
	if (e->fd >= 0)
		return fchown(e->fd, uid, gid);
	return fchownat(e->dir, e->name, uid, gid, AT_SYMLINK_NOFOLLOW);
}

static int end_chmod(const struct xa_end *e, mode_t mode)
{
	return e->fd >= 0 ? fchmod(e->fd, mode) : fchmodat(e->dir, e->name, mode, 0);
}

static int end_utimens(const struct xa_end *e, const struct timespec times[2])
{
	if (e->fd >= 0)
		return futimens(e->fd, times);
	return utimensat(e->dir, e->name, times, AT_SYMLINK_NOFOLLOW);
}

/* The effective user ID, which no copy changes: asked once. */
static bool root(void)
{
	static atomic_int euid = -1;
	int id = atomic_load_explicit(&euid, memory_order_relaxed);

	if (id < 0) {
		id = (int)geteuid();
		atomic_store_explicit(&euid, id, memory_order_relaxed);
	}
	return id == 0;
}

/* Only root may give a file away; anyone else keeps their own files, and
 * gets SOURCE's group only if they are in it, as with cp -p. A DST already
 * SOURCE's (as a copy made by its owner is) is left as it is: a DST whose
 * stat is known was written, which cleared its set-ID bits and capability
 * as chown would have. The set-ID bits the mode may not keep: both, unless
 * DST has SOURCE's owner and group (a set-user-ID program of another's
 * would run as its copier, as cp(1) will not let it); -1 on error. */
static int keep_owner(const struct xa_end *to, const char *dst, const struct stat *st)
{
	const struct stat *now = to->now;
	bool su = root(), uid, gid;

	if (now && now->st_gid == st->st_gid && (!su || now->st_uid == st->st_uid))
		return now->st_uid == st->st_uid ? 0 : S_ISUID | S_ISGID;
	if (!su) {
		/* Not in SOURCE's group: the copy keeps ours. */
		gid = end_chown(to, (uid_t)-1, st->st_gid) == 0;
		uid = (now ? now->st_uid : geteuid()) == st->st_uid;
		return uid && gid ? 0 : S_ISUID | S_ISGID;
	}
	if (end_chown(to, st->st_uid, st->st_gid) < 0) {
		cli_error(errno, "failed to preserve ownership for %s", cli_quote(dst));
		return -1;
	}
	return 0;
}

/* The mode and its ACLs; a symbolic link has none of its own. */
static int keep_mode(const struct xa_end *from, const struct xa_end *to, const char *dst,
		     const struct stat *st, int listed, mode_t drop)
{
	mode_t mode = st->st_mode & 07777 & ~drop;

	if (S_ISLNK(st->st_mode))
		return 0;
	/* A mode already SOURCE's stays, unless it has set-ID bits, which
	 * keep_owner's chown may have cleared since the stat. */
	if (!(to->now && (to->now->st_mode & 07777) == mode && !(mode & (S_ISUID | S_ISGID))) &&
	    end_chmod(to, mode) < 0) {
		cli_error(errno, "preserving permissions for %s", cli_quote(dst));
		return -1;
	}
	return copy_acls(from, to, dst, S_ISDIR(st->st_mode), listed);
}

/* In this order: the owner first, as chown clears the set-user-ID and
 * set-group-ID bits and a file capability (security.capability); the
 * attributes, then the mode and its ACLs; times last, since the others
 * change ctime and writing changes mtime. */
static int keep(const struct cp_opts *o, const struct xa_end *from, const struct xa_end *to,
		const char *dst, const struct stat *st)
{
	const struct timespec times[2] = { st->st_atim, st->st_mtim };
	char *names = NULL;
	ssize_t len = -1; /* SOURCE's names, not listed */
	int rc = -1, drop = 0;

	if ((o->keep & CP_KEEP_OWNER) && (drop = keep_owner(to, dst, st)) < 0)
		return -1;
	if (o->keep & CP_KEEP_XATTR) {
		len = xa_names(from, &names);
		if (copy_xattrs(o, from, to, dst, names, len) < 0)
			goto out;
	}
	/* The names listed tell whether SOURCE has an ACL, too. */
	if ((o->keep & CP_KEEP_MODE) &&
	    keep_mode(from, to, dst, st, acl_listed(from, st, names, len), (mode_t)drop) < 0)
		goto out;
	if ((o->keep & CP_KEEP_TIMES) && end_utimens(to, times) < 0) {
		cli_error(errno, "preserving times for %s", cli_quote(dst));
		goto out;
	}
	rc = 0;
out:
	free(names);
	return rc;
}

/* The path by which the attribute calls reach at (buf: room for one). */
static const char *xa_path(const struct cp_at *at, char *buf, size_t size)
{
	if (at->dir == AT_FDCWD || strlen(at->path) < PATH_MAX)
		return at->dir == AT_FDCWD ? at->name : at->path;
	snprintf(buf, size, "/proc/self/fd/%d/%s", at->dir, at->name);
	return buf;
}

/* One side of the copy: the open fd, or (fd -1) at by name. */
static struct xa_end end_of(const struct cp_at *at, int fd, bool nofollow, char *buf,
			    size_t size)
{
	if (fd >= 0)
		return (struct xa_end){ .fd = fd, .path = at->path, .shown = at->path };
	return (struct xa_end){ .fd = -1, .dir = at->dir, .name = at->name,
				.path = xa_path(at, buf, size), .shown = at->path,
				.nofollow = nofollow };
}

/* Once a file's data is in, and before any sync, so that the sync covers
 * what was set. */
int cp_preserve(const struct cp_opts *o, const struct cp_at *src, const struct cp_at *dst,
		const struct stat *st, const int *fd)
{
	char sbuf[64 + NAME_MAX], dbuf[64 + NAME_MAX];
	struct xa_end from, to;
	struct stat ds;

	if (fd && (fstat(fd[1], &ds) < 0 || !S_ISREG(ds.st_mode)))
		return 0;
	from = end_of(src, fd ? fd[0] : -1, S_ISLNK(st->st_mode), sbuf, sizeof(sbuf));
	to = end_of(dst, fd ? fd[1] : -1, true, dbuf, sizeof(dbuf));
	to.now = fd ? &ds : NULL;
	to.bare = dst->fresh;
	return keep(o, &from, &to, dst->path, st);
}

mode_t cp_new_mode(const struct cp_opts *o, const struct stat *st, mode_t mask)
{
	if (o->default_mode)
		return S_ISDIR(st->st_mode) ? 0777 : 0666;
	return st->st_mode & mask;
}

bool cp_acl_default(const struct cp_at *dir)
{
	char buf[64 + NAME_MAX];

	if (getxattr(xa_path(dir, buf, sizeof(buf)), ACL_DEFAULT, NULL, 0) >= 0)
		return true;
	/* None, or a filesystem without ACLs. */
	return errno != ENODATA && errno != ENOTSUP;
}
