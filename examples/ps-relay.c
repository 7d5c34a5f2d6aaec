/* ps-relay: a TCP relay. Each connection accepted on LISTEN_HOST:LISTEN_PORT
 * is joined to a new connection to TARGET_HOST:TARGET_PORT, both ways.
 *
 *   ps-relay [-n CONNS] LISTEN_HOST LISTEN_PORT TARGET_HOST TARGET_PORT
 *
 * It prints "listening on port N" (LISTEN_PORT 0 takes a free one) and,
 * with -n, exits once CONNS connections have been relayed and closed.
 *
 * What it shows: one prepared pair per direction (psplice_pair_new), moved
 * without blocking (PSPLICE_F_NONBLOCK) from an epoll loop that waits for
 * exactly what the pair's EAGAIN names: its input readable, or its output
 * writable. Bytes a move took and could not deliver stay pending in the
 * pair, which delivers them first on its next move, so none is dropped and
 * the end of input comes only after the last of them; the relay then passes
 * the end on with shutdown(SHUT_WR) and keeps the other direction going
 * (a half-close). A connection that fails says which side and how many
 * bytes it could not deliver (psplice_pair_free hands them back). */
#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <psplice.h>

#define STEP ((size_t)1 << 20)
#define MOVES_PER_WAKEUP 16 /* so that one busy connection starves none */

/* What epoll hands back for a socket: its connection, and which of the
 * connection's two sockets it is. */
struct conn;
struct end {
	struct conn *c;
	int i;
};

/* One connection: the client's socket and the target's, a pair for each
 * direction (pair[k] reads fd[k] and writes fd[1 - k]), what each waits
 * for (EPOLLIN on its input, EPOLLOUT on its output, 0 once it is done)
 * and what epoll has for each socket (0: not in the set). */
struct conn {
	int id, fd[2], connecting;
	struct psplice_pair *pair[2];
	uint32_t wait[2], polled[2];
	struct end end[2];
};

static const char *const who[2] = { "client", "target" };
static int ep, live;

/* An fd no direction waits for leaves the set: its EPOLLHUP or EPOLLERR
 * would wake the loop for nothing until the other side moves. */
static void epoll_set(struct conn *c, int i, uint32_t events)
{
	int op = !events ? EPOLL_CTL_DEL : c->polled[i] ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
	struct epoll_event ev = { .events = events, .data.ptr = &c->end[i] };

	if (events == c->polled[i])
		return;
	if (epoll_ctl(ep, op, c->fd[i], &ev) < 0) {
		perror("ps-relay: epoll_ctl");
		exit(1); /* a bug, or no memory */
	}
	c->polled[i] = events;
}

/* Each socket is polled for what the directions through it wait for. */
static void update(struct conn *c)
{
	for (int i = 0; i < 2; i++)
		epoll_set(c, i, (c->wait[i] & EPOLLIN) | (c->wait[1 - i] & EPOLLOUT));
}

static void close_conn(struct conn *c)
{
	for (int k = 0; k < 2; k++) {
		size_t pending = c->pair[k] ? psplice_pair_pending(c->pair[k]) : 0;

		/* Handed back, never dropped; but the connection is gone. */
		psplice_pair_free(c->pair[k]);
		if (pending)
			fprintf(stderr, "ps-relay: #%d: %zu bytes from the %s not delivered\n",
				c->id, psplice_last()->parked_len, who[k]);
	}
	for (int i = 0; i < 2; i++) {
		epoll_set(c, i, 0);
		if (close(c->fd[i]) < 0)
			fprintf(stderr, "ps-relay: #%d: close: %s\n", c->id, strerror(errno));
	}
	free(c);
	live--;
}

/* The result's side says which of the two sockets failed. */
static int failed(struct conn *c, int k, int side, int err)
{
	int i = side == PSPLICE_SIDE_OUT ? 1 - k : k;

	fprintf(stderr, "ps-relay: #%d: %s %s: %s\n", c->id,
		side == PSPLICE_SIDE_OUT ? "writing to" : "reading from", who[i], strerror(err));
	return -1;
}

/* Move until the pair must wait, and note what for. */
static int pump(struct conn *c, int k)
{
	struct psplice_result r;

	for (int n = 0; n < MOVES_PER_WAKEUP; n++) {
		psplice_pair_move(c->pair[k], NULL, NULL, STEP, PSPLICE_F_NONBLOCK, &r);
		if (r.error == EAGAIN) {
			c->wait[k] = r.side == PSPLICE_SIDE_IN ? EPOLLIN : EPOLLOUT;
			return 0;
		}
		if (r.error && r.error != EINTR)
			return failed(c, k, r.side, r.error);
		if (!r.error && !r.in_bytes && !r.out_bytes) {
			/* The end of input, after every pending byte: pass it on. */
			c->wait[k] = 0;
			return shutdown(c->fd[1 - k], SHUT_WR) < 0 ?
				failed(c, k, PSPLICE_SIDE_OUT, errno) : 0;
		}
	}
	/* Still going: a pair delivers what it holds before it reads more. */
	c->wait[k] = psplice_pair_pending(c->pair[k]) ? EPOLLOUT : EPOLLIN;
	return 0;
}

