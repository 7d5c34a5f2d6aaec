/* Stream socket addresses as given on the command line, and a connect to
 * one (addr.c). */
#ifndef CLI_ADDR_H
#define CLI_ADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

struct cli_cmd;

/* A stream socket address as given on the command line. */
struct cli_addr {
	struct sockaddr_storage ss;
	socklen_t len;
	const char *text;    /* as given, for messages */
};
/* "unix:/path", "[v6]:port", "host:port" -> a socket address; passive for
 * one to listen on. -1 with *why set when malformed, CLI_ADDR_UNRESOLVED
 * (the resolver's message in *why) when well formed but not resolved. */
#define CLI_ADDR_UNRESOLVED (-2)
int cli_parse_addr(const char *s, struct cli_addr *a, bool passive, const char **why);
/* Its "[v6]:port" or "host:port" text cut into host (size bytes) and
 * port, checked, with no lookup. -1 with *why set when malformed. */
int cli_split_addr(const char *s, char *host, size_t size, const char **port, bool passive,
		   const char **why);
/* A blocking stream socket connected to ADDR (--to); -1 when it cannot be
 * reached or its name is not resolved, said on stderr. A malformed ADDR is
 * a usage error of cmd. With
 * cli_parse_only, -1 once ADDR is checked, silently. */
int cli_connect(const struct cli_cmd *cmd, const char *arg);

#endif
