/* psplice bench: the plot. One panel per group, one bar per row: the row's
 * ratio to its baseline on a log scale centred on 1, green where psplice's
 * side of the comparison is better, red where it is worse. Plain SVG, so the
 * result needs no plotting package to make or to view. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"


#define WIDTH 1100
#define LABEL_W 470
#define BAR_X (LABEL_W + 10)
#define BAR_W 470
#define ROW_H 18
#define TITLE_H 34

/* Throughput is better higher; ns/call, seconds, ms, MiB and CPU s/GiB
 * (BENCH_CPUGIB) are better lower. */
static bool higher_is_better(int unit)
{
	return unit == BENCH_GIBPS || unit == BENCH_GBITPS || unit == BENCH_REQPS;
}

static void text(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		default: fputc(*s, f);
		}
	}
}

/* The rows of one group: [first, *end). */
static int group_end(int first)
{
	int i = first;

	while (i < bench_nrows && !strcmp(bench_rows[i].group, bench_rows[first].group))
		i++;
	return i;
}

struct scale {
	double lo, hi;   /* log2 of the ends of the axis */
};

static struct scale scale_of(int first, int end)
{
	struct scale s = { -1, 1 };
	double l;
	int i;

	for (i = first; i < end; i++) {
		if (bench_rows[i].ratio <= 0)
			continue;
		l = log2(bench_rows[i].ratio);
		if (l < s.lo)
			s.lo = l;
		if (l > s.hi)
			s.hi = l;
	}
	s.lo = fmax(floor(s.lo), -10);
	s.hi = fmin(ceil(s.hi), 12);
	return s;
}

static double xpos(const struct scale *s, double ratio)
{
	double l = fmin(fmax(log2(ratio), s->lo), s->hi);

	return BAR_X + (l - s->lo) / (s->hi - s->lo) * BAR_W;
}

static void axis(FILE *f, const struct scale *s, int y, int h)
{
	double l;

	for (l = s->lo; l <= s->hi; l++) {
		double x = xpos(s, exp2(l));

		fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"%s\"/>\n",
			x, y, x, y + h, l == 0 ? "#333" : "#ddd");
		if (l >= 0)
			fprintf(f, "<text x=\"%.1f\" y=\"%d\" class=\"tick\">%g×</text>\n",
				x, y + h + 11, exp2(l));
		else
			fprintf(f, "<text x=\"%.1f\" y=\"%d\" class=\"tick\">1/%g</text>\n",
				x, y + h + 11, exp2(-l));
	}
}

static void bar(FILE *f, const struct scale *s, const struct bench_row *r, int y)
{
	double x1 = xpos(s, 1), x2 = xpos(s, r->ratio);
	bool better = higher_is_better(r->unit) ? r->ratio > 1 : r->ratio < 1;
	const char *color = r->baseline ? "#888" : better ? "#2a7a4a" : "#c0392b";

	if (r->baseline)
		x2 = x1 + 2;
	fprintf(f, "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>\n",
		fmin(x1, x2), y + 3, fmax(fabs(x2 - x1), 1.0), ROW_H - 6, color);
	fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"val\">", BAR_X + BAR_W + 8, y + 13);
	if (r->baseline)
		fprintf(f, "baseline, %.4g", r->value);
	else
		fprintf(f, "%.2f×", r->ratio);
	if (r->cpu_ratio > 0 && !r->baseline)
		fprintf(f, ", CPU %.2f×", r->cpu_ratio);
	fputs("</text>\n", f);
}

static void label(FILE *f, const struct bench_row *r, int y, bool new_item)
{
	fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"lab\">", LABEL_W, y + 13);
	if (new_item) {
		text(f, r->item);
		fputs(": ", f);
	}
	text(f, r->variant);
	fputs("</text>\n", f);
}

static int panel(FILE *f, int first, int end, int y)
{
	struct scale s = scale_of(first, end);
	const struct bench_row *r = &bench_rows[first];
	int i, top, up = 0, down = 0;

	/* A group may mix throughput with CPU per GiB ("relay"). */
	for (i = first; i < end; i++) {
		if (bench_rows[i].unit < 0)
			continue;
		if (higher_is_better(bench_rows[i].unit))
			up++;
		else
			down++;
	}
	fprintf(f, "<text x=\"10\" y=\"%d\" class=\"title\">", y + 20);
	text(f, r->group);
	fprintf(f, ": ratio to the baseline, log scale; %s</text>\n",
		up && down ? "throughput: longer to the right is better, CPU per GiB: further to the left" :
		up ? "longer to the right is better" : "further to the left is better");
	y += TITLE_H;
	top = y;
	for (i = first; i < end; i++, y += ROW_H) {
		r = &bench_rows[i];
		label(f, r, y, i == first || strcmp(r->item, bench_rows[i - 1].item));
		if (r->ratio > 0)
			bar(f, &s, r, y);
		else {
			fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"skip\">", BAR_X, y + 13);
			text(f, r->unit < 0 ? r->note : r->value == 0 ? "0: nothing to scale"
								    : "no baseline");
			fputs("</text>\n", f);
		}
	}
	axis(f, &s, top, y - top);
	return y + 22;
}

static int height(void)
{
	int i, h = 50;

	for (i = 0; i < bench_nrows; i = group_end(i))
		h += TITLE_H + (group_end(i) - i) * ROW_H + 22;
	return h;
}

void bench_svg(FILE *f, const char *machine)
{
	int i, y = 40;

	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		   "font-family=\"sans-serif\" font-size=\"12\">\n", WIDTH, height());
	fputs("<style>.title{font-weight:bold;font-size:14px}.lab{text-anchor:end}"
	      ".tick{text-anchor:middle;font-size:10px;fill:#666}.skip{fill:#999}"
	      ".val{font-size:11px}</style>\n", f);
	fprintf(f, "<rect width=\"%d\" height=\"100%%\" fill=\"white\"/>\n", WIDTH);
	fputs("<text x=\"10\" y=\"22\" class=\"title\">psplice bench: ", f);
	text(f, machine);
	fputs("</text>\n", f);
	for (i = 0; i < bench_nrows; i = group_end(i))
		y = panel(f, i, group_end(i), y);
	fputs("</svg>\n", f);
}
