/* psplice relay --metrics: the relay's counters in Prometheus's text
 * exposition format (version 0.0.4), each metric with its HELP and TYPE
 * lines; with --config, a series for each listener, labelled with it. The counters are those the stats line sums, read one by one: a
 * scrape is not a snapshot taken at one instant, and a connection that
 * closes meanwhile may count in one metric and not yet in another. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "relay.h"
#include "out.h"
#include "outq.h"

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
 * line feed escaped (a unix socket's path may hold any of them), and each
 * byte that is not UTF-8, which the format must be, as U+FFFD. */
static void label(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s), k;

	for (; n; p += k, n -= k) {
		k = 1;
		if (*p == '\\' || *p == '"')
			fprintf(f, "\\%c", *p);
		else if (*p == '\n')
			fputs("\\n", f);
		else if (*p < 0x80)
			fputc(*p, f);
		else if ((k = cli_utf8_len(p, n)))
			fwrite(p, 1, k, f);
		else
			fputs("\xef\xbf\xbd", f);
		k = k ? k : 1;
	}
}

/* The start of one of r's series, name and its labels: with --config,
 * listener="LISTEN" as the line has it; more: other labels follow, and
 * the caller closes the braces. */
static void start(FILE *f, const struct relay *r, const char *name, bool more)
{
	fprintf(f, PREFIX "%s", name);
	if (r->config) {
		fputs("{listener=\"", f);
		label(f, r->listen.text);
		fputs(more ? "\"," : "\"}", f);
	} else if (more) {
		fputc('{', f);
	}
}

/* The counters each has a series of, a listener each. */
static uint64_t open_of(const struct relay *r)
{
	return atomic_load(&r->open);
}

static uint64_t total_of(const struct relay *r)
{
	return atomic_load(&r->total);
}

static uint64_t copied_of(const struct relay *r)
{
	return atomic_load(&r->copied);
}

static uint64_t paced_of(const struct relay *r)
{
	return atomic_load(&r->paced);
}

/* A counter, read by get, a series a listener. */
static void each(FILE *f, const struct relay *r, const char *name, const char *type,
		 const char *help, uint64_t (*get)(const struct relay *))
{
	head(f, name, type, help);
	for (; r; r = r->next) {
		start(f, r, name, false);
		fprintf(f, " %" PRIu64 "\n", get(r));
	}
}

static void directions(FILE *f, struct relay *first)
{
	struct relay *r;
	int i;

	head(f, "bytes_total", "counter", "Bytes delivered, by direction.");
	for (r = first; r; r = r->next)
		for (i = 0; i < 2; i++) {
			start(f, r, "bytes_total", true);
			fprintf(f, "direction=\"%s\"} %" PRIu64 "\n", dir_label[i],
				(uint64_t)atomic_load(&r->bytes[i]));
		}
	head(f, "bytes_pending", "gauge", "Bytes read and not yet delivered, by direction.");
	for (r = first; r; r = r->next)
		for (i = 0; i < 2; i++) {
			start(f, r, "bytes_pending", true);
			fprintf(f, "direction=\"%s\"} %" PRId64 "\n", dir_label[i],
				(int64_t)atomic_load(&r->pending[i]));
		}
}

static void process(FILE *f, struct relay *r)
{
	bool draining = atomic_load(&r->draining);

	each(f, r, "connections_open", "gauge", "Client connections open now.", open_of);
	each(f, r, "connections_total", "counter", "Client connections accepted.", total_of);
	directions(f, r);
	each(f, r, "bytes_copied_total", "counter",
	     "Bytes delivered through user memory (read and write), not spliced.", copied_of);
	each(f, r, "rate_waits_total", "counter",
	     "Times a direction waited for --rate or --rate-total tokens.", paced_of);
	one(f, "draining", "gauge", "1 once the relay stopped accepting and drains.", draining);
	one(f, "log_lines_dropped_total", "counter",
	    "Log lines dropped because the log's reader did not keep up.", cli_outq_dropped());
}

/* Each end but a whole stream's (fin), named as the JSON record names it;
 * every kind is there from the start, 0 until it comes. */
static void errors(FILE *f, struct relay *r)
{
	int k;

	head(f, "errors_total", "counter",
	     "Connections ended otherwise than by both peers, by kind.");
	for (; r; r = r->next)
		for (k = END_FIN + 1; k <= END_STOP; k++) {
			start(f, r, "errors_total", true);
			fprintf(f, "kind=\"%s\"} %" PRIu64 "\n", relay_end_name[k],
				(uint64_t)atomic_load(&r->ended[k]));
		}
}

/* The clients refused, by why (gate.c), every kind from the start. */
static void refused(FILE *f, struct relay *r)
{
	int k;

	head(f, "refused_total", "counter",
	     "Clients refused by --allow, --deny, --proxy-from or --max-conns-per-source.");
	for (; r; r = r->next)
		for (k = REFUSE_NONE + 1; k < REFUSE_N; k++) {
			start(f, r, "refused_total", true);
			fprintf(f, "reason=\"%s\"} %" PRIu64 "\n", refusal_name[k],
				(uint64_t)atomic_load(&r->refused[k]));
		}
}

/* One line of a per-target metric: target="ADDR" as given. */
static void per_target(FILE *f, const struct relay *r, const char *name,
		       const struct target *t, uint64_t v)
{
	start(f, r, name, true);
	fputs("target=\"", f);
	label(f, t->addr.text);
	fprintf(f, "\"} %" PRIu64 "\n", v);
}

static void targets(FILE *f, struct relay *first)
{
	struct relay *r;
	int i;

	head(f, "target_up", "gauge",
	     "1 unless the target is marked down (only with several targets).");
	for (r = first; r; r = r->next)
		for (i = 0; i < r->ntargets; i++)
			per_target(f, r, "target_up", &r->targets[i],
				   !atomic_load(&r->targets[i].down));
	head(f, "target_connections_open", "gauge", "Connections to the target, open or opening.");
	for (r = first; r; r = r->next)
		for (i = 0; i < r->ntargets; i++)
			per_target(f, r, "target_connections_open", &r->targets[i],
				   atomic_load(&r->targets[i].conns));
	head(f, "target_connect_failures_total", "counter",
	     "Connects to the target that failed or timed out.");
	for (r = first; r; r = r->next)
		for (i = 0; i < r->ntargets; i++)
			per_target(f, r, "target_connect_failures_total", &r->targets[i],
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
	refused(f, r);
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
