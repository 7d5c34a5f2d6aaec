/* Shared by the subcommands: options, messages, the -v report and the copy
 * loop around psplice_copy(). Sizes are parsed in parse.c, addresses in
 * addr.c, the progress line drawn in progress.c. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

/* Set when a message (or a relay's log record) could not be written
 * whole: the exit check fails the command for it, as stdio's error flag
 * did before messages bypassed stdio. Any thread may set it. */
static atomic_bool stderr_lost;

/* Write all of buf to fd (standard error, or a log file), in one write(2)
 * unless it is cut short. */
void cli_put(int fd, const char *buf, size_t len)
{
	ssize_t n;

	while (len) {
		n = write(fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			atomic_store(&stderr_lost, true);
			return;
		}
		buf += n;
		len -= (size_t)n;
	}
}

/* A message being built: len bytes of buf's size, one kept for its newline. */
struct line {
	char *buf;
	size_t size, len;
};

static void line_vadd(struct line *l, const char *fmt, va_list ap)
{
	size_t room = l->size - 1 - l->len;  /* the text's and vsnprintf's NUL */
	int n = vsnprintf(l->buf + l->len, room, fmt, ap);

	if (n > 0)
		l->len += (size_t)n < room ? (size_t)n : room - 1;
}

static void line_add(struct line *l, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	line_vadd(l, fmt, ap);
	va_end(ap);
}

/* "psplice: " MSG [": " reason] "\n", built whole in memory and written with
 * one write(2): stdio writes the pieces of a line in several, and relay
 * workers reporting at once tore each other's lines. A message too long for
 * the stack goes through the heap; without the memory, it is cut. */
static void say(int fd, int err, const char *fmt, va_list ap)
{
	char small[1024], why[256];
	const char *reason = err ? strerror_r(err, why, sizeof(why)) : "";
	struct line l = { small, sizeof(small), 0 };
	int saved = errno, body;
	size_t need;
	va_list again;

	va_copy(again, ap);
	body = vsnprintf(NULL, 0, fmt, again);
	va_end(again);
	need = sizeof(CLI_NAME ": ") + (body > 0 ? (size_t)body : 0) + strlen(reason) + 4;
	if (need > l.size && (l.buf = malloc(need)))
		l.size = need;
	else if (need > l.size)
		l.buf = small;
	line_add(&l, "%s", CLI_NAME ": ");
	line_vadd(&l, fmt, ap);
	if (err)
		line_add(&l, ": %s", reason);
	l.buf[l.len++] = '\n';
	cli_put(fd, l.buf, l.len);
	if (l.buf != small)
		free(l.buf);
	errno = saved;
}

void cli_error(int err, const char *fmt, ...)
{
	va_list ap;

	/* What was printed before the error comes before it. */
	fflush(stdout);
	va_start(ap, fmt);
	say(STDERR_FILENO, err, fmt, ap);
	va_end(ap);
}

void cli_say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say(STDERR_FILENO, 0, fmt, ap);
	va_end(ap);
}

void cli_say_to(int fd, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say(fd, 0, fmt, ap);
	va_end(ap);
}

/* Each thread quotes into slots of its own: relay workers report at once.
 * A slot grown for a long name is freed when its thread ends (the key's
 * destructor); the main thread's stay reachable until exit. */
#define QUOTE_SLOTS 4
struct quote_slots {
	char first[QUOTE_SLOTS][4096 + 3], *grown[QUOTE_SLOTS];
	size_t room[QUOTE_SLOTS];
	unsigned int next;
	bool keyed;          /* registered for the destructor */
};
static _Thread_local struct quote_slots quotes;
static pthread_key_t quote_key;
static pthread_once_t quote_once = PTHREAD_ONCE_INIT;
static bool quote_key_made;

static void free_grown(void *arg)
{
	struct quote_slots *q = arg;
	int i;

	for (i = 0; i < QUOTE_SLOTS; i++) {
		free(q->grown[i]);
		q->grown[i] = NULL;
		q->room[i] = 0;
	}
	q->keyed = false;
}

static void make_quote_key(void)
{
	quote_key_made = pthread_key_create(&quote_key, free_grown) == 0;
}

/* The memory to quote len bytes in slot, or false: without a destructor to
 * free it, a thread grows nothing. */
static bool grow(struct quote_slots *q, unsigned int slot, size_t len)
{
	char *p;

	if (len <= q->room[slot])
		return true;
	if (!q->keyed) {
		pthread_once(&quote_once, make_quote_key);
		q->keyed = quote_key_made && pthread_setspecific(quote_key, q) == 0;
		if (!q->keyed)
			return false;
	}
	p = realloc(q->grown[slot], len);
	if (!p)
		return false;
	q->grown[slot] = p;
	q->room[slot] = len;
	return true;
}

