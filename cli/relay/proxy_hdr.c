/* The PROXY protocol's header (HAProxy's proxy-protocol.txt). Version 1 is
 * a line of text, "PROXY TCP4 src dst sport dport\r\n", at most 107 bytes;
 * version 2 a binary block after a 12-byte signature that no text protocol
 * begins with. The parser sees only bytes, so the fuzzer can drive it. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/un.h>

#include "proxy_hdr.h"

static const unsigned char v2_sig[12] = "\r\n\r\n\0\r\nQUIT\n";
static const char v1_sig[6] = "PROXY ";

/* A port in version 1: 1 to 5 digits, at most 65535. */
static bool v1_port(const char *s, uint16_t *port)
{
	unsigned long v = 0;
	size_t n = strspn(s, "0123456789");

	if (n < 1 || n > 5 || s[n])
		return false;
	for (; *s; s++)
		v = v * 10 + (unsigned long)(*s - '0');
	if (v > 65535)
		return false;
	*port = (uint16_t)v;
	return true;
}

/* An address and port into ss: family's text form, as inet_pton takes it
 * (strict: "1.2.3.4", no shorthand). */
static bool v1_addr(int family, const char *host, const char *port,
		    struct sockaddr_storage *ss)
{
	uint16_t p;

	memset(ss, 0, sizeof(*ss));
	if (!v1_port(port, &p))
		return false;
	if (family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)ss;

		in->sin_family = AF_INET;
		in->sin_port = htons(p);
		return inet_pton(AF_INET, host, &in->sin_addr) == 1;
	}
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

	in6->sin6_family = AF_INET6;
	in6->sin6_port = htons(p);
	return inet_pton(AF_INET6, host, &in6->sin6_addr) == 1;
}

/* The words of a version 1 line after "PROXY ", split at single spaces:
 * the specification allows exactly one between fields. */
static int v1_words(char *line, char *word[5])
{
	int n = 0;
	char *p = line;

	for (;;) {
		if (n == 5)
			return -1;
		word[n++] = p;
		p = strchr(p, ' ');
		if (!p)
			return n;
		*p++ = '\0';
	}
}

static ssize_t parse_v1(const char *buf, size_t len, struct proxy_addrs *a)
{
	size_t look = len < PROXY_V1_MAX ? len : PROXY_V1_MAX, end, i;
	char line[PROXY_V1_MAX], *word[5];
	int family, n;

	if (memcmp(buf, v1_sig, len < sizeof(v1_sig) ? len : sizeof(v1_sig)))
		return -1;
	for (end = 0; end < look && buf[end] != '\n'; end++)
		;
	if (end == look)
		return look == PROXY_V1_MAX ? -1 : 0;
	if (end < sizeof(v1_sig) + 1 || buf[end - 1] != '\r')
		return -1;
	/* The fields between "PROXY " and "\r\n": printable text only. */
	for (i = sizeof(v1_sig); i < end - 1; i++)
		if (buf[i] < 0x20 || buf[i] > 0x7e)
			return -1;
	memcpy(line, buf + sizeof(v1_sig), end - 1 - sizeof(v1_sig));
	line[end - 1 - sizeof(v1_sig)] = '\0';
	/* UNKNOWN: whatever follows is ignored, the connection's own
	 * addresses stand. */
	if (!strncmp(line, "UNKNOWN", 7) && (line[7] == '\0' || line[7] == ' ')) {
		a->known = false;
		return (ssize_t)end + 1;
	}
	n = v1_words(line, word);
	if (n != 5)
		return -1;
	if (!strcmp(word[0], "TCP4"))
		family = AF_INET;
	else if (!strcmp(word[0], "TCP6"))
		family = AF_INET6;
	else
		return -1;
	if (!v1_addr(family, word[1], word[3], &a->src) ||
	    !v1_addr(family, word[2], word[4], &a->dst))
		return -1;
	a->known = true;
	a->len = family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
	return (ssize_t)end + 1;
}

