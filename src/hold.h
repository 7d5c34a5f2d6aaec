/* A pair's pending bytes (hold.c): how many, taken in, delivered first,
 * given back. */
#ifndef PS_HOLD_H
#define PS_HOLD_H

#include "compiler.h"
#include "hold-t.h"
#include "path-t.h"

PS_HIDDEN size_t ps__held(const struct ps_hold *h);
PS_HIDDEN size_t ps__held_here(const struct ps_hold *h);
PS_HIDDEN int ps__hold_bytes(struct ps_hold *h, const void *buf, size_t n);
PS_HIDDEN bool ps__hold_pipe(struct ps_xfer *x, struct ps_pipe *p, size_t n);
PS_HIDDEN void ps__deliver_held(struct ps_xfer *x);
PS_HIDDEN size_t ps__hold_take(struct ps_hold *h, void *buf, size_t len);
PS_HIDDEN void ps__hold_release(struct ps_hold *h);

#endif
