/* psplice bench, group "pressure": psplice relay when its output cannot keep
 * up (issue 14). Three items, the first two each with the relay as it is, the relay with
 * PSPLICE_MAX_PIPES=0 (pairs keep no pipe: what the output could not take
 * waits in memory, as the relay before issue 14 parked it) and the
 * read/write relay:
 *  - "slow reader": a download to a client with a small receive buffer
 *    that reads in bursts with pauses; the bytes the relay delivered
 *    through user memory per GiB, from its stats line at exit;
 *  - "1000 conns": connections held open through the relay, each with bytes
 *    its client does not read, so that pairs would keep pipes; the relay's
 *    fds and pipes at the peak and after the connections closed, and its
 *    memory per connection;
 *  - "stalled readers": clients that never read, the target sending them
 *    8 MiB each, through the relay and through HAProxy: the forwarder's
 *    memory and the machine's MemAvailable drop per connection.
 * This file is the group's entry; bench_pressure_slow.c,
 * bench_pressure_conns.c and bench_pressure_stalled.c measure the items,
 * on what bench_pressure_util.c gives them all. */
#include "bench_pressure.h"

void bench_pressure(const struct bench_opts *o)
{
	int reps = o->quick ? 1 : MAX_REPS;

	pressure_slow_item(o, reps);
	pressure_conns_item(o, reps);
	pressure_stalled_item(o, reps);
}
