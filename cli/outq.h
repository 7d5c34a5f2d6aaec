/* Lines for an fd queued in memory and written by a thread of their own,
 * so that the threads which say them never wait on the fd's reader; what
 * does not fit is dropped and counted (outq.c). */
#ifndef CLI_OUTQ_H
#define CLI_OUTQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bytes each queue holds, its lines' headers included. */
#define CLI_OUTQ_SIZE (256u << 10)

/* From now on, lines for fd go through a queue and its thread (a
 * second start for the same fd is a no-op): 0, or a negative errno
 * (-EBUSY when every queue is taken), the lines then written at once. A
 * line of the calling thread's waits for its write, a second at most
 * until the queue has emptied once: its lines keep their order with what
 * it does next. A forked child writes its own lines at once again. */
int cli_outq_start(int fd);
/* Whether fd has a queue, which took the line or dropped and counted it;
 * false: the caller writes it itself. */
bool cli_outq_put(int fd, const char *buf, size_t len);
/* Wait until every queue is written, for ms milliseconds at most
 * (negative: no limit). */
void cli_outq_flush(int64_t ms);
/* Every queue written whatever the wait, its thread ended, its memory
 * freed; lines are written at once from then on. */
void cli_outq_stop(void);
/* Lines dropped since the process began, every queue's. */
uint64_t cli_outq_dropped(void);
/* Whether a queue's thread could not write a line whole. */
bool cli_outq_failed(void);
/* buf written whole to fd, through EINTR and short writes; false when
 * the fd refused it. */
bool cli_write_whole(int fd, const char *buf, size_t len);

#endif
