/* psplice relay: what this relay reads of another relay process in /proc,
 * the one --replace names: whether it runs psplice relay, and the address
 * of its --metrics listener, which is not one to take. It calls nothing
 * of the relay but slurp. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "relay.h"
#include "out.h"

/* The command line of pid with blanks between its arguments, quoted for a
 * message. */
static const char *cmdline_text(char *cmdline, size_t len)
{
	size_t i;

	if (!len)
		return "empty: a kernel thread, a process that has exited, or one "
		       "starting a program";
	for (i = 0; i + 1 < len; i++)
		if (!cmdline[i])
			cmdline[i] = ' ';
	return cli_quote(cmdline);
}

/* Whether pid runs "psplice relay": its program's name begins with psplice
 * (also a renamed copy, or the binary a wrapper script runs) and its first
 * argument is the command. Said when it does not. */
bool is_relay(pid_t pid)
{
	char path[64];
	size_t len = 0;
	char *cmdline, *name;
	bool ok;

	snprintf(path, sizeof(path), "/proc/%ld/cmdline", (long)pid);
	cmdline = slurp(path, &len);
	if (!cmdline) {
		cli_error(errno, "relay: cannot replace process %ld: %s", (long)pid, path);
		return false;
	}
	name = strrchr(cmdline, '/');
	name = name ? name + 1 : cmdline;
	ok = len && cmdline[len - 1] == '\0' && strlen(cmdline) + 1 < len &&
	     !strncmp(name, CLI_NAME, strlen(CLI_NAME)) &&
	     !strcmp(cmdline + strlen(cmdline) + 1, "relay");
	if (!ok)
		cli_error(0, "relay: cannot replace process %ld: it is not a " CLI_NAME
			  " relay (its command line is %s)", (long)pid,
			  cmdline_text(cmdline, len));
	free(cmdline);
	return ok;
}

/* "--metrics=ADDR", "--metrics ADDR" (after: the next argument, or NULL),
 * or getopt's abbreviations of it ("--me" is the shortest no other option
 * begins with); NULL when arg is none of these. */
static const char *metrics_value(const char *arg, const char *after)
{
	const char *eq;
	size_t n;

	if (strncmp(arg, "--me", 4))
		return NULL;
	eq = strchr(arg, '=');
	n = eq ? (size_t)(eq - arg) : strlen(arg);
	if (n > sizeof("--metrics") - 1 || strncmp(arg, "--metrics", n))
		return NULL;
	return eq ? eq + 1 : after;
}

bool metrics_addr_of(pid_t pid, struct cli_addr *a)
{
	char path[64], *line, *arg, *end, *after;
	const char *value = NULL, *why;
	size_t len = 0;
	bool found;

	snprintf(path, sizeof(path), "/proc/%ld/cmdline", (long)pid);
	line = slurp(path, &len);
	if (!line || !len || line[len - 1]) {
		free(line);
		return false;
	}
	end = line + len;
	for (arg = line; arg < end && !value && strcmp(arg, "--"); arg = after) {
		after = arg + strlen(arg) + 1;
		value = metrics_value(arg, after < end ? after : NULL);
	}
	found = value && cli_parse_addr(value, a, true, &why) == 0;
	free(line);
	return found;
}
