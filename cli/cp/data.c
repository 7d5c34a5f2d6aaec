/* psplice cp: one regular file's data. The way is picked from the options
 * and the two files, then run: a reflink alone (--reflink=always), a
 * reflink the engine falls back from to copy_file_range, or a copy: of
 * SOURCE's extents, its holes kept; of blocks of zeros made holes
 * (sparse.c); in chunks paced by write-behind; or in one call. Then --debug,
 * --preserve and --sync. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cp.h"
#include "out.h"
#include "parse.h"
#include "progress.h"

enum way {
	WAY_CLONE,     /* --reflink=always: shared extents or nothing */
	WAY_REFLINK,   /* a reflink, else what the engine falls back to */
	WAY_TRY_CLONE, /* a reflink alone; refused, a copy */
	WAY_COPY,      /* a copy, of one of the ways below */
	WAY_ZEROS,     /* --sparse=always: blocks of zeros made holes */
	WAY_EXTENTS,   /* SOURCE's data extents, its holes kept */
	WAY_BEHIND,    /* in chunks, each handed to write-behind */
	WAY_PLAIN,     /* in one call */
};

/* One file's data on its way. */
struct data {
	struct cp_job *j;
	int in, out;
	bool holes;          /* SOURCE's holes are kept */
	bool pace;           /* SOURCE is large enough for write-behind */
	bool show;           /* a progress line */
	unsigned int flags;  /* PSPLICE_F_* of the copy */
	struct psplice_wb *wb;
	struct cli_copy c;
};

/* Write-behind given up: the copy failed, its last chunks are not waited
 * for. */
static void drop_wb(struct psplice_wb *wb)
{
	if (wb)
		(void)psplice_wb_finish(wb, 0, NULL);
}

/* Copy in chunks, each handed to write-behind as it lands, so the page
 * cache never holds more than a few chunks of the destination's dirty
 * pages. */
static int copy_behind(struct data *d, struct psplice_pair *p)
{
	struct cli_copy part;
	int64_t off = 0; /* DST was just created or truncated */
	int rc;

	for (;;) {
		rc = cli_pair_copy(p, NULL, d->in, d->out, CLI_CHUNK, d->flags, &part);
		cli_copy_add(&d->c, part.bytes, part.method);
		if (rc < 0)
			return cli_copy_fail(&d->c, part.error, part.side);
		if (cp_wb_wrote(d->wb, off, part.bytes, &d->c) < 0)
			return -1;
		off += (int64_t)part.bytes;
		if (part.bytes < CLI_CHUNK)
			return 0;
	}
}

/* One data extent of SOURCE, data to hole, at its own offset in DST, in
 * chunks (which also let a progress line move). 0: copied; 1: SOURCE
 * ended inside it, at *end; -1: error. */
static int copy_extent(struct data *d, struct psplice_pair *p, off_t data, off_t hole,
		       off_t *end)
{
	struct psplice_result r;
	int64_t off_in, off_out;
	uint64_t len;
	int rc;

	for (; data < hole; data += (off_t)len) {
		len = (uint64_t)(hole - data);
		if (len > CLI_CHUNK)
			len = CLI_CHUNK;
		off_in = off_out = data;
		rc = psplice_pair_copy(p, &off_in, &off_out, len, d->flags & ~CLI_PLAN_FLAGS, &r);
		cli_copy_add(&d->c, r.out_bytes, r.method);
		if (rc < 0)
			return cli_copy_fail(&d->c, r.error, r.side);
		cli_progress_add(r.out_bytes);
		if (cp_wb_wrote(d->wb, data, r.out_bytes, &d->c) < 0)
			return -1;
		/* The source ended early: it shrank while it was copied, or
		 * its size never said its length (a sysfs file says 4096
		 * whatever it holds, and no block: 18 bytes for
		 * /sys/class/net/lo/address on Linux 6.18). It ends where
		 * reading it ended, not at a size it claims. */
		if (r.out_bytes < len) {
			*end = data + (off_t)r.out_bytes;
			return 1;
		}
	}
	return 0;
}

