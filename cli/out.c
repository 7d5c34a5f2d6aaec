/* Messages on standard error and log files, each line in one write(2);
 * file names quoted; the exit check that standard output and every
 * message got through. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
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
