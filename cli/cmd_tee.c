/* psplice tee: standard input to standard output and to each FILE (and
 * --to socket), as tee(1) does, through psplice_tee(3): from a pipe the
 * pages are duplicated with tee(2), never copied through this process. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "psplice.h"
#include "addr.h"
#include "opts.h"
#include "out.h"
#include "sys.h"

#define TEE_STEP (1u << 20)

enum { OPT_OUTPUT_ERROR = 0x200, OPT_TO };

/* What a write error does, as tee(1)'s --output-error. */
enum mode { M_SIGPIPE, M_WARN, M_WARN_NOPIPE, M_EXIT, M_EXIT_NOPIPE };

static const char *const mode_names[] = {
	[M_WARN] = "warn", [M_WARN_NOPIPE] = "warn-nopipe",
	[M_EXIT] = "exit", [M_EXIT_NOPIPE] = "exit-nopipe",
};

static const struct option longopts[] = {
	{ "append", no_argument, NULL, 'a' },
	{ "ignore-interrupts", no_argument, NULL, 'i' },
	{ "output-error", optional_argument, NULL, OPT_OUTPUT_ERROR },
	{ "to", required_argument, NULL, OPT_TO },
	CLI_COMMON_LONGOPTS
};

struct outputs {
	int fd[PSPLICE_TEE_MAX];
	const char *name[PSPLICE_TEE_MAX];
	bool out[PSPLICE_TEE_MAX];  /* failed and reported: no longer written */
	size_t n;
};

static enum mode parse_mode(const struct cli_cmd *cmd, const char *arg)
{
	size_t i;

	if (!arg)
		return M_WARN_NOPIPE;
	for (i = M_WARN; i <= M_EXIT_NOPIPE; i++)
		if (!strcmp(arg, mode_names[i]))
			return (enum mode)i;
	cli_usage_error(cmd, "invalid argument %s for '--output-error'\n"
			"Valid arguments are: 'warn', 'warn-nopipe', 'exit', 'exit-nopipe'",
			cli_quote(arg));
}

static void add(const struct cli_cmd *cmd, struct outputs *o, int fd, const char *name)
{
	if (o->n == PSPLICE_TEE_MAX)
		cli_usage_error(cmd, "more than %d outputs", PSPLICE_TEE_MAX);
	o->fd[o->n] = fd;
	o->name[o->n++] = name;
}

/* As tee(1): a write error is diagnosed unless it is a pipe's (EPIPE) and
 * the mode spares pipes; the exit modes end the command on a diagnosed
 * error; by default a reader gone ends it by SIGPIPE. false: an error. */
static bool output_failed(enum mode mode, const char *name, int err)
{
	bool diagnose = err != EPIPE || mode == M_WARN || mode == M_EXIT;

	if (err == EPIPE && mode == M_SIGPIPE)
		cli_die_of_sigpipe();
	if (!diagnose)
		return true;
	cli_error(err, "error writing %s", cli_quote(name));
	if (mode == M_EXIT || mode == M_EXIT_NOPIPE)
		exit(1);
	return false;
}

/* A descriptor no write can use (standard output closed) is an error of
 * that output from the start, as tee(1)'s first write would say. */
static bool usable(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl >= 0 && (fl & O_ACCMODE) != O_RDONLY;
}

static void wait_input(void)
{
	struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };

	poll(&p, 1, -1);
}

/* The outputs psplice_tee writes: the usable ones, and which output each is. */
struct sinks {
	int fd[PSPLICE_TEE_MAX];
	size_t of[PSPLICE_TEE_MAX];
	size_t n;
};

static int pick_sinks(const struct outputs *o, enum mode mode, struct sinks *k)
{
	int status = 0;
	size_t i;

	k->n = 0;
	for (i = 0; i < o->n; i++) {
		if (!usable(o->fd[i])) {
			if (!output_failed(mode, o->name[i], EBADF))
				status = 1;
			continue;
		}
		k->of[k->n] = i;
		k->fd[k->n++] = o->fd[i];
	}
	return status;
}

/* An output's first error is told; it is written no more. */
static int note_errors(struct outputs *o, enum mode mode, const struct sinks *k,
		       const struct psplice_result *res)
{
	int status = 0;
	size_t i, j;

	for (j = 0; j < k->n; j++) {
		i = k->of[j];
		if (o->out[i] || !res[j].error || res[j].error == EAGAIN ||
		    res[j].error == EINTR)
			continue;
		o->out[i] = true;
		if (!output_failed(mode, o->name[i], res[j].error))
			status = 1;
	}
	return status;
}

/* After a step that failed (errno): true to step again. */
static bool again(int *status)
{
	if (errno == EINTR)
		return true;
	/* Standard input left non-blocking by someone else. */
	if (errno == EAGAIN && psplice_last()->side == PSPLICE_SIDE_IN) {
		wait_input();
		return true;
	}
	if (psplice_last()->side == PSPLICE_SIDE_IN) {
		cli_error(errno, "error reading %s", cli_quote("standard input"));
		*status = 1;
	}
	/* Otherwise no output is left: tee(1) stops reading then. */
	return false;
}

static int pump(struct psplice_tee *t, struct outputs *o, enum mode mode,
		const struct sinks *k)
{
	struct psplice_result res[PSPLICE_TEE_MAX];
	int status = 0;
	ssize_t r;

	do {
		r = psplice_tee_move(t, TEE_STEP, 0, res);
		status |= note_errors(o, mode, k, res);
	} while (r > 0 || (r < 0 && again(&status)));
	return status;
}

