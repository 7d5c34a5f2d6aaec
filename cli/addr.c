/* Socket addresses as the command line gives them: "unix:/path",
 * "[v6]:port", "host:port"; and --to ADDR, connected. */
#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "addr.h"
#include "opts.h"
#include "out.h"

/* getaddrinfo takes a number modulo 65536 (99999 is 34463); port 0
 * means "any" to bind and nothing to connect to. A name ("http") is the
 * services database's. */
static int port_ok(const char *port, bool passive, const char **why)
{
	unsigned long p;

	if (strspn(port, "0123456789") != strlen(port))
		return 0;
	p = strtoul(port, NULL, 10);
	if (strlen(port) > 5 || p > 65535) {
		*why = "port out of range (0 to 65535)";
		return -1;
	}
	if (!p && !passive) {
		*why = "port 0 is not a port to connect to";
		return -1;
	}
	return 0;
}

/* The text of "[v6]:port" or "host:port" cut into host and port, with no
 * lookup; -1 with *why set when malformed. */
int cli_split_addr(const char *s, char *host, size_t size, const char **port, bool passive,
		   const char **why)
{
	const char *end;
	size_t hl;

	if (*s == '[') {
		end = strchr(s, ']');
		if (!end || end[1] != ':') {
			*why = "want [IPv6]:PORT";
			return -1;
		}
		*port = end + 2;
		s++;
	} else {
		end = strrchr(s, ':');
		if (!end) {
			*why = "want HOST:PORT, [IPv6]:PORT or unix:PATH";
			return -1;
		}
		*port = end + 1;
	}
	hl = (size_t)(end - s);
	/* ":PORT" to listen on: every IPv4 address, as HAProxy's bind and
	 * socat's TCP-LISTEN take it ("[::]:PORT" for IPv6). */
	if (!hl && passive && *s == ':' && **port) {
		s = "0.0.0.0";
		hl = strlen(s);
	}
	if (!hl || hl >= size || !**port) {
		*why = !hl && *s == ':' ? "want HOST:PORT: a connection needs its HOST"
					: "want HOST:PORT, [IPv6]:PORT or unix:PATH";
		return -1;
	}
	memcpy(host, s, hl);
	host[hl] = '\0';
	return port_ok(*port, passive, why);
}

/* "udp:...", "udp4:...", "udp6:...", as socat writes them. */
static bool datagram(const char *s)
{
	return !strncasecmp(s, "udp:", 4) || !strncasecmp(s, "udp4:", 5) ||
	       !strncasecmp(s, "udp6:", 5);
}

/* "unix:/path", "[v6]:port", "host:port" -> a socket address. */
int cli_parse_addr(const char *s, struct cli_addr *a, bool passive, const char **why)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	char host[256];
	const char *port;
	int err;

	memset(a, 0, sizeof(*a));
	a->text = s;
	if (!strncmp(s, "unix:", 5)) {
		struct sockaddr_un *un = (struct sockaddr_un *)&a->ss;

		if (!s[5] || strlen(s + 5) >= sizeof(un->sun_path)) {
			*why = "bad unix socket path";
			return -1;
		}
		un->sun_family = AF_UNIX;
		strcpy(un->sun_path, s + 5);
		a->len = sizeof(*un);
		return 0;
	}
	if (datagram(s)) {
		*why = "UDP is not relayed: stream sockets only (TCP, unix)";
		return -1;
	}
	if (cli_split_addr(s, host, sizeof(host), &port, passive, why) < 0)
		return -1;
	if (passive)
		hints.ai_flags = AI_PASSIVE;
	/* Parsing only looks nothing up: a name stands as its form was checked. */
	if (cli_parse_only)
		hints.ai_flags |= AI_NUMERICHOST | AI_NUMERICSERV;
	err = getaddrinfo(host, port, &hints, &ai);
	if (err == EAI_NONAME && cli_parse_only)
		return 0;
	/* A well-formed name that does not resolve (now, here) is the run's
	 * failure, not the command line's. */
	if (err) {
		*why = gai_strerror(err);
		return CLI_ADDR_UNRESOLVED;
	}
	memcpy(&a->ss, ai->ai_addr, ai->ai_addrlen);
	a->len = ai->ai_addrlen;
	freeaddrinfo(ai);
	return 0;
}

/* --to ADDR: a blocking stream socket connected to ADDR (a malformed
 * address is a usage error); -1 with the error said when it cannot be
 * reached, its name not resolved included. */
int cli_connect(const struct cli_cmd *cmd, const char *arg)
{
	struct cli_addr a;
	const char *why;
	int fd, r;

	r = cli_parse_addr(arg, &a, false, &why);
	if (r == CLI_ADDR_UNRESOLVED) {
		cli_error(0, "cannot connect to %s: %s", cli_quote(arg), why);
		return -1;
	}
	if (r < 0)
		cli_usage_error(cmd, "invalid address %s: %s", cli_quote(arg), why);
	if (cli_parse_only)
		return -1;
	fd = socket(a.ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&a.ss, a.len) == 0)
		return fd;
	cli_error(errno, "cannot connect to %s", cli_quote(arg));
	if (fd >= 0)
		close(fd);
	return -1;
}
