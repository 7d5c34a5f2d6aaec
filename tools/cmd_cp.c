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

