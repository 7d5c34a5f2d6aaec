/* psplice bench, group "requests": the peers. redis-server and nginx (one
 * worker, a 1 KiB page) on loopback ports of the bench's own, psplice relay
 * and HAProxy (TCP mode, its defaults) in front of them, redis-benchmark
 * and wrk making the load, strace counting a forwarder's system calls.
 * Every process is bounded in time: the generators by timeout(1), the rest
 * stopped by the group. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench_fwd.h"
#include "bench_requests.h"

#define LOAD_TIMEOUT 120

const char *req_missing(void)
{
	static const char *const need[][2] = {
		{ "redis-server", "redis-server" }, { "redis-benchmark", "redis-tools" },
		{ "nginx", "nginx-light" }, { "wrk", "wrk" }, { "haproxy", "haproxy" },
		{ "strace", "strace" },
	};
	static char why[160];
	size_t i;

	for (i = 0; i < sizeof(need) / sizeof(need[0]); i++)
		if (!bench_have(need[i][0])) {
			snprintf(why, sizeof(why), "%s is not installed (Debian package %s)",
				 need[i][0], need[i][1]);
			return why;
		}
	return NULL;
}

static pid_t start_redis(const struct bench_opts *o, int port, char *why, size_t size)
{
	struct fwd_cmdline c;
	char err[4096];

	fwd_scratch(o, "redis.err", err, sizeof(err));
	fwd_cmd_init(&c, "redis-server");
	fwd_arg(&c, "--port");
	fwd_arg(&c, "%d", port);
	fwd_arg(&c, "--bind");
	fwd_arg(&c, "127.0.0.1");
	fwd_arg(&c, "--save");
	fwd_arg(&c, "%s", "");
	fwd_arg(&c, "--appendonly");
	fwd_arg(&c, "no");
	fwd_arg(&c, "--protected-mode");
	fwd_arg(&c, "no");
	fwd_arg(&c, "--dir");
	fwd_arg(&c, "%s", o->dir);
	return fwd_start_listener(c.argv, port, err, why, size);
}

/* nginx's configuration and its 1 KiB page, in the scratch directory. */
static int nginx_files(const struct bench_opts *o, int port, char *conf, size_t size)
{
	char www[4096], page[4200];
	static char kib[1024];
	FILE *f;

	fwd_scratch(o, "www", www, sizeof(www));
	snprintf(page, sizeof(page), "%s/1k", www);
	memset(kib, 'k', sizeof(kib));
	if ((mkdir(www, 0755) < 0 && errno != EEXIST) || !(f = fopen(page, "w")))
		return -1;
	fwrite(kib, 1, sizeof(kib), f);
	if (fclose(f) != 0)
		return -1;
	fwd_scratch(o, "nginx.conf", conf, size);
	if (!(f = fopen(conf, "w")))
		return -1;
	fprintf(f, "%sworker_processes 1;\ndaemon off;\npid %s/nginx.pid;\n"
		"events { worker_connections 4096; }\n"
		"http {\n\taccess_log off;\n\tkeepalive_requests 1000000;\n"
		"\tserver {\n\t\tlisten 127.0.0.1:%d;\n\t\troot %s;\n\t}\n}\n",
		o->root ? "user root;\n" : "", o->dir, port, www);
	return fclose(f);
}

static pid_t start_nginx(const struct bench_opts *o, int port, char *why, size_t size)
{
	char conf[4096], err[4096];
	struct fwd_cmdline c;

	if (nginx_files(o, port, conf, sizeof(conf)) < 0) {
		snprintf(why, size, "cannot write nginx's files: %s", strerror(errno));
		return -1;
	}
	fwd_scratch(o, "nginx.err", err, sizeof(err));
	fwd_cmd_init(&c, "nginx");
	fwd_arg(&c, "-p");
	fwd_arg(&c, "%s", o->dir);
	fwd_arg(&c, "-e");
	fwd_arg(&c, "%s", err);
	fwd_arg(&c, "-c");
	fwd_arg(&c, "%s", conf);
	return fwd_start_listener(c.argv, port, err, why, size);
}

void req_servers_start(const struct bench_opts *o, struct req_servers *s)
{
	int i;

	for (i = 0; i < N_SERVERS; i++) {
		s->port[i] = bench_free_port();
		s->why[i][0] = '\0';
		s->pid[i] = i == S_REDIS ? start_redis(o, s->port[i], s->why[i], sizeof(s->why[i])) :
					   start_nginx(o, s->port[i], s->why[i], sizeof(s->why[i]));
	}
}

void req_servers_stop(struct req_servers *s)
{
	int i;

	for (i = 0; i < N_SERVERS; i++)
		if (s->pid[i] > 0)
			bench_stop(s->pid[i], NULL);
}

pid_t req_fwd_start(const struct bench_opts *o, enum req_fwd f, int j, int target, int *port,
		    char *why, size_t size)
{
	char err[4096], conf[4096];
	struct fwd_cmdline c;

	*port = bench_free_port();
	fwd_scratch(o, "requests-fwd.err", err, sizeof(err));
	if (f == Q_HAPROXY) {
		if (fwd_haproxy_conf(o, "requests-haproxy.cfg", j, false, "127.0.0.1", *port,
				     "127.0.0.1", target, conf, sizeof(conf)) < 0) {
			snprintf(why, size, "cannot write haproxy's configuration");
			return -1;
		}
		fwd_cmd_init(&c, "haproxy");
		fwd_arg(&c, "-db");
		fwd_arg(&c, "-f");
		fwd_arg(&c, "%s", conf);
	} else {
		fwd_cmd_init(&c, o->self);
		fwd_arg(&c, "relay");
		fwd_arg(&c, "-j");
		fwd_arg(&c, "%d", j);
		fwd_arg(&c, "--drain-timeout");
		fwd_arg(&c, "1");
		if (f == Q_RELAY_COPY)
			fwd_arg(&c, "--copy=readwrite");
		fwd_arg(&c, "127.0.0.1:%d", *port);
		fwd_arg(&c, "127.0.0.1:%d", target);
	}
	return fwd_start_listener(c.argv, *port, err, why, size);
}

