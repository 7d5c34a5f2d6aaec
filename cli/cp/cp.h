/* psplice cp: the folder's header, what its files share. The command
 * offers the rest of psplice one thing, cli_cmd_cp (opts.h). Its files:
 *   cmd.c       the options, and the command's entry
 *   operands.c  where each SOURCE goes
 *   tree.c      walks a tree, with a pool of threads (pool.c, pool.h),
 *               by the names names.c reads
 *   node.c      makes what is not a directory or a regular file
 *   dest.c      what becomes of an existing DST
 *   file.c      opens a regular file's copy; data.c copies its data, in one
 *               of its ways, then --debug, --preserve and --sync
 *   sparse.c    --sparse=always: blocks of zeros left holes
 *   attr.c      keeps SOURCE's attributes; links.c its hard links
 *   wb.c        what was copied handed to write-behind
 *   parent.c    a path's directory
 *   made.c      the copies this command made of its SOURCE operands
 *   say.c       -v's lines
 *   values.c    the options' values, read as cp(1) reads them
 * Calls go one way, down this list's towers: file.c calls data.c and
 * dest.c, which call sparse.c, wb.c and parent.c; tree.c calls names.c
 * and node.c; say.c is called from all and calls none; none calls back
 * up. */
#ifndef CLI_CP_H
#define CLI_CP_H

#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "copy.h"
#include "opts.h"

/* On a terminal, a copy of this size or more shows its progress. */
#define CP_PROGRESS_MIN ((off_t)64 << 20)

/* -j: threads that walk a tree; without -j (jobs 0), CP_JOBS_DEFAULT, or
 * one for a tree in memory. */
#define CP_JOBS_DEFAULT 4
#define CP_JOBS_DEFAULT_TEXT "4"
#define CP_JOBS_MAX 64

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
/* SELinux's context, named alone: refused (all does not ask for it) */
#define CP_KEEP_CONTEXT 32u

/* A file as the system calls reach it: name, relative to the open
 * directory dir (AT_FDCWD for an operand), and its whole path, for
 * messages only: deep in a tree it may be longer than PATH_MAX. */
struct cp_at {
	int dir;
	const char *name;
	const char *path;
	/* A DST in a directory this copy made, which has no default ACL:
	 * nothing has its name until the copy makes it, and what the copy
	 * makes there has no ACL to take away. */
	bool fresh;
};

/* --preserve=links: which copy each multiply-linked SOURCE inode got. */
struct cp_links;

/* The copies made of the SOURCE operands (made.c). */
struct cp_made;

/* The options, as cmd.c reads them from the command line. */
struct cp_opts {
	struct cp_links *links; /* --preserve=links */
	/* SOURCE... DIRECTORY: the copies made so far of the operands,
	 * which a later operand may not overwrite; else NULL. */
	struct cp_made *made;
	bool verbose;     /* -v: each copy said on stdout, as cp(1) says it */
	bool debug;       /* --debug: -v, and how each file's data went */
	enum cp_clobber clobber;
	bool force;       /* -f: a DST that cannot be opened is replaced */
	unsigned int keep;  /* CP_KEEP_*: SOURCE's attributes the copy gets */
	/* --no-preserve=mode: what is made gets cp(1)'s default mode, not
	 * SOURCE's (cp_new_mode) */
	bool default_mode;
	bool xattr_loud;  /* --preserve=xattr: failing to copy one is an error */
	bool recursive;   /* -r: directories and what is in them */
	bool update;      /* -u: a DST not older than SOURCE is left alone */
	bool parents;     /* --parents: DIRECTORY/SOURCE, SOURCE's path kept */
	bool one_fs;      /* -x: directories on other filesystems copied empty */
	bool remove_dest; /* --remove-destination: DST removed, never opened */
	bool attrs_only;  /* --attributes-only: no data; DST's own left as it is */
	bool strip_slashes; /* --strip-trailing-slashes, of SOURCEs into a DIRECTORY */
	bool copy_contents; /* --copy-contents: -r reads special files as files */
	unsigned int jobs;  /* -j: threads that walk a tree; 0: not given */
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
	 * threshold for --debug. */
	int64_t wb_min;
	const char *wb_why;
	int progress;     /* 0: none; 1: large files, stderr a tty; 2: --progress */
	enum cp_reflink reflink;
	unsigned int sync; /* 0, PSPLICE_SYNC_DATA or PSPLICE_SYNC_METADATA */
};

