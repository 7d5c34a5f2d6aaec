/* psplice bench, group "pressure": what its two items share
 * (bench_pressure_util.c), and the items, which the group's entry runs. */
#ifndef BENCH_PRESSURE_H
#define BENCH_PRESSURE_H

#include <stddef.h>
#include <sys/types.h>

#include "bench.h"
#include "bench_fwd.h"

#define GROUP "pressure"
#define MAX_REPS 3

enum { V_PSPLICE, V_NOPIPES, V_READWRITE, NV };

static const char *const vnames[NV] = {
	[V_PSPLICE] = "psplice relay -j 1",
	[V_NOPIPES] = "PSPLICE_MAX_PIPES=0 (parks in memory)",
	[V_READWRITE] = "psplice relay --copy=readwrite",
};

/* bench_pressure_util.c. A listening socket on 127.0.0.1 (socket flags: SOCK_NONBLOCK) and its
 * port; -1 and errno. */
int pressure_listen_any(int *port, int flags);
/* A socket connected to 127.0.0.1:port, with SO_RCVBUF rcvbuf set before
 * connect when above 0; -1 and errno. */
int pressure_connect_to(int port, int flags, int rcvbuf);
/* The relay of variant v on a fresh port (*port) forwarding to target,
 * with -v for its stats line at exit in log; -1 with why. */
pid_t pressure_relay_start(const struct bench_opts *o, int v, int target, int *port,
			   char *log, size_t size, char *why, size_t wsize);
/* The figures of the relay's last stats line in its log (-1: none). */
int pressure_relay_stats(const char *log, double *pending, double *copied);

/* The items, reps runs of each variant (bench_pressure_slow.c,
 * bench_pressure_conns.c). */
void pressure_slow_item(const struct bench_opts *o, int reps);
void pressure_conns_item(const struct bench_opts *o, int reps);
/* bench_pressure_stalled.c: clients that never read, psplice relay against
 * HAProxy. */
void pressure_stalled_item(const struct bench_opts *o, int reps);

#endif
