/* psplice cp: one file to another, or into a directory, by reflink where
 * the filesystem shares extents, else copy_file_range, splice, read/write;
 * with -r, whole trees, each file by the same path. Here, its options,
 * read into struct cp_args as cp(1) takes them, and what is settled once
 * they are known. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cp.h"
#include "dirty.h"
#include "out.h"
#include "parse.h"

enum {
	OPT_SYNC = 0x200, OPT_WRITE_BEHIND, OPT_NO_WRITE_BEHIND, OPT_REFLINK, OPT_PROGRESS,
	OPT_PRESERVE, OPT_NO_PRESERVE, OPT_BACKUP, OPT_SPARSE, OPT_PARENTS, OPT_REMOVE_DEST,
	OPT_ATTRS_ONLY, OPT_STRIP_SLASHES, OPT_COPY_CONTENTS, OPT_DEBUG, OPT_CONTEXT
};

static const struct option longopts[] = {
	{ "reflink", optional_argument, NULL, OPT_REFLINK },
	{ "sync", required_argument, NULL, OPT_SYNC },
	{ "write-behind", optional_argument, NULL, OPT_WRITE_BEHIND },
	{ "no-write-behind", no_argument, NULL, OPT_NO_WRITE_BEHIND },
	{ "progress", no_argument, NULL, OPT_PROGRESS },
	{ "verbose", no_argument, NULL, 'v' },
	{ "debug", no_argument, NULL, OPT_DEBUG },
	{ "no-clobber", no_argument, NULL, 'n' },
	{ "interactive", no_argument, NULL, 'i' },
	{ "force", no_argument, NULL, 'f' },
	{ "remove-destination", no_argument, NULL, OPT_REMOVE_DEST },
	{ "update", no_argument, NULL, 'u' },
	{ "backup", optional_argument, NULL, OPT_BACKUP },
	{ "suffix", required_argument, NULL, 'S' },
	{ "archive", no_argument, NULL, 'a' },
	{ "preserve", optional_argument, NULL, OPT_PRESERVE },
	{ "no-preserve", required_argument, NULL, OPT_NO_PRESERVE },
	{ "recursive", no_argument, NULL, 'r' },
	{ "dereference", no_argument, NULL, 'L' },
	{ "no-dereference", no_argument, NULL, 'P' },
	{ "link", no_argument, NULL, 'l' },
	{ "symbolic-link", no_argument, NULL, 's' },
	{ "target-directory", required_argument, NULL, 't' },
	{ "no-target-directory", no_argument, NULL, 'T' },
	{ "parents", no_argument, NULL, OPT_PARENTS },
	{ "one-file-system", no_argument, NULL, 'x' },
	{ "copy-contents", no_argument, NULL, OPT_COPY_CONTENTS },
	{ "jobs", required_argument, NULL, 'j' },
	{ "strip-trailing-slashes", no_argument, NULL, OPT_STRIP_SLASHES },
	{ "attributes-only", no_argument, NULL, OPT_ATTRS_ONLY },
	{ "sparse", required_argument, NULL, OPT_SPARSE },
	{ "context", optional_argument, NULL, OPT_CONTEXT },
	CLI_COMMON_LONGOPTS
};

/* --write-behind[=SIZE]: every file, or files of SIZE or more. */
static int64_t parse_write_behind(const struct cli_cmd *cmd, const char *arg)
{
	int64_t n = arg ? cli_parse_size(arg) : 0;

	if (n < 0)
		cli_usage_error(cmd, "invalid --write-behind %s (want a size, e.g. 1G)",
				cli_quote(arg));
	return n;
}

/* Unless an option decided: with --sync, all of the copy goes to the disk
 * before cp returns, and writing it behind overlaps that writeback with
 * the copy; without, write-behind starts where the kernel's writeback
 * would, past the dirty background threshold. Below it the copy's dirty
 * pages stay in memory, as a cp(1) copy's would, and pacing them would
 * only make the copy slower. */
