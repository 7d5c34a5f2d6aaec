/* What every subcommand's option handling shares: --help, --version,
 * usage errors, and the exit they all go through. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "psplice.h"
#include "opts.h"
#include "out.h"

bool cli_parse_only;
const char *cli_usage_where;
bool cli_by_name;
void (*cli_exit_hook)(int code);

void cli_exit(int code)
{
	if (cli_exit_hook)
		cli_exit_hook(code);
	exit(code);
}

/* How the user ran cmd, for its usage lines: "psplice NAME", or the name
 * it was run by (cli_name) when that is the command's. buf is the
 * storage of the first. */
static const char *called(const struct cli_cmd *cmd, char *buf, size_t size)
{
	if (cli_by_name)
		return cli_name;
	snprintf(buf, size, "%s %s", CLI_NAME, cmd->name);
	return buf;
}

void cli_usage_error(const struct cli_cmd *cmd, const char *fmt, ...)
{
	va_list ap;
	char buf[64];
	/* Said once: the next error (the option fuzzer goes on) is another's. */
	const char *where = cli_usage_where;

	cli_usage_where = NULL;
	if (fmt) {
		fprintf(stderr, "%s: ", cli_name);
		if (where)
			fprintf(stderr, "%s: ", where);
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fputc('\n', stderr);
	}
	/* A file's error names its line: the help would not. */
	if (where)
		;
	else if (cmd)
		fprintf(stderr, "Try '%s --help' for more information.\n",
			called(cmd, buf, sizeof(buf)));
	else
		fputs("Try '" CLI_NAME " --help' for more information.\n", stderr);
	cli_exit(1);
}

/* "Usage: " then "  or:  " before each form of cmd->args (one a line),
 * as cp(1) lists its own. */
static void usage_lines(const struct cli_cmd *cmd)
{
	char buf[64];
	const char *who = called(cmd, buf, sizeof(buf)), *form = cmd->args;
	const char *lead = "Usage:";
	size_t len;

	for (;;) {
		len = strcspn(form, "\n");
		printf("%s %s [OPTION]... %.*s\n", lead, who, (int)len, form);
		if (!form[len])
			return;
		form += len + 1;
		lead = "  or: ";
	}
}

void cli_help(const struct cli_cmd *cmd)
{
	usage_lines(cmd);
	fputs(cmd->help, stdout);
	fputs("      --help         display this help and exit\n"
	      "      --version      output version information and exit\n\n", stdout);
	fputs(cmd->status ? cmd->status : "Exit status is 0 on success, 1 on any error.\n",
	      stdout);
	printf("See " CLI_NAME "-%s(1).\n", cmd->name);
	cli_exit(0);
}

/* Run by a command's name, psplice says which, as GNU's say "cp (GNU
 * coreutils) 9.1". */
void cli_version(const struct cli_cmd *cmd)
{
	if (cmd && cli_by_name)
		printf("%s (" CLI_NAME ") %s\n", cmd->name, psplice_version());
	else
		printf(CLI_NAME " %s\n", psplice_version());
	cli_exit(0);
}

void cli_common_option(const struct cli_cmd *cmd, int c)
{
	if (c == CLI_OPT_HELP)
		cli_help(cmd);
	if (c == CLI_OPT_VERSION)
		cli_version(cmd);
	/* getopt_long has already said what was wrong. */
	cli_usage_error(cmd, NULL);
}