/* Copy only the source's data extents: the holes between them are never
 * written, so they stay holes in DST, and a trailing hole, which has no
 * extent, is made by ftruncate at the end. */
static int copy_extents(struct data *d, struct psplice_pair *p)
{
	off_t data = 0, hole, end = -1;
	struct stat st;
	int rc = 0;

	while (!rc) {
		data = lseek(d->in, data, SEEK_DATA);
		if (data < 0 && errno == ENXIO) /* no data after this offset */
			break;
		hole = data < 0 ? -1 : lseek(d->in, data, SEEK_HOLE);
		if (hole < 0)
			return cli_copy_fail(&d->c, errno, PSPLICE_SIDE_IN);
		rc = copy_extent(d, p, data, hole, &end);
		data = hole;
	}
	if (rc < 0)
		return -1;
	/* Past its last data, the size SOURCE has now, in case it changed
	 * during the copy: a hole at the end is kept. */
	if (end < 0 && fstat(d->in, &st) < 0)
		return cli_copy_fail(&d->c, errno, PSPLICE_SIDE_IN);
	if (ftruncate(d->out, end < 0 ? st.st_size : end) < 0)
		return cli_copy_fail(&d->c, errno, PSPLICE_SIDE_OUT);
	return 0;
}

static bool paced(const struct cp_job *j)
{
	return j->o->wb_min >= 0 && S_ISREG(j->st.st_mode) && j->st.st_size >= j->o->wb_min;
}

/* Fewer blocks than bytes: SOURCE has holes (or a filesystem that packs
 * small files, where copying extent by extent costs nothing either). Only
 * between two regular files, which have offsets to keep holes at.
 * --sparse=always makes holes of blocks of zeros too, in any file; never
 * writes them all as zeros. */
static bool sparse(const struct cp_job *j)
{
	return j->o->sparse != CP_SPARSE_NEVER && S_ISREG(j->st.st_mode) &&
	       (j->o->sparse == CP_SPARSE_ALWAYS ||
		(uint64_t)j->st.st_blocks * 512 < (uint64_t)j->st.st_size) &&
	       j->dst_file;
}

/* Before a copy: the progress line (of the data, not the holes), the pipe
 * for --reflink=never, write-behind. */
static void start_copy(struct data *d)
{
	const struct cp_job *j = d->j;
	uint64_t blocks = (uint64_t)j->st.st_blocks * 512, size = (uint64_t)j->st.st_size;

	if (d->show)
		cli_progress_begin(j->src, d->holes && blocks < size ? blocks : size,
				   j->o->progress == 2);
	/* Between two files on XFS or btrfs, copy_file_range shares extents
	 * too: --reflink=never goes through a pipe instead, which always
	 * copies (as cp(1) avoids copy_file_range then). */
	if (j->o->reflink == CP_REFLINK_NEVER && S_ISREG(j->st.st_mode) && j->dst_file)
		d->flags = PSPLICE_F_ONLY(PSPLICE_METHOD_SPLICE_PIPE);
	/* Only a file or a block device has writeback to pace (anything else
	 * is ESPIPE); without it the copy is as correct, just not paced. */
	if (d->pace)
		d->wb = psplice_wb_new(d->out, CLI_CHUNK, 0);
}

/* The way, from the options and the files; WAY_COPY is made one of the
 * copies by pick_copy, once start_copy has run. */
static enum way pick(const struct data *d)
{
	switch (d->j->o->reflink) {
	case CP_REFLINK_ALWAYS:
		return WAY_CLONE;
	case CP_REFLINK_AUTO:
		/* A reflink writes nothing, so has nothing to pace or to
		 * show progress of, and keeps the holes: where any of them
		 * matters, one is tried alone first. Else the engine falls
		 * back to copy_file_range on its first call. */
		return d->pace || d->holes || d->show ? WAY_TRY_CLONE : WAY_REFLINK;
	default:
		return WAY_COPY;
	}
}

static enum way pick_copy(const struct data *d)
{
	if (d->holes)
		return d->j->o->sparse == CP_SPARSE_ALWAYS ? WAY_ZEROS : WAY_EXTENTS;
	return d->wb ? WAY_BEHIND : WAY_PLAIN;
}

