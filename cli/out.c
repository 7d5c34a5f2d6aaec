/* Messages on standard error and log files, each line in one write(2);
 * file names quoted; the exit check that standard output and every
 * message got through. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "out.h"
#include "outq.h"

/* Set when a message (or a relay's log record) could not be written
 * whole: the exit check fails the command for it, as stdio's error flag
 * did before messages bypassed stdio. Any thread may set it. */
static atomic_bool stderr_lost;

const char *cli_name = CLI_NAME;

/* Write all of buf to fd (standard error, or a log file), in one write(2)
 * unless it is cut short; through the fd's queue when it has one (a relay
 * serving), which writes it from a thread of its own. */
void cli_put(int fd, const char *buf, size_t len)
{
	if (!cli_outq_put(fd, buf, len) && !cli_write_whole(fd, buf, len))
		atomic_store(&stderr_lost, true);
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

/* The length of the valid UTF-8 sequence at s (n bytes left), 0 if there
 * is none: overlong forms, surrogates and code points past U+10FFFF are
 * not valid either. */
size_t cli_utf8_len(const unsigned char *s, size_t n)
{
	size_t len, i;
	uint32_t cp;

	if (s[0] < 0xc2 || s[0] > 0xf4)
		return 0;
	len = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : 2;
	if (n < len)
		return 0;
	cp = s[0] & (0x7f >> len);
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10ffff ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

/* Set by a command whose lines carry what others name (a relay's peers,
 * the PROXY headers they send): its lines are escaped. */
static atomic_bool escaping;

void cli_escape_messages(bool on)
{
	atomic_store(&escaping, on);
}

static size_t escape_byte(unsigned char b, char *out)
{
	static const char hex[] = "0123456789abcdef";

	if (b == '\\') {
		memcpy(out, "\\\\", 2);
		return 2;
	}
	if (b >= 0x20 && b < 0x7f) {
		out[0] = (char)b;
		return 1;
	}
	out[0] = '\\';
	out[1] = 'x';
	out[2] = hex[b >> 4];
	out[3] = hex[b & 15];
	return 4;
}

/* The n bytes of s as a log line may show them, into out (4 * n bytes at
 * most): a control byte would move a terminal's cursor or recolour it,
 * and a line feed forge a line of its own; a byte that is not UTF-8 can
 * make a reader drop the line. Each of those bytes, and each of a C1
 * control's two (which some terminals obey as ESC), is written \xNN as
 * C writes it, a backslash \\, so that the bytes can be read back
 * exactly; the rest, valid UTF-8 included, as it is. */
static size_t escape(const unsigned char *s, size_t n, char *out)
{
	size_t len = 0, k, i;

	while (n) {
		k = *s < 0x80 ? 0 : cli_utf8_len(s, n);
		/* C1 controls, U+0080 to U+009F, are 0xc2 0x80 to 0xc2 0x9f. */
		if (k && !(s[0] == 0xc2 && s[1] < 0xa0)) {
			memcpy(out + len, s, k);
			len += k;
		} else {
			k = k ? k : 1;
			for (i = 0; i < k; i++)
				len += escape_byte(s[i], out + len);
		}
		s += k;
		n -= k;
	}
	return len;
}

/* The line and its newline, escaped when the command asks it. Without
 * the memory for a long line escaped, what fits is. */
static void put_line(int fd, struct line *l)
{
	char small[4096], *out = small;
	size_t len = l->len;

	if (!atomic_load_explicit(&escaping, memory_order_relaxed)) {
		l->buf[l->len++] = '\n';
		cli_put(fd, l->buf, l->len);
		return;
	}
	if (4 * len + 1 > sizeof(small) && !(out = malloc(4 * len + 1))) {
		out = small;
		len = (sizeof(small) - 1) / 4;
	}
	len = escape((const unsigned char *)l->buf, len, out);
	out[len++] = '\n';
	cli_put(fd, out, len);
	if (out != small)
		free(out);
}

/* NAME ": " MSG [": " reason] "\n", built whole in memory and written with
 * one write(2): stdio writes the pieces of a line in several, and relay
 * workers reporting at once tore each other's lines. A message too long for
 * the stack goes through the heap; without the memory, it is cut. */
static void say(int fd, int err, const char *fmt, va_list ap)
{
	char small[1024], why[256];
	const char *reason = err ? cli_strerror(err, why, sizeof(why)) : "";
	struct line l = { small, sizeof(small), 0 };
	int saved = errno, body;
	size_t need;
	va_list again;

	va_copy(again, ap);
	body = vsnprintf(NULL, 0, fmt, again);
	va_end(again);
	need = strlen(cli_name) + 3 + (body > 0 ? (size_t)body : 0) + strlen(reason) + 4;
	if (need > l.size && (l.buf = malloc(need)))
		l.size = need;
	else if (need > l.size)
		l.buf = small;
	line_add(&l, "%s: ", cli_name);
	line_vadd(&l, fmt, ap);
	if (err)
		line_add(&l, ": %s", reason);
	put_line(fd, &l);
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
	bool raw = atomic_load_explicit(&escaping, memory_order_relaxed);

	if (len > size && grow(qs, slot, len)) {
		q = qs->grown[slot];
		size = qs->room[slot];
	}
	p = q;
	*p++ = '\'';
	/* A control character in a file name must not reach the terminal;
	 * escaped lines show it as it was. */
	for (; *name && p < q + size - 2; name++)
		*p++ = ((unsigned char)*name < 0x20 || *name == 0x7f) && !raw ? '?' : *name;
	*p++ = '\'';
	*p = '\0';
	return q;
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
	if (atomic_load(&stderr_lost) || cli_outq_failed() || ferror(stderr))
		_exit(1);
}

void cli_check_stdout_at_exit(void)
{
	atexit(check_stdout);
}
