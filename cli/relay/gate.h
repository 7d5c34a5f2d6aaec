/* psplice relay: who may connect, gate.c and acl.c: the types struct
 * relay and struct conn hold (the lists of --allow, --deny and
 * --proxy-from, a connection's source), and what the two files offer. */
#ifndef CLI_RELAY_GATE_H
#define CLI_RELAY_GATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "proxy_hdr.h"

struct relay;
struct conn;

/* Why a client was refused (gate.c); REFUSE_NONE: it was not. */
enum refusal { REFUSE_NONE, REFUSE_DENIED, REFUSE_NOT_ALLOWED, REFUSE_PER_SOURCE,
	       REFUSE_PROXY_FROM, REFUSE_N };

#define ACL_MAX 32           /* entries in one list of --allow, --deny, --proxy-from */
#define ACL_UID 0xf0         /* an entry's kinds beside AF_INET and AF_INET6 */
#define ACL_GID 0xf1

/* One entry: a network (kind AF_INET or AF_INET6, its first bits of net)
 * or a unix peer's id (ACL_UID, ACL_GID). */
struct acl_rule {
	uint8_t kind;
	uint8_t bits;
	uint8_t net[16];
	uint32_t id;
};

struct acl {
	struct acl_rule rule[ACL_MAX];
	int n;
};

/* A client as the lists judge it: an IPv4 address (an IPv4-mapped IPv6
 * one too), an IPv6 one, or a unix peer's credentials; AF_UNSPEC: none. */
struct peer {
	sa_family_t family;
	uint8_t addr[16];
	uid_t uid;
	gid_t gid;
	pid_t pid;
	int fd;              /* AF_UNIX: its groups are asked of it */
};

/* What a connection counts for under --max-conns-per-source: an IPv4
 * address, an IPv6 /64, a uid (AF_UNIX); family 0: nothing. */
struct source {
	uint8_t family;
	uint8_t addr[16];
};

/* gate.c: a client judged as it is accepted (closed when refused), or
 * once its PROXY header names it; its count given back at its end. */
extern const char *const refusal_name[REFUSE_N];
bool gate_admit(struct relay *r, int fd, const struct sockaddr *sa, socklen_t len,
		struct source *src);
bool gate_named(struct relay *r, struct conn *c, const struct proxy_addrs *a);
void gate_leave(struct relay *r, struct source *s);
int gate_start(struct relay *r);
void gate_stop(struct relay *r);

/* acl.c: a list's entries added from text (NULL, or what is wrong, in
 * why); whether it holds an entry of a kind; whether one matches p (a gid
 * entry whose groups cannot be had: unknown). */
const char *acl_parse(const char *text, struct acl *a, char *why, size_t size);
bool acl_has(const struct acl *a, int kind);
bool acl_match(const struct acl *a, const struct peer *p, bool unknown);

#endif
