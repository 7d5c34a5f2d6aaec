/* psplice relay: each connection's record. As text, today's lines: the
 * close of a connection that failed or was cut, and with -v every open and
 * close. With --log-format=json, one JSON object per closed connection,
 * for accounting: addresses, start, duration, bytes each way, how it ended
 * and by which side, and the engine's mechanisms. Either goes to standard
 * error, or to --log's file, queued and written whole by the log's thread
 * (log_start), so that no worker waits on the reader; O_APPEND keeps each
 * line whole against other writers of the file. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "relay.h"
#include "out.h"
#include "outq.h"

const char *const relay_dir_name[2] = { "client->target", "target->client" };

/* A record being built; its size is more than any record needs (three
 * addresses of at most 128 bytes, each escaped to at most 6 per byte). */
struct rec {
	char buf[4096];
	size_t len;
};

static void add(struct rec *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void add(struct rec *r, const char *fmt, ...)
{
	size_t room = sizeof(r->buf) - r->len;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(r->buf + r->len, room, fmt, ap);
	va_end(ap);
	if (n > 0)
		r->len += (size_t)n < room ? (size_t)n : room - 1;
}

/* s as a JSON string. A unix socket's path may hold any byte but NUL:
 * valid UTF-8 is written as it is, control characters, quote and
 * backslash escaped, and each byte that is not UTF-8 as \udcXX, the lone
 * surrogate Python's "surrogateescape" gives it, so that the path's bytes
 * can be had back exactly (json.loads, then encode with surrogateescape). */
static void add_str(struct rec *r, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s), k;

	add(r, "\"");
	while (n) {
		if (*p == '"' || *p == '\\') {
			add(r, "\\%c", *p);
		} else if (*p == '\n') {
			add(r, "\\n");
		} else if (*p < 0x20) {
			add(r, "\\u%04x", *p);
		} else if (*p < 0x80) {
			add(r, "%c", *p);
		} else if ((k = cli_utf8_len(p, n))) {
			add(r, "%.*s", (int)k, (const char *)p);
			p += k - 1;
			n -= k - 1;
		} else {
			add(r, "\\udc%02x", *p);
		}
		p++;
		n--;
	}
	add(r, "\"");
}

/* RFC 3339, UTC, milliseconds: "2026-12-04T21:15:00.123Z". */
static void add_time(struct rec *r, int64_t ns)
{
	time_t secs = (time_t)(ns / 1000000000);
	struct tm tm;
	char text[32];

	gmtime_r(&secs, &tm);
	strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%S", &tm);
	add(r, "\"%s.%03dZ\"", text, (int)(ns / 1000000 % 1000));
}

const char *const relay_end_name[END_STOP + 1] = {
	[END_FIN] = "fin", [END_RST] = "rst", [END_CLOSED] = "closed", [END_ERROR] = "error",
	[END_IDLE] = "idle_timeout", [END_DRAIN] = "drain_timeout",
	[END_CONNECT] = "connect_error", [END_SETUP] = "setup_error",
	[END_PROXY] = "proxy_header", [END_STOP] = "stop_signal",
};
static const char *const side_name[] = {
	[SIDE_RELAY] = "relay", [SIDE_CLIENT] = "client", [SIDE_TARGET] = "target",
};

/* "ECONNRESET"; a number the C library has no name for, as text. */
static void add_errno(struct rec *r, int err)
{
	const char *name = err ? ps_errname(err) : NULL;

	if (!err)
		add(r, "null");
	else if (name)
		add(r, "\"%s\"", name);
	else
		add(r, "\"%d\"", err);
}

static void add_methods(struct rec *r, unsigned int methods)
{
	const char *sep = "";
	int m;

	add(r, "[");
	for (m = 0; m < 32; m++)
		if (methods & 1u << m) {
			add(r, "%s\"%s\"", sep, psplice_method_name(m));
			sep = ",";
		}
	add(r, "]");
}

