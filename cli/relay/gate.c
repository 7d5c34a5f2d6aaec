/* psplice relay: who may connect. Each client is judged as it is accepted,
 * before anything of it is read and before TARGET is connected to: by
 * --deny and --allow (acl.c: a --deny entry refuses it whatever --allow
 * says; with --allow, it must match an entry), and by
 * --max-conns-per-source, the connections open from its source: an IPv4
 * address, an IPv6 /64 (a site's usual share, as one IPv4 address is a
 * site's behind its NAT: counted per address, IPv6 would let one host hold
 * every slot with addresses of its own /64), a unix client's uid. Under
 * --accept-proxy with --proxy-from, the sender is judged by --proxy-from
 * alone, and the source is the client its PROXY header names, judged once
 * the header is read. A client refused is closed with a reset, counted in
 * --metrics and said at most once a second with how many more were. */
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "relay.h"
#include "out.h"

#define SAY_MS 1000        /* a refusal is said at most this often */
#define SLOTS_MIN 64       /* the count table's first size */

/* A source's open connections; n 0: a free slot. */
struct slot {
	struct source key;
	uint32_t n;
};

/* The count table, open addressing, at most half full. */
struct gate {
	pthread_mutex_t lock;
	struct slot *slots;
	size_t cap, used;
	uint64_t seed;       /* a client must not choose where its source lands */
	pthread_mutex_t say_lock;
	int64_t said_at;     /* the last refusal said; 0: none yet */
	uint64_t unsaid;     /* refused since, not said */
};

const char *const refusal_name[REFUSE_N] = {
	[REFUSE_DENIED] = "denied", [REFUSE_NOT_ALLOWED] = "not_allowed",
	[REFUSE_PER_SOURCE] = "per_source", [REFUSE_PROXY_FROM] = "proxy_from",
};

static const char *const refusal_text[REFUSE_N] = {
	[REFUSE_DENIED] = "matches --deny", [REFUSE_NOT_ALLOWED] = "not in --allow",
	[REFUSE_PER_SOURCE] = "over --max-conns-per-source",
	[REFUSE_PROXY_FROM] = "not in --proxy-from: no PROXY header believed from it",
};

/* splitmix64's finalizer: every bit of the key moves every bit. */
static uint64_t mix(uint64_t x)
{
	x ^= x >> 30;
	x *= UINT64_C(0xbf58476d1ce4e5b9);
	x ^= x >> 27;
	x *= UINT64_C(0x94d049bb133111eb);
	return x ^ x >> 31;
}

static size_t home(const struct gate *g, const struct source *s)
{
	uint64_t w[2];

	memcpy(w, s->addr, sizeof(w));
	return (size_t)mix(mix(g->seed ^ s->family ^ w[0]) ^ w[1]) & (g->cap - 1);
}

static bool same(const struct source *a, const struct source *b)
{
	return a->family == b->family && !memcmp(a->addr, b->addr, sizeof(a->addr));
}

/* The slot of s, or the free one where it would go. */
static struct slot *find(const struct gate *g, const struct source *s)
{
	size_t i = home(g, s);

	while (g->slots[i].n && !same(&g->slots[i].key, s))
		i = (i + 1) & (g->cap - 1);
	return &g->slots[i];
}

/* The table twice as large; false when out of memory. */
static bool grow(struct gate *g)
{
	struct slot *old = g->slots, *s;
	size_t n = g->cap, i;

	s = calloc(n ? n * 2 : SLOTS_MIN, sizeof(*s));
	if (!s)
		return false;
	g->slots = s;
	g->cap = n ? n * 2 : SLOTS_MIN;
	for (i = 0; i < n; i++)
		if (old[i].n)
			*find(g, &old[i].key) = old[i];
	free(old);
	return true;
}

/* One more connection from s, unless it has max already; false then (and
 * when a new source finds no memory: it is refused, not let in uncounted). */
static bool take(struct gate *g, const struct source *s, uint64_t max)
{
	struct slot *e;
	bool ok = true;

	pthread_mutex_lock(&g->lock);
	if ((g->used + 1) * 2 > g->cap && !grow(g))
		ok = false;
	e = ok ? find(g, s) : NULL;
	if (e && e->n >= max)
		ok = false;
	else if (e && !e->n++) {
		e->key = *s;
		g->used++;
	}
	pthread_mutex_unlock(&g->lock);
	return ok;
}

