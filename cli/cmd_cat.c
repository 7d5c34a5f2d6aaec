/* psplice cat: files, or standard input, to standard output, through the
 * engine, so that a file into a pipe or a socket is spliced, never read. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "addr.h"
#include "cat_show.h"
#include "copy.h"
#include "opts.h"
#include "out.h"
#include "parse.h"
#include "progress.h"
#include "sys.h"

#define STDIN_NAME "standard input"
#define STDOUT_NAME "standard output"

/* What a failed file means for the ones after it. */
enum { CAT_OK, CAT_NEXT, CAT_STOP };

enum { OPT_OFFSET = 0x200, OPT_LENGTH, OPT_TO, OPT_PROGRESS, OPT_LISTEN, OPT_OUTPUT_OFFSET };

static bool progress; /* --progress */
/* -A -b -e -E -n -s -t -T -v: what the bytes are shown as, carried from
 * one input to the next; with no flag the bytes are moved as they are. */
static struct cat_show show;

/* Standard output, or the socket --to connected. */
static int out_fd = STDOUT_FILENO;
static const char *out_name = STDOUT_NAME;

static const struct option longopts[] = {
	{ "show-all", no_argument, NULL, 'A' },
	{ "number-nonblank", no_argument, NULL, 'b' },
	{ "show-ends", no_argument, NULL, 'E' },
	{ "number", no_argument, NULL, 'n' },
	{ "squeeze-blank", no_argument, NULL, 's' },
	{ "show-tabs", no_argument, NULL, 'T' },
	{ "show-nonprinting", no_argument, NULL, 'v' },
	{ "verbose", no_argument, NULL, 'V' },
	{ "offset", required_argument, NULL, OPT_OFFSET },
	{ "length", required_argument, NULL, OPT_LENGTH },
	{ "output-offset", required_argument, NULL, OPT_OUTPUT_OFFSET },
	{ "to", required_argument, NULL, OPT_TO },
	{ "listen", required_argument, NULL, OPT_LISTEN },
	{ "progress", no_argument, NULL, OPT_PROGRESS },
	CLI_COMMON_LONGOPTS
};

/* The part of each input to copy, as dd's skip= and count= (in bytes),
 * and where the output is written from, as dd's seek= conv=notrunc. */
struct range {
	int64_t offset;
	uint64_t length;     /* PSPLICE_TO_EOF: to the end */
	int64_t out_offset;  /* -1: the output's own position */
};

static bool same_regular_file(int a, int b)
{
	struct stat sa, sb;

	return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && S_ISREG(sa.st_mode) &&
	       cli_same_inode(&sa, &sb);
}

/* A read error spares the next file, as in cat(1); once standard output
 * has failed, nothing more can be written. */
static int failed(const char *name, int fd, const struct cli_copy *c)
{
	/* The engine refuses a file copied onto an overlapping range of
	 * itself (cat a >> a) before a byte moves. */
	if (c->error == EINVAL && c->side == PSPLICE_SIDE_NONE &&
	    same_regular_file(fd, out_fd)) {
		cli_error(0, "%s: input file is output file", cli_quote(name));
		return CAT_NEXT;
	}
	/* A --to peer that closed or reset is no reader of ours that went
	 * away (cat's SIGPIPE): it is an error of the connection, said as
	 * socat says it. The engine tells a reset as EPIPE. */
	if (out_fd != STDOUT_FILENO && c->side == PSPLICE_SIDE_OUT && c->error == EPIPE) {
		cli_error(0, "error writing %s: the peer closed or reset the connection",
			  cli_quote(out_name));
		return CAT_STOP;
	}
	cli_copy_error(name, out_name, c);
	return c->side == PSPLICE_SIDE_IN ? CAT_NEXT : CAT_STOP;
}

static bool seekable(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode));
}

/* The first n bytes of a pipe or a socket, spliced away to /dev/null. 1
 * when they were, 0 when the input ended first, -1 with c set. */
