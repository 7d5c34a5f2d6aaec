/* Sizes as the options give them ("64M"), ranges of them (OFF:LEN), and
 * sizes as the messages say them ("1.2 MiB"). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"


/* "64M" -> 67108864; K, M, G, T are powers of 1024. -1 when malformed. */
int64_t cli_parse_size(const char *s)
{
	static const char units[] = "KMGT";
	const char *u;
	char *end;
	unsigned long long n;
	int shift = 0;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	n = strtoull(s, &end, 10);
	if (errno)
		return -1;
	if (*end && (u = strchr(units, *end)) && end[1] == '\0')
		shift = 10 * (int)(u - units + 1);
	else if (*end)
		return -1;
	if (n > (unsigned long long)INT64_MAX >> shift)
		return -1;
	return (int64_t)(n << shift);
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
	return *off < 0 || *len < 0 ? -1 : 0;
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
