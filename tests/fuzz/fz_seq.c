/* Sequences: made at random from a seed or from a libFuzzer byte string
 * (one generator, two sources of choices), written and read as text, and
 * shrunk when they fail. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "fz.h"
#include "psplice.h"

/* Where choices come from: a PRNG, or the fuzzer's bytes (0 once spent). */
struct choices {
	uint64_t state;
	const uint8_t *data;
	size_t size, at;
	bool bytes;
};

static uint32_t next(struct choices *c)
{
	uint64_t z;
	uint32_t v = 0;
	int i;

	if (c->bytes) {
		for (i = 0; i < 4 && c->at < c->size; i++)
			v |= (uint32_t)c->data[c->at++] << (8 * i);
		return v;
	}
	z = (c->state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return (uint32_t)((z ^ (z >> 31)) >> 16);
}

static uint32_t below(struct choices *c, uint32_t n)
{
	return next(c) % n;
}

/* An index into weights[n], with probability weight / sum. */
static int weighted(struct choices *c, const uint8_t *w, int n)
{
	uint32_t sum = 0, x;
	int i;

	for (i = 0; i < n; i++)
		sum += w[i];
	x = below(c, sum);
	for (i = 0; i < n - 1 && x >= w[i]; i++)
		x -= w[i];
	return i;
}

static uint64_t a_size(struct choices *c, bool eof)
{
	static const uint64_t sizes[] = {
		0, 1, 4095, 4096, 4097, 65536, 65536 + 7, 131072 + 13, 1 << 20,
		(3 << 20) + 5
	};
	static const uint8_t w[] = { 4, 5, 6, 6, 4, 6, 8, 4, 2, 1, 10, 6 };
	int i = weighted(c, w, 12);

	if (i == 10)
		return below(c, 20000);
	if (i == 11)
		return eof ? PSPLICE_TO_EOF : below(c, 300000);
	return sizes[i];
}

static unsigned int call_flags(struct choices *c)
{
	static const unsigned int unknown[] = { 0x8, 0x80, 0x400000, 0x10000, 0x80000000u };
	static const uint8_t w[] = { 60, 22, 5, 3, 3, 3, 3, 1 };

	switch (weighted(c, w, 8)) {
	case 0: return 0;
	case 1: return PSPLICE_F_NONBLOCK;
	case 2: return PSPLICE_F_MORE;
	case 3: return PSPLICE_F_MOVE;
	case 4: return PSPLICE_F_NOFALLBACK;
	case 5: return PSPLICE_F_REFLINK;
	case 6: return PSPLICE_F_ONLY(below(c, 8));
	default: return unknown[below(c, 5)];
	}
}

static unsigned int plan_flags(struct choices *c)
{
	static const uint8_t w[] = { 70, 8, 8, 10, 4 };

	switch (weighted(c, w, 5)) {
	case 0: return 0;
	case 1: return PSPLICE_F_NOFALLBACK;
	case 2: return PSPLICE_F_REFLINK;
	case 3: return PSPLICE_F_ONLY(below(c, 8));
	default: return PSPLICE_F_NONBLOCK;
	}
}

static bool seekable(int kind)
{
	return kind == FZ_TMPFS || kind == FZ_DISK;
}

static void an_op(struct choices *c, const struct fz_seq *s, struct fz_op *op)
{
	static const uint8_t w[FZ_NOPS] = { 20, 12, 8, 20, 10, 6, 5, 8, 4, 7, 6 };

	op->code = (uint8_t)weighted(c, w, FZ_NOPS);
	op->arg = (uint8_t)next(c);
	op->offs = 0;
	if (below(c, seekable(s->in_kind) ? 2 : 12) == 0)
		op->offs |= 1;
	if (below(c, seekable(s->out_kind) ? 2 : 12) == 0)
		op->offs |= 2;
	op->flags = op->code == FZ_PNEW ? plan_flags(c) : call_flags(c);
	op->len = a_size(c, op->code == FZ_COPY || op->code == FZ_PCOPY);
}

static void a_seq(struct choices *c, struct fz_seq *s, size_t n)
{
	static const uint8_t peers[FZ_NPEERS] = { 45, 15, 15, 15, 10 };
	size_t i;

	memset(s, 0, sizeof(*s));
	s->in_kind = (uint8_t)below(c, FZ_NKINDS);
	s->out_kind = (uint8_t)below(c, FZ_NKINDS);
	s->seed = next(c);
	s->size = a_size(c, false);
	s->slow_feed = below(c, 6) == 0;
	s->peer = (uint8_t)weighted(c, peers, FZ_NPEERS);
	s->peer_after = a_size(c, false);
	s->fdmode = below(c, 5) == 0 ? (uint8_t)(1 + below(c, 7)) : 0;
	if (s->peer == FZ_STALL)
		s->fdmode |= 2;
	s->n = n < FZ_MAX_OPS ? n : FZ_MAX_OPS;
	for (i = 0; i < s->n; i++)
		an_op(c, s, &s->op[i]);
}

void fz_random(struct fz_seq *s, uint64_t seed, size_t n)
{
	struct choices c = { .state = seed };

	a_seq(&c, s, n);
}

/* Each operation takes about 5 words of choices. */
void fz_decode(struct fz_seq *s, const uint8_t *data, size_t size)
{
	struct choices c = { .data = data, .size = size, .bytes = true };
	size_t n = size > 32 ? (size - 32) / 20 + 1 : 1;

	a_seq(&c, s, n);
}

static const char *const op_names[FZ_NOPS] = {
	"move", "copy", "pnew", "pmove", "pcopy", "ptake", "pfree", "bad", "hioff", "seek",
	"swap"
};
static const char *const peer_names[FZ_NPEERS] = { "fast", "slow", "close", "reset", "stall" };

const char *fz_op_name(int code)
{
	return code >= 0 && code < FZ_NOPS ? op_names[code] : "?";
}

static int lookup(const char *w, const char *const *names, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (!strcmp(w, names[i]))
			return i;
	return -1;
}

void fz_write(FILE *f, const struct fz_seq *s)
{
	size_t i;

	fprintf(f, "in %s size %" PRIu64 " seed %" PRIu32 " slow %d\n",
		fz_kind_name(s->in_kind), s->size, s->seed, s->slow_feed);
	fprintf(f, "out %s peer %s after %" PRIu64 " fdmode %d\n", fz_kind_name(s->out_kind),
		peer_names[s->peer % FZ_NPEERS], s->peer_after, s->fdmode);
	for (i = 0; i < s->n; i++) {
		const struct fz_op *o = &s->op[i];

		fprintf(f, "%s offs %d flags %#x arg %d len ", fz_op_name(o->code), o->offs,
			o->flags, o->arg);
		if (o->len == PSPLICE_TO_EOF)
			fprintf(f, "eof\n");
		else
			fprintf(f, "%" PRIu64 "\n", o->len);
	}
}

static int kind_of(const char *w)
{
	int k;

	for (k = 0; k < FZ_NKINDS; k++)
		if (!strcmp(w, fz_kind_name(k)))
			return k;
	return -1;
}

static int read_op(const char *line, struct fz_op *o)
{
	char name[16], len[32];
	unsigned int offs, flags, arg;
	int code;

	if (sscanf(line, "%15s offs %u flags %x arg %u len %31s", name, &offs, &flags, &arg,
		   len) != 5 || (code = lookup(name, op_names, FZ_NOPS)) < 0)
		return -1;
	o->code = (uint8_t)code;
	o->offs = (uint8_t)offs;
	o->flags = flags;
	o->arg = (uint8_t)arg;
	o->len = !strcmp(len, "eof") ? PSPLICE_TO_EOF : strtoull(len, NULL, 10);
	return 0;
}

/* Lines: "in KIND size N seed N slow B", "out KIND peer MODE after N
 * [fdmode B]",
 * then one operation a line; '#' starts a comment. */
int fz_read(FILE *f, struct fz_seq *s)
{
	char line[256], a[16], b[16];
	unsigned int seed, slow, nb = 0;
	int k, p, head = 0;

	memset(s, 0, sizeof(*s));
	while (fgets(line, sizeof(line), f)) {
		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (sscanf(line, "in %15s size %" SCNu64 " seed %u slow %u", a, &s->size, &seed,
			   &slow) == 4 && (k = kind_of(a)) >= 0) {
			s->in_kind = (uint8_t)k;
			s->seed = seed;
			s->slow_feed = slow != 0;
			head |= 1;
		} else if (sscanf(line, "out %15s peer %15s after %" SCNu64 " fdmode %u", a, b,
				  &s->peer_after, &nb) >= 3 && (k = kind_of(a)) >= 0 &&
			   (p = lookup(b, peer_names, FZ_NPEERS)) >= 0) {
			s->out_kind = (uint8_t)k;
			s->peer = (uint8_t)p;
			s->fdmode = (uint8_t)(nb & 7);
			head |= 2;
		} else if (s->n == FZ_MAX_OPS || read_op(line, &s->op[s->n++]) < 0) {
			return -1;
		}
	}
	return head == 3 ? 0 : -1;
}

static bool fails(const struct fz_seq *s, const char *disk, const char *tmpfs, int *runs)
{
	struct fz_stats st = { 0 };
	const char *why;

	(*runs)++;
	return fz_run(s, disk, tmpfs, &st, &why) != 0;
}

/* Drop chunks of operations, halves first, then smaller (ddmin's
 * complement step). */
static void drop_ops(struct fz_seq *s, const char *disk, const char *tmpfs, int *runs,
		     int max)
{
	size_t chunk, at;
	struct fz_seq t;

	for (chunk = s->n / 2 ? s->n / 2 : 1; chunk >= 1 && *runs < max; chunk /= 2) {
		for (at = 0; at < s->n && *runs < max;) {
			size_t k = at + chunk <= s->n ? chunk : s->n - at;

			t = *s;
			memmove(&t.op[at], &t.op[at + k], (t.n - at - k) * sizeof(t.op[0]));
			t.n -= k;
			if (fails(&t, disk, tmpfs, runs))
				*s = t;
			else
				at += k;
		}
		if (chunk == 1)
			break;
	}
}

/* Make numbers smaller and choices plainer, one at a time. */
static void simplify(struct fz_seq *s, const char *disk, const char *tmpfs, int *runs, int max)
{
	struct fz_seq t;
	size_t i;
	bool better = true;

	while (better && *runs < max) {
		better = false;
		t = *s;
		if (t.size > 1 && ((t.size /= 2), fails(&t, disk, tmpfs, runs))) {
			*s = t;
			better = true;
		}
		t = *s;
		if ((t.slow_feed || t.peer == FZ_SLOW || t.peer == FZ_STALL || t.fdmode) &&
		    *runs < max) {
			t.slow_feed = 0;
			t.fdmode = 0;
			if (t.peer == FZ_SLOW || t.peer == FZ_STALL)
				t.peer = FZ_FAST;
			if (fails(&t, disk, tmpfs, runs)) {
				*s = t;
				better = true;
			}
		}
		for (i = 0; i < s->n && *runs < max; i++) {
			t = *s;
			if (t.op[i].len > 1 && t.op[i].len != PSPLICE_TO_EOF)
				t.op[i].len /= 2;
			else if (t.op[i].flags)
				t.op[i].flags = 0;
			else if (t.op[i].offs)
				t.op[i].offs = 0;
			else
				continue;
			if (fails(&t, disk, tmpfs, runs)) {
				*s = t;
				better = true;
			}
		}
	}
}

int fz_shrink(struct fz_seq *s, const char *disk, const char *tmpfs, int max_runs)
{
	int runs = 0;

	if (!fails(s, disk, tmpfs, &runs))
		return runs; /* it does not fail again: keep it whole */
	drop_ops(s, disk, tmpfs, &runs, max_runs);
	simplify(s, disk, tmpfs, &runs, max_runs);
	drop_ops(s, disk, tmpfs, &runs, max_runs);
	return runs;
}
