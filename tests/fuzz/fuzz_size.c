/* libFuzzer: the CLI's size parser (--offset, --length, sync's ranges). A
 * size it accepts is digits and at most one suffix of head -c's (b; K, M,
 * G, T, P, E, Z, Y, lowercase k and m, each alone or with iB: powers of
 * 1024; with B or D: powers of 1000), whose value is exact and fits in
 * int64_t; one it calls too large is of that form and does not fit. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The suffix's multiplier as a 128-bit number, capped past 2^64; 0 when
 * it is no suffix. */
static unsigned __int128 multiplier(const char *u)
{
	static const char letters[] = "KMGTPEZY";
	unsigned __int128 m = 1, base = 1024;
	const char *p;
	int i;

	if (!*u)
		return 1;
	if (!strcmp(u, "b"))
		return 512;
	p = strchr(letters, *u == 'k' ? 'K' : *u == 'm' ? 'M' : *u);
	if (!p)
		return 0;
	if (!strcmp(u + 1, "B") || !strcmp(u + 1, "D"))
		base = 1000;
	else if (strcmp(u + 1, "") && strcmp(u + 1, "iB"))
		return 0;
	for (i = 0; i <= p - letters; i++)
		m = m > ((unsigned __int128)1 << 80) ? m : m * base;
	return m;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned __int128 n = 0, m;
	char s[64];
	int64_t r;
	size_t i;

	if (size >= sizeof(s))
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	r = cli_parse_size(s);
	for (i = 0; s[i] >= '0' && s[i] <= '9'; i++)
		if (n < ((unsigned __int128)1 << 80))
			n = n * 10 + (unsigned)(s[i] - '0');
	m = i ? multiplier(s + i) : 0;
	if (r == CLI_SIZE_BAD) {
		if (m)
			abort();
		return 0;
	}
	if (!m)
		abort();
	if (r == CLI_SIZE_TOO_LARGE) {
		if (n <= INT64_MAX && m <= INT64_MAX && n * m <= INT64_MAX)
			abort();
		return 0;
	}
	if (r < 0 || (unsigned __int128)r != n * m)
		abort();
	return 0;
}