/* The command line: the options, and where the SOURCEs go. */
struct cp_args {
	struct cp_opts opts;
	char **ops;             /* the operands */
	int n_ops;
	const char *target_dir; /* -t */
	bool no_target;         /* -T */
};

/* One regular file's copy. */
struct cp_job {
	const struct cp_opts *o;
	const char *src;
	const char *dst;  /* the file written, for messages */
	int dst_dir;      /* and as the system calls reach it */
	const char *dst_name;
	struct stat st;   /* of the source */
	bool fresh;       /* DST is a cp_at.fresh one: no need to look for it */
	bool created;     /* DST did not exist: remove it if the copy fails */
	bool dst_file;    /* DST is a regular file, empty, at offset 0 */
};

/* The values of --sync, --reflink (NULL: bare), --sparse, --backup (NULL
 * or empty: existing) and --preserve's LIST: a name, or a prefix of names
 * of one meaning; anything else a usage error of cmd. what: how a message
 * names the option, quoted; *named: the attributes LIST names, not
 * through all (values.c). */
unsigned int cp_value_sync(const struct cli_cmd *cmd, const char *arg);
enum cp_reflink cp_value_reflink(const struct cli_cmd *cmd, const char *arg);
enum cp_sparse cp_value_sparse(const struct cli_cmd *cmd, const char *arg);
enum cp_backup cp_value_backup(const struct cli_cmd *cmd, const char *arg, const char *what);
unsigned int cp_value_keep(const struct cli_cmd *cmd, const char *arg, const char *what,
			   unsigned int *named);

/* Each SOURCE of the command line copied where the operands say. A
 * missing or extra operand is a usage error of cmd. 0, or -1. */
int cp_operands(const struct cli_cmd *cmd, const struct cp_args *a);

/* "a/b" -> "a", "b" -> ".", "/b" -> "/" (parent.c) */
char *cp_parent_of(const char *path);
/* dir/name (names.c). */
char *cp_join(const char *dir, const char *name);
/* The entries of directory fd but . and .., NULL-ended, each and the
 * array the caller's to free; NULL with the error said, src naming the
 * directory (names.c). */
char **cp_read_names(int fd, const char *src);
/* Copy SOURCE, whatever it is, to the path dst (never into it). */
int cp_top(const struct cp_opts *o, const char *src, const char *dst);
/* Anything but a directory. st: of SOURCE, followed when follow; top:
 * named on the command line. 1: made, 0: left alone, -1: error. */
int cp_nondir(const struct cp_opts *o, const struct cp_at *src, const struct cp_at *dst,
	      const struct stat *st, bool follow, bool top);
/* Copy the regular (or, outside a tree, special) file src to dst. st: the
 * walk's stat of a regular src in a tree, taken as its own (NULL: src's is
 * asked once it is open). top: dst was named on the command line, not found
 * in a tree. 1: copied, 0: left alone (-n, -u, -i), -1: error. */
int cp_file(const struct cp_at *src, const struct cp_at *dst, const struct cp_opts *o,
	    const struct stat *st, bool top);
/* The data of j's SOURCE in to DST out, by the way that suits them; then
 * --debug, --preserve and --sync. 0, or -1 with the error said. */
int cp_copy_data(struct cp_job *j, int in, int out);
/* Writeback of what was just copied, n bytes at off, started through wb
 * (NULL: none); its failure is a write error of c. 0 or -1 (wb.c). */
