/* psplice bench: three network namespaces of the bench's own joined by
 * veth pairs (bench_netns.c), so that a relay item can take the path a
 * relay between two hosts' stacks takes rather than loopback:
 *
 *   client ns  --veth--  relay ns (forwards)  --veth--  server ns
 *   198.18.1.1           198.18.1.2 | 198.18.2.1         198.18.2.2
 *
 * The addresses are in 198.18.0.0/15, set aside for benchmarks (RFC 2544),
 * and exist only inside the namespaces: the machine's own routes and
 * addresses are not touched. */
#ifndef BENCH_NETNS_H
#define BENCH_NETNS_H

#include <stddef.h>
#include <sys/types.h>

#include "bench.h"

#define NETNS_CLIENT_ADDR "198.18.1.1"
#define NETNS_FRONT_ADDR "198.18.1.2"   /* the relay ns, toward the client */
#define NETNS_BACK_ADDR "198.18.2.2"    /* the server ns */

struct bench_netns {
	char client[32], relay[32], server[32];   /* namespace names */
	char veth[2][16];                         /* the ends left in this ns, if any */
	pid_t guard;     /* removes all of it once guard_fd is closed */
	int guard_fd;
};

/* Create the namespaces and the links; 0, or -1 with why (what ip said)
 * and nothing left behind. Needs root and ip(8); ip's output goes to
 * o->dir/netns.log. */
int bench_netns_up(const struct bench_opts *o, struct bench_netns *n, char *why,
		   size_t size);
/* Kill what still runs in the namespaces and remove them, waiting (at
 * most a few seconds) until that is done. The same removal happens if
 * this process ends any other way, a signal or SIGKILL included. */
void bench_netns_down(struct bench_netns *n);

#endif
