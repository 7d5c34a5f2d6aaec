/* cat's -b, -E, -n, -s, -T, -v: the inputs' bytes shown as text, read and
 * written by this process (the kernel cannot change bytes it splices). */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cat_show.h"
#include "progress.h"

#define IN_SIZE (64 * 1024)
#define OUT_SIZE (64 * 1024)
/* The most one input byte becomes: a line number (20 digits) and its tab,
 * a held CR shown as ^M, then "M-^X" or "$\n". */
#define PER_BYTE 32

/* A line's number, as cat(1) writes it: at least six wide, then a tab. */
static size_t number(struct cat_show *s, char *out)
{
	return (size_t)snprintf(out, PER_BYTE, "%6" PRIu64 "\t", ++s->line);
}

/* A newline: the end of a line, or an empty line, which -s may drop. */
static size_t show_newline(struct cat_show *s, char *out)
{
	size_t o = 0;

	if (!s->mid_line) {
		if (s->blanks < 2)
			s->blanks++;
		if (s->blanks == 2 && (s->flags & CAT_SQUEEZE))
			return 0;
		if ((s->flags & (CAT_NUMBER | CAT_NONBLANK)) == CAT_NUMBER)
			o += number(s, out);
	}
	s->mid_line = false;
	if (s->flags & CAT_ENDS)
		out[o++] = '$';
	out[o++] = '\n';
	return o;
}

/* Any byte but a newline. Under -v a byte over 127 is "M-" and the byte
 * less 128, so that 137 is M-^I whether or not -T is given. */
static size_t show_char(unsigned int flags, unsigned char ch, char *out)
{
	size_t o = 0;

	if (ch == '\t' && !(flags & CAT_TABS)) {
		out[0] = '\t';
		return 1;
	}
	if (!(flags & CAT_NONPRINT) && ch != '\t') {
		out[0] = (char)ch;
		return 1;
	}
	if (ch >= 128) {
		out[o++] = 'M';
		out[o++] = '-';
		ch -= 128;
	}
	if (ch < 32 || ch == 127) {
		out[o++] = '^';
		ch = ch == 127 ? '?' : (unsigned char)(ch + 64);
	}
	out[o++] = (char)ch;
	return o;
}

/* -E without -v shows a CR as ^M only right before a newline, which may
 * come in the next read or the next file: the CR waits for it. */
static size_t show_byte(struct cat_show *s, unsigned char ch, char *out)
{
	size_t o = 0;

	if (s->cr) {
		s->cr = false;
		if (ch == '\n') {
			out[o++] = '^';
			out[o++] = 'M';
		} else {
			out[o++] = '\r';
		}
	}
	if (ch == '\n')
		return o + show_newline(s, out + o);
	if (!s->mid_line && (s->flags & (CAT_NUMBER | CAT_NONBLANK)))
		o += number(s, out + o);
	s->mid_line = true;
	s->blanks = 0;
	if (ch == '\r' && (s->flags & (CAT_ENDS | CAT_NONPRINT)) == CAT_ENDS) {
		s->cr = true;
		return o;
	}
	return o + show_char(s->flags, ch, out + o);
}

static bool is_socket(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode);
}

static void wait_fd(int fd, short events)
{
	struct pollfd p = { .fd = fd, .events = events };

	poll(&p, 1, -1); /* EINTR: the caller tries again anyway */
}

/* A socket is written with MSG_NOSIGNAL: a peer gone is EPIPE to report
 * (or to die of, as the rest of cat does), never a signal of the kernel's.
 * An fd someone else left non-blocking is waited for. 0 or -errno. */
static int write_all(int fd, bool sock, const char *buf, size_t n)
{
	ssize_t w;

	while (n) {
		w = sock ? send(fd, buf, n, MSG_NOSIGNAL) : write(fd, buf, n);
		if (w < 0 && errno == EAGAIN)
			wait_fd(fd, POLLOUT);
		else if (w < 0 && errno != EINTR)
			return -errno;
		if (w > 0) {
			buf += w;
			n -= (size_t)w;
		}
	}
	return 0;
}

static int show_out(struct cat_show *s, const unsigned char *in, size_t n, int fd, bool sock)
{
	static char out[OUT_SIZE];
	size_t i = 0, o;
	int err;

	while (i < n) {
		for (o = 0; i < n && o + PER_BYTE <= sizeof(out); i++)
			o += show_byte(s, in[i], out + o);
		err = write_all(fd, sock, out, o);
		if (err)
			return err;
	}
	return 0;
}

/* Positional at *off, advanced, or from the position. 0 at the end, else
 * bytes read, or -errno. */
static ssize_t read_some(int fd, int64_t *off, void *buf, size_t n)
{
	ssize_t r;

	for (;;) {
		r = off ? pread(fd, buf, n, *off) : read(fd, buf, n);
		if (r >= 0)
			break;
		if (errno == EAGAIN)
			wait_fd(fd, POLLIN);
		else if (errno != EINTR)
			return -errno;
	}
	if (off)
		*off += r;
	return r;
}

int cat_show_copy(struct cat_show *s, int fd_in, int64_t *off_in, int fd_out,
		  uint64_t len, struct cli_copy *c)
{
	static unsigned char in[IN_SIZE];
	bool sock = is_socket(fd_out);
	uint64_t want;
	ssize_t r;
	int err;

	*c = (struct cli_copy){ .method = PSPLICE_METHOD_NONE };
	while (len == PSPLICE_TO_EOF || c->bytes < len) {
		want = len == PSPLICE_TO_EOF ? IN_SIZE : len - c->bytes;
		r = read_some(fd_in, off_in, in, want < IN_SIZE ? (size_t)want : IN_SIZE);
		if (r <= 0)
			return r ? cli_copy_fail(c, (int)-r, PSPLICE_SIDE_IN) : 0;
		err = show_out(s, in, (size_t)r, fd_out, sock);
		if (err)
			return cli_copy_fail(c, -err, PSPLICE_SIDE_OUT);
		cli_copy_add(c, (uint64_t)r, PSPLICE_METHOD_READWRITE);
		cli_progress_add((uint64_t)r);
	}
	return 0;
}

int cat_show_end(struct cat_show *s, int fd_out, struct cli_copy *c)
{
	int err;

	*c = (struct cli_copy){ .method = PSPLICE_METHOD_NONE };
	if (!s->cr)
		return 0;
	s->cr = false;
	err = write_all(fd_out, is_socket(fd_out), "\r", 1);
	return err ? cli_copy_fail(c, -err, PSPLICE_SIDE_OUT) : 0;
}
