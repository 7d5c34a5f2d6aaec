/* psplice cat: files, or standard input, to standard output, through the
 * engine, so that a file into a pipe or a socket is spliced, never read. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"

#define STDIN_NAME "standard input"
#define STDOUT_NAME "standard output"

/* What a failed file means for the ones after it. */
enum { CAT_OK, CAT_NEXT, CAT_STOP };

static const struct option longopts[] = {
	{ "verbose", no_argument, NULL, 'v' },
	CLI_COMMON_LONGOPTS
};

static bool same_regular_file(int a, int b)
{
	struct stat sa, sb;

	return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && S_ISREG(sa.st_mode) &&
	       sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* A read error spares the next file, as in cat(1); once standard output
 * has failed, nothing more can be written. */
static int failed(const char *name, int fd, const struct cli_copy *c)
{
	/* The engine refuses a file copied onto an overlapping range of
	 * itself (cat a >> a) before a byte moves. */
	if (c->error == EINVAL && c->side == PSPLICE_SIDE_NONE &&
	    same_regular_file(fd, STDOUT_FILENO)) {
		cli_error(0, "%s: input file is output file", cli_quote(name));
		return CAT_NEXT;
	}
	cli_copy_error(name, STDOUT_NAME, c);
	return c->side == PSPLICE_SIDE_IN ? CAT_NEXT : CAT_STOP;
}

static int cat_one(const char *arg, bool verbose)
{
	bool is_stdin = !strcmp(arg, "-");
	const char *name = is_stdin ? STDIN_NAME : arg;
	struct cli_copy c;
	int fd = STDIN_FILENO, rc = CAT_OK;

	if (!is_stdin) {
		fd = open(arg, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			cli_error(errno, "cannot open %s", cli_quote(arg));
			return CAT_NEXT;
		}
	}
	if (cli_copy(fd, STDOUT_FILENO, 0, &c) < 0)
		rc = failed(name, fd, &c);
	else if (verbose)
		cli_report(name, STDOUT_NAME, &c);
	if (!is_stdin)
		close(fd);
	return rc;
}

static int cat_main(const struct cli_cmd *cmd, int argc, char **argv)
{
	bool verbose = false;
	int c, i, r, status = 0;

	while ((c = getopt_long(argc, argv, "v", longopts, NULL)) != -1) {
		if (c == 'v')
			verbose = true;
		else
			cli_common_option(cmd, c);
	}
	if (optind == argc)
		return cat_one("-", verbose) == CAT_OK ? 0 : 1;
	for (i = optind; i < argc; i++) {
		r = cat_one(argv[i], verbose);
		if (r != CAT_OK)
			status = 1;
		if (r == CAT_STOP)
			break;
	}
	return status;
}

const struct cli_cmd cli_cmd_cat = {
	.name = "cat",
	.args = "[FILE]...",
	.summary = "copy files (or standard input) to standard output",
	.help =
	"Copy each FILE to standard output, in order, through the kernel's\n"
	"fastest path: splice(2) into pipes, sendfile(2) into sockets,\n"
	"copy_file_range(2) into files. With no FILE, or when FILE is -, read\n"
	"standard input. A file that cannot be read is reported and skipped; a\n"
	"write error ends the command.\n"
	"\n"
	"  -v, --verbose      tell on standard error which kernel path moved the\n"
	"                     bytes of each file, and how many\n",
	.main = cat_main,
};
