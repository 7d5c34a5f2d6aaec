/* Shared by the paths (accounting.c): counts, attribution, the end of a
 * file, and user-space reads and writes. ps__fail returns the step's error
 * as -errno, and ps__ran n, or that error if a helper recorded one. */
#ifndef PS_ACCOUNTING_H
#define PS_ACCOUNTING_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "compiler.h"
#include "path-t.h"

PS_HIDDEN int ps__fail(struct ps_xfer *x, int err, int side);
PS_HIDDEN ssize_t ps__ran(const struct ps_xfer *x, size_t n);
PS_HIDDEN int ps__side_of(const struct ps_xfer *x, int err);
PS_HIDDEN int ps__blocked_side(const struct ps_xfer *x, int err);
PS_HIDDEN void ps__advance(int64_t *off, uint64_t n);
PS_HIDDEN bool ps__at_eof(const struct ps_xfer *x);
PS_HIDDEN bool ps__input_ended(const struct ps_xfer *x);
PS_HIDDEN bool ps__ended_anyway(struct ps_xfer *x, int err);
PS_HIDDEN void ps__moved(struct ps_xfer *x, uint64_t in, uint64_t out, int method);
PS_HIDDEN unsigned int ps__splice_flags(const struct ps_xfer *x);
PS_HIDDEN int ps__give_back(struct ps_xfer *x, const void *buf, size_t n);
PS_HIDDEN size_t ps__write_all(struct ps_xfer *x, const unsigned char *buf, size_t n);
PS_HIDDEN ssize_t ps__read_once(struct ps_xfer *x, unsigned char *buf, size_t n);
PS_HIDDEN int ps__wait_out(const struct ps_endpoint *ep, bool retry_eintr);

#endif
