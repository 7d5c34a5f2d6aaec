/* psplice relay: the open-file limit. The soft RLIMIT_NOFILE most logins
 * and service managers start a program with is 1,024, about 500 relayed
 * connections at two sockets each; the hard limit is usually far higher.
 * The relay raises its soft limit at start to what --max-conns needs (to
 * the hard limit without --max-conns), as HAProxy does, and says so when
 * the hard limit is too low for --max-conns. The limit the relay started
 * with is put back in a reload's new process before its exec, which
 * raises it again for its own options. */
#include <errno.h>
#include <inttypes.h>
#include <sys/resource.h>

#include "relay.h"
#include "out.h"

#define SLACK 64       /* standard fds, the log, signalfd, --metrics' clients... */
#define PER_WORKER 4   /* its epoll, its eventfd, its pipe */

static struct rlimit at_start;
static bool raised;

/* The fds each connection costs, times 4: its two sockets, and a pipe for
 * every 4 connections to keep the bytes a slow output has not taken (the
 * share of pipes HAProxy keeps). */
#define CONN_FDS_X4 10

/* What the process holds whatever its connections: the workers' own fds
 * (one set of workers for every line), each line's listeners (one a
 * worker with --reuseport), and the slack. */
static uint64_t fixed_fds(const struct relay *r)
{
	uint64_t n = SLACK + (uint64_t)r->jobs * PER_WORKER;

	for (; r; r = r->next)
		n += r->reuseport ? (uint64_t)r->jobs :
		     r->nlisten > 0 ? (uint64_t)r->nlisten : 1;
	return n;
}

/* Connections --max-conns allows, every line's; 0 when one has no limit. */
static uint64_t conns_allowed(const struct relay *r)
{
	uint64_t n = 0;

	for (; r; r = r->next) {
		if (!r->max_conns)
			return 0;
		n += r->max_conns;
	}
	return n;
}

/* The hard limit is below what --max-conns needs: the connections it
 * carries, said once at start. */
static void say_short(uint64_t hard, uint64_t fixed, uint64_t conns)
{
	uint64_t carries = hard > fixed ? (hard - fixed) * 4 / CONN_FDS_X4 : 0;

	cli_error(0, "relay: warning: the hard limit of open files (%" PRIu64 ") carries "
		  "about %" PRIu64 " connections, not the %" PRIu64 " --max-conns allows; raise "
		  "it (ulimit -Hn, systemd's LimitNOFILE=)", hard, carries, conns);
}

void nofile_raise(const struct relay *r)
{
	uint64_t conns = conns_allowed(r), fixed = fixed_fds(r), need;
	struct rlimit l;

	if (getrlimit(RLIMIT_NOFILE, &l) < 0)
		return;
	at_start = l;
	if (!conns && l.rlim_max == RLIM_INFINITY)
		return;
	need = conns ? fixed + conns * CONN_FDS_X4 / 4 : l.rlim_max;
	if (need > l.rlim_max) {
		say_short(l.rlim_max, fixed, conns);
		need = l.rlim_max;
	}
	if (need <= l.rlim_cur)
		return;
	l.rlim_cur = need;
	if (setrlimit(RLIMIT_NOFILE, &l) < 0) {
		cli_error(errno, "relay: cannot raise the limit of open files to %" PRIu64,
			  (uint64_t)need);
		return;
	}
	raised = true;
}

/* In a reload's child, between fork and exec: one system call, which
 * takes no lock a thread of the parent may have held. */
void nofile_restore(void)
{
	if (raised)
		(void)setrlimit(RLIMIT_NOFILE, &at_start);
}
