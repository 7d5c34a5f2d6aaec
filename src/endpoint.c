/* Classify an fd once per call (or once per prepared pair): what it is and
 * how it may be moved; and the thread's memory of what each fd was. */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/sock_diag.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "endpoint.h"
#include "path.h"
#include "psplice.h"

/* -1 when the fd cannot answer (EBADF: an O_PATH fd), so that the guess
 * made then is not remembered for an fd that may later answer. */
static int socket_kind(int fd)
{
	int domain = 0, type = 0;
	socklen_t l = sizeof(domain);

	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &l) < 0)
		return errno == EBADF ? -1 : PS_K_SOCK;
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

	if (tcgetattr(fd, &t) == 0)
		return PS_K_TTY;
	return errno == EBADF ? -1 : PS_K_CHR;
}

/* The thread's memory of the fds it classified: what fd N named (device,
 * inode, kind) when it was last asked. Telling a TCP socket from a Unix
 * one, or a tty from another character device, costs one or two more
 * syscalls, and a relay asks about the same fds on every call: the answer
 * cannot change while the fd names the same inode, and fstat has just told
 * us which inode it names. A one-shot call also recalls both fds without
 * asking (ps__recall): the kernel's answer to its move guards it (call.c,
 * oneshot.c), and each fd is asked again once in PS_RECALLS of its
 * recalls, so that an fd changed in a way the kernel still accepts is
 * back on its own path within that many calls.
 *
 * The memory is a table indexed by fd, as the kernel's own, grown on
 * demand to the highest fd the thread classified: a server with thousands
 * of open files keeps them all. Past MEMO_MAX fds nothing is remembered
 * (each call asks), which bounds a thread's table to a few megabytes. */
#define MEMO_MAX (1 << 17)

struct fd_memo {
	dev_t dev;
	ino_t ino;
	int kind;
	int mode;            /* O_ACCMODE and O_PATH, or PS_FL_UNASKED */
	unsigned char set;   /* 0 marks an empty slot */
	unsigned char left;  /* recalls before the fd is asked again */
};

static __thread struct fd_memo *memo;
static __thread unsigned int memo_cap;
static pthread_key_t memo_key;
static bool memo_key_made;
static pthread_once_t memo_once = PTHREAD_ONCE_INIT;

static void memo_free(void *p)
{
	memo = NULL;
	memo_cap = 0;
	free(p);
}

/* Without a key the table could not be freed at the thread's exit (and
 * key 0 is someone else's): then nothing is remembered, each call asks. */
static void memo_key_init(void)
{
	memo_key_made = pthread_key_create(&memo_key, memo_free) == 0;
}

/* Room for fd in the table: doubled until it fits, the new slots empty.
 * false when fd is past the bound or there is no memory: not remembered. */
static bool memo_grow(int fd)
{
	unsigned int cap = memo_cap ? memo_cap : 64;
	struct fd_memo *m;

	if (fd >= MEMO_MAX)
		return false;
	if (!memo && (pthread_once(&memo_once, memo_key_init) != 0 || !memo_key_made))
		return false;
	while (cap <= (unsigned int)fd)
		cap *= 2;
	m = realloc(memo, cap * sizeof(*m));
	if (!m)
		return false;
	memset(m + memo_cap, 0, (cap - memo_cap) * sizeof(*m));
	/* The key names the table, to free it at the thread's exit: a table
	 * the key cannot name (no memory for the key's value) is not kept. */
	if (m != memo && pthread_setspecific(memo_key, m) != 0) {
		(void)pthread_setspecific(memo_key, NULL);
		free(m);
		memo = NULL;
		memo_cap = 0;
		return false;
	}
	memo = m;
	memo_cap = cap;
	return true;
}

/* fd's slot, or NULL when the table does not reach it. */
static struct fd_memo *memo_of(int fd)
{
	return (unsigned int)fd < memo_cap ? &memo[fd] : NULL;
}

static bool remembered(const struct fd_memo *m, const struct stat *st)
{
	return m && m->set && m->dev == st->st_dev && m->ino == st->st_ino;
}

/* -1 when the fd cannot answer (EBADF: an O_PATH fd). */
static int probed_kind(int fd, const struct stat *st)
{
	const struct fd_memo *m = memo_of(fd);

	if (remembered(m, st))
		return m->kind;
	return S_ISSOCK(st->st_mode) ? socket_kind(fd) : chr_kind(fd);
}

/* -1: a guess, not to be remembered for an fd that may later answer. */
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

static void remember(int fd, const struct stat *st, int kind)
{
	if (!memo_of(fd) && !memo_grow(fd))
		return;
	memo[fd] = (struct fd_memo){ .set = 1, .left = PS_RECALLS, .dev = st->st_dev,
				     .ino = st->st_ino, .kind = kind, .mode = PS_FL_UNASKED };
}

void ps__forget(int fd)
{
	struct fd_memo *m = memo_of(fd);

	if (m)
		m->set = 0;
}

/* The access mode of an fd the thread remembers, for a one-shot call that
 * recalls it (path_splice_pipe.c): it is the open file's, which no
 * fcntl changes, where O_APPEND and O_NONBLOCK may change between calls. */
