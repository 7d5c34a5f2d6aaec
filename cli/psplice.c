/* psplice: the command line. Finds the subcommand and hands it the rest of
 * the arguments; each subcommand lives in its own cli/cmd_NAME.c. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "psplice.h"
#include "opts.h"
#include "out.h"
#include "sys.h"

#ifndef PSPLICE_BENCH_PATH
#define PSPLICE_BENCH_PATH "/usr/local/libexec/psplice/psplice-bench"
#endif

/* psplice bench is a program of its own (bench/), run here with the same
 * arguments: users measure on their machine with the command they know,
 * and only those who install the benchmark carry its code. It is looked
 * for next to this binary first, so that build/psplice bench runs the
 * build's, then where make install puts it. */
static int exec_bench(const struct cli_cmd *cmd, int argc, char **argv)
{
	char self[PATH_MAX], path[PATH_MAX + 16];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	const char *slash;

	(void)cmd;
	(void)argc;
	if (n > 0) {
		self[n] = '\0';
		setenv(CLI_BENCH_ENV, self, 1);
		slash = strrchr(self, '/');
		snprintf(path, sizeof(path), "%.*s/psplice-bench", (int)(slash - self), self);
		execv(path, argv);
	}
	execv(PSPLICE_BENCH_PATH, argv);
	if (errno == ENOENT)
		fputs(CLI_NAME " bench: the benchmark is not installed"
		      " (Debian package psplice-bench)\n", stderr);
	else
		fprintf(stderr, CLI_NAME " bench: cannot run %s: %s\n",
			cli_quote(PSPLICE_BENCH_PATH), strerror(errno));
	return 127;
}

const struct cli_cmd cli_cmd_bench = {
	.name = "bench",
	.summary = "measure every path and peer on this machine",
	.main = exec_bench,
};

/* A new subcommand is one more line here and one more file. */
static const struct cli_cmd *const commands[] = {
	&cli_cmd_bench,
	&cli_cmd_cat,
	&cli_cmd_cp,
	&cli_cmd_exec,
	&cli_cmd_relay,
	&cli_cmd_sync,
	&cli_cmd_tee,
};

#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static void help(void)
{
	size_t i;

	printf("Usage: " CLI_NAME " COMMAND [OPTION]... [ARG]...\n"
	       "Move bytes between files, pipes, sockets and devices with the least\n"
	       "copying Linux allows (reflink, copy_file_range, sendfile, splice).\n"
	       "\nCommands:\n");
	for (i = 0; i < N_COMMANDS; i++)
		printf("  %-6s %s\n", commands[i]->name, commands[i]->summary);
	printf("\nOptions:\n"
	       "      --help     display this help and exit\n"
	       "      --version  output version information and exit\n"
	       "\nRun '" CLI_NAME " COMMAND --help' for the options of a command.\n"
	       "Exit status is 0 on success, 1 on any error. See psplice(1).\n");
}

static const struct cli_cmd *find(const char *name)
{
	size_t i;

	for (i = 0; i < N_COMMANDS; i++)
		if (!strcmp(commands[i]->name, name))
			return commands[i];
	return NULL;
}

/* The command psplice is when run by that command's name (a link named
 * cp, as busybox's are named by its applets): cp, cat and tee, which
 * users and scripts call by GNU's names. NULL for any other name. */
static const struct cli_cmd *named(const char *argv0)
{
	static const struct cli_cmd *const by_name[] = { &cli_cmd_cat, &cli_cmd_cp,
							 &cli_cmd_tee };
	const char *base = strrchr(argv0, '/');
	size_t i;

	base = base ? base + 1 : argv0;
	for (i = 0; i < sizeof(by_name) / sizeof(by_name[0]); i++)
		if (!strcmp(by_name[i]->name, base))
			return by_name[i];
	return NULL;
}

int main(int argc, char **argv)
{
	const struct cli_cmd *cmd = argc > 0 ? named(argv[0]) : NULL;

	/* Named as GNU's programs name themselves: by argv[0] as it was
	 * run ("cp", "/usr/bin/cp"), which getopt's messages say too. */
	if (cmd) {
		cli_name = argv[0];
		cli_by_name = true;
	}
	cli_std_fds();
	cli_check_stdout_at_exit();
	if (cmd)
		return cmd->main(cmd, argc, argv);
	if (argc < 2)
		cli_usage_error(NULL, "missing command");
	if (!strcmp(argv[1], "--help")) {
		help();
		return 0;
	}
	if (!strcmp(argv[1], "--version"))
		cli_version(NULL);
	if (argv[1][0] == '-')
		cli_usage_error(NULL, "unrecognized option %s", cli_quote(argv[1]));
	cmd = find(argv[1]);
	if (!cmd)
		cli_usage_error(NULL, "unknown command %s", cli_quote(argv[1]));
	/* getopt_long names argv[0] in its messages; make them read
	 * "psplice: invalid option", like every other message. */
	argv[1] = (char *)CLI_NAME;
	return cmd->main(cmd, argc - 1, argv + 1);
}