const char *cli_quote(const char *name)
{
	/* Whole, however long: a path deep in a tree may be longer than
	 * PATH_MAX. Without the memory for it, cut at what there is. */
	struct quote_slots *qs = &quotes;
	unsigned int slot = qs->next++ % QUOTE_SLOTS;
	size_t len = strlen(name) + 3, size = sizeof(qs->first[0]);
	char *q = qs->first[slot], *p;

	if (len > size && grow(qs, slot, len)) {
		q = qs->grown[slot];
		size = qs->room[slot];
	}
	p = q;
	*p++ = '\'';
	/* A control character in a file name must not reach the terminal. */
	for (; *name && p < q + size - 2; name++)
		*p++ = (unsigned char)*name < 0x20 || *name == 0x7f ? '?' : *name;
	*p++ = '\'';
	*p = '\0';
	return q;
}

bool cli_parse_only;
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

	if (fmt) {
		fputs(CLI_NAME ": ", stderr);
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fputc('\n', stderr);
	}
	if (cmd)
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
	      "      --version      output version information and exit\n"
	      "\nExit status is 0 on success, 1 on any error.\n", stdout);
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

static void check_stdout(void)
{
	errno = 0;
	if (fflush(stdout) != 0 || ferror(stdout)) {
		cli_error(errno, "write error");
		_exit(1);
	}
	/* As in cp(1): a message lost on a closed or full standard error
	 * still fails the command, though nothing can say so. */
	if (atomic_load(&stderr_lost) || ferror(stderr))
		_exit(1);
}

void cli_check_stdout_at_exit(void)
{
	atexit(check_stdout);
}

/* A standard descriptor left closed by the caller would be taken by the
 * next file or socket opened here: what was meant for the terminal would
 * be written into a copy, a prompt answered from a file, a socket read as
 * standard input. Each closed one gets /dev/null the wrong way round (0
 * for writing, 1 and 2 for reading), so that our own use of it fails with
 * EBADF, as on the closed descriptor, and GNU tools' messages follow.
 * Close-on-exec: a program run from here is handed its standard
 * descriptors as they came to us, closed. */
void cli_std_fds(void)
{
	int fd, got;

	for (fd = STDIN_FILENO; fd <= STDERR_FILENO; fd++) {
		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
			continue;
		/* The lower ones are open by now: this takes fd itself. */
		got = open("/dev/null", (fd == STDIN_FILENO ? O_WRONLY : O_RDONLY) | O_CLOEXEC);
		if (got != fd) {
			cli_error(got < 0 ? errno : 0, "cannot open %s on a closed descriptor %d",
				  cli_quote("/dev/null"), fd);
			exit(1);
		}
	}
}