static void choose_write_behind(struct cp_opts *o)
{
	struct cli_dirty d;

	if (o->wb_why)
		return;
	if (o->sync) {
		o->wb_min = (int64_t)CLI_CHUNK;
		o->wb_why = "--sync threshold";
		return;
	}
	d = cli_dirty_background();
	o->wb_min = d.bytes < INT64_MAX ? (int64_t)d.bytes + 1 : INT64_MAX;
	o->wb_why = d.cgroup ? "memory cgroup's dirty background threshold" :
			       "dirty background threshold";
}

/* While the options are read: what they decide together, at the end. */
struct parse {
	const struct cli_cmd *cmd;
	struct cp_args *a;
	const char *backup, *suffix;
	bool backups;
	bool both; /* -l and -s */
};

/* What is copied and what becomes of an existing DST. */
static bool opt_what(struct parse *p, int c)
{
	struct cp_opts *o = &p->a->opts;

	switch (c) {
	case 'v': o->verbose = true; break;
	case OPT_DEBUG: o->verbose = o->debug = true; break;
	case 'n': o->clobber = CP_NO_CLOBBER; break;
	case 'i': o->clobber = CP_INTERACTIVE; break;
	case 'f': o->force = true; break;
	case OPT_REMOVE_DEST: o->remove_dest = true; break;
	case 'u': o->update = true; break;
	case 'b': p->backups = true; break;
	case OPT_BACKUP: p->backups = true; p->backup = optarg; break;
	case 'S': p->backups = true; p->suffix = optarg; break;
	case 'r': /* fall through */
	case 'R': o->recursive = true; break;
	case 'L': o->deref = CP_DEREF_ALWAYS; break;
	case 'P': o->deref = CP_DEREF_NEVER; break;
	case 'H': o->deref = CP_DEREF_ARGS; break;
	case 'l': p->both |= o->link == CP_LINK_SYMBOLIC; o->link = CP_LINK_HARD; break;
	case 's': p->both |= o->link == CP_LINK_HARD; o->link = CP_LINK_SYMBOLIC; break;
	case 't': p->a->target_dir = optarg; break;
	case 'T': p->a->no_target = true; break;
	case OPT_PARENTS: o->parents = true; break;
	default: return false;
	}
	return true;
}

/* -j N: 1 to CP_JOBS_MAX threads. */
static unsigned int parse_jobs(const struct cli_cmd *cmd, const char *s)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || !v || v > CP_JOBS_MAX)
		cli_usage_error(cmd, "invalid --jobs %s (want 1 to %d)", cli_quote(s), CP_JOBS_MAX);
	return (unsigned int)v;
}

/* Which files of a tree are copied, what is read of them, and by how many
 * threads. */
static bool opt_tree(struct parse *p, int c)
{
	struct cp_opts *o = &p->a->opts;

	switch (c) {
	case 'x': o->one_fs = true; break;
	case OPT_COPY_CONTENTS: o->copy_contents = true; break;
	case OPT_STRIP_SLASHES: o->strip_slashes = true; break;
	case 'j': o->jobs = parse_jobs(p->cmd, optarg); break;
	default: return false;
	}
	return true;
}

/* Is SELinux on here (its filesystem mounted, as libselinux asks)? */
static bool selinux(void)
{
	return access("/sys/fs/selinux/enforce", F_OK) == 0;
}

/* -Z and --context: SELinux's default context for the copy, or ctx. We
 * set none, as cp(1) sets none on a kernel without SELinux: -Z and a bare
 * --context are taken for it silently; --context=CTX, which asked for
 * one, is said to be ignored. */
static void context(const char *ctx)
{
	if (ctx && !selinux())
		cli_error(0, "warning: ignoring --context; it requires an SELinux-enabled kernel");
	else if (ctx)
		cli_error(0, "warning: ignoring --context; " CLI_NAME " sets no security context");
}

