/* psplice sync: range sync from the shell. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "psplice.h"
#include "opts.h"
#include "out.h"
#include "parse.h"

enum { OPT_WAIT_BEFORE = 0x200, OPT_WRITE, OPT_WAIT_AFTER, OPT_METADATA };

static const struct option longopts[] = {
	{ "range", required_argument, NULL, 'r' },
	{ "wait-before", no_argument, NULL, OPT_WAIT_BEFORE },
	{ "write", no_argument, NULL, OPT_WRITE },
	{ "wait-after", no_argument, NULL, OPT_WAIT_AFTER },
	{ "data", no_argument, NULL, 'd' },
	{ "file-system", no_argument, NULL, 'f' },
	{ "metadata", no_argument, NULL, OPT_METADATA },
	{ "verbose", no_argument, NULL, 'v' },
	CLI_COMMON_LONGOPTS
};

/* Like sync(1): a file we may not write is still opened for reading. */
static int open_any(const char *path)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0 && errno == EACCES)
		fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	return fd;
}

static int sync_one(const char *path, int64_t off, int64_t len, unsigned int flags,
		    bool verbose)
{
	enum psplice_sync_level level;
	int fd = open_any(path), err;
	struct stat st;

	if (fd < 0) {
		cli_error(errno, "cannot open %s", cli_quote(path));
		return 1;
	}
	/* A directory's entries are metadata: a range of it has nothing to
	 * write back, and a command that did nothing must not say it did. */
	if (!(flags & (PSPLICE_SYNC_DATA | PSPLICE_SYNC_METADATA)) &&
	    fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		cli_error(0, "%s is a directory: it has no data range to write back "
			  "(--data or --metadata syncs it)", cli_quote(path));
		close(fd);
		return 1;
	}
	if (psplice_sync(fd, off, len, flags, &level) < 0) {
		err = errno;
		cli_error(err, "error syncing %s", cli_quote(path));
		close(fd);
		return 1;
	}
	close(fd);
	if (verbose)
		fprintf(stderr, "%s: %s: %s\n", cli_name, cli_quote(path),
			psplice_sync_level_name((int)level));
	return 0;
}

/* -f: syncfs(2) of the file system FILE is on, as sync(1) -f. */
static int sync_fs_one(const char *path, bool verbose)
{
	int fd = open_any(path);

	if (fd < 0) {
		cli_error(errno, "cannot open %s", cli_quote(path));
		return 1;
	}
	if (syncfs(fd) < 0) {
		cli_error(errno, "error syncing the file system of %s", cli_quote(path));
		close(fd);
		return 1;
	}
	close(fd);
	if (verbose)
		cli_say("%s: file system synced", cli_quote(path));
	return 0;
}

struct sync_opts {
	int64_t off, len;
	unsigned int flags;       /* PSPLICE_SYNC_* */
	bool verbose, fs;         /* -v, -f */
	const char *file_option;  /* the long name of the last option of a FILE's */
};

static const char *long_name(int c)
{
	const struct option *o = longopts;

	while (o->name && o->val != c)
		o++;
	return o->name;
}

static void parse_options(const struct cli_cmd *cmd, int argc, char **argv,
			  struct sync_opts *o)
{
	int c, r;

	while ((c = getopt_long(argc, argv, "dfr:v", longopts, NULL)) != -1) {
		switch (c) {
		case 'r':
			r = cli_parse_range(optarg, &o->off, &o->len);
			if (r < 0)
				cli_usage_error(cmd, "invalid range %s%s", cli_quote(optarg),
						r == CLI_SIZE_BAD ? " (want OFF:LEN)" : cli_size_why(r));
			break;
		case OPT_WAIT_BEFORE: o->flags |= PSPLICE_SYNC_WAIT_BEFORE; break;
		case OPT_WRITE: o->flags |= PSPLICE_SYNC_WRITE; break;
		case OPT_WAIT_AFTER: o->flags |= PSPLICE_SYNC_WAIT_AFTER; break;
		case 'd': o->flags |= PSPLICE_SYNC_DATA; break;
		case OPT_METADATA: o->flags |= PSPLICE_SYNC_METADATA; break;
		case 'f': o->fs = true; break;
		case 'v': o->verbose = true; break;
		default: cli_common_option(cmd, c);
		}
		if (c != 'f' && c != 'v')
			o->file_option = long_name(c);
	}
}

/* sync(1)'s rules: -f syncs whole file systems, so no option of a file's
 * writeback goes with it; those options need a FILE. */
static void check_options(const struct cli_cmd *cmd, const struct sync_opts *o, int files)
{
	if (o->fs && o->file_option)
		cli_usage_error(cmd, "cannot specify both --%s and --file-system",
				o->file_option);
	if (!files && o->file_option)
		cli_usage_error(cmd, "--%s needs at least one FILE", o->file_option);
}

static int sync_main(const struct cli_cmd *cmd, int argc, char **argv)
{
	struct sync_opts o = { 0 };
	int status = 0;

	parse_options(cmd, argc, argv, &o);
	check_options(cmd, &o, argc - optind);
	if (!o.flags)
		o.flags = PSPLICE_SYNC_DATA;
	if (cli_parse_only)
		return 0;
	/* No FILE: every file system, as sync(1) with none. */
	if (optind == argc) {
		sync();
		if (o.verbose)
			cli_say("every file system: synced");
		return 0;
	}
	for (; optind < argc; optind++)
		status |= o.fs ? sync_fs_one(argv[optind], o.verbose)
			       : sync_one(argv[optind], o.off, o.len, o.flags, o.verbose);
	return status;
}

const struct cli_cmd cli_cmd_sync = {
	.name = "sync",
	.args = "[FILE]...",
	.summary = "start, wait for or make durable the writeback of files",
	.help =
	"Start writeback of each FILE's range, wait for it, or make it durable.\n"
	"With no flag, make the data durable (--data). With no FILE, sync every\n"
	"file system (sync(2)), as sync(1) does.\n"
	"\n"
	"  -r, --range=OFF:LEN  only bytes OFF..OFF+LEN (1K = 1KiB = 1024, 1kB =\n"
	"                       1000, b = 512; M, G, T, P, E likewise;\n"
	"                       LEN 0 or empty: to end of file)\n"
	"      --wait-before    wait for writeback already under way\n"
	"      --write          start writeback of dirty pages in the range\n"
	"      --wait-after     wait for that writeback to finish\n"
	"  -d, --data           make the data durable (fdatasync: whole file)\n"
	"      --metadata       make data and metadata durable (fsync: whole file)\n"
	"  -f, --file-system    sync the whole file system of each FILE (syncfs;\n"
	"                       with no other option but -v)\n"
	"  -v, --verbose        print the durability level reached (or what was\n"
	"                       synced)\n"
	"\n"
	"--write/--wait-* alone do not flush the device's cache or metadata:\n"
	"only --data and --metadata make data survive a power cut. The options but\n"
	"-f and -v need a FILE.\n",
	.main = sync_main,
};