int cp_wb_wrote(struct psplice_wb *wb, int64_t off, uint64_t n, struct cli_copy *c);

/* What becomes of an existing dst before a non-directory is copied over
 * it: the same file refused, -n, -u, -i, --backup. through: the copy
 * writes through a symbolic link dst (a regular file's data does). 1: go
 * on, *exists saying whether dst is still there; 0: skip; -1: error. */
int cp_existing(const struct cp_opts *o, const char *src, const struct cp_at *dst,
		const struct stat *st, bool through, bool *exists);
/* A node that is not a file's data takes the place of an existing DST, as
 * cp(1) replaces it; -l and -s only with -f, as cp(1). what: the kind
 * made, for messages. 1: go on. */
int cp_make_room(const struct cp_opts *o, const struct cp_at *src, const struct cp_at *dst,
		 const struct stat *st, const char *what);
/* "'a' and 'b' are the same file"; -1. */
int cp_refuse_same(const char *src, const char *dst);

/* --preserve: SOURCE's attributes (st) on DST. fd: NULL to reach both by
 * name (a directory, a symbolic link, a special file, what cp_file does
 * not open), else the open files { in, out } of a regular file's copy:
 * then only a regular DST is changed, as a device or a FIFO cp writes
 * into is not cp's to change. */
int cp_preserve(const struct cp_opts *o, const struct cp_at *src, const struct cp_at *dst,
		const struct stat *st, const int *fd);

/* The permission bits a new copy of st is made with, before the umask:
 * SOURCE's, those of mask, or with --no-preserve=mode cp(1)'s default,
 * 0777 for a directory, 0666 for anything else (attr.c). */
mode_t cp_new_mode(const struct cp_opts *o, const struct stat *st, mode_t mask);

/* Has the directory dir a default ACL, which what is made in it inherits?
 * true also when that cannot be told. */
bool cp_acl_default(const struct cp_at *dir);

/* --sparse=always: SOURCE's data read, each block of DST's size that is
 * all zeros left a hole; wb (may be NULL) paces the writes. */
int cp_copy_zeros(int in, int out, struct psplice_wb *wb, struct cli_copy *c);

struct cp_links *cp_links_new(void);
void cp_links_free(struct cp_links *l);
/* The copy of st's inode, dst, or an earlier one: 1 with *earlier the
 * path of the copy made under another of its names (the caller's to
 * free), waiting while it is being made; 0 with dst claimed as the copy,
 * which the caller makes then tells cp_links_made. counted: the entry is
 * forgotten once its other st_nlink - 1 names were seen; else kept to the
 * end. -1: no memory. */
int cp_links_claim(struct cp_links *l, const struct stat *st, const char *dst, bool counted,
		   char **earlier);
/* The copy claimed of st's inode was made (or not: then the next name
 * claims it). */
void cp_links_made(struct cp_links *l, const struct stat *st, bool made);
/* One more name of st's inode was linked to its copy. */
void cp_links_seen(struct cp_links *l, const struct stat *st);

/* -v: "'src' -> 'dst'" on stdout, and the backup of DST made since the
 * last line: path (DST's, as shown) and suffix; "removed 'dst'". Nothing
 * without -v (say.c). */
void cp_say(const struct cp_opts *o, const char *src, const char *dst);
void cp_say_backup(const struct cp_opts *o, const char *path, const char *suffix);
void cp_say_removed(const struct cp_opts *o, const char *dst);

struct cp_made *cp_made_new(void);
void cp_made_free(struct cp_made *m);
/* dst (its lstat) was made from the operand src, st its stat; -1: no
 * memory. */
int cp_made_add(struct cp_made *m, const struct stat *dst, const char *src,
		const struct stat *st);
/* Was dst (its lstat) made by this command? 0: no; 1: from another file
 * than st's; 2: from st's file (an operand given twice, or another name of
 * it); *src then names the operand it was made from. */
int cp_made_by(const struct cp_made *m, const struct stat *dst, const struct stat *st,
	       const char **src);

#endif
