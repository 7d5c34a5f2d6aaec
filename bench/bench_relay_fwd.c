/* psplice bench, group "relay": the forwarders it compares (psplice relay,
 * socat, haproxy), which this machine has, and their command lines. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_relay.h"

/* Debian puts haproxy in /usr/sbin, outside a user's PATH. */
static const char *find_haproxy(void)
{
	static const char *const where[] = { "haproxy", "/usr/sbin/haproxy",
					     "/usr/local/sbin/haproxy" };
	size_t i;

	for (i = 0; i < sizeof(where) / sizeof(where[0]); i++)
		if (bench_have(where[i]))
			return where[i];
	return NULL;
}

/* Whether this haproxy was built with splice, and its version, for the
 * row's note; -1 when it does not splice (the row would measure nothing
 * of what it claims). */
static int haproxy_check(struct relay_ctx *x, const char *prog)
{
	char path[4096], cmd[4300], ver[32] = "?";
	char *vv, *p;
	int splice;

	fwd_scratch(x->o, "haproxy-vv.txt", path, sizeof(path));
	snprintf(cmd, sizeof(cmd), "'%s' -vv > '%s' 2>&1", prog, path);
	bench_sh(cmd, NULL, NULL);
	vv = fwd_slurp(path, 1 << 16);
	if (!vv)
		return -1;
	if ((p = strstr(vv, "version ")))
		sscanf(p + 8, "%31[0-9.]", ver);
	splice = strstr(vv, "+LINUX_SPLICE") != NULL;
	free(vv);
	snprintf(x->haproxy_note, sizeof(x->haproxy_note), "HAProxy %.15s, %s", ver,
		 splice ? "+LINUX_SPLICE, splice-request/response" : "no LINUX_SPLICE");
	return splice ? 0 : -1;
}

/* --copy is new: until psplice relay has it, the read/write row is
 * skipped rather than measured as something else. */
static bool relay_has_copy(const char *self)
{
	char cmd[4200];

	snprintf(cmd, sizeof(cmd), "'%s' relay --help | grep -q -e '--copy'", self);
	return bench_sh(cmd, NULL, NULL) == 0;
}

/* Which forwarders this machine has; the reason for each it has not. */
void relay_variants(struct relay_ctx *x, const struct fwd *set, int n)
{
	const char *haproxy = NULL;
	struct fwd *f;
	int i;

	x->n = n;
	for (i = 0; i < n; i++) {
		f = &x->f[i];
		*f = set[i];
		switch (f->kind) {
		case F_DIRECT:
			break;
		case F_RELAY:
			f->prog = x->o->self;
			if (f->copy && !relay_has_copy(x->o->self))
				snprintf(f->why, sizeof(f->why),
					 "psplice relay has no --copy=readwrite yet");
			break;
		case F_SOCAT:
			f->prog = "socat";
			if (!bench_have("socat"))
				snprintf(f->why, sizeof(f->why), "socat not installed");
			break;
		case F_HAPROXY:
			f->prog = haproxy = find_haproxy();
			if (!haproxy)
				snprintf(f->why, sizeof(f->why), "haproxy not installed");
			else if (haproxy_check(x, haproxy) < 0)
				snprintf(f->why, sizeof(f->why), "haproxy without splice (%s)",
					 x->haproxy_note[0] ? x->haproxy_note :
					 "haproxy -vv failed");
			break;
		}
	}
}

/* One thread, so that its CPU is one core's worth like the -j 1 relays.
 * Splice is forced both ways: with option splice-auto, HAProxy 2.6 never
 * judged an iperf3 stream on loopback fast enough to splice (strace: only
 * recvfrom/sendto, and the throughput of no splice option at all), so the
 * row would not be the splicing HAProxy it is named for. */
static int haproxy_config(const struct relay_ctx *x, int port, char *path, size_t size)
{
	return fwd_haproxy_conf(x->o, "haproxy.cfg", 1, true, x->net->front, port, x->net->back,
				x->server_port, path, size);
}

/* psplice relay's arguments for f, with the option opt (NULL: none),
 * listening on listen:port and forwarding to host:target. */
static void relay_argv(const struct fwd *f, const char *opt, const char *listen, int port,
		       const char *host, int target, struct fwd_cmdline *c)
{
	fwd_arg(c, "relay");
	if (opt)
		fwd_arg(c, "%s", opt);
	fwd_arg(c, "-j");
	fwd_arg(c, "1");
	/* Stopped with SIGTERM: drain for less than fwd_stop waits. */
	fwd_arg(c, "--drain-timeout");
	fwd_arg(c, "1");
	if (f->copy)
		fwd_arg(c, "--copy=readwrite");
	if (f->nagle)
		fwd_arg(c, "--nagle");
	if (f->lowat)
		fwd_arg(c, "--notsent-lowat=%s", f->lowat);
	if (f->rate)
		fwd_arg(c, "--rate=%s", f->rate);
	fwd_arg(c, "%s:%d", listen, port);
	fwd_arg(c, "%s:%d", host, target);
}

int relay_forwarder_argv(const struct relay_ctx *x, const struct fwd *f, int port,
			 int chain_port, struct fwd_cmdline *c)
{
	const struct relay_net *net = x->net;
	char cfg[4096];

	fwd_cmd_init_in(c, net->relay_ns, f->prog);
	switch (f->kind) {
	case F_RELAY:
		if (f->chain)
			relay_argv(f, f->send_proxy ? "--send-proxy-v2" : NULL, net->front,
				   port, "127.0.0.1", chain_port, c);
		else
			relay_argv(f, NULL, net->front, port, net->back, x->server_port, c);
		return 0;
	case F_SOCAT:
		fwd_arg(c, "-b");
		fwd_arg(c, "131072");
		fwd_arg(c, "TCP-LISTEN:%d,bind=%s,reuseaddr,fork", port, net->front);
		fwd_arg(c, "TCP:%s:%d", net->back, x->server_port);
		return 0;
	case F_HAPROXY:
		if (haproxy_config(x, port, cfg, sizeof(cfg)) < 0)
			return -1;
		fwd_arg(c, "-db");
		fwd_arg(c, "-f");
		fwd_arg(c, "%s", cfg);
		return 0;
	default:
		return -1;
	}
}

void relay_chain_argv(const struct relay_ctx *x, const struct fwd *f, int chain_port,
		      struct fwd_cmdline *c)
{
	static const struct fwd plain = { .kind = F_RELAY };

	fwd_cmd_init_in(c, x->net->relay_ns, f->prog);
	relay_argv(&plain, f->send_proxy ? "--accept-proxy" : NULL, "127.0.0.1", chain_port,
		   x->net->back, x->server_port, c);
}
