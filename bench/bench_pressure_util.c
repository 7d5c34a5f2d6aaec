/* psplice bench, group "pressure": what its two items share (the items
 * are in bench_pressure_slow.c and bench_pressure_conns.c, the group's
 * entry in bench_pressure.c): loopback sockets, and the relay measured,
 * started and read back from its stats line. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench_pressure.h"

int pressure_listen_any(int *port, int flags)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | flags, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 4096) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) < 0) {
		close(fd);
		return -1;
	}
	*port = ntohs(a.sin_port);
	return fd;
}

int pressure_connect_to(int port, int flags, int rcvbuf)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | flags, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0)
		return -1;
	if (rcvbuf)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0 && errno != EINPROGRESS) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The relay of variant v on a fresh port, -v for its stats line at exit.
 * PSPLICE_MAX_PIPES reaches it through the environment it inherits. */
pid_t pressure_relay_start(const struct bench_opts *o, int v, int target, int *port,
			    char *log, size_t size, char *why, size_t wsize)
{
	struct fwd_cmdline c;
	pid_t pid;

	*port = bench_free_port();
	fwd_scratch(o, "pressure-relay.log", log, size);
	fwd_cmd_init(&c, o->self);
	fwd_arg(&c, "relay");
	fwd_arg(&c, "-j");
	fwd_arg(&c, "1");
	fwd_arg(&c, "-v");
	fwd_arg(&c, "--drain-timeout");
	fwd_arg(&c, "1");
	if (v == V_READWRITE)
		fwd_arg(&c, "--copy=readwrite");
	fwd_arg(&c, "127.0.0.1:%d", *port);
	fwd_arg(&c, "127.0.0.1:%d", target);
	if (v == V_NOPIPES)
		setenv("PSPLICE_MAX_PIPES", "0", 1);
	pid = fwd_start_listener(c.argv, *port, log, why, wsize);
	unsetenv("PSPLICE_MAX_PIPES");
	return pid;
}

/* The figures of the relay's last stats line in its log (-1: none):
 * "...; pending A client->target, B target->client; copied C". */
int pressure_relay_stats(const char *log, double *pending, double *copied)
{
	char line[512], last[512] = "";
	const char *p;
	FILE *f = fopen(log, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "; copied "))
			memcpy(last, line, sizeof(last));
	fclose(f);
	p = strstr(last, "; copied ");
	if (!p)
		return -1;
	*copied = strtod(p + 9, NULL);
	if (pending) {
		double a = 0, b = 0;

		p = strstr(last, "; pending ");
		if (p)
			sscanf(p + 10, "%lf %*s %lf", &a, &b);
		*pending = a + b;
	}
	return 0;
}
