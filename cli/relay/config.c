/* psplice relay --config FILE: several listeners in one process, one a
 * line, each line the command line's own words for one listener:
 *
 *     LISTEN TARGET... [OPTION]...     # a comment
 *
 * Words are cut at spaces and tabs, with no quoting; a word that begins
 * with '#' begins a comment. A line takes the options of one listener
 * (options.c: its targets' balance, PROXY, rates, timeouts, socket
 * options); those of the command line are every line's defaults, and
 * those of the process (--jobs, --log, --metrics...) are the command
 * line's alone. Every line is read and checked before anything starts: an
 * error names the file and the line, and the relay exits 1. A reload
 * (SIGUSR2, --replace) reads the file again in the new process, so a bad
 * file leaves the relay running as it was. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <unistd.h>

#include "relay.h"
#include "opts.h"
#include "out.h"

#define CONFIG_MAX (1 << 20)   /* bytes a file may have */
#define WORDS_MAX 256          /* words a line may have */

/* What config_read has made so far. A usage error leaves through
 * cli_exit, which the option fuzzer turns into a longjmp: the next call
 * frees what the last one left. */
static struct {
	struct relay *head, *x;
	char *text;
} partial;

static void free_partial(void)
{
	if (partial.x)
		free(partial.x->targets);
	free(partial.x);
	config_free(partial.head);
	free(partial.text);
	memset(&partial, 0, sizeof(partial));
}

/* The same address as an earlier line's LISTEN: the same socket file, or
 * the same address and port. Its line, or 0. */
static int listen_seen(const struct relay *head, const struct relay *x)
{
	const struct sockaddr_un *a = (const void *)&x->listen.ss, *b;

	for (; head; head = head->next) {
		b = (const void *)&head->listen.ss;
		if (a->sun_family == AF_UNIX ?
		    b->sun_family == AF_UNIX && !strcmp(a->sun_path, b->sun_path) :
		    head->listen.len == x->listen.len &&
		    !memcmp(&head->listen.ss, &x->listen.ss, x->listen.len))
			return head->line;
	}
	return 0;
}

/* The words of line (cut in place) after argv[0]; their count. */
static int words(const struct cli_cmd *cmd, char *line, char **argv)
{
	int n = 1;
	char *w;

	for (w = strtok(line, " \t\r"); w && *w != '#'; w = strtok(NULL, " \t\r")) {
		if (n == WORDS_MAX)
			cli_usage_error(cmd, "too many words (at most %d)", WORDS_MAX - 1);
		argv[n++] = w;
	}
	argv[n] = NULL;
	return n;
}

/* One line's listener: a copy of base, read from argv as from a command
 * line. */
static struct relay *listener(const struct cli_cmd *cmd, const struct relay *base,
			      int argc, char **argv)
{
	struct relay *x = malloc(sizeof(*x));

	if (!x)
		cli_usage_error(cmd, "%s", strerror(ENOMEM));
	partial.x = x;
	*x = *base;
	x->fork_lock = (pthread_rwlock_t)CLI_RWLOCK_WRITER_FIRST;
	pthread_mutex_init(&x->accept_failed.lock, NULL);
	x->targets = NULL;
	x->next = NULL;
	optind = 0;
	relay_options(cmd, argc, argv, x, NULL);
	relay_operands(cmd, argc, argv, x);
	if (x->inherited)
		cli_usage_error(cmd, "LISTEN '-' (a service manager's sockets) is not for a "
				"config line: give each address");
	return x;
}

/* The file's text, read whole, NUL-terminated; a usage error when it
 * cannot be, is over CONFIG_MAX (read no further: /dev/zero is a file too)
 * or holds a NUL (not a text file). */
static char *read_text(const struct cli_cmd *cmd, const char *path)
{
	char *text = malloc(CONFIG_MAX + 1);
	size_t len = 0;
	ssize_t n = 1;
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;

	while (fd >= 0 && text && n > 0 && len <= CONFIG_MAX) {
		n = read(fd, text + len, CONFIG_MAX + 1 - len);
		if (n < 0 && errno == EINTR)
			n = 1;
		else if (n > 0)
			len += (size_t)n;
	}
	err = fd < 0 || n < 0 ? errno : text ? 0 : ENOMEM;
	if (fd >= 0)
		close(fd);
	if (err || len > CONFIG_MAX || memchr(text, '\0', len)) {
		free(text);
		if (err)
			cli_usage_error(cmd, "%s", strerror(err));
		cli_usage_error(cmd, len > CONFIG_MAX ? "over %d bytes: not a config file" :
				"a NUL byte: not a text file", CONFIG_MAX);
	}
	text[len] = '\0';
	return text;
}

/* Every line of path, each a listener made from base, in the file's order;
 * the first, which holds the file's text (config_free). Any error is a
 * usage error that names the line. */
struct relay *config_read(const struct cli_cmd *cmd, const char *path,
			  const struct relay *base)
{
	/* Static: a usage error leaves cli_usage_where pointing at it. */
	static char where[4096 + 32];
	/* getopt_long's messages begin with argv[0]: "psplice: FILE:N". */
	char argv0[sizeof(where) + sizeof(CLI_NAME ": ")];
	char *text, *line, *end, *argv[WORDS_MAX + 1] = { argv0 };
	struct relay *head = NULL, **tail = &head, *x;
	int n = 0, argc, seen;

	free_partial();
	snprintf(where, sizeof(where), "%s", path);
	cli_usage_where = where;
	text = partial.text = read_text(cmd, path);
	for (line = text; *line; line = end) {
		end = strchrnul(line, '\n');
		if (*end)
			*end++ = '\0';
		snprintf(where, sizeof(where), "%s:%d", path, ++n);
		snprintf(argv0, sizeof(argv0), CLI_NAME ": %s", where);
		cli_usage_where = where;
		argc = words(cmd, line, argv);
		if (argc == 1)
			continue;
		x = listener(cmd, base, argc, argv);
		if ((seen = listen_seen(head, x)))
			cli_usage_error(cmd, "LISTEN %s is also on line %d",
					cli_quote(x->listen.text), seen);
		x->line = n;
		*tail = x;
		tail = &x->next;
		partial.head = head;
		partial.x = NULL;
	}
	snprintf(where, sizeof(where), "%s", path);
	cli_usage_where = where;
	if (!head)
		cli_usage_error(cmd, "no listeners (want lines of LISTEN TARGET... [OPTION]...)");
	cli_usage_where = NULL;
	head->config_text = text;
	memset(&partial, 0, sizeof(partial));
	return head;
}

void config_free(struct relay *head)
{
	struct relay *x;

	if (head)
		free(head->config_text);
	while ((x = head)) {
		head = x->next;
		free(x->targets);
		free(x);
	}
}
