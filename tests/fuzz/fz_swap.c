/* The fuzzer's swap: an fd number of the sequence made another kind of fd
 * for a one-shot call of its own, then itself again, the same open file
 * (dup3). The thread's memory of what that number was is then wrong, and
 * the one-shot calls the model checks next must not be misled by it: they
 * move, refuse and attribute as for the fds as they are. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fz_int.h"
#include "psplice.h"

#define SWAP_BYTES 4096

enum { SW_PIPE, SW_UNIX, SW_FILE, SW_DEV, SW_N };

struct other {
	int fd, peer, scratch;
	char path[2][PATH_MAX];  /* the files made, to remove */
};

static int fill(int fd)
{
	static const uint8_t buf[SWAP_BYTES];

	return write(fd, buf, sizeof(buf)) == (ssize_t)sizeof(buf) ? 0 : -1;
}

/* A file of its own for the fd (i 0) or the scratch (i 1). */
static int temp_file(struct other *o, int i, const char *tmpfs, bool full)
{
	int fd;

	snprintf(o->path[i], sizeof(o->path[i]), "%s/fz-swap%d", tmpfs, i);
	fd = open(o->path[i], O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd >= 0 && full && (fill(fd) < 0 || lseek(fd, 0, SEEK_SET) != 0)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The fd of another kind, an input with SWAP_BYTES to give or an output
 * with room for them, and what the call moves them from or to. */
static int make(struct other *o, int kind, bool input, const char *tmpfs)
{
	int p[2];

	*o = (struct other){ .fd = -1, .peer = -1, .scratch = -1 };
	if (kind == SW_PIPE || kind == SW_UNIX) {
		if (kind == SW_PIPE ? pipe2(p, O_CLOEXEC) < 0 :
				      socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p) < 0)
			return -1;
		o->fd = input || kind == SW_UNIX ? p[0] : p[1];
		o->peer = o->fd == p[0] ? p[1] : p[0];
		if (input && fill(o->peer) < 0)
			return -1;
	} else if (kind == SW_FILE) {
		o->fd = temp_file(o, 0, tmpfs, input);
	} else {
		o->fd = open(input ? "/dev/zero" : "/dev/null",
			     (input ? O_RDONLY : O_WRONLY) | O_CLOEXEC);
	}
	if (o->fd < 0)
		return -1;
	o->scratch = input ? open("/dev/null", O_WRONLY | O_CLOEXEC) :
			     temp_file(o, 1, tmpfs, true);
	return o->scratch < 0 ? -1 : 0;
}

static void unmake(struct other *o)
{
	int *fd[] = { &o->fd, &o->peer, &o->scratch };

	for (size_t i = 0; i < sizeof(fd) / sizeof(fd[0]); i++)
		if (*fd[i] >= 0)
			close(*fd[i]);
	for (int i = 0; i < 2; i++)
		if (o->path[i][0])
			unlink(o->path[i]);
}

/* The call on the number while it is the other fd. */
static int call(int num, bool input, const struct other *o, char *why, size_t n)
{
	struct psplice_result r;
	int64_t off = 0;
	ssize_t ret;

	ret = input ? psplice_ex(num, NULL, o->scratch, NULL, SWAP_BYTES, 0, &r) :
		      psplice_ex(o->scratch, &off, num, NULL, SWAP_BYTES, 0, &r);
	if (ret == SWAP_BYTES && !r.error)
		return 0;
	snprintf(why, n, "swap: a call on fd %d made another kind: %zd, %s side %s", num, ret,
		 strerror(r.error), psplice_side_name(r.side));
	return -1;
}

int fz_swap(int num, bool input, int kind, const char *tmpfs, char *why, size_t n)
{
	int saved = fcntl(num, F_DUPFD_CLOEXEC, 0), r = -1;
	struct other o;

	if (saved < 0 || make(&o, kind % SW_N, input, tmpfs) < 0) {
		snprintf(why, n, "swap: cannot make the other fd: %s", strerror(errno));
	} else if (dup3(o.fd, num, O_CLOEXEC) < 0) {
		snprintf(why, n, "swap: dup3: %s", strerror(errno));
	} else {
		r = call(num, input, &o, why, n);
		if (dup3(saved, num, O_CLOEXEC) < 0) {
			snprintf(why, n, "swap: dup3 back: %s", strerror(errno));
			r = -1;
		}
	}
	if (saved >= 0)
		close(saved);
	unmake(&o);
	return r;
}