/* The slot at i is free now: the entries after it that would not be
 * found past the gap move back into it (linear probing's deletion). */
static void unlink_slot(struct gate *g, size_t i)
{
	size_t mask = g->cap - 1, j = i, k;

	for (;;) {
		j = (j + 1) & mask;
		if (!g->slots[j].n)
			break;
		k = home(g, &g->slots[j].key);
		/* j may move to i when its home is not within (i, j]. */
		if (i <= j ? (k <= i || k > j) : (k <= i && k > j)) {
			g->slots[i] = g->slots[j];
			i = j;
		}
	}
	g->slots[i].n = 0;
}

/* A connection counted for its source has ended. */
void gate_leave(struct relay *r, struct source *s)
{
	struct gate *g = r->gate;
	struct slot *e;

	if (!s->family)
		return;
	pthread_mutex_lock(&g->lock);
	e = find(g, s);
	if (e->n && !--e->n) {
		unlink_slot(g, (size_t)(e - g->slots));
		g->used--;
	}
	pthread_mutex_unlock(&g->lock);
	s->family = 0;
}

/* The first refusal said, then at most one a SAY_MS with how many more
 * came meanwhile: a flood of clients refused makes no flood of lines. */
static void say(struct relay *r, const char *who, enum refusal why)
{
	struct gate *g = r->gate;
	int64_t now = now_ms(), secs;
	uint64_t more;

	atomic_fetch_add_explicit(&r->refused[why], 1, memory_order_relaxed);
	pthread_mutex_lock(&g->say_lock);
	if (g->said_at && now - g->said_at < SAY_MS) {
		g->unsaid++;
		pthread_mutex_unlock(&g->say_lock);
		return;
	}
	more = g->unsaid;
	secs = g->said_at ? (now - g->said_at + 500) / 1000 : 0;
	g->said_at = now;
	g->unsaid = 0;
	pthread_mutex_unlock(&g->say_lock);
	if (more)
		cli_say("relay: %s%srefused %s: %s (%" PRIu64 " more refused in the last %"
			PRId64 " s)", LISTENER(r), who, refusal_text[why], more, secs);
	else
		cli_say("relay: %s%srefused %s: %s", LISTENER(r), who, refusal_text[why]);
}

/* To be closed with a reset (SO_LINGER 0): the client knows it was
 * refused, not served an empty answer, and what it sent is dropped with
 * the socket, never read. */
static void refuse(struct relay *r, int fd, const char *who, enum refusal why)
{
	struct linger now = { .l_onoff = 1, .l_linger = 0 };

	(void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &now, sizeof(now));
	say(r, who, why);
}

/* Who the client of fd is, sa its address; family AF_UNSPEC when a unix
 * peer's credentials cannot be had. */
static void peer_of(int fd, const struct sockaddr *sa, struct peer *p)
{
	const uint8_t *a6 = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
	struct ucred cr;
	socklen_t len = sizeof(cr);

	memset(p, 0, sizeof(*p));
	p->fd = fd;
	if (sa->sa_family == AF_INET) {
		p->family = AF_INET;
		memcpy(p->addr, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	} else if (sa->sa_family == AF_INET6 &&
		   IN6_IS_ADDR_V4MAPPED((const struct in6_addr *)a6)) {
		p->family = AF_INET;
		memcpy(p->addr, a6 + 12, 4);
	} else if (sa->sa_family == AF_INET6) {
		p->family = AF_INET6;
		memcpy(p->addr, a6, 16);
	} else if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0) {
		p->family = AF_UNIX;
		p->uid = cr.uid;
		p->gid = cr.gid;
		p->pid = cr.pid;
	}
}

/* For the line that says a refusal: the address, or a unix peer's ids. */
static void who_text(const struct peer *p, const struct sockaddr *sa, socklen_t len,
		     char *buf, size_t size)
{
	if (p->family == AF_UNIX)
		snprintf(buf, size, "uid %u (pid %d)", (unsigned int)p->uid, (int)p->pid);
	else if (p->family == AF_UNSPEC)
		snprintf(buf, size, "a unix client (its credentials unknown)");
	else
		addr_text(sa, len, buf, size);
}

/* The source p counts for: an IPv4 address, an IPv6 /64, a uid. */
static void source_of(const struct peer *p, struct source *s)
{
	memset(s, 0, sizeof(*s));
	s->family = (uint8_t)p->family;
	if (p->family == AF_UNIX)
		memcpy(s->addr, &p->uid, sizeof(p->uid));
	else
		memcpy(s->addr, p->addr, p->family == AF_INET6 ? 8 : 4);
}

