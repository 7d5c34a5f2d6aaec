/* psplice cp -r: a SOURCE directory and the tree under it, walked by
 * directory descriptors (a path deep in a tree may be longer than
 * PATH_MAX), each entry copied by the same path. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "cp.h"
#include "pool.h"
#include "out.h"
#include "sys.h"

/* Levels of a tree whose two directories stay open: 64, or an eighth of
 * the descriptors we may open (with -j, of those left once each thread
 * has CP_THREAD_FDS and the tasks theirs). Below them each level closes its parent's
 * pair and opens it again from its own through "..", so that a tree
 * thousands of levels deep needs no descriptor per level. */
#define CP_OPEN_LEVELS 64
/* -j: what a thread opens besides its levels (a directory read, a file's
 * two sides, the engine's pipe, a path too long to open at once), and the
 * levels a task's walk keeps open before it closes those above. */
#define CP_THREAD_FDS 8
#define CP_TASK_LEVELS 8
/* A task holds its parent's two descriptors, its levels' and one more
 * level's while it opens it. */
#define CP_TASK_FDS (2 * (CP_TASK_LEVELS + 2))

/* One walk from a SOURCE directory to its copy. */
struct cp_tree {
	const struct cp_opts *opts;
	const char *top_src, *top_dst;
	struct stat top;  /* of top_dst, once made: not to be copied into itself */
	bool top_known;
	unsigned int open; /* levels whose directories are open */
	unsigned int max_open;
	struct cp_pool *pool; /* -j: the threads that share the walk, or NULL */
	unsigned int pool_max_open; /* max_open of each task's walk */
};

/* A directory being copied: both sides open (O_PATH), or -1 while closed. */
struct cp_level {
	struct cp_level *up;
	int src, dst;
	struct stat src_st, dst_st;
	const char *src_path, *dst_path;
	bool fresh;  /* dst: made by this copy, without a default ACL */
	struct cp_kids kids; /* subdirectories handed to the pool */
};

/* A subdirectory handed to the pool: its walk, and a level of its own for
 * the directories that hold it (their descriptors duplicated: the level a
 * walk has may be closed and opened again as it goes deeper). */
