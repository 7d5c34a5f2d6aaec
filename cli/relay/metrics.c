/* psplice relay --metrics: the relay's counters in Prometheus's text
 * exposition format (version 0.0.4), each metric with its HELP and TYPE
 * lines. The counters are those the stats line sums, read one by one: a
 * scrape is not a snapshot taken at one instant, and a connection that
 * closes meanwhile may count in one metric and not yet in another. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "relay.h"

#define PREFIX "psplice_relay_"

/* Each direction's label, 0 client to target. */
static const char *const dir_label[2] = { "to_target", "to_client" };

static void head(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP " PREFIX "%s %s\n# TYPE " PREFIX "%s %s\n", name, help, name, type);
}

static void one(FILE *f, const char *name, const char *type, const char *help, uint64_t v)
{
	head(f, name, type, help);
	fprintf(f, PREFIX "%s %" PRIu64 "\n", name, v);
}

/* A label's value as the format quotes it: backslash, double quote and
 * line feed escaped (a unix socket's path may hold any of them). */
static void label(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			fprintf(f, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

static void process(FILE *f, struct relay *r)
{
	int i;

	one(f, "connections_open", "gauge", "Client connections open now.",
	    atomic_load(&r->open));
	one(f, "connections_total", "counter", "Client connections accepted.",
	    atomic_load(&r->total));
	head(f, "bytes_total", "counter", "Bytes delivered, by direction.");
	for (i = 0; i < 2; i++)
		fprintf(f, PREFIX "bytes_total{direction=\"%s\"} %" PRIu64 "\n", dir_label[i],
			(uint64_t)atomic_load(&r->bytes[i]));
	head(f, "bytes_pending", "gauge", "Bytes read and not yet delivered, by direction.");
	for (i = 0; i < 2; i++)
		fprintf(f, PREFIX "bytes_pending{direction=\"%s\"} %" PRId64 "\n", dir_label[i],
			(int64_t)atomic_load(&r->pending[i]));
	one(f, "bytes_copied_total", "counter",
	    "Bytes delivered through user memory (read and write), not spliced.",
	    atomic_load(&r->copied));
	one(f, "rate_waits_total", "counter",
	    "Times a direction waited for --rate or --rate-total tokens.",
	    atomic_load(&r->paced));
	one(f, "draining", "gauge", "1 once the relay stopped accepting and drains.",
	    atomic_load(&r->draining));
}

/* Each end but a whole stream's (fin), named as the JSON record names it;
 * every kind is there from the start, 0 until it comes. */
static void errors(FILE *f, struct relay *r)
{
	int k;

	head(f, "errors_total", "counter",
	     "Connections ended otherwise than by both peers, by kind.");
	for (k = END_FIN + 1; k <= END_STOP; k++)
		fprintf(f, PREFIX "errors_total{kind=\"%s\"} %" PRIu64 "\n", relay_end_name[k],
			(uint64_t)atomic_load(&r->ended[k]));
}

/* One line of a per-target metric: target="ADDR" as given. */
static void per_target(FILE *f, const char *name, const struct target *t, uint64_t v)
{
	fprintf(f, PREFIX "%s{target=\"", name);
	label(f, t->addr.text);
	fprintf(f, "\"} %" PRIu64 "\n", v);
}

static void targets(FILE *f, struct relay *r)
{
	int i;

	head(f, "target_up", "gauge",
	     "1 unless the target is marked down (only with several targets).");
	for (i = 0; i < r->ntargets; i++)
		per_target(f, "target_up", &r->targets[i], !atomic_load(&r->targets[i].down));
	head(f, "target_connections_open", "gauge", "Connections to the target, open or opening.");
	for (i = 0; i < r->ntargets; i++)
		per_target(f, "target_connections_open", &r->targets[i],
			   atomic_load(&r->targets[i].conns));
	head(f, "target_connect_failures_total", "counter",
	     "Connects to the target that failed or timed out.");
	for (i = 0; i < r->ntargets; i++)
		per_target(f, "target_connect_failures_total", &r->targets[i],
			   atomic_load(&r->targets[i].failed));
}

char *metrics_render(struct relay *r, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	if (!f)
		return NULL;
	process(f, r);
	errors(f, r);
	targets(f, r);
	if (ferror(f)) {
		fclose(f);
		free(buf);
		return NULL;
	}
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}
