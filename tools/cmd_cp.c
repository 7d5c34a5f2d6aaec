/* psplice cp: one file to another, or into a directory, by reflink where
 * the filesystem shares extents, else copy_file_range, splice, read/write;
 * with -r, whole trees, each file by the same path. */
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

#include "common.h"

enum { OPT_SYNC = 0x200, OPT_NO_WRITE_BEHIND, OPT_REFLINK, OPT_PROGRESS };

static const struct option longopts[] = {
	{ "reflink", optional_argument, NULL, OPT_REFLINK },
	{ "sync", required_argument, NULL, OPT_SYNC },
	{ "no-write-behind", no_argument, NULL, OPT_NO_WRITE_BEHIND },
	{ "progress", no_argument, NULL, OPT_PROGRESS },
	{ "verbose", no_argument, NULL, 'v' },
	{ "no-clobber", no_argument, NULL, 'n' },
	{ "force", no_argument, NULL, 'f' },
	{ "preserve", no_argument, NULL, 'p' },
	{ "recursive", no_argument, NULL, 'r' },
	CLI_COMMON_LONGOPTS
};

/* From this size on, a copy that is not a reflink is paced by write-behind:
 * left to the kernel, it would fill memory with the destination's dirty
 * pages, evicting everyone else's cache and stalling other writers when
 * writeback finally starts. Below it the dirty pages are too few to hurt. */
#define CP_WB_THRESHOLD ((off_t)64 << 20)
/* Copied and handed to write-behind at a time: its default chunk, so that
 * each call completes one chunk and writeback starts as soon as it can. */
#define CP_WB_CHUNK ((uint64_t)8 << 20)

/* --reflink=WHEN, as cp(1) */
enum cp_reflink { CP_REFLINK_AUTO, CP_REFLINK_ALWAYS, CP_REFLINK_NEVER };

struct cp_job {
	const char *src;
	char *dst;        /* the file written: DST, or DST/basename(SRC) */
	struct stat st;   /* of the source */
	bool created;     /* DST did not exist: remove it if the copy fails */
	bool verbose;
	bool no_clobber;  /* -n: an existing DST is left alone */
	bool force;       /* -f: a DST that cannot be opened is replaced */
	bool preserve;    /* -p: SOURCE's mode, owner and times */
	bool recursive;   /* -r: directories and what is in them */
	bool write_behind;
	int progress;     /* 0: none; 1: large files, stderr a tty; 2: --progress */
	enum cp_reflink reflink;
	unsigned int sync; /* 0, PSPLICE_SYNC_DATA or PSPLICE_SYNC_METADATA */
};

