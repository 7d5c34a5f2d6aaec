/* psplice cp: what its files share. cmd_cp.c reads the options and the
 * operands; cp_file.c copies one regular file's data; cp_node.c copies
 * trees, links and special files; cp_attr.c keeps a SOURCE's attributes. */
#ifndef CLI_CP_H
#define CLI_CP_H

#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "common.h"

/* On a terminal, a copy of this size or more shows its progress. */
#define CP_PROGRESS_MIN ((off_t)64 << 20)
/* Copied and handed to write-behind at a time: its default chunk, so that
 * each call completes one chunk and writeback starts as soon as it can. */
#define CP_WB_CHUNK ((uint64_t)8 << 20)

/* --reflink=WHEN, as cp(1) */
enum cp_reflink { CP_REFLINK_AUTO, CP_REFLINK_ALWAYS, CP_REFLINK_NEVER };
/* Which symbolic links among the SOURCEs are followed: -P, -H, -L. Unset:
 * -L, but -P with -r unless -l (as cp(1) chooses). */
enum cp_deref { CP_DEREF_UNSET, CP_DEREF_NEVER, CP_DEREF_ARGS, CP_DEREF_ALWAYS };
/* An existing DST: overwritten, left alone (-n), or asked about (-i). */
enum cp_clobber { CP_CLOBBER, CP_NO_CLOBBER, CP_INTERACTIVE };
/* Copies, or -l hard links, or -s symbolic links to SOURCE. */
enum cp_link { CP_LINK_NONE, CP_LINK_HARD, CP_LINK_SYMBOLIC };
/* --sparse=WHEN: holes kept where SOURCE seems to have some, always looked
 * for, or never (written as zeros). */
enum cp_sparse { CP_SPARSE_AUTO, CP_SPARSE_ALWAYS, CP_SPARSE_NEVER };
/* --backup=CONTROL, as cp(1) */
enum cp_backup { CP_BACKUP_NONE, CP_BACKUP_SIMPLE, CP_BACKUP_EXISTING, CP_BACKUP_NUMBERED };

/* --preserve=LIST */
#define CP_KEEP_MODE 1u   /* with the ACLs */
#define CP_KEEP_OWNER 2u
#define CP_KEEP_TIMES 4u
#define CP_KEEP_XATTR 8u
#define CP_KEEP_LINKS 16u /* hard links among the files copied */
#define CP_KEEP_ALL 31u

/* A file as the system calls reach it: name, relative to the open
 * directory dir (AT_FDCWD for an operand), and its whole path, for
 * messages only: deep in a tree it may be longer than PATH_MAX. */
struct cp_at {
	int dir;
	const char *name;
	const char *path;
};

/* --preserve=links: which copy each multiply-linked SOURCE inode got. */
struct cp_links;

struct cp_job {
	const char *src;
	char *dst;        /* the file written, for messages */
	int dst_dir;      /* and as the system calls reach it */
	const char *dst_name;
	struct cp_links *links; /* --preserve=links */
	struct stat st;   /* of the source */
	bool created;     /* DST did not exist: remove it if the copy fails */
	bool verbose;
	enum cp_clobber clobber;
	bool force;       /* -f: a DST that cannot be opened is replaced */
	unsigned int keep;  /* CP_KEEP_*: SOURCE's attributes the copy gets */
	bool xattr_loud;  /* --preserve=xattr: failing to copy one is an error */
	bool recursive;   /* -r: directories and what is in them */
	bool update;      /* -u: a DST not older than SOURCE is left alone */
	bool parents;     /* --parents: DIRECTORY/SOURCE, SOURCE's path kept */
	enum cp_deref deref;
	enum cp_link link;
	enum cp_sparse sparse;
	enum cp_backup backup;
	const char *suffix; /* of a simple backup */
	mode_t umask;
	/* Write-behind paces a regular SOURCE of wb_min bytes or more (-1:
	 * none): left to the kernel, a copy past its dirty background
	 * threshold fills memory with the destination's dirty pages, evicting
	 * everyone else's cache and stalling other writers once writeback
	 * starts; below it, pacing only slows the copy. wb_why names the
	 * threshold for -v. */
	int64_t wb_min;
	const char *wb_why;
	int progress;     /* 0: none; 1: large files, stderr a tty; 2: --progress */
	enum cp_reflink reflink;
	unsigned int sync; /* 0, PSPLICE_SYNC_DATA or PSPLICE_SYNC_METADATA */
};

/* "a/b" -> "a", "b" -> ".", "/b" -> "/" */
char *cp_parent_of(const char *path);
/* Copy SOURCE, whatever it is, to the path dst (never into it). */
int cp_top(const struct cp_job *opts, const char *src, const char *dst);
/* Copy the regular (or, outside a tree, special) file src to dst. top: dst
 * was named on the command line, not found in a tree. 1: copied, 0: left
 * alone (-n, -u, -i), -1: error. */
int cp_file(const struct cp_at *src, const struct cp_at *dst, const struct cp_job *opts,
	    bool top);
/* What becomes of an existing dst before a non-directory is copied over
 * it: the same file refused, -n, -u, -i, --backup. through: the copy
 * writes through a symbolic link dst (a regular file's data does). 1: go
 * on, *exists saying whether dst is still there; 0: skip; -1: error. */
int cp_existing(const struct cp_job *o, const char *src, const struct cp_at *dst,
		const struct stat *st, bool through, bool *exists);
/* --preserve on an open regular DST, and by name on anything else. */
int cp_preserve_fd(const struct cp_job *j, int in, int out);
int cp_preserve_at(const struct cp_job *o, const struct cp_at *src,
		   const struct cp_at *dst, const struct stat *st);

/* --sparse=always: SOURCE's data read, each block of DST's size that is
 * all zeros left a hole; wb (may be NULL) paces the writes. */
int cp_copy_zeros(int in, int out, struct psplice_wb *wb, struct cli_copy *c);

struct cp_links *cp_links_new(void);
void cp_links_free(struct cp_links *l);
/* The path of the copy made of st's inode, or NULL. */
const char *cp_links_find(const struct cp_links *l, const struct stat *st);
/* dst is the copy of st's inode. counted: forgotten once its other
 * st_nlink - 1 names were seen; else kept to the end. -1: no memory. */
int cp_links_add(struct cp_links *l, const struct stat *st, const char *dst, bool counted);
/* One more name of st's inode was linked to its copy. */
void cp_links_seen(struct cp_links *l, const struct stat *st);

#endif
