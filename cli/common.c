/* Shared by the subcommands: options, messages, the -v report and the copy
 * loop around psplice_copy(). */
#include <errno.h>
#include <sys/un.h>
#include <sys/socket.h>
#include <netdb.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

void cli_error(int err, const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs(CLI_NAME ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (err)
		fprintf(stderr, ": %s", strerror(err));
	fputc('\n', stderr);
}

const char *cli_quote(const char *name)
{
	/* Whole, however long: a path deep in a tree may be longer than
	 * PATH_MAX. Without the memory for it, cut at what there is. */
	static char first[4][4096 + 3], *grown[4];
	static size_t room[4];
	static unsigned int next;
	unsigned int slot = next++ % 4;
	size_t len = strlen(name) + 3, size = sizeof(first[0]);
	char *q = first[slot], *p = NULL;

	if (len > size && len > room[slot] && (p = realloc(grown[slot], len))) {
		grown[slot] = p;
		room[slot] = len;
	}
	if (len > size && len <= room[slot]) {
		q = grown[slot];
		size = room[slot];
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
	      "\nExit status is 0 on success, 1 on any error.\n"
	      "See psplice(1).\n", stdout);
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
	if (fflush(stdout) != 0 || ferror(stdout)) {
		cli_error(errno, "write error");
		_exit(1);
	}
}

void cli_check_stdout_at_exit(void)
{
	atexit(check_stdout);
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

	fprintf(stderr, CLI_NAME ": %s -> %s: %s byte%s", cli_quote(in), cli_quote(out),
		thousands(c->bytes, num, sizeof(num)), c->bytes == 1 ? "" : "s");
	if (c->bytes)
		fprintf(stderr, " by %s", psplice_method_name(c->method));
	fputc('\n', stderr);
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

	if (!p) {
		c->error = errno;
		c->side = psplice_last()->side;
	}
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
		if (psplice_pair_copy(p, off_in, NULL, left, flags & ~CLI_PLAN_FLAGS, &r) == 0)
			break;
		c->bytes += r.out_bytes;
		if (r.out_bytes)
			c->method = r.method;
		/* Only an fd someone else left O_NONBLOCK says EAGAIN here: wait
		 * for the side the engine names, as a blocking cat would. */
		if (r.error != EAGAIN) {
			c->error = r.error;
			c->side = r.side;
			return -1;
		}
		if (len != PSPLICE_TO_EOF) {
			left = len - c->bytes;
			if (!left)
				return 0;
		}
		out_blocked = r.side == PSPLICE_SIDE_OUT;
		err = wait_for(out_blocked ? fd_out : fd_in, out_blocked ? POLLOUT : POLLIN);
		if (err) {
			c->error = -err;
			c->side = r.side;
			return -1;
		}
	}
	c->bytes += r.out_bytes;
	if (r.out_bytes)
		c->method = r.method;
	return 0;
}

int cli_copy(int fd_in, int fd_out, unsigned int flags, struct cli_copy *c)
{
	return cli_copy_len(fd_in, fd_out, PSPLICE_TO_EOF, flags, c);
}

/* "64M" -> 67108864; K, M, G, T are powers of 1024. -1 when malformed. */
int64_t cli_parse_size(const char *s)
{
	static const char units[] = "KMGT";
	const char *u;
	char *end;
	unsigned long long n;
	int shift = 0;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	n = strtoull(s, &end, 10);
	if (errno)
		return -1;
	if (*end && (u = strchr(units, *end)) && end[1] == '\0')
		shift = 10 * (int)(u - units + 1);
	else if (*end)
		return -1;
	if (n > (unsigned long long)INT64_MAX >> shift)
		return -1;
	return (int64_t)(n << shift);
}

/* OFF:LEN; LEN 0 or empty means to end of file. */
int cli_parse_range(const char *arg, int64_t *off, int64_t *len)
{
	const char *colon = strchr(arg, ':');
	char head[64];

	if (!colon || (size_t)(colon - arg) >= sizeof(head))
		return -1;
	memcpy(head, arg, (size_t)(colon - arg));
	head[colon - arg] = '\0';
	*off = cli_parse_size(head);
	*len = colon[1] ? cli_parse_size(colon + 1) : 0;
	return *off < 0 || *len < 0 ? -1 : 0;
}