/* A way in chunks, on a pair classified once for all of them. */
static int run_chunks(struct data *d, enum way way)
{
	struct psplice_pair *pair;
	int rc = -1;

	d->c = (struct cli_copy){ .method = PSPLICE_METHOD_NONE };
	pair = cli_pair(d->in, d->out, d->flags, &d->c);
	if (pair && way == WAY_ZEROS)
		rc = cp_copy_zeros(d->in, d->out, d->wb, &d->c);
	else if (pair && way == WAY_EXTENTS)
		rc = copy_extents(d, pair);
	else if (pair)
		rc = copy_behind(d, pair);
	psplice_pair_free(pair);
	return rc;
}

/* The whole of SOURCE in one copy. Between two regular files, both at
 * offset 0 (SOURCE just opened, DST just made or truncated), the copy goes
 * by offsets: the engine need not ask either file where it is, before,
 * during and after, as it must for a file position. An empty SOURCE may
 * still have data (a /proc file, whose size says nothing of it): read(2)
 * alone tells, in one call for a file that is empty indeed, where each of
 * the engine's file-to-file paths would find nothing before it; and it
 * reads from the file position, as some of those files (tracefs pipes)
 * have no offsets. */
static int copy_whole(struct data *d, unsigned int flags)
{
	struct psplice_result r;
	int64_t off_in = 0, off_out = 0;
	bool empty = d->j->st.st_size == 0;
	int rc;

	/* A progress line moves with chunks, which cli_copy makes. */
	if (!d->j->dst_file || !S_ISREG(d->j->st.st_mode) || cli_progress_on())
		return cli_copy(d->in, d->out, flags, &d->c);
	if (empty)
		flags = PSPLICE_F_ONLY(PSPLICE_METHOD_READWRITE);
	rc = psplice_copy(d->in, empty ? NULL : &off_in, d->out, &off_out, PSPLICE_TO_EOF, flags,
			  &r);
	d->c = (struct cli_copy){ .method = PSPLICE_METHOD_NONE };
	cli_copy_add(&d->c, r.out_bytes, r.method);
	return rc < 0 ? cli_copy_fail(&d->c, r.error, r.side) : 0;
}

static int run(struct data *d, enum way way)
{
	switch (way) {
	case WAY_CLONE: /* fall through */
	case WAY_TRY_CLONE:
		/* Shared extents or nothing: the engine never copies. */
		return cli_copy(d->in, d->out, PSPLICE_F_REFLINK_ONLY, &d->c);
	case WAY_REFLINK:
		return copy_whole(d, PSPLICE_F_REFLINK);
	case WAY_PLAIN:
		return copy_whole(d, d->flags);
	default:
		return run_chunks(d, way);
	}
}

/* Pick the way, and run it; *way: the one that ran last. */
static int copy(struct data *d, enum way *way)
{
	int rc;

	*way = pick(d);
	if (*way == WAY_TRY_CLONE) {
		rc = run(d, *way);
		/* Copied, or failed otherwise than by a refusal. */
		if (rc == 0 || d->c.error != EOPNOTSUPP || d->c.bytes)
			return rc;
		*way = WAY_COPY;
	}
	if (*way == WAY_COPY) {
		start_copy(d);
		*way = pick_copy(d);
	}
	return run(d, *way);
}

/* --debug: whether write-behind paced the copy of a regular SOURCE, and why;
 * said where it could matter, for a SOURCE of a chunk or more. */
