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

enum { OPT_WAIT_BEFORE = 0x200, OPT_WRITE, OPT_WAIT_AFTER, OPT_DATA, OPT_METADATA };

static const struct option longopts[] = {
	{ "range", required_argument, NULL, 'r' },
	{ "wait-before", no_argument, NULL, OPT_WAIT_BEFORE },
	{ "write", no_argument, NULL, OPT_WRITE },
	{ "wait-after", no_argument, NULL, OPT_WAIT_AFTER },
	{ "data", no_argument, NULL, OPT_DATA },
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
		fprintf(stderr, CLI_NAME ": %s: %s\n", cli_quote(path),
			psplice_sync_level_name((int)level));
	return 0;
}

static int sync_main(const struct cli_cmd *cmd, int argc, char **argv)
{
	int64_t off = 0, len = 0;
	unsigned int flags = 0;
	bool verbose = false;
	int c, r, status = 0;

	while ((c = getopt_long(argc, argv, "r:v", longopts, NULL)) != -1) {
		switch (c) {
		case 'r':
			r = cli_parse_range(optarg, &off, &len);
			if (r < 0)
				cli_usage_error(cmd, "invalid range %s%s", cli_quote(optarg),
						r == CLI_SIZE_BAD ? " (want OFF:LEN)" : cli_size_why(r));
			break;
		case OPT_WAIT_BEFORE: flags |= PSPLICE_SYNC_WAIT_BEFORE; break;
		case OPT_WRITE: flags |= PSPLICE_SYNC_WRITE; break;
		case OPT_WAIT_AFTER: flags |= PSPLICE_SYNC_WAIT_AFTER; break;
		case OPT_DATA: flags |= PSPLICE_SYNC_DATA; break;
		case OPT_METADATA: flags |= PSPLICE_SYNC_METADATA; break;
		case 'v': verbose = true; break;
		default: cli_common_option(cmd, c);
		}
	}
	if (optind >= argc)
		cli_usage_error(cmd, "missing file operand");
	if (!flags)
		flags = PSPLICE_SYNC_DATA;
	if (cli_parse_only)
		return 0;
	for (; optind < argc; optind++)
		status |= sync_one(argv[optind], off, len, flags, verbose);
	return status;
}

const struct cli_cmd cli_cmd_sync = {
	.name = "sync",
	.args = "FILE...",
	.summary = "start, wait for or make durable the writeback of files",
	.help =
	"Start writeback of each FILE's range, wait for it, or make it durable.\n"
	"With no flag, make the data durable (--data).\n"
	"\n"
	"  -r, --range=OFF:LEN  only bytes OFF..OFF+LEN (1K = 1KiB = 1024, 1kB =\n"
	"                       1000, b = 512; M, G, T, P, E likewise;\n"
	"                       LEN 0 or empty: to end of file)\n"
	"      --wait-before    wait for writeback already under way\n"
	"      --write          start writeback of dirty pages in the range\n"
	"      --wait-after     wait for that writeback to finish\n"
	"      --data           make the data durable (fdatasync: whole file)\n"
	"      --metadata       make data and metadata durable (fsync: whole file)\n"
	"  -v, --verbose        print the durability level reached\n"
	"\n"
	"--write/--wait-* alone do not flush the device's cache or metadata:\n"
	"only --data and --metadata make data survive a power cut.\n",
	.main = sync_main,
};
