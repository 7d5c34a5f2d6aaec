/* psplice relay: the lists of --allow, --deny and --proxy-from, read from
 * their text and matched against a client. An entry is a network in CIDR
 * form (10.0.0.0/8, 2001:db8::/32, an address alone for itself) or, for a
 * unix listener's clients, uid:N or gid:N (the peer's credentials,
 * SO_PEERCRED). An IPv4 client of a dual-stack listener, ::ffff:a.b.c.d,
 * is judged as a.b.c.d, so that IPv4 entries hold on every listener, and
 * an entry written in that form is read as the IPv4 one. It calls nothing
 * of the relay. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "relay.h"

/* Linux 4.13; older C library headers lack its number. */
#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59
#endif

static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

/* Decimal digits alone, at most max; -1 otherwise (strtoul takes signs,
 * spaces and "0x"). */
static long long number(const char *s, size_t n, long long max)
{
	long long v = 0;
	size_t i;

	if (!n || n > 10)
		return -1;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v <= max ? v : -1;
}

/* Whether the bits of addr past bits are all 0. */
static bool host_clear(const uint8_t *addr, int bits, int len)
{
	int i;

	for (i = bits; i < len * 8; i++)
		if (addr[i / 8] & (0x80 >> (i % 8)))
			return false;
	return true;
}

/* One network, "ADDR[/BITS]", into e; its error, or NULL. */
static const char *network(const char *s, size_t n, struct acl_rule *e)
{
	char text[INET6_ADDRSTRLEN + 8];
	const char *slash = memchr(s, '/', n);
	size_t alen = slash ? (size_t)(slash - s) : n;
	long long bits;

	if (alen >= sizeof(text))
		return "not an address";
	memcpy(text, s, alen);
	text[alen] = '\0';
	memset(e, 0, sizeof(*e));
	if (inet_pton(AF_INET, text, e->net) == 1)
		e->kind = AF_INET;
	else if (inet_pton(AF_INET6, text, e->net) == 1)
		e->kind = AF_INET6;
	else
		return "not an address (want IPv4 or IPv6, e.g. 10.0.0.0/8 or 2001:db8::/32)";
	bits = e->kind == AF_INET ? 32 : 128;
	if (slash && (bits = number(slash + 1, n - alen - 1, bits)) < 0)
		return e->kind == AF_INET ? "the prefix length is not 0 to 32" :
					    "the prefix length is not 0 to 128";
	/* ::ffff:a.b.c.d/N, N >= 96: the IPv4 network it names. */
	if (e->kind == AF_INET6 && bits >= 96 && !memcmp(e->net, mapped, 12)) {
		memmove(e->net, e->net + 12, 4);
		memset(e->net + 4, 0, 12);
		e->kind = AF_INET;
		bits -= 96;
	}
	e->bits = (uint8_t)bits;
	/* 10.1.2.3/8 is more likely a slip than 10.0.0.0/8. */
	if (!host_clear(e->net, e->bits, e->kind == AF_INET ? 4 : 16))
		return "bits set past the prefix length (a network's first address, "
		       "or an address alone)";
	return NULL;
}

/* One entry of a list, s to s + n, into e; its error, or NULL. */
static const char *entry(const char *s, size_t n, struct acl_rule *e)
{
	long long id;

	if (!n)
		return "an empty entry";
	if ((n > 4 && !memcmp(s, "uid:", 4)) || (n > 4 && !memcmp(s, "gid:", 4))) {
		/* (uid_t)-1 is no one's: chown(2)'s "leave as it is". */
		if ((id = number(s + 4, n - 4, 4294967294LL)) < 0)
			return "not a numeric id (id -u NAME, getent group NAME give one)";
		memset(e, 0, sizeof(*e));
		e->kind = s[0] == 'u' ? ACL_UID : ACL_GID;
		e->id = (uint32_t)id;
		return NULL;
	}
	return network(s, n, e);
}

/* The entries of text, comma-separated, added to a; NULL, or what is
 * wrong, in why (size bytes), a's entries then left as they were. */
const char *acl_parse(const char *text, struct acl *a, char *why, size_t size)
{
	struct acl add = *a;
	const char *s = text, *end, *err;

	do {
		end = strchrnul(s, ',');
		if (add.n == ACL_MAX) {
			snprintf(why, size, "more than %d entries in all", ACL_MAX);
			return why;
		}
		if ((err = entry(s, (size_t)(end - s), &add.rule[add.n]))) {
			snprintf(why, size, "%.*s: %s", (int)(end - s), s, err);
			return why;
		}
		add.n++;
		s = end + 1;
	} while (*end);
	*a = add;
	return NULL;
}

/* Whether a holds an entry of kind (AF_INET, AF_INET6, ACL_UID...). */
bool acl_has(const struct acl *a, int kind)
{
	int i;

	for (i = 0; i < a->n; i++)
		if (a->rule[i].kind == kind)
			return true;
	return false;
}

static bool in_network(const struct acl_rule *e, const struct peer *p)
{
	int full = e->bits / 8, rest = e->bits % 8;

	if (e->kind != p->family || memcmp(e->net, p->addr, (size_t)full))
		return false;
	return !rest || !((e->net[full] ^ p->addr[full]) & (0xff00 >> rest));
}

/* Whether the peer of a unix socket is a member of gid, by its groups
 * (SO_PEERGROUPS, Linux 4.13) beside its own gid; -1 when they cannot be
 * had. A member through a supplementary group is a member. */
static int in_group(const struct peer *p, uint32_t gid)
{
	gid_t some[64], *g = some;
	socklen_t len = sizeof(some);
	int r = 0, i, n;

	if (p->gid == gid)
		return 1;
	if (getsockopt(p->fd, SOL_SOCKET, SO_PEERGROUPS, g, &len) < 0) {
		/* A peer with more groups: the length it needs is in len. */
		if (errno != ERANGE || !(g = malloc(len)) ||
		    getsockopt(p->fd, SOL_SOCKET, SO_PEERGROUPS, g, &len) < 0)
			r = -1;
	}
	for (n = (int)(len / sizeof(*g)), i = 0; !r && i < n; i++)
		r = g[i] == gid;
	if (g != some)
		free(g);
	return r;
}

/* Whether an entry of a matches p. When p's groups cannot be had, a gid
 * entry matches as unknown says: a --deny refuses what it cannot clear,
 * an --allow does not let in what it cannot name. */
bool acl_match(const struct acl *a, const struct peer *p, bool unknown)
{
	const struct acl_rule *e;
	int r;

	for (e = a->rule; e < a->rule + a->n; e++) {
		if (e->kind == AF_INET || e->kind == AF_INET6)
			r = in_network(e, p);
		else if (p->family != AF_UNIX)
			r = 0;
		else if (e->kind == ACL_UID)
			r = p->uid == e->id;
		else if ((r = in_group(p, e->id)) < 0)
			r = unknown;
		if (r)
			return true;
	}
	return false;
}