static void say_paced(const struct cp_job *j, bool on)
{
	const struct cp_opts *o = j->o;
	char size[32], min[32];

	if (!S_ISREG(j->st.st_mode) || (!on && j->st.st_size < (off_t)CLI_CHUNK))
		return;
	fprintf(stderr, "%s: %s: write-behind: %s (", cli_name, cli_quote(j->dst),
		on ? "on" : "off");
	if (!on && paced(j))
		fputs("DEST has no writeback to pace)\n", stderr);
	else if (o->wb_min <= 0)
		fprintf(stderr, "%s)\n", o->wb_min < 0 ? "--no-write-behind" : "--write-behind");
	else
		fprintf(stderr, "%s, %s the %s %s)\n",
			cli_human((double)j->st.st_size, size, sizeof(size)),
			j->st.st_size >= o->wb_min ? "past" : "within", o->wb_why,
			cli_human((double)o->wb_min, min, sizeof(min)));
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

/* --sync=full: the name too. With --debug, the level reached. */
static int synced(const struct cp_job *j, enum psplice_sync_level level)
{
	if ((j->o->sync & PSPLICE_SYNC_METADATA) && sync_dir(j) < 0)
		return -1;
	if (j->o->debug)
		fprintf(stderr, "%s: %s: %s\n", cli_name, cli_quote(j->dst),
			psplice_sync_level_name((int)level));
	return 0;
}

/* --sync, and the end of write-behind: its final sync, after the last
 * chunk settled. Without --sync, only the writeback of the last chunks
 * can fail here. */
static int durable(const struct data *d)
{
	const struct cp_job *j = d->j;
	enum psplice_sync_level level;

	if (d->wb) {
		if (psplice_wb_finish(d->wb, j->o->sync, &level) < 0) {
			cli_error(errno, "error %s %s", j->o->sync ? "syncing" : "writing",
				  cli_quote(j->dst));
			return -1;
		}
		return j->o->sync ? synced(j, level) : 0;
	}
	if (!j->o->sync)
		return 0;
	if (psplice_sync(d->out, 0, 0, j->o->sync, &level) < 0) {
		cli_error(errno, "error syncing %s", cli_quote(j->dst));
		return -1;
	}
	return synced(j, level);
}

/* A DST made private while it was written (open_target) gets the mode it
 * would have had, when --preserve has not given it SOURCE's. */
static int private_end(const struct cp_job *j, int out)
{
	const struct cp_opts *o = j->o;

	if (!j->created || !(o->keep & CP_KEEP_OWNER) || (o->keep & CP_KEEP_MODE))
		return 0;
	if (fchmod(out, cp_new_mode(o, &j->st, 0777) & ~o->umask) < 0) {
		cli_error(errno, "setting permissions for %s", cli_quote(j->dst));
		return -1;
	}
	return 0;
}

/* The data is in: --debug, --preserve, --sync. */
static int copied(struct data *d)
{
	struct cp_job *j = d->j;
	const struct cp_at src = { AT_FDCWD, j->src, j->src, false };
	const struct cp_at dst = { j->dst_dir, j->dst_name, j->dst, j->fresh && j->created };
	const int fd[2] = { d->in, d->out };

	if (j->o->debug)
		cli_report(j->src, j->dst, &d->c);
	/* A reflink, or --attributes-only, wrote nothing to pace. */
	if (j->o->debug && d->c.method != PSPLICE_METHOD_CLONE && !j->o->attrs_only)
		say_paced(j, d->wb != NULL);
	if (j->o->keep && (cp_preserve(j->o, &src, &dst, &j->st, fd) < 0 ||
			   private_end(j, d->out) < 0)) {
		/* The data is in: a copy without all of SOURCE's attributes
		 * stays, as with cp(1). */
		j->created = false;
		drop_wb(d->wb);
		return -1;
	}
	return durable(d);
}

int cp_copy_data(struct cp_job *j, int in, int out)
{
	struct data d = {
		.j = j, .in = in, .out = out, .holes = sparse(j), .pace = paced(j),
		.show = j->o->progress == 2 ||
			(j->o->progress && j->st.st_size >= CP_PROGRESS_MIN),
	};
	enum way way;
	int rc;

	/* --attributes-only: DST made, or opened and left as it was. */
	if (j->o->attrs_only)
		return copied(&d);
	rc = copy(&d, &way);

	cli_progress_end(rc == 0);
	if (rc == 0)
		return copied(&d);
	drop_wb(d.wb);
	if (way == WAY_CLONE)
		cli_error(d.c.error, "failed to clone %s from %s", cli_quote(j->dst),
			  cli_quote(j->src));
	else
		cli_copy_error(j->src, j->dst, &d.c);
	return -1;
}