/* A unix address block of version 2: 108 bytes, NUL-padded (a path of all
 * 108 has no NUL). */
static void v2_unix(const unsigned char *p, struct sockaddr_storage *ss)
{
	struct sockaddr_un *un = (struct sockaddr_un *)ss;

	memset(ss, 0, sizeof(*ss));
	un->sun_family = AF_UNIX;
	memcpy(un->sun_path, p, sizeof(un->sun_path));
}

/* The address block of a PROXY command, by family; false if too short or
 * of no family the specification defines. */
static bool v2_addrs(unsigned family, const unsigned char *p, size_t len,
		     struct proxy_addrs *a)
{
	struct sockaddr_in *s4 = (struct sockaddr_in *)&a->src, *d4 = (struct sockaddr_in *)&a->dst;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&a->src,
			    *d6 = (struct sockaddr_in6 *)&a->dst;

	memset(&a->src, 0, sizeof(a->src));
	memset(&a->dst, 0, sizeof(a->dst));
	switch (family) {
	case 0:                 /* UNSPEC: the connection's own addresses */
		a->known = false;
		return true;
	case 1:
		if (len < 12)
			return false;
		s4->sin_family = d4->sin_family = AF_INET;
		memcpy(&s4->sin_addr, p, 4);
		memcpy(&d4->sin_addr, p + 4, 4);
		memcpy(&s4->sin_port, p + 8, 2);
		memcpy(&d4->sin_port, p + 10, 2);
		a->len = sizeof(*s4);
		break;
	case 2:
		if (len < 36)
			return false;
		s6->sin6_family = d6->sin6_family = AF_INET6;
		memcpy(&s6->sin6_addr, p, 16);
		memcpy(&d6->sin6_addr, p + 16, 16);
		memcpy(&s6->sin6_port, p + 32, 2);
		memcpy(&d6->sin6_port, p + 34, 2);
		a->len = sizeof(*s6);
		break;
	case 3:
		if (len < 216)
			return false;
		v2_unix(p, &a->src);
		v2_unix(p + 108, &a->dst);
		a->len = sizeof(struct sockaddr_un);
		break;
	default:
		return false;
	}
	a->known = true;
	return true;
}

static ssize_t parse_v2(const unsigned char *buf, size_t len, struct proxy_addrs *a)
{
	size_t body;
	unsigned cmd, family, transport;

	if (memcmp(buf, v2_sig, len < sizeof(v2_sig) ? len : sizeof(v2_sig)))
		return -1;
	/* Version 2, command LOCAL (0) or PROXY (1). */
	if (len > 12 && (buf[12] >> 4 != 2 || (buf[12] & 15) > 1))
		return -1;
	if (len < PROXY_V2_FIXED)
		return 0;
	body = (size_t)buf[14] << 8 | buf[15];
	if (len < PROXY_V2_FIXED + body)
		return 0;
	cmd = buf[12] & 15;
	family = buf[13] >> 4;
	transport = buf[13] & 15;
	/* LOCAL: the proxy's own connection (a health check); the address
	 * block, if any, is ignored as the specification says. */
	if (cmd == 0) {
		a->known = false;
		return (ssize_t)(PROXY_V2_FIXED + body);
	}
	/* The relay forwards streams: a datagram's header is not for it. */
	if (family && transport != 1)
		return -1;
	if (!v2_addrs(family, buf + PROXY_V2_FIXED, body, a))
		return -1;
	return (ssize_t)(PROXY_V2_FIXED + body);
}

ssize_t proxy_parse(const void *buf, size_t len, struct proxy_addrs *a)
{
	const unsigned char *p = buf;

	if (!len)
		return 0;
	/* The first byte tells the version: 'P' of "PROXY", '\r' of the
	 * signature; anything else is no header at all. */
	if (p[0] == 'P')
		return parse_v1(buf, len, a);
	if (p[0] == '\r')
		return parse_v2(p, len, a);
	return -1;
}