/* A latency as wrk writes it ("812.00us", "2.31ms", "1.02s"), in ms. */
static double wrk_ms(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	if (!strncmp(end, "us", 2))
		return v / 1000;
	if (!strncmp(end, "ms", 2))
		return v;
	return *end == 's' ? v * 1000 : -1;
}

/* wrk --latency's "Requests/sec:", "99%" and "N requests in". */
static int parse_wrk(const char *out, struct req_run *r)
{
	const char *p = strstr(out, "Requests/sec:"), *q = strstr(out, " 99%"),
		   *n = strstr(out, " requests in ");

	if (!p || !q || !n)
		return -1;
	r->rps = strtod(p + 13, NULL);
	r->p99_ms = wrk_ms(q + 4 + strspn(q + 4, " \t"));
	while (n > out && n[-1] >= '0' && n[-1] <= '9')
		n--;
	r->requests = strtod(n, NULL);
	return r->rps > 0 && r->p99_ms >= 0 ? 0 : -1;
}

/* redis-benchmark --csv: a header, then "GET","rps","avg",..."p99","max". */
static int parse_redis(const char *out, struct req_run *r, double requests)
{
	const char *p = strstr(out, "\n\"GET");
	double v[7];
	int i;

	if (!p)
		return -1;
	p = strchr(p + 1, ',');
	for (i = 0; p && i < 7; i++) {
		v[i] = strtod(p + 2, NULL);
		p = strchr(p + 1, ',');
	}
	if (i < 6)
		return -1;
	r->rps = v[0];
	r->p99_ms = v[5];
	r->requests = requests;
	return r->rps > 0 ? 0 : -1;
}

int req_load_run(const struct bench_opts *o, const struct req_load *l, int port,
		 struct req_run *r, char *why, size_t size)
{
	int secs = o->secs < 1 ? 1 : (int)(o->secs + 0.5);
	char cmd[512], line[256], *out = NULL;
	size_t len = 0, cap = 0;
	FILE *p;
	int rc;

	snprintf(cmd, sizeof(cmd), "timeout %d ", LOAD_TIMEOUT);
	if (l->server == S_NGINX)
		snprintf(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd), l->cmd, secs, port);
	else
		snprintf(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd), l->cmd, port, l->requests);
	strncat(cmd, " 2>&1", sizeof(cmd) - strlen(cmd) - 1);
	if (!(p = popen(cmd, "r")))
		return snprintf(why, size, "cannot run the load: %s", strerror(errno)), -1;
	while (fgets(line, sizeof(line), p)) {
		size_t n = strlen(line);

		if (len + n + 1 > cap && !(out = realloc(out, cap = (len + n + 1) * 2)))
			break;
		memcpy(out + len, line, n + 1);
		len += n;
	}
	rc = pclose(p);
	if (!out || rc != 0 || (l->server == S_NGINX ? parse_wrk(out, r) :
						      parse_redis(out, r, l->requests)) < 0) {
		snprintf(why, size, "the load failed (status %d): %.60s", rc, out ? out : "");
		free(out);
		return -1;
	}
	free(out);
	return 0;
}

/* strace -c's last line: "100.00 secs usecs/call calls errors total". */
static double strace_calls(const char *path)
{
	char *s = fwd_slurp(path, 1 << 20), *t;
	double calls = -1, a, b;
	long c;

	if (s && (t = strstr(s, " total")) != NULL) {
		while (t > s && t[-1] != '\n')
			t--;
		if (sscanf(t, "%lf %lf %*s %ld", &a, &b, &c) == 3)
			calls = (double)c;
	}
	free(s);
	return calls;
}

double req_syscalls(const struct bench_opts *o, pid_t pid, const struct req_load *l, int port)
{
	char out[4096], why[100];
	struct fwd_cmdline c;
	struct req_run r;
	double calls;
	pid_t st;

	fwd_scratch(o, "requests.strace", out, sizeof(out));
	fwd_cmd_init(&c, "strace");
	fwd_arg(&c, "-c");
	fwd_arg(&c, "-f");
	fwd_arg(&c, "-q");
	fwd_arg(&c, "-o");
	fwd_arg(&c, "%s", out);
	fwd_arg(&c, "-p");
	fwd_arg(&c, "%d", (int)pid);
	st = bench_spawn(c.argv, NULL);
	if (st < 0)
		return -1;
	usleep(300000); /* attached: strace -p takes each thread in turn */
	if (req_load_run(o, l, port, &r, why, sizeof(why)) < 0) {
		bench_stop(st, NULL);
		return -1;
	}
	kill(st, SIGINT);
	bench_stop(st, NULL);
	calls = strace_calls(out);
	unlink(out);
	return calls > 0 && r.requests > 0 ? calls / r.requests : -1;
}
