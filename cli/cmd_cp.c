/* psplice cp: one file to another, or into a directory, by reflink where
 * the filesystem shares extents, else copy_file_range, splice, read/write;
 * with -r, whole trees, each file by the same path. */
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
#include "dirty.h"

enum {
	OPT_SYNC = 0x200, OPT_WRITE_BEHIND, OPT_NO_WRITE_BEHIND, OPT_REFLINK, OPT_PROGRESS,
	OPT_PRESERVE, OPT_NO_PRESERVE, OPT_BACKUP, OPT_SPARSE, OPT_PARENTS
};

static const struct option longopts[] = {
	{ "reflink", optional_argument, NULL, OPT_REFLINK },
	{ "sync", required_argument, NULL, OPT_SYNC },
	{ "write-behind", optional_argument, NULL, OPT_WRITE_BEHIND },
	{ "no-write-behind", no_argument, NULL, OPT_NO_WRITE_BEHIND },
	{ "progress", no_argument, NULL, OPT_PROGRESS },
	{ "verbose", no_argument, NULL, 'v' },
	{ "no-clobber", no_argument, NULL, 'n' },
	{ "interactive", no_argument, NULL, 'i' },
	{ "force", no_argument, NULL, 'f' },
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
	{ "sparse", required_argument, NULL, OPT_SPARSE },
	CLI_COMMON_LONGOPTS
};

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
static void choose_write_behind(struct cp_job *o)
{
	struct cli_dirty d;

	if (o->wb_why)
		return;
	if (o->sync) {
		o->wb_min = (int64_t)CP_WB_CHUNK;
		o->wb_why = "--sync threshold";
		return;
	}
	d = cli_dirty_background();
	o->wb_min = d.bytes < INT64_MAX ? (int64_t)d.bytes + 1 : INT64_MAX;
	o->wb_why = d.cgroup ? "memory cgroup's dirty background threshold" :
			       "dirty background threshold";
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

/* --preserve=LIST, --no-preserve=LIST -> CP_KEEP_* */
static unsigned int parse_keep(const struct cli_cmd *cmd, const char *arg, const char *opt)
{
	static const struct { const char *name; unsigned int bits; } attrs[] = {
		{ "mode", CP_KEEP_MODE }, { "ownership", CP_KEEP_OWNER },
		{ "timestamps", CP_KEEP_TIMES }, { "links", CP_KEEP_LINKS },
		{ "xattr", CP_KEEP_XATTR }, { "all", CP_KEEP_ALL },
	};
	unsigned int bits = 0, i;
	size_t len;

	for (;;) {
		len = strcspn(arg, ",");
		for (i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++)
			if (strlen(attrs[i].name) == len && !strncmp(arg, attrs[i].name, len))
				break;
		if (i == sizeof(attrs) / sizeof(attrs[0]))
			cli_usage_error(cmd, "invalid argument '%.*s' for '%s'\n"
					"Valid arguments are:\n  - 'mode'\n  - 'ownership'\n"
					"  - 'timestamps'\n  - 'links'\n  - 'xattr'\n  - 'all'",
					(int)len, cli_quote(arg) + 1, opt);
		bits |= attrs[i].bits;
		if (!arg[len])
			return bits;
		arg += len + 1;
	}
}

/* --backup=CONTROL (or $VERSION_CONTROL), with cp(1)'s names */
static enum cp_backup parse_backup(const struct cli_cmd *cmd, const char *arg,
				   const char *what)
{
	static const struct { const char *name; enum cp_backup kind; } kinds[] = {
		{ "none", CP_BACKUP_NONE }, { "off", CP_BACKUP_NONE },
		{ "simple", CP_BACKUP_SIMPLE }, { "never", CP_BACKUP_SIMPLE },
		{ "existing", CP_BACKUP_EXISTING }, { "nil", CP_BACKUP_EXISTING },
		{ "numbered", CP_BACKUP_NUMBERED }, { "t", CP_BACKUP_NUMBERED },
	};
	unsigned int i;

	if (!arg || !*arg)
		return CP_BACKUP_EXISTING;
	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(arg, kinds[i].name))
			return kinds[i].kind;
	cli_usage_error(cmd, "invalid argument %s for %s\n"
			"Valid arguments are:\n  - 'none', 'off'\n  - 'simple', 'never'\n"
			"  - 'existing', 'nil'\n  - 'numbered', 't'", cli_quote(arg), what);
}

