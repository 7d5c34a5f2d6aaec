/* psplice cp: one regular file's data, by reflink where the filesystem
 * shares extents, else copy_file_range, splice, read/write; holes kept,
 * large copies paced by write-behind. */
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

static int refuse_same(const struct cp_job *j)
{
	cli_error(0, "%s and %s are the same file", cli_quote(j->src), cli_quote(j->dst));
	return -1;
}

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
	fd = openat(j->dst_dir, j->dst_name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	if (fd < 0) {
		cli_error(errno, "cannot create regular file %s", cli_quote(j->dst));
		return -1;
	}
	j->created = true;
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

	if (fd < 0 && j->force && errno != EISDIR)
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

/* exists: cp_existing found DST there and left it. */
static int open_target(struct cp_job *j, bool exists, bool top)
{
	mode_t mode = S_ISREG(j->st.st_mode) ? j->st.st_mode & 0777 : 0666;
	int fd;

	if (exists)
		return open_existing(j, mode, top);
	fd = openat(j->dst_dir, j->dst_name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	if (fd >= 0) {
		j->created = true;
		return fd;
	}
	/* Made since it was looked at. */
	if (errno == EEXIST)
		return open_existing(j, mode, top);
	cli_error(errno, "cannot create regular file %s", cli_quote(j->dst));
	return -1;
}

/* "a/b" -> "a", "b" -> ".", "/b" -> "/" */
char *cp_parent_of(const char *path)
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
	char *dir = cp_parent_of(j->dst_name), *shown = cp_parent_of(j->dst);
	int fd = -1, rc = 0;

	if (!dir || !shown) {
		cli_error(ENOMEM, "error syncing %s", cli_quote(j->dst));
		rc = -1;
		goto out;
	}
	fd = openat(j->dst_dir, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	/* EINVAL: the filesystem cannot sync a directory; there is nothing
	 * more to ask of it, and the file itself is durable. */
	if (fd < 0 || (fsync(fd) < 0 && errno != EINVAL)) {
		cli_error(errno, "error syncing %s", cli_quote(shown));
		rc = -1;
	}
	if (fd >= 0)
		close(fd);
out:
	free(dir);
	free(shown);
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
	return j->wb_min >= 0 && S_ISREG(j->st.st_mode) && j->st.st_size >= j->wb_min;
}

/* -v: whether write-behind paced the copy of a regular SOURCE, and why;
 * said where it could matter, for a SOURCE of a chunk or more. */
static void say_paced(const struct cp_job *j, bool on)
{
	char size[32], min[32];

	if (!S_ISREG(j->st.st_mode) || (!on && j->st.st_size < (off_t)CP_WB_CHUNK))
		return;
	fprintf(stderr, CLI_NAME ": %s: write-behind: %s (", cli_quote(j->dst),
		on ? "on" : "off");
	if (!on && paced(j))
		fputs("DEST has no writeback to pace)\n", stderr);
	else if (j->wb_min <= 0)
		fprintf(stderr, "%s)\n", j->wb_min < 0 ? "--no-write-behind" : "--write-behind");
	else
		fprintf(stderr, "%s, %s the %s %s)\n",
			cli_human((double)j->st.st_size, size, sizeof(size)),
			j->st.st_size >= j->wb_min ? "past" : "within", j->wb_why,
			cli_human((double)j->wb_min, min, sizeof(min)));
}

/* Fewer blocks than bytes: SOURCE has holes (or a filesystem that packs
 * small files, where copying extent by extent costs nothing either). Only
 * between two regular files, which have offsets to keep holes at.
 * --sparse=always makes holes of blocks of zeros too, in any file; never
 * writes them all as zeros. */
static bool sparse(const struct cp_job *j, int out)
{
	struct stat st;

	return j->sparse != CP_SPARSE_NEVER && S_ISREG(j->st.st_mode) &&
	       (j->sparse == CP_SPARSE_ALWAYS ||
		(uint64_t)j->st.st_blocks * 512 < (uint64_t)j->st.st_size) &&
	       fstat(out, &st) == 0 && S_ISREG(st.st_mode);
}

static int copy_data(struct cp_job *j, int in, int out)
{
	enum psplice_sync_level level;
	struct psplice_wb *wb = NULL;
	struct psplice_pair *pair;
	bool holes = sparse(j, out), pace = paced(j);
	bool show = j->progress == 2 || (j->progress && j->st.st_size >= CP_PROGRESS_MIN);
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
	if (j->reflink == CP_REFLINK_AUTO && !pace && !holes && !show) {
		/* Reflink first: where the filesystem cannot share extents,
		 * the engine falls back to copy_file_range on its first call. */
		rc = cli_copy(in, out, PSPLICE_F_REFLINK, &c);
		goto copied;
	}
	if (j->reflink == CP_REFLINK_AUTO) {
		/* A reflink writes nothing, so has nothing to pace or to show
		 * progress of, and keeps the holes: try one alone first, and
		 * copy otherwise only if it was refused. */
		rc = cli_copy(in, out, PSPLICE_F_REFLINK_ONLY, &c);
		if (rc == 0 || c.error != EOPNOTSUPP || c.bytes)
			goto copied;
	}
	if (show)
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
		if (pair && holes && j->sparse == CP_SPARSE_ALWAYS)
			rc = cp_copy_zeros(in, out, wb, &c);
		else if (pair && holes)
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
	/* A reflink wrote nothing to pace. */
	if (j->verbose && c.method != PSPLICE_METHOD_CLONE)
		say_paced(j, wb != NULL);
	if (j->keep && cp_preserve_fd(j, in, out) < 0) {
		/* The data is in: a copy without all of SOURCE's attributes
		 * stays, as with cp(1). */
		j->created = false;
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

static int copy_to(struct cp_job *j, int in, bool top)
{
	const struct cp_at to = { j->dst_dir, j->dst_name, j->dst };
	bool exists;
	int out, rc;

	rc = cp_existing(j, j->src, &to, &j->st, true, &exists);
	if (rc <= 0)
		return rc;
	out = open_target(j, exists, top);
	if (out < 0)
		return -1;
	rc = copy_data(j, in, out);
	/* Some filesystems (NFS) report a failed write-back only here. */
	if (close(out) < 0 && rc == 0) {
		cli_error(errno, "error writing %s", cli_quote(j->dst));
		rc = -1;
	}
	if (rc < 0 && j->created && unlinkat(j->dst_dir, j->dst_name, 0) < 0)
		cli_error(errno, "cannot remove %s", cli_quote(j->dst));
	return rc < 0 ? -1 : 1;
}

int cp_file(const struct cp_at *src, const struct cp_at *dst, const struct cp_job *opts,
	    bool top)
{
	struct cp_job j = *opts;
	int in, rc = -1;

	j.src = src->path;
	j.dst_dir = dst->dir;
	j.dst_name = dst->name;
	in = openat(src->dir, src->name, O_RDONLY | O_CLOEXEC);
	if (in < 0) {
		cli_error(errno, "cannot open %s", cli_quote(src->path));
		return -1;
	}
	if (fstat(in, &j.st) < 0)
		cli_error(errno, "cannot stat %s", cli_quote(src->path));
	else if (S_ISDIR(j.st.st_mode))
		cli_error(0, "-r not specified; omitting directory %s", cli_quote(src->path));
	else if (!(j.dst = strdup(dst->path)))
		cli_error(ENOMEM, "cannot copy %s", cli_quote(src->path));
	else
		rc = copy_to(&j, in, top);
	free(j.dst);
	close(in);
	return rc;
}
