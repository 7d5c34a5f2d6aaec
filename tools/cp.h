/* psplice cp: what its files share. cmd_cp.c reads the options and the
 * operands; cp_file.c copies one regular file's data; cp_node.c copies
 * trees, links and special files; cp_attr.c keeps a SOURCE's attributes. */
#ifndef CLI_CP_H
#define CLI_CP_H

#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "common.h"

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

bool cp_same_inode(const struct stat *a, const struct stat *b);
/* "a/b" -> "a", "b" -> ".", "/b" -> "/" */
char *cp_parent_of(const char *path);
/* DST itself, or DST/basename(SRC) when DST is a directory */
char *cp_target_path(const char *src, const char *dst);
/* Copy the regular (or special, outside a tree) file src to dst, or into
 * dst under src's name unless exact. */
int cp_file(const char *src, const char *dst, const struct cp_job *opts, bool exact);
/* -r: SOURCE and all it holds to DST, or into DST when it is a directory. */
int cp_tree(const char *src, const char *dst, const struct cp_job *opts);
/* -p on an open regular DST, and by path on anything else. */
int cp_preserve_fd(const struct cp_job *j, int out);
int cp_preserve_path(const char *dst, const struct stat *st);

#endif
