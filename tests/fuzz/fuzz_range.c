/* libFuzzer: OFF:LEN ranges (psplice sync --range; cat's --offset and
 * --length take the same sizes). An accepted range is two sizes the size
 * parser accepts, split at the first colon. */
#include <stdlib.h>
#include <string.h>

#include "parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char s[160], head[160];
	int64_t off, len;
	char *colon;

	if (size >= sizeof(s))
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	if (cli_parse_range(s, &off, &len) < 0)
		return 0;
	colon = strchr(s, ':');
	if (!colon || off < 0 || len < 0)
		abort();
	memcpy(head, s, (size_t)(colon - s));
	head[colon - s] = '\0';
	if (cli_parse_size(head) != off || (colon[1] && cli_parse_size(colon + 1) != len) ||
	    (!colon[1] && len != 0))
		abort();
	return 0;
}