static size_t make_v1(const struct sockaddr *src, const struct sockaddr *dst,
		      unsigned char *out)
{
	char s[INET6_ADDRSTRLEN], d[INET6_ADDRSTRLEN];
	int n;

	if (src->sa_family == AF_INET) {
		const struct sockaddr_in *a = (const void *)src, *b = (const void *)dst;

		inet_ntop(AF_INET, &a->sin_addr, s, sizeof(s));
		inet_ntop(AF_INET, &b->sin_addr, d, sizeof(d));
		n = snprintf((char *)out, PROXY_OUT_MAX, "PROXY TCP4 %s %s %u %u\r\n", s, d,
			     ntohs(a->sin_port), ntohs(b->sin_port));
	} else if (src->sa_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const void *)src, *b = (const void *)dst;

		inet_ntop(AF_INET6, &a->sin6_addr, s, sizeof(s));
		inet_ntop(AF_INET6, &b->sin6_addr, d, sizeof(d));
		n = snprintf((char *)out, PROXY_OUT_MAX, "PROXY TCP6 %s %s %u %u\r\n", s, d,
			     ntohs(a->sin6_port), ntohs(b->sin6_port));
	} else {
		/* Version 1 has no unix family: UNKNOWN, which the receiver
		 * takes as "use the connection's own addresses". */
		n = snprintf((char *)out, PROXY_OUT_MAX, "PROXY UNKNOWN\r\n");
	}
	return (size_t)n;
}

/* A unix address into version 2's 108-byte block: its path, NUL-padded;
 * an unnamed socket's is all NULs. */
static void put_unix(const struct sockaddr *sa, socklen_t len, unsigned char *p)
{
	const struct sockaddr_un *un = (const void *)sa;
	size_t n = len > offsetof(struct sockaddr_un, sun_path) ?
		   len - offsetof(struct sockaddr_un, sun_path) : 0;

	memset(p, 0, 108);
	memcpy(p, un->sun_path, n < 108 ? n : 108);
}

static size_t make_v2(const struct sockaddr *src, socklen_t slen, const struct sockaddr *dst,
		      socklen_t dlen, unsigned char *out)
{
	unsigned char *p = out + PROXY_V2_FIXED;
	size_t body;

	memcpy(out, v2_sig, sizeof(v2_sig));
	out[12] = 0x21;                 /* version 2, PROXY */
	if (src->sa_family == AF_INET) {
		const struct sockaddr_in *a = (const void *)src, *b = (const void *)dst;

		out[13] = 0x11;
		memcpy(p, &a->sin_addr, 4);
		memcpy(p + 4, &b->sin_addr, 4);
		memcpy(p + 8, &a->sin_port, 2);
		memcpy(p + 10, &b->sin_port, 2);
		body = 12;
	} else if (src->sa_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const void *)src, *b = (const void *)dst;

		out[13] = 0x21;
		memcpy(p, &a->sin6_addr, 16);
		memcpy(p + 16, &b->sin6_addr, 16);
		memcpy(p + 32, &a->sin6_port, 2);
		memcpy(p + 34, &b->sin6_port, 2);
		body = 36;
	} else if (src->sa_family == AF_UNIX) {
		out[13] = 0x31;
		put_unix(src, slen, p);
		put_unix(dst, dlen, p + 108);
		body = 216;
	} else {
		out[13] = 0x00;         /* UNSPEC: the receiver uses its own */
		body = 0;
	}
	out[14] = (unsigned char)(body >> 8);
	out[15] = (unsigned char)body;
	return PROXY_V2_FIXED + body;
}

size_t proxy_make(int version, const struct sockaddr *src, socklen_t slen,
		  const struct sockaddr *dst, socklen_t dlen, unsigned char *out)
{
	static const struct sockaddr unspec = { .sa_family = AF_UNSPEC };

	/* Two families (which a socket's two ends never have, but a header
	 * received may say so): neither is named. */
	if (src->sa_family != dst->sa_family)
		src = dst = &unspec;
	return version == 1 ? make_v1(src, dst, out) : make_v2(src, slen, dst, dlen, out);
}
