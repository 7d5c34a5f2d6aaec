/* psplice relay: what one move of a direction may take from its input: no
 * more than its output's send buffer has room for, and no more than the
 * tokens of --rate and --rate-total allow. What a move takes and its output
 * does not take waits in the relay (a pipe the pair keeps, or memory); so a
 * client that stops reading would cost the relay a move's worth, and
 * thousands of them as many megabytes. Taking no more than the output has
 * room for leaves the rest in the input socket, where TCP's window holds the
 * sender back: the kernel's socket buffers are the whole cost, as for a
 * proxy with a small buffer of its own (HAProxy's is 16 KiB). */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <linux/sock_diag.h>
#include <unistd.h>

#include "relay.h"

#define PRESSURE_NS 100000000 /* TCP's memory asked this often at most */

/* What the output's send buffer takes before a write into it says EAGAIN:
 * its size less what it holds (SO_MEMINFO: TCP counts its queue, a Unix
 * socket what its peer has not read yet), less what the kernel counts
 * beside the bytes (an sk_buff for each 64 KiB or less: about 1 KiB, seen
 * on Linux 6.18). -1 when the socket does not say. */
static int64_t out_room(const struct handle *h)
{
	uint32_t m[SK_MEMINFO_VARS];
	socklen_t l = sizeof(m);
	bool tcp = h->known & PSPLICE_FD_TCP;
	int64_t held, room;

	if (getsockopt(h->fd, SOL_SOCKET, SO_MEMINFO, m, &l) < 0 ||
	    l <= SK_MEMINFO_WMEM_QUEUED * sizeof(m[0]))
		return -1;
	held = m[tcp ? SK_MEMINFO_WMEM_QUEUED : SK_MEMINFO_WMEM_ALLOC];
	room = (int64_t)m[SK_MEMINFO_SNDBUF] - held;
	room -= room / 64 + 2048;
	return room > 0 ? room : 0;
}

/* The first figure of a small file, or of its line that starts with key,
 * after the word after; -1 when it cannot be read. read(2) and no stdio,
 * whose first read asks fstat(2). */
static long figure(const char *path, const char *key, const char *after)
{
	char text[4096], *p = text;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	text[n] = '\0';
	if (key && !(p = strstr(text, key)))
		return -1;
	if (after && !(p = strstr(p, after)))
		return -1;
	return strtol(p + (after ? strlen(after) : 0), NULL, 10);
}

/* Whether TCP's memory is past the kernel's low mark (tcp_mem's first
 * figure, in pages, against /proc/net/sockstat's): from there on, a socket
 * may be refused the room its buffer shows, and its buffer is cut down only
 * once it was (sk_stream_moderate_sndbuf), after a move took what the
 * output then refuses. Asked at most every PRESSURE_NS by each worker;
 * false when it cannot be told (a network namespace has no tcp_mem). */
static bool tcp_pressed(void)
{
	static __thread int64_t asked_at = -PRESSURE_NS;
	static __thread bool pressed;
	int64_t now = cli_now_ns();
	long low, used;

	if (now - asked_at < PRESSURE_NS)
		return pressed;
	asked_at = now;
	low = figure("/proc/sys/net/ipv4/tcp_mem", NULL, NULL);
	used = low > 0 ? figure("/proc/net/sockstat", "TCP:", " mem ") : -1;
	pressed = used > low;
	return pressed;
}

/* What the next move of d may take from its input by the tokens: a whole
 * CHUNK without a rate limit, else what the buckets hold. When one holds
 * less than its quantum, 0, and d waits for the worker's timer to wake it
 * (conn_wake), its input not watched meanwhile. */
static size_t allowance(struct worker *w, struct conn *c, struct dir *d)
{
	struct relay *r = c->r;
	int64_t now, ready = 0;
	uint64_t n = CHUNK, mine, all;

	if (!r->rate.bps && !r->rate_total.bps)
		return CHUNK;
	now = cli_now_ns();
	mine = bucket_allows(&r->rate, &d->empty_at, now, &ready);
	all = bucket_allows(&r->rate_total, &r->total_empty_at[d == &c->d[1]], now, &ready);
	if (mine < n)
		n = mine;
	if (all < n)
		n = all;
	if (n)
		return n;
	d->state = D_PACED;
	atomic_fetch_add_explicit(&r->paced, 1, memory_order_relaxed);
	d->wake_at = (ready + 999999) / 1000000;
	if (d->wake_at < w->next_check)
		w->next_check = d->wake_at;
	return 0;
}

/* The length of d's next move; 0 when d must wait (its state says for
 * what). Pending bytes go out whatever the room and the tokens: a move
 * delivers them and takes nothing new. A move of TAKE_BLIND or less takes
 * what the input has without asking the output (a request, an answer: no
 * system call more); a larger one, once d's moves were taken whole, takes
 * no more than the output's room. An output with less than ROOM_MIN of
 * room is waited for (EPOLLOUT), rather than fed a few bytes a call; once
 * epoll says it is writable (writable), it is given ROOM_MIN at least, so
 * that a count stricter than the kernel's never stops a direction. Past
 * TCP's low mark of memory, a move into TCP that would take more than
 * TAKE_BLIND takes ROOM_MIN. */
size_t move_take(struct worker *w, struct conn *c, struct dir *d, bool writable)
{
	int64_t room = -1;
	size_t n;

	if (d->pending)
		return CHUNK;
	if (d->cap > TAKE_BLIND)
		room = out_room(d->out);
	if (room >= 0 && room < ROOM_MIN && !writable) {
		d->state = D_WRITE;
		return 0;
	}
	n = allowance(w, c, d);
	if (n > d->cap)
		n = d->cap;
	if (room >= 0 && (uint64_t)room < n)
		n = room > ROOM_MIN ? (size_t)room : ROOM_MIN;
	if (n > TAKE_BLIND && (d->out->known & PSPLICE_FD_TCP) && tcp_pressed())
		n = ROOM_MIN;
	return n;
}

/* What a move of len bytes says of d's output. A move's bytes the output
 * refused wait in the relay, and TCP takes less than its buffer's room
 * under memory pressure (tcp_mem): after such a move d takes ROOM_MIN at
 * most, and twice as much after each move taken and delivered whole, up
 * to CHUNK. */
void move_taken(struct dir *d, const struct psplice_result *res, size_t len)
{
	if (res->in_bytes > res->out_bytes)
		d->cap = ROOM_MIN;
	else if (res->in_bytes == len && d->cap < CHUNK)
		d->cap *= 2;
}
