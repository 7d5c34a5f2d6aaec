/* The command table entry of a subcommand and the option handling every
 * subcommand shares: --help, --version, usage errors, the exit (opts.c). */
#ifndef CLI_OPTS_H
#define CLI_OPTS_H

#include <getopt.h>
#include <stdbool.h>

/* Long options every subcommand takes, after its own. */
enum { CLI_OPT_HELP = 0x100, CLI_OPT_VERSION };
#define CLI_COMMON_LONGOPTS \
	{ "help", no_argument, NULL, CLI_OPT_HELP }, \
	{ "version", no_argument, NULL, CLI_OPT_VERSION }, \
	{ NULL, 0, NULL, 0 }

struct cli_cmd {
	const char *name;
	const char *args;     /* the operands, for the usage line; a line each form */
	const char *summary;  /* one line, for psplice --help */
	const char *help;     /* description and options, for psplice NAME --help */
	const char *status;   /* its exit status, for --help; NULL: 0 or 1 */
	int (*main)(const struct cli_cmd *cmd, int argc, char **argv);
};

/* Runs the benchmark, psplice-bench, with the path of this psplice in the
 * environment variable CLI_BENCH_ENV: the command it measures. */
extern const struct cli_cmd cli_cmd_bench;
#define CLI_BENCH_ENV "PSPLICE_BENCH_PSPLICE"
extern const struct cli_cmd cli_cmd_cat;
extern const struct cli_cmd cli_cmd_cp;
extern const struct cli_cmd cli_cmd_exec;
extern const struct cli_cmd cli_cmd_relay;
extern const struct cli_cmd cli_cmd_sync;
extern const struct cli_cmd cli_cmd_tee;

/* Set (by the option fuzzer) to have each subcommand parse and check its
 * arguments, then return 0 without running: nothing opened, written,
 * connected or run, no name looked up. */
extern bool cli_parse_only;
/* Every exit of the option handling below goes through cli_exit: it calls
 * cli_exit_hook when set (which must not return; the fuzzer longjmps), then
 * exit(code). */
extern void (*cli_exit_hook)(int code);
void cli_exit(int code) __attribute__((noreturn));

/* Handle an option that is not the subcommand's own: --help and --version
 * exit 0, anything else is a usage error (exit 1). */
void cli_common_option(const struct cli_cmd *cmd, int c) __attribute__((noreturn));
void cli_help(const struct cli_cmd *cmd) __attribute__((noreturn));
/* "psplice VERSION"; run by cmd's name, "NAME (psplice) VERSION". */
void cli_version(const struct cli_cmd *cmd) __attribute__((noreturn));
/* Set by main when psplice runs by a command's name (cli_name is then
 * its argv[0]): usage lines name the command by cli_name alone. */
extern bool cli_by_name;
/* Where the words a usage error is about came from ("relay.conf:3"), said
 * before its message; NULL: the command line. */
extern const char *cli_usage_where;
/* "NAME: MSG" and the --help hint on stderr; exits 1. */
void cli_usage_error(const struct cli_cmd *cmd, const char *fmt, ...)
	__attribute__((noreturn, format(printf, 2, 3)));

#endif
