/* psplice bench: network namespaces joined by veth pairs for the relay
 * items (bench_netns.h).
 *
 * Whatever ends the benchmark must remove them: a namespace left behind
 * keeps its interfaces, its processes and an entry in `ip netns list`. So
 * the removal is not left to this process at all. Before anything is
 * created, a guard is started: a shell that ignores the terminal's signals
 * and waits to read from a pipe whose only write end this process holds
 * (close-on-exec, so no program the bench starts holds it too). The end
 * closes when this process closes it or when it ends, by exit, by a signal
 * or by SIGKILL alike; the guard then kills what runs in the namespaces and
 * deletes them. One path of removal, taken on every exit. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "bench_fwd.h"
#include "bench_netns.h"

#define GUARD_TIMEOUT 10.0   /* seconds the removal may take */

/* The guard's script: $1..$3 the namespaces, $4 and $5 the veth ends that
 * a failed setup may have left in this namespace. */
static const char guard_script[] =
	"trap '' INT TERM HUP QUIT PIPE\n"
	"read x\n"
	"for n in \"$1\" \"$2\" \"$3\"; do\n"
	"  ip netns pids \"$n\" 2>/dev/null | xargs -r kill -9 2>/dev/null\n"
	"  ip netns del \"$n\" 2>/dev/null\n"
	"done\n"
	"ip link del \"$4\" 2>/dev/null\n"
	"ip link del \"$5\" 2>/dev/null\n"
	"exit 0\n";

/* Start the guard with the read end of a pipe as its standard input. */
static int guard_start(struct bench_netns *n)
{
	int fds[2], null;
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC) < 0)
		return -1;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		null = open("/dev/null", O_WRONLY);
		dup2(fds[0], 0);
		if (null >= 0) {
			dup2(null, 1);
			dup2(null, 2);
		}
		/* Its own process group: a Ctrl-C at the terminal is for the
		 * benchmark, and the guard must outlive it. */
		setpgid(0, 0);
		execl("/bin/sh", "sh", "-c", guard_script, "psplice-bench-netns", n->client,
		      n->relay, n->server, n->veth[0], n->veth[1], (char *)NULL);
		_exit(127);
	}
	close(fds[0]);
	if (pid < 0) {
		close(fds[1]);
		return -1;
	}
	n->guard = pid;
	n->guard_fd = fds[1];
	return 0;
}

void bench_netns_down(struct bench_netns *n)
{
	double end = bench_now() + GUARD_TIMEOUT;
	int st;

	if (n->guard <= 0)
		return;
	close(n->guard_fd);
	while (waitpid(n->guard, &st, WNOHANG) == 0 && bench_now() < end)
		usleep(10000);
	n->guard = -1;
}

/* The links, the addresses and the routes: the client and server reach
 * each other only through the relay namespace, which forwards (its own
 * ip_forward, not the machine's) so that the direct row takes the same
 * two links as the relayed ones. */
static void setup_script(const struct bench_netns *n, char *cmd, size_t size)
{
	snprintf(cmd, size,
		 "set -e; exec 2>&1\n"
		 "ip netns add %1$s; ip netns add %2$s; ip netns add %3$s\n"
		 "ip link add %4$s type veth peer name %4$sb\n"
		 "ip link add %5$s type veth peer name %5$sb\n"
		 "ip link set %4$s netns %1$s; ip link set %4$sb netns %2$s\n"
		 "ip link set %5$s netns %2$s; ip link set %5$sb netns %3$s\n"
		 "for ns in %1$s %2$s %3$s; do ip -n $ns link set lo up; done\n"
		 "ip -n %1$s addr add " NETNS_CLIENT_ADDR "/24 dev %4$s\n"
		 "ip -n %2$s addr add " NETNS_FRONT_ADDR "/24 dev %4$sb\n"
		 "ip -n %2$s addr add 198.18.2.1/24 dev %5$s\n"
		 "ip -n %3$s addr add " NETNS_BACK_ADDR "/24 dev %5$sb\n"
		 "ip -n %1$s link set %4$s up; ip -n %2$s link set %4$sb up\n"
		 "ip -n %2$s link set %5$s up; ip -n %3$s link set %5$sb up\n"
		 "ip -n %1$s route add 198.18.2.0/24 via " NETNS_FRONT_ADDR "\n"
		 "ip -n %3$s route add 198.18.1.0/24 via 198.18.2.1\n"
		 "ip netns exec %2$s sysctl -qw net.ipv4.ip_forward=1\n",
		 n->client, n->relay, n->server, n->veth[0], n->veth[1]);
}

int bench_netns_up(const struct bench_opts *o, struct bench_netns *n, char *why,
		   size_t size)
{
	char script[2048], cmd[6500], log[4096], line[100];
	int pid = (int)getpid(), st;

	*n = (struct bench_netns){ .guard = -1, .guard_fd = -1 };
	if (geteuid() != 0) {
		snprintf(why, size, "not root: network namespaces need it");
		return -1;
	}
	if (!bench_have("ip")) {
		snprintf(why, size, "ip (iproute2) not installed");
		return -1;
	}
	snprintf(n->client, sizeof(n->client), "psplice-bench-%d-c", pid);
	snprintf(n->relay, sizeof(n->relay), "psplice-bench-%d-r", pid);
	snprintf(n->server, sizeof(n->server), "psplice-bench-%d-s", pid);
	snprintf(n->veth[0], sizeof(n->veth[0]), "psb%da", pid);
	snprintf(n->veth[1], sizeof(n->veth[1]), "psb%dc", pid);
	if (guard_start(n) < 0) {
		snprintf(why, size, "cannot start the namespaces' guard: %s", strerror(errno));
		return -1;
	}
	setup_script(n, script, sizeof(script));
	fwd_scratch(o, "netns.log", log, sizeof(log));
	snprintf(cmd, sizeof(cmd), "(%s) > '%s'", script, log);
	st = bench_sh(cmd, NULL, NULL);
	if (st == 0)
		return 0;
	/* ip's complaint, for the skip reason. */
	fwd_first_line(log, line, sizeof(line));
	snprintf(why, size, "cannot set up veth namespaces%s%.70s", *line ? ": " : "", line);
	bench_netns_down(n);
	return -1;
}
