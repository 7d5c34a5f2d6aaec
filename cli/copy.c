/* The copy loop around psplice_pair_copy() the subcommands share, with
 * its -v report and its error told by side. */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>

#include "copy.h"
#include "out.h"
#include "progress.h"
#include "sys.h"

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
