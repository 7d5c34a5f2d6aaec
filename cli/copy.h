/* The copy loop the subcommands share (copy.c): one copy to end of input
 * or for a length, on a pair prepared once, with a progress line when one
 * is on; its -v report and its error told by side. */
#ifndef CLI_COPY_H
#define CLI_COPY_H

#include <stdint.h>

#include "psplice.h"

/* Copied at a time where a copy goes in chunks (write-behind, a progress
 * line, extents): write-behind's default chunk, psplice_wb_new's chunk 0,
 * so that each call completes one chunk and writeback starts on it. */
#define CLI_CHUNK ((uint64_t)PSPLICE_WB_CHUNK)

/* One copy from fd_in to fd_out, to end of input. */
struct cli_copy {
	uint64_t bytes;  /* delivered to the output */
	int method;      /* enum psplice_method: the last that moved bytes */
	int error;       /* 0, or the errno that stopped the copy */
	int side;        /* enum psplice_side of that error */
};

/* Add bytes a call moved to c's total, and its method if it moved any. */
void cli_copy_add(struct cli_copy *c, uint64_t bytes, int method);
/* Keep why c stopped: error (an errno) on side (enum psplice_side); -1. */
int cli_copy_fail(struct cli_copy *c, int error, int side);

/* Copy to end of input with psplice_pair_copy() on a pair prepared once. An
 * fd that was handed over in non-blocking mode is waited for with poll()
 * rather than failed; bytes taken and not yet delivered wait in the pair
 * and go out first. 0, or -1 with c->error set. */
int cli_copy(int fd_in, int fd_out, unsigned int flags, struct cli_copy *c);
/* The same for at most len bytes (PSPLICE_TO_EOF: no limit). Success with
 * c->bytes below len means the input ended. */
int cli_copy_len(int fd_in, int fd_out, uint64_t len, unsigned int flags,
		 struct cli_copy *c);
/* The same from a positional input offset (advanced by what was delivered);
 * off_in NULL uses the file position. */
int cli_copy_at(int fd_in, int64_t *off_in, int fd_out, uint64_t len,
		unsigned int flags, struct cli_copy *c);
/* The flags that plan a pair; the others are each call's. */
#define CLI_PLAN_FLAGS PSPLICE_F_PLAN_MASK
/* A pair for the copies below, prepared with the planning flags of flags;
 * NULL with c->error and c->side set. */
struct psplice_pair *cli_pair(int fd_in, int fd_out, unsigned int flags,
			      struct cli_copy *c);
/* cli_copy_at on a prepared pair of fd_in and fd_out. */
int cli_pair_copy(struct psplice_pair *p, int64_t *off_in, int fd_in, int fd_out,
		  uint64_t len, unsigned int flags, struct cli_copy *c);

/* The -v line: "psplice: 'a' -> 'b': 1,048,576 bytes by copy_file_range". */
void cli_report(const char *in, const char *out, const struct cli_copy *c);
/* The error of a failed copy, told by side: "error reading 'a': ...",
 * "error writing 'b': ...", or "cannot copy 'a' to 'b': ...". */
void cli_copy_error(const char *in, const char *out, const struct cli_copy *c);

#endif
