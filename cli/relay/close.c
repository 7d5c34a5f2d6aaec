/* psplice relay: the end of a connection. Its sockets closed, gently or
 * with a reset when the relay cut the streams, its record written, its
 * slot and its target given back; and the watch of its fds, which ends it
 * when they cannot be watched. The worker, a connection and the PROXY
 * reader end one here; it calls nothing above it. */
#include <errno.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "relay.h"
#include "out.h"

/* Close without a reset: a client whose data we never read would get an
 * RST from close(), so what it sent is read and dropped first (bounded). */
static void close_gently(int fd)
{
	char sink[4096];
	int i;

	shutdown(fd, SHUT_WR);
	for (i = 0; i < 16 && recv(fd, sink, sizeof(sink), MSG_DONTWAIT) > 0; i++)
		;
	close(fd);
}

/* Close with a reset (RST) rather than an end of stream (FIN): the
 * peer's read fails with ECONNRESET, and a stream cut short cannot pass
 * for a whole one. A unix socket has no reset: its peer reads the end. */
static void close_reset(int fd)
{
	struct linger now = { .l_onoff = 1, .l_linger = 0 };

	(void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &now, sizeof(now));
	close(fd);
}

/* Whether the relay ends a stream its sender had not ended, or drops
 * bytes it took: then both sides are reset, the receiver of the cut
 * stream so that it does not take what it got for the whole, the sender
 * so that it knows not all of it arrived. A peer's error cuts what the
 * other side sends or awaits; the drain timeout and a second stop signal
 * cut connections still moving (one idle at that moment may be between
 * two bursts), and so does the relay's own failure (a socket it cannot
 * watch). An idle timeout that drops nothing (held by a pair, or left
 * unread in an input while its output was full) ends streams that were
 * quiet for the whole timeout, as a server's own idle close does: an end
 * of stream (FIN). */
static bool cuts(const struct conn *c, const struct ending *e)
{
	if (c->connecting)
		return false;
	switch (e->how) {
	case END_RST:
	case END_CLOSED:
	case END_ERROR:
	case END_DRAIN:
	case END_SETUP:
	case END_STOP: return true;
	case END_IDLE: return c->d[0].pending || c->d[1].pending || c->d[0].unread ||
			      c->d[1].unread;
	default: return false;
	}
}

/* What d's input holds that the relay never read: a direction whose
 * output had no room left it there (take.c), and the close drops it. */
static uint64_t unread(const struct conn *c, const struct dir *d)
{
	int n = 0;

	if (c->connecting || d->state == D_DONE || d->in->fd < 0)
		return 0;
	return ioctl(d->in->fd, FIONREAD, &n) == 0 && n > 0 ? (uint64_t)n : 0;
}

/* c's sockets closed (cut: reset; gently: a client whose bytes were not
 * read), its pairs freed, its slots given back. */
static void end_conn(struct worker *w, struct conn *c, bool cut, bool gently)
{
	int i;

	c->kept = closing_keeps(w);
	closing_begin(w, &c->client, c->target.fd >= 0 ? &c->target : NULL, c->kept);
	if (gently)
		close_gently(c->client.fd);
	else if (cut)
		close_reset(c->client.fd);
	else
		close(c->client.fd);
	if (c->target.fd >= 0 && cut)
		close_reset(c->target.fd);
	else if (c->target.fd >= 0)
		close(c->target.fd);
	closing_end(w);
	/* What a pair still holds is handed back by psplice_pair_free: the
	 * output is gone or stalled past its timeout, so it is dropped here,
	 * counted in the record conn_close wrote. */
	for (i = 0; i < 2; i++) {
		psplice_pair_free(c->d[i].pair);
		atomic_fetch_sub(&c->r->pending[i], (int_fast64_t)c->d[i].pending);
	}
	c->prev->next = c->next;
	c->next->prev = c->prev;
	w->nconns--;
	/* Later events of this batch may name it: free it after them. */
	c->dead = true;
	c->next = w->dead;
	w->dead = c;
	target_leave(c->r, c);
	gate_leave(c->r, &c->src);
	atomic_fetch_sub(&c->r->open, 1);
	/* A slot is free again: this worker may take the next client. */
	if (w->paused && w->drain_end == NEVER)
		listeners_on(w, true);
}

void conn_close(struct worker *w, struct conn *c, const struct ending *e)
{
	bool cut;
	int i;

	for (i = 0; i < 2; i++)
		c->d[i].unread = unread(c, &c->d[i]);
	cut = cuts(c, e);
	log_close(c->r, c, e, cut);
	end_conn(w, c, cut, c->connecting);
}

/* A client its PROXY header names refused (gate.c said it): reset, its
 * bytes after the header unread, no record, TARGET never connected to. */
void conn_refuse(struct worker *w, struct conn *c)
{
	end_conn(w, c, true, false);
}

/* Each fd of c watched for what c waits for now. One that cannot be (the
 * relay's user out of epoll watches) would never wake c again: its fds
 * and slot held, its peers' bytes unread, a stop waiting the whole drain
 * timeout. c ends at once: the relay's failure, not a target's. */
void conn_watch(struct worker *w, struct conn *c)
{
	int err = update_interest(w, c);

	if (err < 0)
		conn_close(w, c, &(struct ending){ .how = END_SETUP, .side = SIDE_RELAY,
						   .err = -err });
}