/* SOURCE's attributes the copy keeps. */
static bool opt_keep(struct parse *p, int c)
{
	struct cp_opts *o = &p->a->opts;
	unsigned int bits, named = 0;

	switch (c) {
	case 'p':
		o->keep |= CP_KEEP_MODE | CP_KEEP_OWNER | CP_KEEP_TIMES;
		o->default_mode = false;
		break;
	case 'd': o->deref = CP_DEREF_NEVER; o->keep |= CP_KEEP_LINKS; break;
	case 'a':
		o->recursive = true;
		o->deref = CP_DEREF_NEVER;
		o->keep = CP_KEEP_ALL;
		o->default_mode = false;
		break;
	case OPT_PRESERVE:
		if (!optarg)
			o->keep |= CP_KEEP_MODE | CP_KEEP_OWNER | CP_KEEP_TIMES;
		else
			o->keep |= cp_value_keep(p->cmd, optarg, "'--preserve'", &named);
		/* Named, not part of all: failing is an error. */
		if (named & CP_KEEP_XATTR)
			o->xattr_loud = true;
		o->default_mode &= !(o->keep & CP_KEEP_MODE);
		break;
	case OPT_NO_PRESERVE:
		/* Not kept, the mode is cp(1)'s default: the last of these
		 * options decides. */
		bits = cp_value_keep(p->cmd, optarg, "'--no-preserve'", &named);
		o->keep &= ~bits;
		o->default_mode |= (bits & CP_KEEP_MODE) != 0;
		break;
	case 'Z': break;
	case OPT_CONTEXT: context(optarg); break;
	default: return false;
	}
	return true;
}

/* How the data goes: reflinks, holes, write-behind, durability, progress. */
static bool opt_data(struct parse *p, int c)
{
	struct cp_opts *o = &p->a->opts;

	switch (c) {
	case OPT_SPARSE: o->sparse = cp_value_sparse(p->cmd, optarg); break;
	case OPT_SYNC: o->sync = cp_value_sync(p->cmd, optarg); break;
	case OPT_WRITE_BEHIND:
		o->wb_min = parse_write_behind(p->cmd, optarg);
		o->wb_why = "--write-behind threshold";
		break;
	case OPT_NO_WRITE_BEHIND:
		o->wb_min = -1;
		o->wb_why = "--no-write-behind";
		break;
	case OPT_PROGRESS: o->progress = 2; break;
	case OPT_ATTRS_ONLY: o->attrs_only = true; break;
	case OPT_REFLINK: o->reflink = cp_value_reflink(p->cmd, optarg); break;
	default: return false;
	}
	return true;
}

/* What the options decide together, and what they leave to cp(1)'s
 * defaults. */
static void opts_end(struct parse *p)
{
	struct cp_opts *o = &p->a->opts;

	if (p->both)
		cli_usage_error(p->cmd, "cannot make both hard and symbolic links");
	if (p->backups) {
		o->backup = cp_value_backup(p->cmd, p->backup ? p->backup : getenv("VERSION_CONTROL"),
					 p->backup ? "'backup type'" : "'$VERSION_CONTROL'");
		o->suffix = p->suffix && *p->suffix && !strchr(p->suffix, '/') ? p->suffix : "~";
	}
	if (o->backup != CP_BACKUP_NONE && o->clobber == CP_NO_CLOBBER)
		cli_usage_error(p->cmd, "options --backup and --no-clobber are mutually exclusive");
	if (o->reflink == CP_REFLINK_ALWAYS && o->sparse != CP_SPARSE_AUTO)
		cli_usage_error(p->cmd, "--reflink can be used only with --sparse=auto");
	/* cp(1)'s choice: -r copies links as links, unless -l links what
	 * they point to. */
	if (o->deref == CP_DEREF_UNSET)
		o->deref = o->recursive && o->link != CP_LINK_HARD ? CP_DEREF_NEVER :
								     CP_DEREF_ALWAYS;
}

/* The options and operands of argv into a; a usage error exits. */
static void cp_parse(const struct cli_cmd *cmd, int argc, char **argv, struct cp_args *a)
{
	struct parse p = { .cmd = cmd, .a = a, .suffix = getenv("SIMPLE_BACKUP_SUFFIX") };
	int c;

	*a = (struct cp_args){ 0 };
	while ((c = getopt_long(argc, argv, "abdfHij:lLnpPrRsS:t:TuvxZ", longopts, NULL)) != -1)
		if (!opt_what(&p, c) && !opt_tree(&p, c) && !opt_keep(&p, c) &&
		    !opt_data(&p, c))
			cli_common_option(cmd, c);
	opts_end(&p);
	a->ops = argv + optind;
	a->n_ops = argc - optind;
}