static int run(struct outputs *o, enum mode mode)
{
	struct sinks k;
	struct psplice_tee *t;
	int status = pick_sinks(o, mode, &k);

	if (!k.n)
		return status;
	cli_grow_pipe(STDIN_FILENO);
	t = psplice_tee_new(STDIN_FILENO, k.fd, k.n, 0, 0);
	if (!t) {
		cli_error(errno, "error reading %s", cli_quote("standard input"));
		return 1;
	}
	status |= pump(t, o, mode, &k);
	psplice_tee_free(t);
	return status;
}

static int open_output(const char *path, bool append)
{
	int fl = O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC);

	return open(path, fl, 0666);
}

struct tee_opts {
	enum mode mode;
	bool append;
	const char *to[PSPLICE_TEE_MAX]; /* --to */
	size_t n_to;
};

static void parse_options(const struct cli_cmd *cmd, int argc, char **argv,
			  struct tee_opts *opt)
{
	int c;

	while ((c = getopt_long(argc, argv, "aip", longopts, NULL)) != -1) {
		switch (c) {
		case 'a':
			opt->append = true;
			break;
		case 'i':
			signal(SIGINT, SIG_IGN);
			break;
		case 'p':
			opt->mode = M_WARN_NOPIPE;
			break;
		case OPT_OUTPUT_ERROR:
			opt->mode = parse_mode(cmd, optarg);
			break;
		case OPT_TO:
			if (opt->n_to == PSPLICE_TEE_MAX)
				cli_usage_error(cmd, "more than %d outputs", PSPLICE_TEE_MAX);
			opt->to[opt->n_to++] = optarg;
			break;
		default:
			cli_common_option(cmd, c);
		}
	}
}

/* An output that could not be opened (said already): as tee(1), the exit
 * modes end the command there, before a byte is read; the others go on
 * without it. */
static void open_failed(enum mode mode)
{
	if (mode == M_EXIT || mode == M_EXIT_NOPIPE)
		exit(1);
}

/* Standard output, then each FILE, then each --to socket; one that cannot
 * be opened is told and left out. */
static int open_outputs(const struct cli_cmd *cmd, const struct tee_opts *opt,
			char **files, size_t n_files, struct outputs *o)
{
	int fd, status = 0;
	size_t i;

	add(cmd, o, STDOUT_FILENO, "standard output");
	for (i = 0; i < n_files; i++) {
		fd = open_output(files[i], opt->append);
		if (fd < 0) {
			cli_error(errno, "cannot open %s", cli_quote(files[i]));
			open_failed(opt->mode);
			status = 1;
			continue;
		}
		add(cmd, o, fd, files[i]);
	}
	for (i = 0; i < opt->n_to; i++) {
		fd = cli_connect(cmd, opt->to[i]); /* unreachable: as a file not opened */
		if (fd < 0) {
			open_failed(opt->mode);
			status = 1;
			continue;
		}
		add(cmd, o, fd, opt->to[i]);
	}
	return status;
}

/* Standard output stays open; a close that fails is a write error, unless
 * that output was told already. */
static int close_outputs(const struct outputs *o)
{
	int status = 0;
	size_t i;

	for (i = 1; i < o->n; i++)
		if (close(o->fd[i]) < 0 && !o->out[i]) {
			cli_error(errno, "error writing %s", cli_quote(o->name[i]));
			status = 1;
		}
	return status;
}

static int tee_main(const struct cli_cmd *cmd, int argc, char **argv)
{
	static struct outputs o;
	struct tee_opts opt = { .mode = M_SIGPIPE };
	int status;

	parse_options(cmd, argc, argv, &opt);
	if (cli_parse_only)
		return 0;
	/* As tee(1): with a mode, a reader gone is an error to handle, not a
	 * signal. */
	if (opt.mode != M_SIGPIPE)
		signal(SIGPIPE, SIG_IGN);
	status = open_outputs(cmd, &opt, argv + optind, (size_t)(argc - optind), &o);
	cli_grow_pipe(STDOUT_FILENO);
	status |= run(&o, opt.mode);
	status |= close_outputs(&o);
	return status;
}

const struct cli_cmd cli_cmd_tee = {
	.name = "tee",
	.args = "[FILE]...",
	.summary = "copy standard input to standard output and to files",
	.help =
	"Copy standard input to standard output and to each FILE (and each\n"
	"--to socket), as tee(1) does. From a pipe the bytes are duplicated by\n"
	"tee(2) and spliced out, never copied through this process; an O_APPEND\n"
	"file (-a) is written with write(2). FILE - is a file named -.\n"
	"\n"
	"  -a, --append              append to the FILEs, do not truncate them\n"
	"  -i, --ignore-interrupts   ignore SIGINT\n"
	"  -p                        --output-error=warn-nopipe\n"
	"      --output-error[=MODE] what a write error does (MODE below)\n"
	"      --to=ADDR             also write to a stream socket: HOST:PORT,\n"
	"                            [IPv6]:PORT or unix:PATH (may be repeated)\n"
	"\n"
	"MODE: warn: diagnose errors writing to any output; warn-nopipe: to any\n"
	"output but a pipe whose reader left (the default MODE); exit, exit-nopipe:\n"
	"the same, and exit at once, also at a FILE that cannot be opened (before\n"
	"a byte is read). Without --output-error, a reader gone ends\n"
	"the command by SIGPIPE and other errors are diagnosed. A failed output is\n"
	"written no more; the others get every byte. psplice tee stops reading\n"
	"when no output is left.\n",
	.main = tee_main,
};
