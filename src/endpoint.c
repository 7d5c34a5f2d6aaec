/* Classify an fd once per call (or once per prepared pair): what it is and
 * how it may be moved. */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "internal.h"

static int socket_kind(int fd)
{
	int domain = 0, type = 0;
	socklen_t l = sizeof(domain);

	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &l) < 0)
		return PS_K_SOCK;
	l = sizeof(type);
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l) < 0 || type != SOCK_STREAM)
		return PS_K_SOCK;
	if (domain == AF_INET || domain == AF_INET6)
		return PS_K_TCP;
	return domain == AF_UNIX ? PS_K_UNIX : PS_K_SOCK;
}

static int chr_kind(int fd)
{
	struct termios t;

	return tcgetattr(fd, &t) == 0 ? PS_K_TTY : PS_K_CHR;
}

/* Telling a TCP socket from a Unix one, or a tty from another character
 * device, costs one or two more syscalls; a relay asks about the same fds on
 * every call. The answer cannot change while the fd names the same inode, and
 * fstat has just told us which inode it names. */
struct kind_memo {
	dev_t dev;
	ino_t ino;
	int fd, kind;
};
static __thread struct kind_memo memo[64];

static int probed_kind(int fd, const struct stat *st)
{
	struct kind_memo *m = &memo[(unsigned)fd % 64];

	if (m->fd == fd + 1 && m->dev == st->st_dev && m->ino == st->st_ino)
		return m->kind;
	m->kind = S_ISSOCK(st->st_mode) ? socket_kind(fd) : chr_kind(fd);
	m->fd = fd + 1; /* 0 marks an empty slot */
	m->dev = st->st_dev;
	m->ino = st->st_ino;
	return m->kind;
}

static int kind_of(int fd, const struct stat *st)
{
	switch (st->st_mode & S_IFMT) {
	case S_IFREG: return PS_K_FILE;
	case S_IFBLK: return PS_K_BLOCK;
	case S_IFIFO: return PS_K_PIPE;
	case S_IFSOCK: case S_IFCHR: return probed_kind(fd, st);
	case S_IFDIR: return PS_K_DIR;
	default: return PS_K_OTHER;
	}
}

static int64_t block_size(int fd)
{
	uint64_t n = 0;

	return ioctl(fd, BLKGETSIZE64, &n) == 0 ? (int64_t)n : 0;
}

/* The size of a file or block device as it is now; 0 for other kinds, or
 * when it cannot be told (as classify says for a block device). */
int64_t ps__size_now(int fd, int kind)
{
	struct stat st;

	if (kind == PS_K_BLOCK)
		return block_size(fd);
	if (kind != PS_K_FILE)
		return 0;
	return fstat(fd, &st) == 0 ? st.st_size : -errno;
}

/* A prepared pair does not keep sizes: files grow and shrink between its
 * moves. Only the rare moves that need one ask for it. */
int64_t ps__size(const struct ps_endpoint *ep)
{
	int64_t n;

	if (ep->size >= 0)
		return ep->size;
	n = ps__size_now(ep->fd, ep->kind);
	return n > 0 ? n : 0;
}

int ps__classify(int fd, struct ps_endpoint *ep)
{
	struct stat st;
	int fl;

	if (fd < 0)
		return -EBADF;
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fstat(fd, &st) < 0)
		return -errno;
	if (fl & O_PATH)
		return -EBADF;
	*ep = (struct ps_endpoint){ .fd = fd, .flags = fl, .dev = st.st_dev,
				   .ino = st.st_ino };
	ep->kind = kind_of(fd, &st);
	ep->append = fl & O_APPEND;
	ep->nonblock = fl & O_NONBLOCK;
	ep->direct = fl & O_DIRECT;
	ep->readable = (fl & O_ACCMODE) != O_WRONLY;
	ep->writable = (fl & O_ACCMODE) != O_RDONLY;
	ep->seekable = ep->kind == PS_K_FILE || ep->kind == PS_K_BLOCK;
	if (ep->kind == PS_K_FILE)
		ep->size = st.st_size;
	else if (ep->kind == PS_K_BLOCK)
		ep->size = block_size(fd);
	return 0;
}