/* The target's connect finished: prepare a pair for each direction. */
static int connected(struct conn *c)
{
	socklen_t len = sizeof(int);
	int err;

	if (getsockopt(c->fd[1], SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		err = errno;
	if (err) {
		fprintf(stderr, "ps-relay: #%d: connecting to the target: %s\n", c->id, strerror(err));
		return -1;
	}
	c->connecting = 0;
	for (int k = 0; k < 2; k++) {
		c->wait[k] = EPOLLIN;
		c->pair[k] = psplice_pair_new(c->fd[k], c->fd[1 - k], PSPLICE_F_SIGPIPE_IGNORED);
		if (!c->pair[k])
			return failed(c, k, psplice_last()->side, errno);
	}
	return 0;
}

static void on_event(struct end *e, uint32_t events)
{
	struct conn *c = e->c;
	int rc = 0;

	if (c->connecting) {
		rc = connected(c);
	} else {
		/* The directions that wait for this socket: pair[i] for
		 * input, pair[1 - i] for room in its output. */
		int i = e->i;

		if (c->wait[i] == EPOLLIN && (events & (EPOLLIN | EPOLLERR | EPOLLHUP)))
			rc = pump(c, i);
		if (!rc && c->wait[1 - i] == EPOLLOUT && (events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
			rc = pump(c, 1 - i);
	}
	if (rc < 0 || (!c->wait[0] && !c->wait[1]))
		close_conn(c);
	else
		update(c);
}

/* A new client: connect to the target without waiting for it. */
static void start(int client, const struct addrinfo *target)
{
	static int ids;
	struct conn *c = calloc(1, sizeof(*c));
	int s = socket(target->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (!c || s < 0 || (connect(s, target->ai_addr, target->ai_addrlen) < 0 &&
			    errno != EINPROGRESS)) {
		fprintf(stderr, "ps-relay: connecting to the target: %s\n", strerror(errno));
		free(c);
		close(client);
		if (s >= 0)
			close(s);
		return;
	}
	*c = (struct conn){ .id = ++ids, .fd = { client, s }, .connecting = 1 };
	c->end[0] = (struct end){ .c = c, .i = 0 };
	c->end[1] = (struct end){ .c = c, .i = 1 };
	live++;
	epoll_set(c, 1, EPOLLOUT);
}

/* Accept what is waiting; past the limit (-n), stop listening. */
static int accept_all(int *lsock, long *left, const struct addrinfo *target)
{
	while (*left != 0) {
		int s = accept4(*lsock, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (s < 0 && (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED))
			return 0;
		if (s < 0) { /* EMFILE and the like: a server would pause */
			perror("ps-relay: accept");
			return -1;
		}
		start(s, target);
		if (*left > 0)
			(*left)--;
	}
	close(*lsock);
	*lsock = -1;
	return 0;
}

static struct addrinfo *resolve(const char *host, const char *port, int flags)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = flags }, *ai;
	int err = getaddrinfo(host, port, &hints, &ai);

	if (err) {
		fprintf(stderr, "ps-relay: %s port %s: %s\n", host, port, gai_strerror(err));
		return NULL;
	}
	return ai;
}

/* The listening socket, its port printed for whoever started the relay. */
static int listen_on(const struct addrinfo *ai)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int one = 1, s = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };

	if (s < 0 || setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(s, ai->ai_addr, ai->ai_addrlen) < 0 || listen(s, 128) < 0 ||
	    getsockname(s, (struct sockaddr *)&ss, &len) < 0 ||
	    epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev) < 0) {
		perror("ps-relay: listen");
		return -1;
	}
	/* The port is at the same place in sockaddr_in and sockaddr_in6. */
	printf("listening on port %u\n", ntohs(((struct sockaddr_in *)&ss)->sin_port));
	return fflush(stdout) == 0 ? s : -1;
}

int main(int argc, char **argv)
{
	struct addrinfo *lai = NULL, *target = NULL;
	long left = -1; /* connections still to accept; -1: no end */
	int lsock = -1, c, rc = 1;

	while ((c = getopt(argc, argv, "n:")) != -1)
		if (c != 'n' || (left = atol(optarg)) < 1)
			goto usage;
	if (argc - optind != 4)
		goto usage;
	/* A peer that leaves is a move's EPIPE, never a signal. */
	if (signal(SIGPIPE, SIG_IGN) == SIG_ERR || (ep = epoll_create1(EPOLL_CLOEXEC)) < 0) {
		perror("ps-relay");
		return 1;
	}
	if (!(lai = resolve(argv[optind], argv[optind + 1], AI_PASSIVE)) ||
	    !(target = resolve(argv[optind + 2], argv[optind + 3], 0)) ||
	    (lsock = listen_on(lai)) < 0)
		goto out;
	/* One event per wait: an event that closes a connection cannot then
	 * leave a later one of the same wait naming it. */
	while (lsock >= 0 || live > 0) {
		struct epoll_event ev;
		int n = epoll_wait(ep, &ev, 1, -1);

		if (n < 0 && errno != EINTR) {
			perror("ps-relay: epoll_wait");
			goto out;
		}
		if (n > 0 && !ev.data.ptr && accept_all(&lsock, &left, target) < 0)
			goto out;
		if (n > 0 && ev.data.ptr)
			on_event(ev.data.ptr, ev.events);
	}
	rc = 0;
out:
	if (lai)
		freeaddrinfo(lai);
	if (target)
		freeaddrinfo(target);
	return rc;
usage:
	fprintf(stderr, "usage: ps-relay [-n CONNS] LISTEN_HOST LISTEN_PORT TARGET_HOST TARGET_PORT\n");
	return 2;
}