static void remember_mode(const struct ps_endpoint *ep, int fl)
{
	struct fd_memo *m = memo_of(ep->fd);

	if (m && m->set && m->dev == ep->dev && m->ino == ep->ino)
		m->mode = fl & (O_ACCMODE | O_PATH);
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

static void fill(struct ps_endpoint *ep, int fd, dev_t dev, ino_t ino, int kind)
{
	*ep = (struct ps_endpoint){ .fd = fd, .kind = kind, .fl = PS_FL_UNASKED, .dev = dev,
				   .ino = ino, .size = -1, .mode = PS_FL_UNASKED };
	ep->seekable = kind == PS_K_FILE || kind == PS_K_BLOCK;
}

/* fstat alone: the F_GETFL flags are asked when first needed (ps__fl). */
int ps__classify(int fd, struct ps_endpoint *ep)
{
	struct stat st;
	int kind;

	if (fd < 0)
		return -EBADF;
	if (fstat(fd, &st) < 0) {
		ps__forget(fd);
		return -errno;
	}
	kind = kind_of(fd, &st);
	if (kind < 0) { /* the kernel refuses the fd for any move anyway */
		kind = S_ISSOCK(st.st_mode) ? PS_K_SOCK : PS_K_CHR;
		ps__forget(fd);
	} else {
		remember(fd, &st, kind);
	}
	fill(ep, fd, st.st_dev, st.st_ino, kind);
	if (kind == PS_K_FILE)
		ep->size = st.st_size;
	else if (kind == PS_K_BLOCK)
		ep->size = block_size(fd);
	else
		ep->size = 0;
	return 0;
}

/* What fd was when this thread last classified it, without asking: its
 * size unknown (-1, ps__size asks), its flags unasked. false when this
 * thread has no memory of it, or when it is the fd's turn to be asked
 * again (one recall in PS_RECALLS). */
bool ps__recall(int fd, struct ps_endpoint *ep)
{
	struct fd_memo *m;

	if (fd < 0 || !(m = memo_of(fd)) || !m->set || !m->left)
		return false;
	m->left--;
	fill(ep, fd, m->dev, m->ino, m->kind);
	ep->mode = m->mode;
	return true;
}

/* What a socket's send buffer takes before a write into it waits: its
 * size less what it holds (SO_MEMINFO: TCP counts its queue, a Unix
 * socket what its peer has not read yet), less what the kernel adds to the
 * count for each buffer of up to 64 KiB that the bytes go in (the sk_buff
 * and its head: about 1 KiB, seen on Linux 6.18). -1 when the socket does
 * not say. */
int64_t ps__sock_room(const struct ps_endpoint *ep)
{
	uint32_t m[SK_MEMINFO_VARS];
	socklen_t l = sizeof(m);
	int64_t room;

	if (ep->kind != PS_K_TCP && ep->kind != PS_K_UNIX)
		return -1;
	if (getsockopt(ep->fd, SOL_SOCKET, SO_MEMINFO, m, &l) < 0 ||
	    l <= SK_MEMINFO_WMEM_QUEUED * sizeof(m[0]))
		return -1;
	room = (int64_t)m[SK_MEMINFO_SNDBUF] -
	       (int64_t)m[ep->kind == PS_K_TCP ? SK_MEMINFO_WMEM_QUEUED : SK_MEMINFO_WMEM_ALLOC];
	room -= (room / 65536 + 2) * 1024;
	return room > 0 ? room : 0;
}

/* The fd's F_GETFL flags, asked once per classification. An fd that cannot
 * say (closed since) is as useless as an O_PATH one, and counts as one. The
 * answer is kept in the endpoint even though callers hold it const: it is
 * either a one-shot call's, on that call's stack, or a prepared pair's,
 * which asked when it was made (ps__unusable) so that the threads sharing
 * it never write to it. */
int ps__fl(const struct ps_endpoint *ep)
{
	int fl;

	if (ep->fl != PS_FL_UNASKED)
		return ep->fl;
	fl = fcntl(ep->fd, F_GETFL);
	if (fl < 0)
		fl = O_PATH;
	((struct ps_endpoint *)ep)->fl = fl;
	remember_mode(ep, fl);
	return fl;
}

bool ps__readable(const struct ps_endpoint *ep)
{
	int fl = ps__fl(ep);

	return !(fl & O_PATH) && (fl & O_ACCMODE) != O_WRONLY;
}

bool ps__writable(const struct ps_endpoint *ep)
{
	return ps_mode_writable(ps__fl(ep));
}

bool ps__append(const struct ps_endpoint *ep)
{
	return ps__fl(ep) & O_APPEND;
}

bool ps__nonblock(const struct ps_endpoint *ep)
{
	return ps__fl(ep) & O_NONBLOCK;
}

/* The side whose fd no move can use (O_PATH, not open for that direction),
 * the input first; PSPLICE_SIDE_NONE if both can be used. */
int ps__unusable(const struct ps_endpoint *in, const struct ps_endpoint *out)
{
	if (!ps__readable(in))
		return PSPLICE_SIDE_IN;
	if (!ps__writable(out))
		return PSPLICE_SIDE_OUT;
	return PSPLICE_SIDE_NONE;
}

bool ps__refused(const struct ps_refusal *r, const struct ps_xfer *x)
{
	return r->set && r->in == x->in->dev && r->out == x->out->dev;
}

void ps__refuse(struct ps_refusal *r, const struct ps_xfer *x)
{
	*r = (struct ps_refusal){ .in = x->in->dev, .out = x->out->dev, .set = true };
}

void ps__refuse_exdev(struct ps_refusal *r, const struct ps_xfer *x, int err)
{
	if (err == EXDEV && x->in->dev != x->out->dev)
		ps__refuse(r, x);
}
