/* libFuzzer: the addresses of relay, cat --to and tee --to. The split into
 * host and port is fuzzed whole; a lookup is made only for numeric hosts
 * and ports (AI_NUMERICHOST: no name is ever sent to a resolver), and
 * unix: addresses go through cli_parse_addr itself. */
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "addr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void numeric_lookup(const char *host, const char *port, bool passive)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV }, *ai;

	if (passive)
		hints.ai_flags |= AI_PASSIVE;
	if (strspn(port, "0123456789") != strlen(port))
		return;
	if (getaddrinfo(host, port, &hints, &ai) == 0)
		freeaddrinfo(ai);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char s[400], host[256];
	const char *port, *why = NULL;
	bool passive = size && (data[0] & 1);
	struct cli_addr a;

	if (size < 1 || size >= sizeof(s))
		return 0;
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';
	if (!strncmp(s, "unix:", 5)) {
		if (cli_parse_addr(s, &a, passive, &why) == 0 &&
		    strcmp(((struct sockaddr_un *)&a.ss)->sun_path, s + 5))
			abort();
		return 0;
	}
	if (cli_split_addr(s, host, sizeof(host), &port, passive, &why) < 0) {
		if (!why)
			abort();
		return 0;
	}
	if (!host[0] || strlen(host) >= sizeof(host) || port < s || port >= s + strlen(s) ||
	    strchr(host, '\0') != host + strlen(host))
		abort();
	numeric_lookup(host, port, passive);
	return 0;
}