static int skip(int fd, uint64_t n, struct cli_copy *c)
{
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC), r;

	if (null < 0) {
		*c = (struct cli_copy){ .error = errno, .side = PSPLICE_SIDE_NONE };
		return -1;
	}
	r = cli_copy_len(fd, null, n, 0, c);
	close(null);
	if (r < 0)
		return r;
	if (c->bytes < n) {
		c->bytes = 0;
		return 0;
	}
	return 1;
}

/* A shown file that is also the output, with bytes left to read, would
 * grow as it is read: refused as cat(1) refuses it (the engine refuses
 * the plain copy itself). */
static bool reads_own_output(int fd, const int64_t *off)
{
	struct stat st;
	off_t at = off ? (off_t)*off : lseek(fd, 0, SEEK_CUR);

	return same_regular_file(fd, out_fd) && fstat(fd, &st) == 0 && at >= 0 &&
	       at < st.st_size;
}

/* Without --offset, an input is read from its position, which moves, as
 * cat(1) does: a standard input redirected from a file and partly read by
 * the shell goes on from there, and is left at its end. With one, a file is
 * read at the offset without moving its position; a pipe or a socket has
 * the first bytes skipped. */
static int copy_range(int fd, const struct range *rg, struct cli_copy *c)
{
	int64_t off = rg->offset, *at = NULL;
	int r;

	if (rg->offset && seekable(fd)) {
		at = &off;
	} else if (rg->offset) {
		r = skip(fd, (uint64_t)rg->offset, c);
		if (r <= 0)
			return r;
	}
	if (!show.flags)
		return cli_copy_at(fd, at, out_fd, rg->length, 0, c);
	if (reads_own_output(fd, at)) {
		*c = (struct cli_copy){ .error = EINVAL, .side = PSPLICE_SIDE_NONE };
		return -1;
	}
	return cat_show_copy(&show, fd, at, out_fd, rg->length, c);
}

/* What this input will give, for the progress line; 0 when unknown. */
static uint64_t input_size(int fd, const struct range *rg)
{
	struct stat st;
	uint64_t left;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size <= rg->offset)
		return 0;
	left = (uint64_t)(st.st_size - rg->offset);
	return left < rg->length ? left : rg->length;
}

static int cat_fd(int fd, const char *name, const struct range *rg, bool verbose)
{
	struct cli_copy c;
	int r;

	if (progress)
		cli_progress_begin(name, input_size(fd, rg), true);
	r = copy_range(fd, rg, &c);
	cli_progress_end(r >= 0);
	if (r < 0)
		return failed(name, fd, &c);
	if (verbose)
		cli_report(name, out_name, &c);
	return CAT_OK;
}

static int cat_one(const char *arg, const struct range *rg, bool verbose)
{
	int fd, rc;

	if (!strcmp(arg, "-"))
		return cat_fd(STDIN_FILENO, STDIN_NAME, rg, verbose);
	fd = open(arg, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		cli_error(errno, "cannot open %s", cli_quote(arg));
		return CAT_NEXT;
	}
	rc = cat_fd(fd, arg, rg, verbose);
	close(fd);
	return rc;
}

/* A listener on a, closed once one connection is accepted: that
 * connection, or -1 with the error said. A unix socket's name, made by
 * the bind, goes with the listener. */
