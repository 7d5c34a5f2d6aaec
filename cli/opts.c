/* What every subcommand's option handling shares: --help, --version,
 * usage errors, and the exit they all go through. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "psplice.h"
#include "opts.h"
#include "out.h"

bool cli_parse_only;
const char *cli_usage_where;
void (*cli_exit_hook)(int code);

void cli_exit(int code)
{
	if (cli_exit_hook)
		cli_exit_hook(code);
	exit(code);
}

void cli_usage_error(const struct cli_cmd *cmd, const char *fmt, ...)
{
	va_list ap;
	/* Said once: the next error (the option fuzzer goes on) is another's. */
	const char *where = cli_usage_where;

	cli_usage_where = NULL;
	if (fmt) {
		fputs(CLI_NAME ": ", stderr);
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
		fprintf(stderr, "Try '" CLI_NAME " %s --help' for more information.\n",
			cmd->name);
	else
		fputs("Try '" CLI_NAME " --help' for more information.\n", stderr);
	cli_exit(1);
}

void cli_help(const struct cli_cmd *cmd)
{
	printf("Usage: " CLI_NAME " %s [OPTION]... %s\n%s", cmd->name, cmd->args,
	       cmd->help);
	fputs("      --help         display this help and exit\n"
	      "      --version      output version information and exit\n\n", stdout);
	fputs(cmd->status ? cmd->status : "Exit status is 0 on success, 1 on any error.\n",
	      stdout);
	printf("See " CLI_NAME "-%s(1).\n", cmd->name);
	cli_exit(0);
}

void cli_version(void)
{
	printf(CLI_NAME " %s\n", psplice_version());
	cli_exit(0);
}

void cli_common_option(const struct cli_cmd *cmd, int c)
{
	if (c == CLI_OPT_HELP)
		cli_help(cmd);
	if (c == CLI_OPT_VERSION)
		cli_version();
	/* getopt_long has already said what was wrong. */
	cli_usage_error(cmd, NULL);
}