/* The text of "[v6]:port" or "host:port" cut into host and port, with no
 * lookup; -1 with *why set when malformed. */
int cli_split_addr(const char *s, char *host, size_t size, const char **port, bool passive,
		   const char **why)
{
	const char *end;
	size_t hl;

	if (*s == '[') {
		end = strchr(s, ']');
		if (!end || end[1] != ':') {
			*why = "want [IPv6]:PORT";
			return -1;
		}
		*port = end + 2;
		s++;
	} else {
		end = strrchr(s, ':');
		if (!end) {
			*why = "want HOST:PORT, [IPv6]:PORT or unix:PATH";
			return -1;
		}
		*port = end + 1;
	}
	hl = (size_t)(end - s);
	if (!hl || hl >= size || !**port) {
		*why = "want HOST:PORT, [IPv6]:PORT or unix:PATH";
		return -1;
	}
	memcpy(host, s, hl);
	host[hl] = '\0';
	/* getaddrinfo takes a number modulo 65536 (99999 is 34463); port 0
	 * means "any" to bind and nothing to connect to. A name ("http") is
	 * the services database's. */
	if (strspn(*port, "0123456789") == strlen(*port)) {
		unsigned long p = strtoul(*port, NULL, 10);

		if (strlen(*port) > 5 || p > 65535) {
			*why = "port out of range (0 to 65535)";
			return -1;
		}
		if (!p && !passive) {
			*why = "port 0 is not a port to connect to";
			return -1;
		}
	}
	return 0;
}

/* "unix:/path", "[v6]:port", "host:port" -> a socket address. */
int cli_parse_addr(const char *s, struct cli_addr *a, bool passive, const char **why)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	char host[256];
	const char *port;
	int err;

	memset(a, 0, sizeof(*a));
	a->text = s;
	if (!strncmp(s, "unix:", 5)) {
		struct sockaddr_un *un = (struct sockaddr_un *)&a->ss;

		if (!s[5] || strlen(s + 5) >= sizeof(un->sun_path)) {
			*why = "bad unix socket path";
			return -1;
		}
		un->sun_family = AF_UNIX;
		strcpy(un->sun_path, s + 5);
		a->len = sizeof(*un);
		return 0;
	}
	if (cli_split_addr(s, host, sizeof(host), &port, passive, why) < 0)
		return -1;
	if (passive)
		hints.ai_flags = AI_PASSIVE;
	/* Parsing only looks nothing up: a name stands as its form was checked. */
	if (cli_parse_only)
		hints.ai_flags |= AI_NUMERICHOST | AI_NUMERICSERV;
	err = getaddrinfo(host, port, &hints, &ai);
	if (err == EAI_NONAME && cli_parse_only)
		return 0;
	if (err) {
		*why = gai_strerror(err);
		return -1;
	}
	memcpy(&a->ss, ai->ai_addr, ai->ai_addrlen);
	a->len = ai->ai_addrlen;
	freeaddrinfo(ai);
	return 0;
}

/* --to ADDR: a blocking stream socket connected to ADDR (a bad address is
 * a usage error); -1 with the error said when it cannot be reached. */
int cli_connect(const struct cli_cmd *cmd, const char *arg)
{
	struct cli_addr a;
	const char *why;
	int fd;

	if (cli_parse_addr(arg, &a, false, &why) < 0)
		cli_usage_error(cmd, "invalid address %s: %s", cli_quote(arg), why);
	if (cli_parse_only)
		return -1;
	fd = socket(a.ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&a.ss, a.len) == 0)
		return fd;
	cli_error(errno, "cannot connect to %s", cli_quote(arg));
	if (fd >= 0)
		close(fd);
	return -1;
}

/* ---- progress ---- */

#define PROGRESS_CHUNK ((uint64_t)8 << 20)

