/* Sizes as the options give them ("64M"), ranges of them (OFF:LEN), and
 * sizes as the messages say them ("1.2 MiB"). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"


/* The unit a suffix letter names: b is 512 bytes; the others are a power
 * of 1024 (K, M, G...) or, followed by B or D, of 1000 (kB, MB...), as in
 * coreutils' head -c and dd. Lowercase k and m are taken as head takes
 * them; g and t are not. 0 when the letter is not one. */
static int unit_power(char c)
{
	static const char powers[] = "KMGTPEZY";
	const char *p;

	if (c == 'k' || c == 'm')
		c = (char)(c - 'a' + 'A');
	p = c ? strchr(powers, c) : NULL;
	return p ? (int)(p - powers) + 1 : 0;
}

/* The multiplier of suffix s ("" is 1) as a base and a power of it, or -1
 * when s is no suffix. */
static int unit_of(const char *s, unsigned int *base, int *power)
{
	*base = 1024;
	*power = 0;
	if (!*s)
		return 0;
	if (!strcmp(s, "b")) {
		*base = 512;
		*power = 1;
		return 0;
	}
	*power = unit_power(*s);
	if (!*power)
		return -1;
	if (!strcmp(s + 1, "B") || !strcmp(s + 1, "D"))
		*base = 1000;
	else if (strcmp(s + 1, "") && strcmp(s + 1, "iB"))
		return -1;
	return 0;
}

int64_t cli_parse_size(const char *s)
{
	unsigned long long n;
	unsigned int base;
	int power;
	char *end;

	if (*s < '0' || *s > '9')
		return CLI_SIZE_BAD;
	errno = 0;
	n = strtoull(s, &end, 10);
	if (unit_of(end, &base, &power) < 0)
		return CLI_SIZE_BAD;
	if (errno || n > INT64_MAX)
		return CLI_SIZE_TOO_LARGE;
	for (; power > 0; power--) {
		if (n > (unsigned long long)INT64_MAX / base)
			return CLI_SIZE_TOO_LARGE;
		n *= base;
	}
	return (int64_t)n;
}

const char *cli_size_why(int64_t r)
{
	return r == CLI_SIZE_TOO_LARGE ? ": too large (at most 9223372036854775807)" : "";
}

/* OFF:LEN; LEN 0 or empty means to end of file. */
int cli_parse_range(const char *arg, int64_t *off, int64_t *len)
{
	const char *colon = strchr(arg, ':');
	char head[64];

	if (!colon || (size_t)(colon - arg) >= sizeof(head))
		return -1;
	memcpy(head, arg, (size_t)(colon - arg));
	head[colon - arg] = '\0';
	*off = cli_parse_size(head);
	*len = colon[1] ? cli_parse_size(colon + 1) : 0;
	if (*off == CLI_SIZE_TOO_LARGE || *len == CLI_SIZE_TOO_LARGE)
		return CLI_SIZE_TOO_LARGE;
	return *off < 0 || *len < 0 ? CLI_SIZE_BAD : 0;
}

const char *cli_human(double n, char *buf, size_t size)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int u = 0;

	while (n >= 1024 && u < 4) {
		n /= 1024;
		u++;
	}
	snprintf(buf, size, u ? "%.1f %s" : "%.0f %s", n, units[u]);
	return buf;
}
