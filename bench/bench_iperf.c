/* psplice bench, group "relay": iperf3 through a forwarder, its figures
 * read from iperf3 -J, and the segments sent on to the server from ss -ti
 * sampled mid-run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_relay.h"

/* `"key": number` at or after from; -1 when absent. */
static double json_number(const char *from, const char *key)
{
	char quoted[64];
	const char *p;

	snprintf(quoted, sizeof(quoted), "\"%s\"", key);
	p = strstr(from, quoted);
	if (!p || !(p = strchr(p + strlen(quoted), ':')))
		return -1;
	return strtod(p + 1, NULL);
}

/* The CPU seconds of both iperf3 ends over the test, from "end" of its -J
 * output at p (the receiver's sum), -1 when it does not say. iperf3 gives
 * each end's CPU as the percent of one CPU over the test: clock() (user +
 * system of all the process's threads) over the wall time from the test's
 * start to its end (cpu_util() in iperf_util.c); "host" is the client,
 * "remote" the server. Times the receiver's seconds, that gave the seconds
 * of /usr/bin/time for the client and of /proc/PID/stat for the server
 * within 0.01 s (iperf 3.12, 2 s tests on loopback). */
static double iperf_peers_cpu(const char *p)
{
	double secs = json_number(p, "seconds"), host, remote;
	const char *u = strstr(p, "\"cpu_utilization_percent\":");

	if (!u || secs <= 0)
		return -1;
	host = json_number(u, "host_total");
	remote = json_number(u, "remote_total");
	if (host < 0 || remote < 0)
		return -1;
	return (host + remote) / 100 * secs;
}

/* The receiver's totals from iperf3 -J: the sum over streams in "end";
 * both ends' CPU seconds in *peers_cpu (-1: not known). */
static int iperf_parse(const char *path, struct iperf_result *res, char *why,
		       size_t size)
{
	char *json = fwd_slurp(path, 4 << 20), *p, *err;
	int r = -1;

	if (!json) {
		snprintf(why, size, "iperf3 wrote no output");
		return -1;
	}
	if ((err = strstr(json, "\"error\":"))) {
		err += 8 + strcspn(err + 8, "\"");
		err += *err == '"';
		snprintf(why, size, "iperf3: %.*s", (int)strcspn(err, "\""), err);
	} else if (!(p = strstr(json, "\"end\":")) ||
		   !(p = strstr(p, "\"sum_received\":"))) {
		snprintf(why, size, "iperf3 output has no receiver sum");
	} else {
		res->bytes = json_number(p, "bytes");
		res->gbps = json_number(p, "bits_per_second") / 1e9;
		res->peers_cpu = iperf_peers_cpu(p);
		r = res->bytes > 0 && res->gbps > 0 ? 0 : -1;
		if (r < 0)
			snprintf(why, size, "iperf3 received nothing");
	}
	free(json);
	return r;
}

/* iperf3 takes whole seconds, and -t 0 would mean forever. */
static int iperf_secs(const struct bench_opts *o)
{
	return o->secs < 1 ? 1 : (int)(o->secs + 0.5);
}

/* The sum of every "key:N" in text. */
static double sum_field(const char *text, const char *key)
{
	size_t len = strlen(key);
	const char *p = text;
	double sum = 0;

	while ((p = strstr(p, key))) {
		if (p == text || p[-1] == ' ' || p[-1] == '\t')
			sum += strtod(p + len, NULL);
		p += len;
	}
	return sum;
}

/* What ss -ti said of the sockets that send to the iperf3 server (the
 * forwarder's, or the client's in the direct row): bytes and data
 * segments sent so far. */
static void segments(const char *path, struct iperf_result *res)
{
	char *ss = fwd_slurp(path, 1 << 20);
	double sent, segs;

	if (!ss)
		return;
	sent = sum_field(ss, "bytes_sent:");
	segs = sum_field(ss, "data_segs_out:");
	free(ss);
	if (sent > 0 && segs > 0) {
		res->sent = sent;
		res->segs = segs;
	}
}

/* "ip netns exec NS " for a command in namespace ns, "" for this one. */
static void ns_prefix(const char *ns, char *buf, size_t size)
{
	if (ns)
		snprintf(buf, size, "ip netns exec %s ", ns);
	else
		buf[0] = '\0';
}

/* iperf3 through port; ss samples the sockets that reach the server (in
 * the forwarder's namespace, or the client's when direct) at two thirds of
 * the test, for the segment sizes. */
int iperf_run(const struct bench_opts *o, const struct relay_net *net, bool direct,
	      int server_port, int port, int streams, struct iperf_result *res,
	      char *why, size_t size)
{
	char out[4096], seg[4096], cmd[9400], in_client[80], in_sender[80];
	int secs = iperf_secs(o), st;

	fwd_scratch(o, "iperf3.json", out, sizeof(out));
	fwd_scratch(o, "ss.txt", seg, sizeof(seg));
	unlink(out);
	unlink(seg);
	ns_prefix(net->client_ns, in_client, sizeof(in_client));
	ns_prefix(direct ? net->client_ns : net->relay_ns, in_sender, sizeof(in_sender));
	snprintf(cmd, sizeof(cmd), "(sleep %.2f; %sss -tniH state established "
		 "dport = :%d > '%s' 2>/dev/null) & "
		 "%stimeout -k 2 %d iperf3 -c %s -p %d -t %d -P %d "
		 "-J --connect-timeout 3000 > '%s'; st=$?; wait; exit $st",
		 secs * 2 / 3.0 + 0.2, in_sender, server_port, seg, in_client, secs + 15,
		 direct ? net->back : net->front, port, secs, streams, out);
	st = bench_sh(cmd, NULL, NULL);
	*res = (struct iperf_result){ .peers_cpu = -1 };
	if (iperf_parse(out, res, why, size) < 0)
		return -1;
	if (st != 0) {
		snprintf(why, size, "iperf3 exited with %d", st);
		return -1;
	}
	segments(seg, res);
	return 0;
}