/* p judged by --deny and --allow, then given a slot of its source:
 * REFUSE_NONE with s the source counted (family 0: none), or why p is
 * refused. A peer nobody can name matches every --deny and no --allow,
 * and has no slot. */
static enum refusal let_in(struct relay *r, const struct peer *p, struct source *s)
{
	s->family = 0;
	if (r->deny.n && (p->family == AF_UNSPEC || acl_match(&r->deny, p, true)))
		return REFUSE_DENIED;
	if (r->allow.n && !acl_match(&r->allow, p, false))
		return REFUSE_NOT_ALLOWED;
	if (!r->per_source)
		return REFUSE_NONE;
	source_of(p, s);
	if (!s->family || !take(r->gate, s, r->per_source)) {
		s->family = 0;
		return REFUSE_PER_SOURCE;
	}
	return REFUSE_NONE;
}

/* A client just accepted on fd from sa: true when it is let in, src what
 * it counts for; false when refused, counted and said, fd to be closed.
 * From a trusted PROXY sender (--proxy-from), only that is judged here:
 * the rest waits for the client its header names (gate_named). */
bool gate_admit(struct relay *r, int fd, const struct sockaddr *sa, socklen_t len,
		struct source *src)
{
	enum refusal why;
	struct peer p;
	char who[160];

	src->family = 0;
	if (!r->gate)
		return true;
	peer_of(fd, sa, &p);
	if (r->accept_proxy && r->proxy_from.n)
		why = acl_match(&r->proxy_from, &p, false) ? REFUSE_NONE : REFUSE_PROXY_FROM;
	else if (r->accept_proxy)
		why = REFUSE_NONE;
	else
		why = let_in(r, &p, src);
	if (why == REFUSE_NONE)
		return true;
	who_text(&p, sa, len, who, sizeof(who));
	refuse(r, fd, who, why);
	return false;
}

/* --accept-proxy with --proxy-from: the client c's header named (a), or
 * the connection's own when it names no IP address (LOCAL, UNKNOWN, a
 * unix one), judged as gate_admit judges one accepted. True when it is
 * let in (c->src what it counts for); false when refused, said and
 * counted: the caller ends c, with a reset. */
bool gate_named(struct relay *r, struct conn *c, const struct proxy_addrs *a)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	enum refusal why;
	struct peer p;
	char who[160];

	if (!r->gate || !r->proxy_from.n)
		return true;
	if (a->known && (a->src.ss_family == AF_INET || a->src.ss_family == AF_INET6)) {
		ss = a->src;
		len = a->len;
	} else if (getpeername(c->client.fd, (struct sockaddr *)&ss, &len) < 0) {
		ss.ss_family = AF_UNSPEC;
	}
	peer_of(c->client.fd, (struct sockaddr *)&ss, &p);
	why = let_in(r, &p, &c->src);
	if (why == REFUSE_NONE)
		return true;
	who_text(&p, (struct sockaddr *)&ss, len, who, sizeof(who));
	say(r, who, why);
	return false;
}

/* The table and lines of r, when an option asks for them. */
int gate_start(struct relay *r)
{
	struct gate *g;

	if (!r->allow.n && !r->deny.n && !r->proxy_from.n && !r->per_source)
		return 0;
	if (!(g = calloc(1, sizeof(*g))) || !grow(g)) {
		free(g);
		cli_error(ENOMEM, "relay");
		return -1;
	}
	pthread_mutex_init(&g->lock, NULL);
	pthread_mutex_init(&g->say_lock, NULL);
	if (getrandom(&g->seed, sizeof(g->seed), GRND_NONBLOCK) != sizeof(g->seed))
		g->seed = (uint64_t)cli_now_ns() ^ (uint64_t)getpid() << 32;
	r->gate = g;
	return 0;
}

/* The end: what was refused and not said yet is said. */
void gate_stop(struct relay *r)
{
	struct gate *g = r->gate;

	if (!g)
		return;
	if (g->unsaid)
		cli_say("relay: %s%s%" PRIu64 " more refused in the last %" PRId64 " s",
			LISTENER(r), g->unsaid, (now_ms() - g->said_at + 500) / 1000);
	pthread_mutex_destroy(&g->lock);
	pthread_mutex_destroy(&g->say_lock);
	free(g->slots);
	free(g);
	r->gate = NULL;
}