static struct {
	bool on, drawn;
	bool tty;        /* stderr is a terminal: one line, redrawn in place */
	const char *what;
	uint64_t total, done;
	double start, last;
} prog;

static double mono(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

const char *cli_human(double n, char *buf, size_t size)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int u = 0;

	while (n >= 1024 && u < 4) {
		n /= 1024;
		u++;
	}
	snprintf(buf, size, u ? "%.1f %s" : "%.0f %s", n, units[u]);
	return buf;
}

/* 75 -> "1:15", 3725 -> "1:02:05"; rounded up, so 0:00 means done. */
static const char *clock_text(double secs, char *buf, size_t size)
{
	long t = (long)secs + (secs > (double)(long)secs);

	if (t >= 3600)
		snprintf(buf, size, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
	else
		snprintf(buf, size, "%ld:%02ld", t / 60, t % 60);
	return buf;
}

static int term_width(void)
{
	struct winsize ws;

	return ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 ? ws.ws_col : 80;
}

/* On a terminal, one line redrawn in place and cut to its width (the name
 * gives way first); elsewhere (a log file, a pipe), plain lines without
 * escape codes, once a second. */
static void draw(double now)
{
	char done[32], total[32], rate[32], eta[24], tail[160];
	double secs = now - prog.start, bps = secs > 0 ? (double)prog.done / secs : 0;
	int room, name_len = (int)strlen(prog.what);

	cli_human((double)prog.done, done, sizeof(done));
	cli_human(bps, rate, sizeof(rate));
	if (prog.total)
		snprintf(tail, sizeof(tail), ": %s / %s (%3.0f%%)  %s/s  ETA %s", done,
			 cli_human((double)prog.total, total, sizeof(total)),
			 100.0 * (double)prog.done / (double)prog.total, rate,
			 clock_text(bps > 0 && prog.total > prog.done ?
				    (double)(prog.total - prog.done) / bps : 0, eta, sizeof(eta)));
	else
		snprintf(tail, sizeof(tail), ": %s  %s/s", done, rate);
	if (!prog.tty) {
		fprintf(stderr, "%s%s\n", prog.what, tail);
	} else {
		/* The last column stays empty: writing it wraps some terminals. */
		room = term_width() - 1 - (int)strlen(tail);
		if (room < 4)
			room = 4;
		if (name_len <= room)
			fprintf(stderr, "\r%s%s\033[K", prog.what, tail);
		else
			fprintf(stderr, "\r...%s%s\033[K", prog.what + name_len - (room - 3), tail);
	}
	fflush(stderr);
	prog.drawn = true;
	prog.last = now;
}

void cli_progress_begin(const char *what, uint64_t total)
{
	prog.on = true;
	prog.drawn = false;
	prog.tty = isatty(STDERR_FILENO);
	prog.what = what;
	prog.total = total;
	prog.done = 0;
	prog.start = mono();
}

void cli_progress_add(uint64_t n)
{
	double now;

	if (!prog.on)
		return;
	prog.done += n;
	now = mono();
	/* The first chunk shows at once; then a few times a second. */
	if (!prog.drawn || now - prog.last >= (prog.tty ? 0.25 : 1.0))
		draw(now);
}

void cli_progress_end(void)
{
	if (prog.on && prog.drawn && prog.tty) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
	}
	prog.on = false;
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

	if (!prog.on)
		return copy_once(p, off_in, fd_in, fd_out, len, flags, c);
	*c = (struct cli_copy){ .method = PSPLICE_METHOD_NONE };
	for (;;) {
		n = len == PSPLICE_TO_EOF ? PROGRESS_CHUNK : len - c->bytes;
		if (n > PROGRESS_CHUNK)
			n = PROGRESS_CHUNK;
		rc = copy_once(p, off_in, fd_in, fd_out, n, flags, &part);
		c->bytes += part.bytes;
		if (part.bytes)
			c->method = part.method;
		cli_progress_add(part.bytes);
		if (rc < 0) {
			c->error = part.error;
			c->side = part.side;
			return -1;
		}
		if (part.bytes < n || (len != PSPLICE_TO_EOF && c->bytes >= len))
			return 0;
	}
}