/* What is settled once the options are known: write-behind's threshold,
 * the umask, the progress line, the hard links table. -1 with the error
 * said. */
static int cp_settle(struct cp_opts *o)
{
	/* --preserve=context, named: cp(1) refuses it where it cannot keep
	 * it, before anything is copied (all asks only for what can be). */
	if (o->keep & CP_KEEP_CONTEXT) {
		cli_error(0, selinux() ? "cannot preserve security context: " CLI_NAME
			  " does not copy SELinux contexts" :
			  "cannot preserve security context without an SELinux-enabled kernel");
		return -1;
	}
	choose_write_behind(o);
	if ((o->keep & CP_KEEP_LINKS) && !(o->links = cp_links_new())) {
		cli_error(ENOMEM, "cannot copy");
		return -1;
	}
	o->umask = umask(0);
	umask(o->umask);
	/* On a terminal, a copy long enough to wait for shows how it goes. */
	if (!o->progress && isatty(STDERR_FILENO))
		o->progress = 1;
	return 0;
}

static int cp_main(const struct cli_cmd *cmd, int argc, char **argv)
{
	struct cp_args a;
	int rc;

	cp_parse(cmd, argc, argv, &a);
	if (cli_parse_only)
		return 0;
	if (cp_settle(&a.opts) < 0)
		return 1;
	rc = cp_operands(cmd, &a);
	cp_links_free(a.opts.links);
	return rc < 0 ? 1 : 0;
}