/* 1048576 -> "1,048,576" */
static const char *thousands(uint64_t n, char *buf, size_t size)
{
	char digits[24];
	int len = snprintf(digits, sizeof(digits), "%" PRIu64, n), i;
	size_t o = 0;

	for (i = 0; i < len && o + 2 < size; i++) {
		if (i && (len - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = digits[i];
	}
	buf[o] = '\0';
	return buf;
}

void cli_report(const char *in, const char *out, const struct cli_copy *c)
{
	char num[32];

	cli_say("%s -> %s: %s byte%s%s%s", cli_quote(in), cli_quote(out),
		thousands(c->bytes, num, sizeof(num)), c->bytes == 1 ? "" : "s",
		c->bytes ? " by " : "", c->bytes ? psplice_method_name(c->method) : "");
}

/* A reader that went away ends psplice as it ends cat: by SIGPIPE, which
 * the engine kept from us. When our caller ignores SIGPIPE, it is an error
 * like any other and is reported. */
void cli_die_of_sigpipe(void)
{
	struct sigaction sa;
	sigset_t set;

	if (sigaction(SIGPIPE, NULL, &sa) < 0 || sa.sa_handler != SIG_DFL)
		return;
	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	raise(SIGPIPE);
}

void cli_copy_error(const char *in, const char *out, const struct cli_copy *c)
{
	switch (c->side) {
	case PSPLICE_SIDE_IN:
		cli_error(c->error, "error reading %s", cli_quote(in));
		break;
	case PSPLICE_SIDE_OUT:
		if (c->error == EPIPE)
			cli_die_of_sigpipe();
		cli_error(c->error, "error writing %s", cli_quote(out));
		break;
	default:
		cli_error(c->error, "cannot copy %s to %s", cli_quote(in), cli_quote(out));
	}
}

int64_t cli_now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

bool cli_same_inode(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* A pipe holds 64 KiB unless asked for more, and each splice moves at most
 * what fits: 1 MiB halves the calls' cost per byte on both sides of it.
 * Where the limit (fs.pipe-max-size, or the user's pipe pages) says no, the
 * pipe stays as it is. */
void cli_grow_pipe(int fd)
{
	struct stat st;

	if (fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode) &&
	    fcntl(fd, F_GETPIPE_SZ) < CLI_PIPE_SIZE)
		fcntl(fd, F_SETPIPE_SZ, CLI_PIPE_SIZE);
}

void cli_copy_add(struct cli_copy *c, uint64_t bytes, int method)
{
	c->bytes += bytes;
	if (bytes)
		c->method = method;
}

int cli_copy_fail(struct cli_copy *c, int error, int side)
{
	c->error = error;
	c->side = side;
	return -1;
}

static int wait_for(int fd, short events)
{
	struct pollfd p = { .fd = fd, .events = events };
	int r;

	do
		r = poll(&p, 1, -1);
	while (r < 0 && errno == EINTR);
	return r < 0 ? -errno : 0;
}

int cli_copy_len(int fd_in, int fd_out, uint64_t len, unsigned int flags,
		 struct cli_copy *c)
{
	return cli_copy_at(fd_in, NULL, fd_out, len, flags, c);
}

struct psplice_pair *cli_pair(int fd_in, int fd_out, unsigned int flags, struct cli_copy *c)
{
	struct psplice_pair *p = psplice_pair_new(fd_in, fd_out, flags & CLI_PLAN_FLAGS);

	if (!p)
		cli_copy_fail(c, errno, psplice_last()->side);
	return p;
}

/* Copy on the pair; bytes it took from a non-seekable input and could not
 * deliver stay pending in it, and go out first on the next copy. */
static int copy_once(struct psplice_pair *p, int64_t *off_in, int fd_in, int fd_out,
		     uint64_t len, unsigned int flags, struct cli_copy *c)
{
	struct psplice_result r;
	uint64_t left = len;
	bool out_blocked;
	int err;

	*c = (struct cli_copy){ .method = PSPLICE_METHOD_NONE };
	for (;;) {
		err = psplice_pair_copy(p, off_in, NULL, left, flags & ~CLI_PLAN_FLAGS, &r);
		cli_copy_add(c, r.out_bytes, r.method);
		if (err == 0)
			return 0;
		/* Only an fd someone else left O_NONBLOCK says EAGAIN here: wait
		 * for the side the engine names, as a blocking cat would. */
		if (r.error != EAGAIN)
			return cli_copy_fail(c, r.error, r.side);
		if (len != PSPLICE_TO_EOF) {
			left = len - c->bytes;
			if (!left)
				return 0;
		}
		out_blocked = r.side == PSPLICE_SIDE_OUT;
		err = wait_for(out_blocked ? fd_out : fd_in, out_blocked ? POLLOUT : POLLIN);
		if (err)
			return cli_copy_fail(c, -err, r.side);
	}
}

int cli_copy(int fd_in, int fd_out, unsigned int flags, struct cli_copy *c)
{
	return cli_copy_len(fd_in, fd_out, PSPLICE_TO_EOF, flags, c);
}

/* The fds are classified once, for the whole copy. With a progress line,
 * the copy goes in chunks so the line can move. */
int cli_copy_at(int fd_in, int64_t *off_in, int fd_out, uint64_t len,
		unsigned int flags, struct cli_copy *c)
{
	struct psplice_pair *p;
	int rc;

	*c = (struct cli_copy){ .method = PSPLICE_METHOD_NONE };
	p = cli_pair(fd_in, fd_out, flags, c);
	if (!p)
		return -1;
	rc = cli_pair_copy(p, off_in, fd_in, fd_out, len, flags, c);
	psplice_pair_free(p);
	return rc;
}

int cli_pair_copy(struct psplice_pair *p, int64_t *off_in, int fd_in, int fd_out,
		  uint64_t len, unsigned int flags, struct cli_copy *c)
{
	struct cli_copy part;
	uint64_t n;
	int rc;

	if (!cli_progress_on())
		return copy_once(p, off_in, fd_in, fd_out, len, flags, c);
	*c = (struct cli_copy){ .method = PSPLICE_METHOD_NONE };
	for (;;) {
		n = len == PSPLICE_TO_EOF ? CLI_CHUNK : len - c->bytes;
		if (n > CLI_CHUNK)
			n = CLI_CHUNK;
		rc = copy_once(p, off_in, fd_in, fd_out, n, flags, &part);
		cli_copy_add(c, part.bytes, part.method);
		cli_progress_add(part.bytes);
		if (rc < 0)
			return cli_copy_fail(c, part.error, part.side);
		if (part.bytes < n || (len != PSPLICE_TO_EOF && c->bytes >= len))
			return 0;
	}
}
