/* psplice relay: the main thread's lines about the listeners: each one's
 * addresses and targets as it starts (-v), and its counters (SIGUSR1,
 * --stats-interval, the end with -v). */
#include <inttypes.h>
#include <stdio.h>

#include "relay.h"
#include "out.h"

/* One line each listener; with --config, each begins with its LISTEN. */
void relay_stats(const struct relay *r)
{
	for (; r; r = r->next)
		cli_say("relay: %s%sconnections %" PRIu64 " open, %" PRIu64 " total; bytes %"
			PRIu64 " %s, %" PRIu64 " %s; pending %" PRId64 " %s, %" PRId64 " %s; "
			"copied %" PRIu64, r->config ? r->listen.text : "", r->config ? ": " : "",
			(uint64_t)atomic_load(&r->open), (uint64_t)atomic_load(&r->total),
			(uint64_t)atomic_load(&r->bytes[0]), relay_dir_name[0],
			(uint64_t)atomic_load(&r->bytes[1]), relay_dir_name[1],
			(int64_t)atomic_load(&r->pending[0]), relay_dir_name[0],
			(int64_t)atomic_load(&r->pending[1]), relay_dir_name[1],
			(uint64_t)atomic_load(&r->copied));
}

/* "relay: listening on 127.0.0.1:8080, forwarding to ...": each listener,
 * those a service manager passed with their names. */
void relay_listening(const struct relay *r)
{
	char where[1024], one[300], to[1024];
	size_t used = 0;
	int k;

	where[0] = '\0';
	for (k = 0; k < r->nlisten && used < sizeof(where); k++) {
		listener_text(r, k, one, sizeof(one));
		used += (size_t)snprintf(where + used, sizeof(where) - used, "%s%s",
					 k ? ", " : "", one);
	}
	targets_text(r, to, sizeof(to));
	cli_say("relay: listening on %s, forwarding to %s, %d worker%s", where, to, r->jobs,
		r->jobs == 1 ? "" : "s");
}
