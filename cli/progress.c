/* A pv-like progress line on standard error while a long copy runs. */
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "common.h"

static struct {
	bool on, drawn;
	bool tty;        /* stderr is a terminal: one line, redrawn in place */
	const char *what;
	uint64_t total, done;
	double start, last;
} prog;

static double now_s(void)
{
	return (double)cli_now_ns() / 1e9;
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
	prog.start = now_s();
}

void cli_progress_add(uint64_t n)
{
	double now;

	if (!prog.on)
		return;
	prog.done += n;
	now = now_s();
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

bool cli_progress_on(void)
{
	return prog.on;
}