struct cp_task {
	struct cp_tree t;
	struct cp_level up;
	char *name, *src_path, *dst_path;
	struct stat st;
	bool follow;
};

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
static int dir_mode(const struct cp_opts *o, const struct cp_at *dst, const struct stat *st,
		    mode_t inherited)
{
	mode_t mode = cp_new_mode(o, st, 01777) & ~o->umask;

	if (fchmodat(dst->dir, dst->name, mode | inherited, 0) < 0) {
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

/* Each entry of me's SOURCE directory; 0, or -1 when one failed. */
static int cp_entries(struct cp_tree *t, struct cp_level *me)
{
	char **names = cp_read_names(me->src, me->src_path), **name;
	int rc = names ? 0 : -1;

	for (name = names; name && *name; name++) {
		/* A level below that could not find this one again ends it. */
		if (me->src >= 0 && cp_node(t, me, *name) < 0)
			rc = -1;
		free(*name);
	}
	free(names);
	return rc;
}

/* Mode and times last: the entries made in it changed the mtime. An
 * existing directory keeps its mode, as with cp -r. src and dst name it
 * in up's directories (or, at the top, as given). */
static int dir_attrs(const struct cp_opts *o, const struct cp_level *up,
		     const struct cp_at *src, const struct cp_at *dst, const struct stat *st,
		     int made, mode_t inherited)
{
	struct cp_at s = *src, d = *dst;
	int rc = 0;

	if (up) {
		s.dir = up->src;
		d.dir = up->dst;
	}
	d.fresh = d.fresh && made;
	if (made && !(o->keep & CP_KEEP_MODE) && dir_mode(o, &d, st, inherited) < 0)
		rc = -1;
	if (o->keep && cp_preserve(o, &s, &d, st, NULL) < 0)
		rc = -1;
	return rc;
}

/* A directory and what it holds. src and dst name it in up's directories
 * (or, at the top, as given). */
static int cp_dir(struct cp_tree *t, struct cp_level *up, const struct cp_at *src,
		  const struct cp_at *dst, const struct stat *st, bool follow)
{
	struct cp_level me = { .up = up, .src_path = src->path, .dst_path = dst->path };
	mode_t inherited = 0;
	int made, rc;

	/* The copy of the top directory is made inside it: copying it would
	 * never end. */
	if (t->top_known && cli_same_inode(st, &t->top)) {
		cli_error(0, "cannot copy a directory, %s, into itself, %s",
			  cli_quote(t->top_src), cli_quote(t->top_dst));
		return -1;
	}
	made = make_dir(t, src, dst);
	if (made < 0)
		return -1;
	/* Said when made, before what it holds, as cp(1) says it; one
	 * merged into is not. */
	if (made)
		cp_say(t->opts, src->path, dst->path);
	if (open_level(t, &me, src, dst, follow) < 0)
		return -1;
	if (made)
		inherited = me.dst_st.st_mode & S_ISGID;
	/* A directory made in a fresh one inherits no default ACL; any other
	 * made may have, from the directory it was made in. */
	me.fresh = made && ((up && up->fresh) || !cp_acl_default(dst));
	if (!t->top_known) {
		t->top = me.dst_st;
		t->top_known = true;
	}
	maybe_close_up(t, &me);
	/* -x: a directory of another filesystem than the one it is in (a
	 * mount point) is made, as cp -x makes it, but stays empty. */
	rc = t->opts->one_fs && up && st->st_dev != up->src_st.st_dev ? 0 : cp_entries(t, &me);
	if (t->pool && cp_pool_wait(t->pool, &me.kids) < 0)
		rc = -1;
	if (me.src < 0 || reopen_up(t, &me) < 0) {
		close_level(t, &me);
		return -1;
	}
	close_level(t, &me);
	return dir_attrs(t->opts, up, src, dst, st, made, inherited) < 0 ? -1 : rc;
}

/* A task's subdirectory copied, in the worker that took it. */
static int run_task(void *arg)
{
	struct cp_task *k = arg;
	const struct cp_at src = { k->up.src, k->name, k->src_path, false };
	const struct cp_at dst = { k->up.dst, k->name, k->dst_path, k->up.fresh };
	int rc = cp_dir(&k->t, &k->up, &src, &dst, &k->st, k->follow);

	close_level(&k->t, &k->up);
	free(k->name);
	free(k->src_path);
	free(k->dst_path);
	free(k);
	return rc;
}

/* The subdirectory name of up, handed to the pool if it has room; its
 * paths *sp and *dp are the task's then. false: walk it here. */
static bool hand_over(struct cp_tree *t, struct cp_level *up, const char *name, char **sp,
		      char **dp, const struct stat *st, bool follow)
{
	struct cp_task *k;

	if (!cp_pool_reserve(t->pool))
		return false;
	k = malloc(sizeof(*k));
	if (!k || !(k->name = strdup(name))) {
		free(k);
		cp_pool_unreserve(t->pool);
		return false;
	}
	/* Its own walk, which opens its own levels. up's paths outlive it:
	 * up waits for its tasks before its walk returns. */
	k->t = *t;
	k->t.open = 1;
	k->t.max_open = t->pool_max_open;
	k->up = (struct cp_level){ .src_st = up->src_st, .dst_st = up->dst_st,
				   .src_path = up->src_path, .dst_path = up->dst_path,
				   .fresh = up->fresh };
	k->up.src = fcntl(up->src, F_DUPFD_CLOEXEC, 0);
	k->up.dst = k->up.src >= 0 ? fcntl(up->dst, F_DUPFD_CLOEXEC, 0) : -1;
	if (k->up.dst < 0) {
		if (k->up.src >= 0)
			close(k->up.src);
		free(k->name);
		free(k);
		cp_pool_unreserve(t->pool);
		return false;
	}
	k->src_path = *sp;
	k->dst_path = *dp;
	*sp = *dp = NULL;
	k->st = *st;
	k->follow = follow;
	cp_pool_push(t->pool, k, &up->kids);
	return true;
}

/* name, an entry of up: a directory, or anything else. */
static int cp_node(struct cp_tree *t, struct cp_level *up, const char *name)
{
	bool follow = t->opts->deref == CP_DEREF_ALWAYS;
	char *sp = cp_join(up->src_path, name), *dp = cp_join(up->dst_path, name);
	struct cp_at src = { up->src, name, sp, false }, dst = { up->dst, name, dp, up->fresh };
	struct stat st;
	int rc = -1;

	if (!sp || !dp)
		cli_error(ENOMEM, "cannot copy %s", cli_quote(up->src_path));
	else if (fstatat(up->src, name, &st, follow ? 0 : AT_SYMLINK_NOFOLLOW) < 0)
		cli_error(errno, "cannot stat %s", cli_quote(sp));
	else if (S_ISDIR(st.st_mode) && t->pool && hand_over(t, up, name, &sp, &dp, &st, follow))
		rc = 0;
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

/* -j N: the walk shared by N threads, unless an option needs one order
 * (-v's lines, -i's questions, --progress's line) or the descriptors we
 * may open are too few: then t->pool stays NULL and the walk is one
 * thread's. Half of those left once each thread has its own go to the
 * tasks, half to the walk of the top. */
static void share_walk(struct cp_tree *t, const struct cp_opts *o, unsigned int jobs,
		       rlim_t fds)
{
	rlim_t left = fds > 16 + (rlim_t)CP_THREAD_FDS * jobs ?
			      fds - 16 - (rlim_t)CP_THREAD_FDS * jobs : 0;
	rlim_t tasks = left / 2 / CP_TASK_FDS;

	t->max_open = CP_OPEN_LEVELS;
	if (fds / 8 < CP_OPEN_LEVELS)
		t->max_open = fds / 8 > 1 ? (unsigned int)(fds / 8) : 1;
	if (jobs < 2 || o->verbose || o->clobber == CP_INTERACTIVE || o->progress == 2 ||
	    !tasks)
		return;
	if (left / 8 < t->max_open)
		t->max_open = left / 8 > 1 ? (unsigned int)(left / 8) : 1;
	t->pool_max_open = CP_TASK_LEVELS;
	t->pool = cp_pool_new(jobs - 1, tasks < 4 * jobs ? (unsigned int)tasks : 4 * jobs, run_task);
}

/* Without -j: CP_JOBS_DEFAULT threads, but one for a tree in memory
 * (tmpfs, ramfs). There is no disk to wait for: the copy is the CPU's
 * alone, and more threads spent more of it (3 % more for a warm tree of
 * 20,000 small files) to end sooner. */
static unsigned int jobs_for(const struct cp_opts *o, const char *src)
{
	struct statfs sf;

	if (o->jobs)
		return o->jobs;
	if (statfs(src, &sf) == 0 && ((unsigned long)sf.f_type == TMPFS_MAGIC ||
				      (unsigned long)sf.f_type == RAMFS_MAGIC))
		return 1;
	return CP_JOBS_DEFAULT;
}

int cp_top(const struct cp_opts *o, const char *src, const char *dst)
{
	struct cp_tree t = { .opts = o, .top_src = src, .top_dst = dst };
	const struct cp_at s = { AT_FDCWD, src, src, false }, d = { AT_FDCWD, dst, dst, false };
	bool follow = o->deref != CP_DEREF_NEVER;
	struct cp_opts shared;
	struct rlimit rl;
	struct stat st;
	int rc;

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
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur > (1u << 20))
		rl.rlim_cur = 1u << 20;
	share_walk(&t, o, jobs_for(o, src), rl.rlim_cur);
	/* Threads would draw their progress lines over each other's: the
	 * one shown on a terminal for a large file is left out. */
	if (t.pool) {
		shared = *o;
		shared.progress = 0;
		t.opts = &shared;
	}
	rc = cp_dir(&t, NULL, &s, &d, &st, follow);
	cp_pool_free(t.pool);
	return rc;
}