static void log_json(struct relay *r, const struct conn *c, const struct ending *e, bool cut)
{
	bool failed = e->how == END_RST || e->how == END_CLOSED || e->how == END_ERROR;
	char target[128];
	struct rec rec = { .len = 0 };
	int64_t ms = (cli_now_ns() - c->start_mono) / 1000000;

	add(&rec, "{\"id\":%" PRIu64 ",\"client\":", c->id);
	add_str(&rec, c->peer);
	/* Which line of a --config file took it. */
	if (r->config) {
		add(&rec, ",\"listener\":");
		add_str(&rec, r->listen.text);
	}
	add(&rec, ",\"target\":");
	/* None yet for a client dropped before its PROXY header was read. */
	if (c->tgt) {
		addr_text((const struct sockaddr *)&c->tgt->addr.ss, c->tgt->addr.len, target,
			  sizeof(target));
		add_str(&rec, target);
	} else {
		add(&rec, "null");
	}
	add(&rec, ",\"start\":");
	add_time(&rec, c->start_ns);
	add(&rec, ",\"duration\":%" PRId64 ".%03d", ms / 1000, (int)(ms % 1000));
	add(&rec, ",\"bytes_to_target\":%" PRIu64 ",\"bytes_to_client\":%" PRIu64
		",\"lost_to_target\":%" PRIu64 ",\"lost_to_client\":%" PRIu64,
	    c->d[0].bytes, c->d[1].bytes, c->d[0].pending + c->d[0].unread,
	    c->d[1].pending + c->d[1].unread);
	add(&rec, ",\"end\":\"%s\",\"side\":\"%s\",\"op\":", relay_end_name[e->how],
	    side_name[e->side]);
	add(&rec, failed ? (e->reading ? "\"read\"" : "\"write\"") : "null");
	add(&rec, ",\"errno\":");
	add_errno(&rec, e->err);
	add(&rec, ",\"reset\":%s,\"method\":", cut ? "true" : "false");
	add_methods(&rec, c->d[0].methods | c->d[1].methods);
	add(&rec, "}\n");
	cli_put(r->log_fd, rec.buf, rec.len);
}

/* Today's words for each end: "error reading from target", "idle
 * timeout"; NULL for an end said only with -v. */
static const char *end_text(const struct ending *e)
{
	static const char *const rw[2][2] = {
		{ "error writing to client", "error writing to target" },
		{ "error reading from client", "error reading from target" },
	};

	switch (e->how) {
	case END_RST:
	case END_ERROR: return rw[e->reading][e->side == SIDE_TARGET];
	case END_CLOSED:
		return e->side == SIDE_TARGET ? "target closed before taking all" :
						"client closed before taking all";
	case END_IDLE: return "idle timeout";
	case END_DRAIN: return "closed at drain timeout";
	case END_SETUP: return "cannot relay";
	case END_PROXY: return "dropped, no valid PROXY header";
	case END_STOP: return "cut by a second stop signal";
	default: return NULL;
	}
}

static void log_text(struct relay *r, const struct conn *c, const struct ending *e, bool cut)
{
	const char *how = end_text(e);
	int err = how ? e->err : 0;  /* a connect error was said already */
	char lost[2][64] = { "", "" }, why[256];
	int i;

	if (!how && !r->verbose)
		return;
	/* Bytes taken from one side that never reached the other are named:
	 * a failed connection says exactly what went where. */
	for (i = 0; i < 2; i++)
		if (c->d[i].pending + c->d[i].unread)
			snprintf(lost[i], sizeof(lost[i]), " (%" PRIu64 " more read, not delivered)",
				 c->d[i].pending + c->d[i].unread);
	/* strerror_r: workers report at once. */
	cli_say_to(r->log_fd, "relay: %s%s#%" PRIu64 " %s %s%s%s: %" PRIu64 " bytes %s%s, %"
		   PRIu64 " bytes %s%s%s", LISTENER(r), c->id, c->peer, how ? how : "closed",
		   err ? ": " : "",
		   err ? cli_strerror(err, why, sizeof(why)) : "", c->d[0].bytes,
		   relay_dir_name[0], lost[0], c->d[1].bytes, relay_dir_name[1], lost[1],
		   cut ? "; reset" : "");
}

void log_close(struct relay *r, const struct conn *c, const struct ending *e, bool cut)
{
	/* Counted whatever the log says: --metrics reports each kind. */
	atomic_fetch_add_explicit(&r->ended[e->how], 1, memory_order_relaxed);
	if (r->json)
		log_json(r, c, e, cut);
	else
		log_text(r, c, e, cut);
}

/* The start of a connection: its time for the JSON record, or with -v,
 * a line. */
void log_open(struct relay *r, struct conn *c)
{
	struct timespec ts;

	if (r->json) {
		clock_gettime(CLOCK_REALTIME, &ts);
		c->start_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
		c->start_mono = cli_now_ns();
	} else if (r->verbose) {
		cli_say_to(r->log_fd, "relay: %s%s#%" PRIu64 " %s open", LISTENER(r), c->id,
			   c->peer);
	}
}

/* From now until log_stop, every line the relay says, a worker's or the
 * main thread's, to standard error or to --log's file, is queued and
 * written by a thread of its own: a reader that stops reading holds that
 * thread, never a worker, and the lines that do not fit are dropped and
 * counted (outq.c). Without the thread, lines are written at once. */
void log_start(const struct relay *r)
{
	int err = cli_outq_start(STDERR_FILENO);

	/* Peers name themselves: a unix path from a PROXY header may hold
	 * any byte, a forged line too. */
	cli_escape_messages(true);
	if (!err && r->log_fd != STDERR_FILENO)
		err = cli_outq_start(r->log_fd);
	if (err)
		cli_error(-err, "relay: cannot start the log's thread, lines are written at once");
}

/* At the end, what is queued is written, however long the reader takes. */
void log_stop(void)
{
	cli_outq_stop();
}
