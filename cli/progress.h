/* The progress line (progress.c). */
#ifndef CLI_PROGRESS_H
#define CLI_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

/* A pv-like line on standard error while a long copy runs: bytes, rate and
 * ETA (total 0: unknown), a few times a second. Asked for (--progress), it
 * ends with a line of the totals, 100 % when the copy was complete, else
 * where it stopped; shown unasked, it is cleared at the end. Copies through
 * cli_copy_at go in chunks while it is on; others call cli_progress_add
 * themselves. */
void cli_progress_begin(const char *what, uint64_t total, bool asked);
void cli_progress_add(uint64_t n);
void cli_progress_end(bool complete);
/* Between cli_progress_begin and cli_progress_end. */
bool cli_progress_on(void);

#endif
