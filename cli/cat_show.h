/* cat's -b, -E, -n, -s, -T, -v: the bytes of the inputs shown as text
 * (cat_show.c). Shown bytes change, so they pass through this process:
 * read, shown, written. */
#ifndef CLI_CAT_SHOW_H
#define CLI_CAT_SHOW_H

#include <stdbool.h>
#include <stdint.h>

#include "copy.h"

enum {
	CAT_NUMBER = 1 << 0,    /* -n: number every line */
	CAT_NONBLANK = 1 << 1,  /* -b: number the lines that are not empty (wins over -n) */
	CAT_SQUEEZE = 1 << 2,   /* -s: one empty line where there were several */
	CAT_ENDS = 1 << 3,      /* -E: '$' before each newline, a CR before it as ^M */
	CAT_TABS = 1 << 4,      /* -T: a tab as ^I */
	CAT_NONPRINT = 1 << 5,  /* -v: other control bytes as ^X, bytes over 127 as M-x */
};

/* What showing carries from one read, and one input, to the next, as cat
 * does: the line number, where in a line the last byte left it, the empty
 * lines in a row and a CR held to see whether a newline follows it. */
struct cat_show {
	unsigned int flags;  /* CAT_* */
	uint64_t line;       /* the number of the last line numbered */
	bool mid_line;       /* the last byte taken was not a newline */
	int blanks;          /* empty lines in a row just taken, up to 2 */
	bool cr;             /* a CR taken and not yet written (CAT_ENDS) */
};

/* Copy at most len bytes (PSPLICE_TO_EOF: to the end) from fd_in, at
 * *off_in (advanced) or from its position when off_in is NULL, to fd_out,
 * shown as s says. c->bytes counts the bytes taken from the input, its
 * method is read/write. 0 at the end of the input or of len, -1 with
 * c->error and c->side set. */
int cat_show_copy(struct cat_show *s, int fd_in, int64_t *off_in, int fd_out,
		  uint64_t len, struct cli_copy *c);
/* After the last input: the CR still held, as it came. 0, or -1 with c
 * set. */
int cat_show_end(struct cat_show *s, int fd_out, struct cli_copy *c);

#endif