const struct cli_cmd cli_cmd_cp = {
	.name = "cp",
	.args = "SOURCE DEST\n"
		"SOURCE... DIRECTORY\n"
		"-t DIRECTORY SOURCE...",
	.summary = "copy files and trees",
	.help =
	"Copy SOURCE to DEST, or each SOURCE into DIRECTORY under its name. The\n"
	"kernel moves the bytes: extents are shared (reflink) where the\n"
	"filesystem can, else copy_file_range(2), sendfile(2) or splice(2), and\n"
	"read/write only as a last resort. A new DEST gets SOURCE's permission\n"
	"bits (less the umask); a DEST created by a copy that fails is removed.\n"
	"\n"
	"A SOURCE larger than the kernel's dirty background threshold (from\n"
	"/proc/sys/vm/dirty_background_*, lowered to the memory cgroup's share\n"
	"where its limit is lower), or with --sync larger than 8 MiB, that is\n"
	"not reflinked is copied with write-behind: each 8 MiB written is sent\n"
	"to the disk and dropped from the page cache, so the copy does not fill\n"
	"memory with dirty pages. Smaller copies stay in the page cache, as a\n"
	"cp(1) copy does, until the kernel writes them.\n"
	"\n"
	"A value of --backup, --preserve, --no-preserve, --reflink, --sparse or\n"
	"--sync may be cut short to any prefix that names one meaning\n"
	"(--preserve=time, --backup=nu). A DEST that is a symbolic link to\n"
	"nothing is refused, but written through (its target made) when\n"
	"POSIXLY_CORRECT is set, as cp(1) does.\n"
	"\n"
	"  -a, --archive      -r -P --preserve=all\n"
	"      --attributes-only\n"
	"                     copy no data, only the attributes kept: a new DEST\n"
	"                     is made empty, an existing one keeps its data\n"
	"                     (a link or a FIFO takes its place only with -f)\n"
	"  -b, --backup[=CONTROL]\n"
	"                     move an existing DEST aside first: 'numbered' (t),\n"
	"                     'existing' (nil, the default), 'simple' (never),\n"
	"                     'none' (off); $VERSION_CONTROL for -b\n"
	"      --copy-contents\n"
	"                     with -r, read FIFOs and devices as files, rather\n"
	"                     than making them anew\n"
	"  -d                 -P --preserve=links\n"
	"  -f, --force        if an existing DEST cannot be opened for writing,\n"
	"                     remove it and try again\n"
	"  -i, --interactive  ask before overwriting (on stderr, read on stdin)\n"
	"  -H                 follow symbolic links given as SOURCE\n"
	"  -j, --jobs=N       with -r, copy a tree in N threads (default "
	CP_JOBS_DEFAULT_TEXT ", 1 from\n"
	"                     tmpfs); one walks it with -i, -v and --progress\n"
	"  -l, --link         hard link files instead of copying\n"
	"  -L, --dereference  always follow symbolic links in SOURCE\n"
	"  -n, --no-clobber   do not overwrite an existing DEST (and succeed)\n"
	"  -P, --no-dereference\n"
	"                     copy symbolic links as links (the default with -r)\n"
	"  -p                 --preserve=mode,ownership,timestamps\n"
	"      --preserve[=LIST]\n"
	"                     keep these of SOURCE's attributes: 'mode' (with\n"
	"                     ACLs), 'ownership' (as root; without it the\n"
	"                     set-ID bits are dropped), 'timestamps', 'links'\n"
	"                     (hard links among the files copied), 'xattr',\n"
	"                     'all'; none given: the first three. 'context'\n"
	"                     is refused: SELinux contexts are not copied\n"
	"      --no-preserve=LIST\n"
	"                     do not keep these; with 'mode', a new file\n"
	"                     gets 0666, a new directory 0777, less the umask\n"
	"      --parents      copy SOURCE to DIRECTORY/SOURCE, making its\n"
	"                     directories\n"
	"  -r, -R, --recursive\n"
	"                     copy a directory SOURCE and all it holds; symbolic\n"
	"                     links are copied as links\n"
	"      --reflink[=WHEN]\n"
	"                     'auto' (the default): share extents where the\n"
	"                     filesystem can, else copy; 'always' (or no WHEN):\n"
	"                     share them or fail; 'never': always copy, and not\n"
	"                     by copy_file_range, which shares them on XFS\n"
	"      --remove-destination\n"
	"                     remove an existing DEST before making the copy\n"
	"                     (-f removes it only if it cannot be opened)\n"
	"  -s, --symbolic-link\n"
	"                     make symbolic links to SOURCE instead of copying\n"
	"  -S, --suffix=SUFFIX\n"
	"                     of simple backups (default '~')\n"
	"      --sparse=WHEN  'auto' (the default): keep the holes of a SOURCE\n"
	"                     that has fewer blocks than bytes; 'always': make\n"
	"                     blocks of zeros holes too; 'never': write zeros\n"
	"      --strip-trailing-slashes\n"
	"                     remove the slashes at the end of each SOURCE\n"
	"                     copied into a DIRECTORY\n"
	"      --sync=WHEN    after the copy, make DEST durable: 'none' (the\n"
	"                     default), 'data' (fdatasync) or 'full' (fsync, and\n"
	"                     the directory, so that a new name survives too)\n"
	"  -t, --target-directory=DIRECTORY\n"
	"                     copy all SOURCEs into DIRECTORY\n"
	"  -T, --no-target-directory\n"
	"                     DEST is the name to copy to, even a directory\n"
	"  -u, --update       only when SOURCE is newer than DEST, or DEST missing\n"
	"      --write-behind[=SIZE]\n"
	"                     write behind every file, or files of SIZE or more\n"
	"      --no-write-behind\n"
	"                     leave the writeback of every copy to the kernel\n"
	"      --progress     show bytes, rate and ETA on standard error while\n"
	"                     copying, then each file's totals (a terminal shows\n"
	"                     the line unasked, then clears it, for a file of\n"
	"                     64 MiB or more)\n"
	"  -v, --verbose      say each copy made on standard output, as cp(1):\n"
	"                     'SOURCE' -> 'DEST', with (backup: 'DEST~') and\n"
	"                     removed 'DEST' lines\n"
	"      --debug        -v, and on standard error which kernel path moved\n"
	"                     each file's bytes, and how many; whether\n"
	"                     write-behind paced a file of 8 MiB or more, and\n"
	"                     why; with --sync, the level reached\n"
	"  -x, --one-file-system\n"
	"                     with -r, copy a directory on another filesystem\n"
	"                     than its parent (a mount point) empty\n"
	"  -Z, --context[=CTX]\n"
	"                     taken and ignored, as cp(1) without SELinux: no\n"
	"                     security context is set (CTX given: a warning)\n",
	.main = cp_main,
};
