/* The PROXY protocol's header, versions 1 and 2 (HAProxy's
 * proxy-protocol.txt): a pure parser and the writer of the header the relay
 * sends. */
#ifndef CLI_PROXY_HDR_H
#define CLI_PROXY_HDR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>

#define PROXY_V1_MAX 107            /* the longest version 1 line, CRLF included */
#define PROXY_V2_FIXED 16           /* signature, command, family, length */
#define PROXY_MAX (PROXY_V2_FIXED + 65535)
#define PROXY_OUT_MAX (PROXY_V2_FIXED + 216)  /* what proxy_make writes at most */

/* The addresses a header names. known is false for version 1's UNKNOWN,
 * version 2's LOCAL command and its UNSPEC family: the receiver then uses
 * the connection's own addresses, as the specification says. */
struct proxy_addrs {
	bool known;
	struct sockaddr_storage src, dst;
	socklen_t len;
};

/* The header at the start of buf (len bytes): its length when whole and
 * valid, 0 when buf is a valid beginning of one and more is needed, -1 when
 * it is not a header. Reads only buf; a is filled on success. */
ssize_t proxy_parse(const void *buf, size_t len, struct proxy_addrs *a);

/* The header naming src and dst in version 1 or 2, into out
 * (PROXY_OUT_MAX bytes); returns its length. */
size_t proxy_make(int version, const struct sockaddr *src, socklen_t slen,
		  const struct sockaddr *dst, socklen_t dlen, unsigned char *out);

#endif