static int accept_one(const struct cli_addr *a)
{
	int one = 1, fd, conn = -1, err;

	fd = socket(a->ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && a->ss.ss_family != AF_UNIX)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (fd < 0 || bind(fd, (const struct sockaddr *)&a->ss, a->len) < 0) {
		cli_error(errno, "cannot listen on %s", cli_quote(a->text));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (listen(fd, 1) == 0)
		do
			conn = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
		while (conn < 0 && errno == EINTR);
	err = errno;
	if (a->ss.ss_family == AF_UNIX)
		unlink(((const struct sockaddr_un *)&a->ss)->sun_path);
	close(fd);
	if (conn < 0)
		cli_error(err, "cannot listen on %s", cli_quote(a->text));
	return conn;
}

/* --to: a blocking stream socket, so that the copy waits for room. */
static void connect_to(const struct cli_cmd *cmd, const char *arg)
{
	int fd = cli_connect(cmd, arg);

	if (cli_parse_only)
		return;
	if (fd < 0)
		exit(1);
	out_fd = fd;
	out_name = arg;
}

struct cat_opts {
	struct range rg;
	bool verbose;
	const char *listen;      /* --listen ADDR */
	struct cli_addr laddr;   /* its address, when its name resolved */
	const char *unresolved;  /* else why not */
};

/* --listen: a malformed ADDR is a usage error; a name that does not
 * resolve is the run's, said when the run would listen. */
static void listen_arg(const struct cli_cmd *cmd, const char *arg, struct cat_opts *opt)
{
	const char *why;
	int r = cli_parse_addr(arg, &opt->laddr, true, &why);

	if (r < 0 && r != CLI_ADDR_UNRESOLVED)
		cli_usage_error(cmd, "invalid address %s: %s", cli_quote(arg), why);
	opt->listen = arg;
	opt->unresolved = r < 0 ? why : NULL;
}

/* --listen: the one connection accepted is the input. */
static int cat_listen(const struct cat_opts *opt)
{
	int fd, rc;

	if (opt->unresolved) {
		cli_error(0, "cannot listen on %s: %s", cli_quote(opt->listen), opt->unresolved);
		return CAT_STOP;
	}
	fd = accept_one(&opt->laddr);
	if (fd < 0)
		return CAT_STOP;
	rc = cat_fd(fd, opt->listen, &opt->rg, opt->verbose);
	close(fd);
	return rc;
}

/* --offset, --length and --output-offset: sizes with coreutils' suffixes
 * (1K, 1KiB, 1kB). */
static void range_arg(const struct cli_cmd *cmd, int c, const char *arg, struct range *rg)
{
	int64_t n = cli_parse_size(arg);

	if (n < 0)
		cli_usage_error(cmd, "invalid %s %s%s",
				c == OPT_OFFSET ? "offset" : c == OPT_LENGTH ? "length" : "output offset",
				cli_quote(arg), cli_size_why(n));
	if (c == OPT_OFFSET)
		rg->offset = n;
	else if (c == OPT_LENGTH)
		rg->length = (uint64_t)n;
	else
		rg->out_offset = n;
}

/* --output-offset: the output's position set there once, as dd's seek=
 * does, and each input written on from there; nothing is truncated. An
 * output that appends would take the bytes at its end whatever the
 * position: refused. */
static int seek_output(int64_t off)
{
	int fl = fcntl(out_fd, F_GETFL);

	if (fl >= 0 && (fl & O_APPEND)) {
		cli_error(0, "cannot write %s at offset %" PRId64 ": it appends (>>); "
			  "open it with 1<> instead", cli_quote(out_name), off);
		return -1;
	}
	if (lseek(out_fd, off, SEEK_SET) < 0) {
		cli_error(errno, "cannot write %s at offset %" PRId64, cli_quote(out_name), off);
		return -1;
	}
	return 0;
}

/* cat(1)'s letters: -A is -vET, -e is -vE, -t is -vT. false: not one. */
static bool show_option(int c)
{
	static const struct {
		char opt;
		unsigned int flags;
	} shows[] = {
		{ 'A', CAT_NONPRINT | CAT_ENDS | CAT_TABS }, { 'b', CAT_NONBLANK },
		{ 'e', CAT_NONPRINT | CAT_ENDS }, { 'E', CAT_ENDS }, { 'n', CAT_NUMBER },
		{ 's', CAT_SQUEEZE }, { 't', CAT_NONPRINT | CAT_TABS }, { 'T', CAT_TABS },
		{ 'v', CAT_NONPRINT },
	};
	size_t i;

	for (i = 0; i < sizeof(shows) / sizeof(shows[0]); i++)
		if (c == shows[i].opt) {
			show.flags |= shows[i].flags;
			return true;
		}
	return false;
}

static void parse_options(const struct cli_cmd *cmd, int argc, char **argv,
			  struct cat_opts *opt)
{
	int c;

	/* -v is cat's (show non-printing bytes); --verbose has no letter. */
	while ((c = getopt_long(argc, argv, "AbeEnstTuv", longopts, NULL)) != -1) {
		switch (c) {
		case 'u': /* POSIX: unbuffered; nothing is buffered here */
			break;
		case 'V':
			opt->verbose = true;
			break;
		case OPT_OFFSET:
		case OPT_LENGTH:
		case OPT_OUTPUT_OFFSET:
			range_arg(cmd, c, optarg, &opt->rg);
			break;
		case OPT_TO:
			connect_to(cmd, optarg);
			break;
		case OPT_PROGRESS:
			progress = true;
			break;
		case OPT_LISTEN:
			listen_arg(cmd, optarg, opt);
			break;
		default:
			if (!show_option(c))
				cli_common_option(cmd, c);
		}
	}
}

/* Each input in turn; once the output failed, no more. Shown, a CR the
 * last input ended with still waits to be written. */
static int cat_all(char **files, int n, const struct cat_opts *opt)
{
	struct cli_copy c;
	int i, r = CAT_OK, status = 0;

	for (i = 0; i < n && r != CAT_STOP; i++) {
		r = opt->listen ? cat_listen(opt) : cat_one(files[i], &opt->rg, opt->verbose);
		if (r != CAT_OK)
			status = 1;
	}
	if (r != CAT_STOP && cat_show_end(&show, out_fd, &c) < 0) {
		failed(files[n - 1], STDIN_FILENO, &c);
		status = 1;
	}
	return status;
}

static int cat_main(const struct cli_cmd *cmd, int argc, char **argv)
{
	static char dash[] = "-";
	char *stdin_only[] = { dash };
	struct cat_opts opt = { .rg = { 0, PSPLICE_TO_EOF, -1 } };

	parse_options(cmd, argc, argv, &opt);
	if (opt.listen && optind < argc)
		cli_usage_error(cmd, "--listen takes no FILE");
	if (cli_parse_only)
		return 0;
	if (opt.rg.out_offset >= 0 && seek_output(opt.rg.out_offset) < 0)
		return 1;
	cli_grow_pipe(out_fd);
	cli_grow_pipe(STDIN_FILENO);
	if (optind == argc)
		return cat_all(stdin_only, 1, &opt);
	return cat_all(argv + optind, argc - optind, &opt);
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
	"write error ends the command. The options that show the bytes (-AbeEnstTv,\n"
	"as cat(1)'s) change them, so then they are read and written by psplice;\n"
	"line numbers and blank lines go on from one file to the next.\n"
	"\n"
	"  -A, --show-all     -vET\n"
	"  -b, --number-nonblank\n"
	"                     number the lines that are not empty (over -n)\n"
	"  -e                 -vE\n"
	"  -E, --show-ends    show $ at the end of each line (a CR before it as ^M)\n"
	"  -n, --number       number all lines\n"
	"  -s, --squeeze-blank\n"
	"                     one empty line where there are several\n"
	"  -t                 -vT\n"
	"  -T, --show-tabs    show a tab as ^I\n"
	"  -v, --show-nonprinting\n"
	"                     show control bytes (not tab and newline) as ^X, and\n"
	"                     bytes over 127 as M- and the byte less 128\n"
	"      --offset=N     start N bytes into each input (1K = 1KiB = 1024,\n"
	"                     1kB = 1000, b = 512; M, G, T, P, E likewise);\n"
	"                     a file is read there without moving its position,\n"
	"                     a pipe or socket has its first N bytes discarded\n"
	"      --length=N     copy at most N bytes of each input\n"
	"      --output-offset=N\n"
	"                     write from N bytes into standard output, a file\n"
	"                     (1<>FILE: not truncated), as dd seek=N conv=notrunc\n"
	"      --progress     show bytes, rate and ETA on standard error, then\n"
	"                     each input's totals\n"
	"      --to=ADDR      write to a stream socket instead of standard output:\n"
	"                     HOST:PORT, [IPv6]:PORT or unix:PATH\n"
	"      --listen=ADDR  read one connection accepted on ADDR (HOST:PORT,\n"
	"                     :PORT, [IPv6]:PORT, unix:PATH) instead of FILEs\n"
	"  -u                 (ignored: output is never buffered)\n"
	"      --verbose      tell on standard error which kernel path moved the\n"
	"                     bytes of each file, and how many (no letter: -v\n"
	"                     is cat's)\n",
	.main = cat_main,
};
