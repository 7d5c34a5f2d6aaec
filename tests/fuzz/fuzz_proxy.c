/* libFuzzer: the PROXY protocol header parser of psplice relay
 * --accept-proxy. Whatever the bytes, the parser reads only them, and says
 * a length no longer than what it was given. A header it takes is taken
 * the same way from any longer buffer (the client's data after it), while
 * each shorter beginning of it asks for more rather than passing for a
 * header. And what it read, written again by the relay's own writer
 * (--send-proxy, --send-proxy-v2), is read back as the same addresses. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "relay/proxy_hdr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void same(const struct proxy_addrs *a, const struct proxy_addrs *b)
{
	if (a->known != b->known)
		abort();
	if (a->known && (a->len != b->len || memcmp(&a->src, &b->src, a->len) ||
			 memcmp(&a->dst, &b->dst, a->len)))
		abort();
}

/* Written by proxy_make in version v and read back: the same addresses;
 * version 1 has no unix family and says UNKNOWN instead. */
static void round_trip(const struct proxy_addrs *a, int v)
{
	unsigned char out[PROXY_OUT_MAX];
	struct proxy_addrs b;
	size_t n = proxy_make(v, (const struct sockaddr *)&a->src, a->len,
			      (const struct sockaddr *)&a->dst, a->len, out);

	if (n > sizeof(out) || proxy_parse(out, n, &b) != (ssize_t)n)
		abort();
	if (v == 1 && a->src.ss_family == AF_UNIX) {
		if (b.known)
			abort();
		return;
	}
	same(a, &b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proxy_addrs a, b;
	unsigned char *more;
	ssize_t n = proxy_parse(data, size, &a);
	size_t k;

	if (n < -1 || n > (ssize_t)size)
		abort();
	if (n <= 0)
		return 0;
	for (k = 0; k < (size_t)n; k++)
		if (proxy_parse(data, k, &b) != 0)
			abort();
	more = malloc((size_t)n + 1);
	if (!more)
		return 0;
	memcpy(more, data, (size_t)n);
	more[n] = 'x';
	if (proxy_parse(more, (size_t)n + 1, &b) != n)
		abort();
	free(more);
	same(&a, &b);
	if (a.known) {
		round_trip(&a, 1);
		round_trip(&a, 2);
	}
	return 0;
}
