/* libFuzzer: the option parsing of every subcommand. The first byte picks
 * the subcommand, the rest are its arguments, NUL-separated. With
 * cli_parse_only set, each subcommand parses and checks its arguments and
 * returns before it would run; usage errors, --help and --version come back
 * here through cli_exit_hook. Their messages go to /dev/null.
 *
 * Checked beyond crashes and undefined behaviour: the verdict (accepted, or
 * the exit status) is 0 or 1 and is the same on a second parse of the same
 * arguments; the argument strings are left as they were; no descriptor is
 * left open and the SIGINT and SIGPIPE dispositions are as before. */
#include <getopt.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "opts.h"
#include "out.h"

#define MAX_ARGS 40

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct cli_cmd *const commands[] = {
	&bench_cmd, &cli_cmd_cat, &cli_cmd_cp, &cli_cmd_exec,
	&cli_cmd_relay, &cli_cmd_sync, &cli_cmd_tee,
};

static jmp_buf back;

static void exit_here(int code)
{
	longjmp(back, code + 1);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	FILE *null = fopen("/dev/null", "w");

	(void)argc;
	(void)argv;
	if (!null)
		abort();
	/* stdio only: libFuzzer and the sanitizers keep descriptor 2. */
	stdout = null;
	stderr = null;
	cli_parse_only = true;
	cli_exit_hook = exit_here;
	return 0;
}

/* Split data into args (each a copy, NUL-terminated); their count. */
static int split(const uint8_t *data, size_t size, char **args)
{
	size_t i = 0, n;
	int argc = 0;

	while (i < size && argc < MAX_ARGS) {
		n = strnlen((const char *)data + i, size - i);
		args[argc] = strndup((const char *)data + i, n);
		if (!args[argc])
			abort();
		argc++;
		i += n + 1;
	}
	return argc;
}

/* 0 when the parse accepted the arguments, else the exit status + 1. */
static int parse(const struct cli_cmd *cmd, int argc, char **args)
{
	char *argv[MAX_ARGS + 2];
	volatile int verdict;
	int r;

	argv[0] = (char *)CLI_NAME;
	memcpy(argv + 1, args, sizeof(*args) * (size_t)argc);
	argv[argc + 1] = NULL;
	optind = 0; /* glibc: start afresh, forget the last scan */
	r = setjmp(back);
	if (r) {
		verdict = r;
	} else {
		verdict = cmd->main(cmd, argc + 1, argv);
		if (verdict != 0)
			abort();
	}
	return verdict;
}

static int lowest_free_fd(void)
{
	int fd = dup(0);

	if (fd < 0)
		abort();
	close(fd);
	return fd;
}

static void check_signal(int sig, void (*was)(int))
{
	void (*now)(int) = signal(sig, was);

	/* tee -i ignores SIGINT while parsing, as tee(1) does: allowed. */
	if (now != was && !(sig == SIGINT && now == SIG_IGN))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct cli_cmd *cmd;
	char *args[MAX_ARGS], *copy[MAX_ARGS];
	void (*intr)(int) = signal(SIGINT, SIG_DFL), (*pipe)(int) = signal(SIGPIPE, SIG_DFL);
	int argc, fd = lowest_free_fd(), v1, v2, i;

	signal(SIGINT, intr);
	signal(SIGPIPE, pipe);
	if (size < 1)
		return 0;
	cmd = commands[data[0] % (sizeof(commands) / sizeof(commands[0]))];
	argc = split(data + 1, size - 1, args);
	split(data + 1, size - 1, copy);
	v1 = parse(cmd, argc, args);
	v2 = parse(cmd, argc, args);
	if (v1 != v2 || (v1 != 0 && v1 != 1 && v1 != 2))
		abort();
	for (i = 0; i < argc; i++) {
		if (strcmp(args[i], copy[i]))
			abort();
		free(args[i]);
		free(copy[i]);
	}
	if (lowest_free_fd() != fd)
		abort();
	check_signal(SIGINT, intr);
	check_signal(SIGPIPE, pipe);
	return 0;
}
