/* A pv-like progress line on standard error while a long copy runs. */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "parse.h"
#include "progress.h"
#include "sys.h"

static struct {
	bool on, drawn;
	bool tty;        /* stderr is a terminal: one line, redrawn in place */
	bool asked;      /* --progress: the line stays, with the totals */
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

/* Rounded down, so that 100 % means every byte is in: a copy that failed
 * at 99.7 % says 99. A file that grew while it was read may pass its size
 * by any factor, and a double past INT_MAX has no int to become. */
static int percent(void)
{
	double pct = 100.0 * (double)prog.done / (double)prog.total;

	if (pct >= (double)INT_MAX)
		return INT_MAX;
	return prog.done < prog.total && pct > 99 ? 99 : (int)pct;
}

/* After the name: the bytes, the total and percentage when known, the
 * rate, then the time left, or at the end the time it took. */
static void tail_text(double now, bool final, char *buf, size_t size)
{
	char done[32], total[32], rate[32], clock[24], when[32];
	double secs = now - prog.start, bps = secs > 0 ? (double)prog.done / secs : 0;

	cli_human((double)prog.done, done, sizeof(done));
	cli_human(bps, rate, sizeof(rate));
	if (final)
		snprintf(when, sizeof(when), "  in %s",
			 clock_text((double)(long)secs, clock, sizeof(clock)));
	else if (prog.total)
		snprintf(when, sizeof(when), "  ETA %s",
			 clock_text(bps > 0 && prog.total > prog.done ?
				    (double)(prog.total - prog.done) / bps : 0, clock, sizeof(clock)));
	else
		when[0] = '\0';
	if (prog.total)
		snprintf(buf, size, ": %s / %s (%3d%%)  %s/s%s", done,
			 cli_human((double)prog.total, total, sizeof(total)), percent(), rate, when);
	else
		snprintf(buf, size, ": %s  %s/s%s", done, rate, when);
}

/* On a terminal, one line redrawn in place and cut to its width (the name
 * gives way first); elsewhere (a log file, a pipe), plain lines without
 * escape codes, once a second. The final line ends the terminal's too. */
static void draw(double now, bool final)
{
	char tail[160];
	int room, name_len = (int)strlen(prog.what);

	tail_text(now, final, tail, sizeof(tail));
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
		if (final)
			fputc('\n', stderr);
	}
	fflush(stderr);
	prog.drawn = true;
	prog.last = now;
}

void cli_progress_begin(const char *what, uint64_t total, bool asked)
{
	prog.on = true;
	prog.drawn = false;
	prog.tty = isatty(STDERR_FILENO);
	prog.asked = asked;
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
		draw(now, false);
}

/* Asked for, the line ends with where the copy ended. A complete copy is
 * 100 %: the total was what the file said before (its size, or its blocks
 * when it has holes, which count blocks of metadata and of allocated space
 * never written too), and the copy took what it had. A failed one says
 * where it stopped. Shown unasked (a long cp on a terminal), the line was
 * only there while the copy ran, and goes. */
void cli_progress_end(bool complete)
{
	/* Without a line, nothing is written: the threads of a tree's walk
	 * (cp -j), which show none, end their copies here at once. */
	if (!prog.on)
		return;
	if (complete && prog.total)
		prog.total = prog.done;
	if (prog.asked) {
		draw(now_s(), true);
	} else if (prog.drawn && prog.tty) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
	}
	prog.on = false;
}

bool cli_progress_on(void)
{
	return prog.on;
}