static enum cp_sparse parse_sparse(const struct cli_cmd *cmd, const char *arg)
{
	if (!strcmp(arg, "auto"))
		return CP_SPARSE_AUTO;
	if (!strcmp(arg, "always"))
		return CP_SPARSE_ALWAYS;
	if (!strcmp(arg, "never"))
		return CP_SPARSE_NEVER;
	cli_usage_error(cmd, "invalid argument %s for '--sparse'\n"
			"Valid arguments are:\n  - 'never'\n  - 'auto'\n  - 'always'",
			cli_quote(arg));
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

/* --parents: "dir" + "a/b/f" -> "dir/a/b/f", with dir/a and dir/a/b made
 * when missing, each with the mode of the directory it stands for (less
 * the umask, unless the mode is kept). */
static char *parents_path(const struct cp_job *o, const char *dir, const char *src)
{
	char *dst, *slash;
	size_t skip;
	struct stat st;
	int rc = 0;

	while (*src == '/')
		src++;
	if (asprintf(&dst, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", src) < 0) {
		cli_error(ENOMEM, "cannot copy %s", cli_quote(src));
		return NULL;
	}
	skip = strlen(dst) - strlen(src);
	for (slash = strchr(dst + skip, '/'); slash && !rc; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		if (stat(dst + skip, &st) < 0) {
			cli_error(errno, "cannot stat %s", cli_quote(dst + skip));
			rc = -1;
		} else if (mkdir(dst, (st.st_mode & 07777) & ~o->umask) == 0) {
			const struct cp_at from = { AT_FDCWD, dst + skip, dst + skip },
					   to = { AT_FDCWD, dst, dst };

			if (o->keep)
				rc = cp_preserve_at(o, &from, &to, &st);
		} else if (errno != EEXIST || stat(dst, &st) < 0 || !S_ISDIR(st.st_mode)) {
			cli_error(errno == EEXIST ? ENOTDIR : errno, "cannot make directory %s",
				  cli_quote(dst));
			rc = -1;
		}
		*slash = '/';
	}
	if (rc < 0) {
		free(dst);
		return NULL;
	}
	return dst;
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

/* Each SOURCE into dir: under its name, or its whole path with --parents. */
static int cp_into(const struct cp_job *o, char **srcs, int n, const char *dir)
{
	char *dst;
	int i, rc = 0;

	for (i = 0; i < n; i++) {
		dst = o->parents ? parents_path(o, dir, srcs[i]) : path_in_dir(dir, srcs[i]);
		if (!dst) {
			if (!o->parents)
				cli_error(ENOMEM, "cannot copy %s", cli_quote(srcs[i]));
			rc = -1;
			continue;
		}
		if (cp_top(o, srcs[i], dst) < 0)
			rc = -1;
		free(dst);
	}
	return rc;
}

/* SOURCE DEST, SOURCE... DIRECTORY, -t DIRECTORY SOURCE..., -T SOURCE DEST */
static int cp_operands(const struct cli_cmd *cmd, const struct cp_job *o, char **ops,
		       int n, const char *target_dir, bool no_target)
{
	if (target_dir && no_target)
		cli_usage_error(cmd, "cannot combine --target-directory (-t) and "
				"--no-target-directory (-T)");
	if (n == 0)
		cli_usage_error(cmd, "missing file operand");
	if (target_dir) {
		if (!target_ok(target_dir, "target directory"))
			return -1;
		return cp_into(o, ops, n, target_dir);
	}
	if (n == 1)
		cli_usage_error(cmd, "missing destination file operand after %s",
				cli_quote(ops[0]));
	if (no_target && n > 2)
		cli_usage_error(cmd, "extra operand %s", cli_quote(ops[2]));
	if (o->parents && !is_dir(ops[n - 1]))
		cli_usage_error(cmd, "with --parents, the destination must be a directory");
	if (no_target || (n == 2 && !is_dir(ops[1]))) {
		if (!o->recursive && !slash_ok(ops[1]))
			return -1;
		return cp_top(o, ops[0], ops[1]);
	}
	if (!target_ok(ops[n - 1], "target"))
		return -1;
	return cp_into(o, ops, n - 1, ops[n - 1]);
}

static int cp_main(const struct cli_cmd *cmd, int argc, char **argv)
{
	struct cp_job opts = { 0 };
	const char *target_dir = NULL, *backup = NULL, *suffix = getenv("SIMPLE_BACKUP_SUFFIX");
	bool no_target = false, backups = false, both = false;
	int c;

	while ((c = getopt_long(argc, argv, "abdfHilLnpPrRsS:t:Tuv", longopts, NULL)) != -1) {
		switch (c) {
		case 'v': opts.verbose = true; break;
		case 'n': opts.clobber = CP_NO_CLOBBER; break;
		case 'i': opts.clobber = CP_INTERACTIVE; break;
		case 'f': opts.force = true; break;
		case 'u': opts.update = true; break;
		case 'b': backups = true; break;
		case OPT_BACKUP: backups = true; backup = optarg; break;
		case 'S': backups = true; suffix = optarg; break;
		case 'p': opts.keep |= CP_KEEP_MODE | CP_KEEP_OWNER | CP_KEEP_TIMES; break;
		case 'd': opts.deref = CP_DEREF_NEVER; opts.keep |= CP_KEEP_LINKS; break;
		case 'a':
			opts.recursive = true;
			opts.deref = CP_DEREF_NEVER;
			opts.keep = CP_KEEP_ALL;
			break;
		case OPT_PRESERVE:
			if (!optarg)
				opts.keep |= CP_KEEP_MODE | CP_KEEP_OWNER | CP_KEEP_TIMES;
			else
				opts.keep |= parse_keep(cmd, optarg, "--preserve");
			/* Named, not part of all: failing is an error. */
			if (optarg && strstr(optarg, "xattr"))
				opts.xattr_loud = true;
			break;
		case OPT_NO_PRESERVE:
			opts.keep &= ~parse_keep(cmd, optarg, "--no-preserve");
			break;
		case 'r': /* fall through */
		case 'R': opts.recursive = true; break;
		case 'L': opts.deref = CP_DEREF_ALWAYS; break;
		case 'P': opts.deref = CP_DEREF_NEVER; break;
		case 'H': opts.deref = CP_DEREF_ARGS; break;
		case 'l': both |= opts.link == CP_LINK_SYMBOLIC; opts.link = CP_LINK_HARD; break;
		case 's': both |= opts.link == CP_LINK_HARD; opts.link = CP_LINK_SYMBOLIC; break;
		case 't': target_dir = optarg; break;
		case 'T': no_target = true; break;
		case OPT_PARENTS: opts.parents = true; break;
		case OPT_SPARSE: opts.sparse = parse_sparse(cmd, optarg); break;
		case OPT_SYNC: opts.sync = parse_sync(cmd, optarg); break;
		case OPT_WRITE_BEHIND:
			opts.wb_min = parse_write_behind(cmd, optarg);
			opts.wb_why = "--write-behind threshold";
			break;
		case OPT_NO_WRITE_BEHIND:
			opts.wb_min = -1;
			opts.wb_why = "--no-write-behind";
			break;
		case OPT_PROGRESS: opts.progress = 2; break;
		case OPT_REFLINK: opts.reflink = parse_reflink(cmd, optarg); break;
		default: cli_common_option(cmd, c);
		}
	}
	if (both)
		cli_usage_error(cmd, "cannot make both hard and symbolic links");
	if (backups) {
		opts.backup = parse_backup(cmd, backup ? backup : getenv("VERSION_CONTROL"),
					   backup ? "'backup type'" : "'$VERSION_CONTROL'");
		opts.suffix = suffix && *suffix && !strchr(suffix, '/') ? suffix : "~";
	}
	if (opts.backup != CP_BACKUP_NONE && opts.clobber == CP_NO_CLOBBER)
		cli_usage_error(cmd, "options --backup and --no-clobber are mutually exclusive");
	if (opts.reflink == CP_REFLINK_ALWAYS && opts.sparse != CP_SPARSE_AUTO)
		cli_usage_error(cmd, "--reflink can be used only with --sparse=auto");
	/* cp(1)'s choice: -r copies links as links, unless -l links what
	 * they point to. */
	if (opts.deref == CP_DEREF_UNSET)
		opts.deref = opts.recursive && opts.link != CP_LINK_HARD ? CP_DEREF_NEVER :
									   CP_DEREF_ALWAYS;
	if (cli_parse_only)
		return 0;
	choose_write_behind(&opts);
	if ((opts.keep & CP_KEEP_LINKS) && !(opts.links = cp_links_new())) {
		cli_error(ENOMEM, "cannot copy");
		return 1;
	}
	opts.umask = umask(0);
	umask(opts.umask);
	/* On a terminal, a copy long enough to wait for shows how it goes. */
	if (!opts.progress && isatty(STDERR_FILENO))
		opts.progress = 1;
	c = cp_operands(cmd, &opts, argv + optind, argc - optind, target_dir, no_target);
	cp_links_free(opts.links);
	return c < 0 ? 1 : 0;
}

const struct cli_cmd cli_cmd_cp = {
	.name = "cp",
	.args = "SOURCE DEST\n"
		"  or:  " CLI_NAME " cp [OPTION]... SOURCE... DIRECTORY\n"
		"  or:  " CLI_NAME " cp [OPTION]... -t DIRECTORY SOURCE...",
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
	"  -a, --archive      -r -P --preserve=all\n"
	"  -b, --backup[=CONTROL]\n"
	"                     move an existing DEST aside first: 'numbered' (t),\n"
	"                     'existing' (nil, the default), 'simple' (never),\n"
	"                     'none' (off); $VERSION_CONTROL for -b\n"
	"  -d                 -P --preserve=links\n"
	"  -f, --force        if an existing DEST cannot be opened for writing,\n"
	"                     remove it and try again\n"
	"  -i, --interactive  ask before overwriting (on stderr, read on stdin)\n"
	"  -H                 follow symbolic links given as SOURCE\n"
	"  -l, --link         hard link files instead of copying\n"
	"  -L, --dereference  always follow symbolic links in SOURCE\n"
	"  -n, --no-clobber   do not overwrite an existing DEST (and succeed)\n"
	"  -P, --no-dereference\n"
	"                     copy symbolic links as links (the default with -r)\n"
	"  -p                 --preserve=mode,ownership,timestamps\n"
	"      --preserve[=LIST]\n"
	"                     keep these of SOURCE's attributes: 'mode' (with\n"
	"                     ACLs), 'ownership' (as root), 'timestamps',\n"
	"                     'links' (hard links among the files copied),\n"
	"                     'xattr', 'all'; none given: the first three\n"
	"      --no-preserve=LIST\n"
	"                     do not keep these\n"
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
	"  -s, --symbolic-link\n"
	"                     make symbolic links to SOURCE instead of copying\n"
	"  -S, --suffix=SUFFIX\n"
	"                     of simple backups (default '~')\n"
	"      --sparse=WHEN  'auto' (the default): keep the holes of a SOURCE\n"
	"                     that has fewer blocks than bytes; 'always': make\n"
	"                     blocks of zeros holes too; 'never': write zeros\n"
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
	"                     copying (on a terminal: for files of 64 MiB or more)\n"
	"  -v, --verbose      tell on standard error which kernel path moved the\n"
	"                     bytes, and how many; whether write-behind paced a\n"
	"                     file of 8 MiB or more, and why; with --sync, the\n"
	"                     level reached\n",
	.main = cp_main,
};
