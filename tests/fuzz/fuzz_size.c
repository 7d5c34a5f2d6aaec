/* libFuzzer: the CLI's size parser (--offset, --length, sync's ranges). A
 * size it accepts is a number, with at most one unit that multiplies it
 * exactly, and fits in int64_t. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char s[64], *end;
	unsigned long long n;
	int64_t r;
	size_t len;

	if (size >= sizeof(s))
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	r = cli_parse_size(s);
	if (r < 0) {
		if (r != -1)
			abort();
		return 0;
	}
	if (s[0] < '0' || s[0] > '9')
		abort();
	n = strtoull(s, &end, 10);
	len = strlen(end);
	if (len > 1 || (len == 1 && !strchr("KMGT", *end)))
		abort();
	if (len == 0 && (unsigned long long)r != n)
		abort();
	if (len == 1 && ((uint64_t)r >> (10 * (strchr("KMGT", *end) - "KMGT" + 1))) != n)
		abort();
	return 0;
}