static bool same_inode(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

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

static char *target_path(const char *src, const char *dst)
{
	struct stat st;

	if (stat(dst, &st) == 0 && S_ISDIR(st.st_mode))
		return path_in_dir(dst, src);
	return strdup(dst);
}

static int refuse_same(const struct cp_job *j)
{
	cli_error(0, "%s and %s are the same file", cli_quote(j->src), cli_quote(j->dst));
	return -1;
}

/* An existing destination is opened without O_TRUNC and checked against
 * the source first: through a hard or symbolic link it may be the source
 * itself, and truncating it would destroy the data to be copied. */
static int open_existing(struct cp_job *j, mode_t mode)
{
	struct stat st;
	int fd = open(j->dst, O_WRONLY | O_CLOEXEC);

	/* -f: a file we may not write (a read-only mode for a user, a
	 * running program) can still be replaced, if its directory lets us
	 * remove it. The source was already found not to be DST. */
	if (fd < 0 && j->force && errno != EISDIR) {
		if (unlink(j->dst) < 0) {
			cli_error(errno, "cannot remove %s", cli_quote(j->dst));
			return -1;
		}
		fd = open(j->dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
		if (fd < 0) {
			cli_error(errno, "cannot create regular file %s",
				  cli_quote(j->dst));
			return -1;
		}
		j->created = true;
		return fd;
	}
	if (fd < 0) {
		if (errno == EISDIR)
			cli_error(0, "cannot overwrite directory %s with non-directory",
				  cli_quote(j->dst));
		else
			cli_error(errno, "cannot open %s for writing", cli_quote(j->dst));
		return -1;
	}
	if (fstat(fd, &st) == 0 && same_inode(&st, &j->st)) {
		close(fd);
		return refuse_same(j);
	}
	/* Devices and FIFOs have nothing to truncate. */
	if (S_ISREG(st.st_mode) && ftruncate(fd, 0) < 0) {
		cli_error(errno, "cannot truncate %s", cli_quote(j->dst));
		close(fd);
		return -1;
	}
	return fd;
}

/* open_target's answer for a DST that -n leaves alone */
#define CP_SKIPPED (-2)

static int open_target(struct cp_job *j)
{
	mode_t mode = S_ISREG(j->st.st_mode) ? j->st.st_mode & 0777 : 0666;
	struct stat st;
	int fd;

	/* Checked before opening too, so that a source we may not write is
	 * still reported as the same file, as cp(1) does. */
	if (stat(j->dst, &st) == 0 && same_inode(&st, &j->st))
		return refuse_same(j);
	fd = open(j->dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	if (fd >= 0) {
		j->created = true;
		return fd;
	}
	/* -n: cp(1) skips an existing DST silently, and that is no error. */
	if (errno == EEXIST && j->no_clobber)
		return CP_SKIPPED;
	if (errno == EEXIST)
		return open_existing(j, mode);
	cli_error(errno, "cannot create regular file %s", cli_quote(j->dst));
	return -1;
}

/* "a/b" -> "a", "b" -> ".", "/b" -> "/" */
static char *parent_of(const char *path)
{
	size_t len = strlen(path);
	const char *slash;

	while (len > 1 && path[len - 1] == '/')
		len--;
	slash = memrchr(path, '/', len);
	if (!slash)
		return strdup(".");
	len = (size_t)(slash - path);
	while (len > 1 && path[len - 1] == '/')
		len--;
	return strndup(path, len ? len : 1);
}

/* fsync(2) makes the file durable, not the name it was created under:
 * that is the directory's data, and a crash could lose the new entry. */
static int sync_dir(const struct cp_job *j)
{
	char *dir = parent_of(j->dst);
	int fd, rc = 0;

	if (!dir) {
		cli_error(ENOMEM, "error syncing %s", cli_quote(j->dst));
		return -1;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	/* EINVAL: the filesystem cannot sync a directory; there is nothing
	 * more to ask of it, and the file itself is durable. */
	if (fd < 0 || (fsync(fd) < 0 && errno != EINVAL)) {
		cli_error(errno, "error syncing %s", cli_quote(dir));
		rc = -1;
	}
	if (fd >= 0)
		close(fd);
	free(dir);
	return rc;
}

/* --sync=full: the name too. With -v, the level reached. */
static int synced(const struct cp_job *j, enum psplice_sync_level level)
{
	if ((j->sync & PSPLICE_SYNC_METADATA) && sync_dir(j) < 0)
		return -1;
	if (j->verbose)
		fprintf(stderr, CLI_NAME ": %s: %s\n", cli_quote(j->dst),
			psplice_sync_level_name((int)level));
	return 0;
}

/* Add what one psplice call moved to the totals; on failure, keep why. */
static int tally(struct cli_copy *c, int rc, const struct psplice_result *r)
{
	c->bytes += r->out_bytes;
	if (r->out_bytes)
		c->method = r->method;
	if (rc < 0) {
		c->error = r->error;
		c->side = r->side;
	}
	return rc;
}

/* Copy in chunks, each handed to write-behind as it lands, so the page
 * cache never holds more than a few chunks of the destination's dirty
 * pages. */
static int copy_behind(struct psplice_pair *p, int in, int out, unsigned int flags,
		       struct psplice_wb *wb, struct cli_copy *c)
{
	struct cli_copy part;
	int64_t off = 0; /* DST was just created or truncated */
	int rc;

	for (;;) {
		rc = cli_pair_copy(p, NULL, in, out, CP_WB_CHUNK, flags, &part);
		c->bytes += part.bytes;
		if (part.bytes)
			c->method = part.method;
		if (rc < 0) {
			c->error = part.error;
			c->side = part.side;
			return -1;
		}
		/* Writeback of what was copied failed: a write error. */
		if (part.bytes && psplice_wb_wrote(wb, off, part.bytes) < 0) {
			c->error = errno;
			c->side = PSPLICE_SIDE_OUT;
			return -1;
		}
		off += (int64_t)part.bytes;
		if (part.bytes < CP_WB_CHUNK)
			return 0;
	}
}

/* Copy only the source's data extents, each at its own offset: the holes
 * between them are never written, so they stay holes in DST, and a
 * trailing hole, which has no extent, is made by ftruncate at the end.
 * wb (may be NULL) paces the writes as copy_behind does. */
static int copy_extents(struct psplice_pair *p, int in, int out, unsigned int flags,
			struct psplice_wb *wb, struct cli_copy *c)
{
	struct psplice_result r;
	int64_t off_in, off_out;
	off_t data = 0, hole, end = -1;
	uint64_t len;
	struct stat st;

	for (;;) {
		data = lseek(in, data, SEEK_DATA);
		if (data < 0) {
			if (errno == ENXIO) /* no data after this offset */
				break;
			goto in_error;
		}
		hole = lseek(in, data, SEEK_HOLE);
		if (hole < 0)
			goto in_error;
		while (data < hole) {
			len = (uint64_t)(hole - data);
			/* Chunks also let a progress line move. */
			if (len > CP_WB_CHUNK)
				len = CP_WB_CHUNK;
			off_in = off_out = data;
			if (tally(c, psplice_pair_copy(p, &off_in, &off_out, len,
						       flags & ~CLI_PLAN_FLAGS, &r), &r) < 0)
				return -1;
			cli_progress_add(r.out_bytes);
			if (wb && r.out_bytes &&
			    psplice_wb_wrote(wb, data, r.out_bytes) < 0) {
				c->error = errno;
				c->side = PSPLICE_SIDE_OUT;
				return -1;
			}
			/* The source ended early: it shrank while it was
			 * copied, or its size never said its length (a sysfs
			 * file says 4096 for 23 bytes, and no block). It ends
			 * where reading it ended, not at a size it claims. */
			if (r.out_bytes < len) {
				end = data + (off_t)r.out_bytes;
				goto size;
			}
			data += (off_t)len;
		}
	}
size:
	/* Past its last data, the size SOURCE has now, in case it changed
	 * during the copy: a hole at the end is kept. */
	if (end < 0 && fstat(in, &st) < 0)
		goto in_error;
	if (ftruncate(out, end < 0 ? st.st_size : end) < 0) {
		c->error = errno;
		c->side = PSPLICE_SIDE_OUT;
		return -1;
	}
	return 0;
in_error:
	c->error = errno;
	c->side = PSPLICE_SIDE_IN;
	return -1;
}

static bool paced(const struct cp_job *j)
{
	return j->write_behind && S_ISREG(j->st.st_mode) &&
	       j->st.st_size >= CP_WB_THRESHOLD;
}

/* Fewer blocks than bytes: SOURCE has holes (or a filesystem that packs
 * small files, where copying extent by extent costs nothing either). Only
 * between two regular files, which have offsets to keep holes at. */
static bool sparse(const struct cp_job *j, int out)
{
	struct stat st;

	return S_ISREG(j->st.st_mode) &&
	       (uint64_t)j->st.st_blocks * 512 < (uint64_t)j->st.st_size &&
	       fstat(out, &st) == 0 && S_ISREG(st.st_mode);
}

/* -p, once the data is in: times last, since writing changes mtime, and
 * before any sync, so that the sync covers them. The owner before the
 * mode: chown clears the set-user-ID and set-group-ID bits. Only root may
 * give a file away; anyone else keeps their own files, and gets SOURCE's
 * group only if they are in it, as with cp -p. Only a regular DST: a
 * device or a FIFO cp writes into is not cp's to change. */
static int preserve(const struct cp_job *j, int out)
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

static int copy_data(const struct cp_job *j, int in, int out)
{
	enum psplice_sync_level level;
	struct psplice_wb *wb = NULL;
	struct psplice_pair *pair;
	bool holes = sparse(j, out), pace = paced(j);
	unsigned int flags = 0; /* a reflink was refused, or is not wanted */
	struct cli_copy c;
	struct stat st;
	int rc;

	if (j->reflink == CP_REFLINK_ALWAYS) {
		/* Shared extents or nothing: the engine never copies. */
		rc = cli_copy(in, out, PSPLICE_F_REFLINK_ONLY, &c);
		if (rc < 0) {
			cli_error(c.error, "failed to clone %s from %s",
				  cli_quote(j->dst), cli_quote(j->src));
			return -1;
		}
		goto copied;
	}
	if (j->reflink == CP_REFLINK_AUTO && !pace && !holes) {
		/* Reflink first: where the filesystem cannot share extents,
		 * the engine falls back to copy_file_range on its first call. */
		rc = cli_copy(in, out, PSPLICE_F_REFLINK, &c);
		goto copied;
	}
	if (j->reflink == CP_REFLINK_AUTO) {
		/* A reflink writes nothing, so has nothing to pace, and keeps
		 * the holes: try one alone first, and copy otherwise only if
		 * it was refused. */
		rc = cli_copy(in, out, PSPLICE_F_REFLINK_ONLY, &c);
		if (rc == 0 || c.error != EOPNOTSUPP || c.bytes)
			goto copied;
	}
	if (j->progress == 2 || (j->progress && j->st.st_size >= CP_WB_THRESHOLD))
		cli_progress_begin(j->src, holes && (uint64_t)j->st.st_blocks * 512 <
				   (uint64_t)j->st.st_size ? (uint64_t)j->st.st_blocks * 512 :
				   (uint64_t)j->st.st_size);
	/* Between two files on XFS or btrfs, copy_file_range shares extents
	 * too: --reflink=never goes through a pipe instead, which always
	 * copies (as cp(1) avoids copy_file_range then). */
	if (j->reflink == CP_REFLINK_NEVER && S_ISREG(j->st.st_mode) &&
	    fstat(out, &st) == 0 && S_ISREG(st.st_mode))
		flags = PSPLICE_F_ONLY(PSPLICE_METHOD_SPLICE_PIPE);
	/* Only a file or a block device has writeback to pace (anything else
	 * is ESPIPE); without it the copy is as correct, just not paced. */
	if (pace)
		wb = psplice_wb_new(out, CP_WB_CHUNK, 0);
	if (holes || wb) {
		/* Classified once for all the chunks. */
		c = (struct cli_copy){ .method = PSPLICE_METHOD_NONE };
		pair = cli_pair(in, out, flags, &c);
		rc = -1;
		if (pair && holes)
			rc = copy_extents(pair, in, out, flags, wb, &c);
		else if (pair)
			rc = copy_behind(pair, in, out, flags, wb, &c);
		psplice_pair_free(pair);
	} else {
		rc = cli_copy(in, out, flags, &c);
	}
copied:
	cli_progress_end();
	if (rc < 0) {
		if (wb)
			(void)psplice_wb_finish(wb, 0, NULL);
		cli_copy_error(j->src, j->dst, &c);
		return -1;
	}
	if (j->verbose)
		cli_report(j->src, j->dst, &c);
	if (j->preserve && preserve(j, out) < 0) {
		if (wb)
			(void)psplice_wb_finish(wb, 0, NULL);
		return -1;
	}
	if (wb) {
		/* The final sync is write-behind's, after the last chunk
		 * settled. Without --sync, only the writeback of the last
		 * chunks can fail here. */
		if (psplice_wb_finish(wb, j->sync, &level) < 0) {
			cli_error(errno, "error %s %s", j->sync ? "syncing" : "writing",
				  cli_quote(j->dst));
			return -1;
		}
		return j->sync ? synced(j, level) : 0;
	}
	if (!j->sync)
		return 0;
	if (psplice_sync(out, 0, 0, j->sync, &level) < 0) {
		cli_error(errno, "error syncing %s", cli_quote(j->dst));
		return -1;
	}
	return synced(j, level);
}

static int copy_to(struct cp_job *j, int in)
{
	int out = open_target(j), rc;

	if (out == CP_SKIPPED)
		return 0;
	if (out < 0)
		return -1;
	rc = copy_data(j, in, out);
	/* Some filesystems (NFS) report a failed write-back only here. */
	if (close(out) < 0 && rc == 0) {
		cli_error(errno, "error writing %s", cli_quote(j->dst));
		rc = -1;
	}
	if (rc < 0 && j->created && unlink(j->dst) < 0)
		cli_error(errno, "cannot remove %s", cli_quote(j->dst));
	return rc;
}

/* opts: the options, in a job not yet started. exact: DST is the file to
 * write, even if it is a directory (in a tree, never copy into one). */
static int cp_file(const char *src, const char *dst, const struct cp_job *opts,
		   bool exact)
{
	struct cp_job j = *opts;
	int in, rc = -1;

	j.src = src;
	in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0) {
		cli_error(errno, "cannot open %s", cli_quote(src));
		return -1;
	}
	if (fstat(in, &j.st) < 0)
		cli_error(errno, "cannot stat %s", cli_quote(src));
	else if (S_ISDIR(j.st.st_mode))
		cli_error(0, "-r not specified; omitting directory %s", cli_quote(src));
	else if (!(j.dst = exact ? strdup(dst) : target_path(src, dst)))
		cli_error(ENOMEM, "cannot copy %s", cli_quote(src));
	else
		rc = copy_to(&j, in);
	free(j.dst);
	close(in);
	return rc;
}

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

/* -p for what cp_file does not open: a directory, a symbolic link (which
 * has no mode of its own to set) or a special file. By path: none of them
 * is open here. */
static int preserve_path(const char *dst, const struct stat *st)
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
	rc = t->opts->preserve ? preserve_path(dst, st) : 0;
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
	return t->opts->preserve ? preserve_path(dst, st) : 0;
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
	if (t->top_known && same_inode(st, &t->top)) {
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
		if (preserve_path(dst, st) < 0)
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
	char *parent = parent_of(dst), *rs = realpath(src, NULL), *rp = NULL;
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
static int cp_tree(const char *src, const char *dst, const struct cp_job *opts)
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
	target = target_path(src, dst);
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

static unsigned int parse_sync(const struct cli_cmd *cmd, const char *arg)
{
	if (!strcmp(arg, "none"))
		return 0;
	if (!strcmp(arg, "data"))
		return PSPLICE_SYNC_DATA;
	if (!strcmp(arg, "full"))
		return PSPLICE_SYNC_METADATA;
	cli_usage_error(cmd, "invalid argument %s for '--sync'\n"
			"Valid arguments are:\n  - 'none'\n  - 'data'\n  - 'full'",
			cli_quote(arg));
}

static enum cp_reflink parse_reflink(const struct cli_cmd *cmd, const char *arg)
{
	/* A bare --reflink is --reflink=always, as in cp(1). */
	if (!arg || !strcmp(arg, "always"))
		return CP_REFLINK_ALWAYS;
	if (!strcmp(arg, "auto"))
		return CP_REFLINK_AUTO;
	if (!strcmp(arg, "never"))
		return CP_REFLINK_NEVER;
	cli_usage_error(cmd, "invalid argument %s for '--reflink'\n"
			"Valid arguments are:\n  - 'auto'\n  - 'always'\n  - 'never'",
			cli_quote(arg));
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

static int cp_main(const struct cli_cmd *cmd, int argc, char **argv)
{
	struct cp_job opts = { .write_behind = true };
	int c;

	while ((c = getopt_long(argc, argv, "fnprRv", longopts, NULL)) != -1) {
		switch (c) {
		case 'v': opts.verbose = true; break;
		case 'n': opts.no_clobber = true; break;
		case 'f': opts.force = true; break;
		case 'p': opts.preserve = true; break;
		case 'r': /* fall through */
		case 'R': opts.recursive = true; break;
		case OPT_SYNC: opts.sync = parse_sync(cmd, optarg); break;
		case OPT_NO_WRITE_BEHIND: opts.write_behind = false; break;
		case OPT_PROGRESS: opts.progress = 2; break;
		case OPT_REFLINK: opts.reflink = parse_reflink(cmd, optarg); break;
		default: cli_common_option(cmd, c);
		}
	}
	/* On a terminal, a copy long enough to wait for shows how it goes. */
	if (!opts.progress && isatty(STDERR_FILENO))
		opts.progress = 1;
	if (optind == argc)
		cli_usage_error(cmd, "missing file operand");
	if (optind + 1 == argc)
		cli_usage_error(cmd, "missing destination file operand after %s",
				cli_quote(argv[optind]));
	if (optind + 2 < argc)
		cli_usage_error(cmd, "extra operand %s", cli_quote(argv[optind + 2]));
	if (opts.recursive)
		return cp_tree(argv[optind], argv[optind + 1], &opts) < 0 ? 1 : 0;
	if (!slash_ok(argv[optind + 1]))
		return 1;
	return cp_file(argv[optind], argv[optind + 1], &opts, false) < 0 ? 1 : 0;
}

const struct cli_cmd cli_cmd_cp = {
	.name = "cp",
	.args = "SOURCE DEST",
	.summary = "copy a file",
	.help =
	"Copy SOURCE to DEST, or into DEST under SOURCE's name when DEST is a\n"
	"directory. The kernel moves the bytes: extents are shared (reflink)\n"
	"where the filesystem can, else copy_file_range(2), sendfile(2) or\n"
	"splice(2), and read/write only as a last resort. A new DEST gets\n"
	"SOURCE's permission bits (less the umask); a DEST created by a copy\n"
	"that fails is removed.\n"
	"\n"
	"A SOURCE of 64 MiB or more that is not reflinked is copied with\n"
	"write-behind: each 8 MiB written is sent to the disk and dropped from\n"
	"the page cache, so the copy does not fill memory with dirty pages.\n"
	"\n"
	"  -f, --force        if an existing DEST cannot be opened for writing,\n"
	"                     remove it and try again\n"
	"  -n, --no-clobber   do not overwrite an existing DEST (and succeed)\n"
	"  -p, --preserve     keep SOURCE's mode, owner (as root) and times\n"
	"  -r, -R, --recursive\n"
	"                     copy a directory SOURCE and all it holds; symbolic\n"
	"                     links are copied as links\n"
	"      --reflink[=WHEN]\n"
	"                     'auto' (the default): share extents where the\n"
	"                     filesystem can, else copy; 'always' (or no WHEN):\n"
	"                     share them or fail; 'never': always copy, and not\n"
	"                     by copy_file_range, which shares them on XFS\n"
	"      --sync=WHEN    after the copy, make DEST durable: 'none' (the\n"
	"                     default), 'data' (fdatasync) or 'full' (fsync, and\n"
	"                     the directory, so that a new name survives too)\n"
	"      --no-write-behind\n"
	"                     leave the writeback of a large copy to the kernel\n"
	"      --progress     show bytes, rate and ETA on standard error while\n"
	"                     copying (on a terminal: for files of 64 MiB or more)\n"
	"  -v, --verbose      tell on standard error which kernel path moved the\n"
	"                     bytes, and how many; with --sync, the level reached\n",
	.main = cp_main,
};
