/* What an fd is (endpoint.c): its kind, its flags asked on first use, and
 * its size. */
#ifndef PS_ENDPOINT_H
#define PS_ENDPOINT_H

#include <fcntl.h>

#include "compiler.h"
#include "endpoint-t.h"

static inline bool ps_is_socket(int kind)
{
	return kind == PS_K_TCP || kind == PS_K_UNIX || kind == PS_K_SOCK;
}

PS_HIDDEN int ps__classify(int fd, struct ps_endpoint *ep);
/* A one-shot call recalls an fd this many times, then asks again. */
#define PS_RECALLS 63
PS_HIDDEN bool ps__recall(int fd, struct ps_endpoint *ep);
PS_HIDDEN void ps__forget(int fd);
PS_HIDDEN int ps__fl(const struct ps_endpoint *ep);
PS_HIDDEN bool ps__readable(const struct ps_endpoint *ep);
PS_HIDDEN bool ps__writable(const struct ps_endpoint *ep);

static inline bool ps_mode_writable(int fl)
{
	return !(fl & O_PATH) && (fl & O_ACCMODE) != O_RDONLY;
}
PS_HIDDEN bool ps__append(const struct ps_endpoint *ep);
PS_HIDDEN bool ps__nonblock(const struct ps_endpoint *ep);
PS_HIDDEN int ps__unusable(const struct ps_endpoint *in, const struct ps_endpoint *out);

/* Whether the flags are known to say O_APPEND, without asking: for paths
 * whose syscall refuses an O_APPEND output itself. */
static inline bool ps_known_append(const struct ps_endpoint *ep)
{
	return ep->fl != PS_FL_UNASKED && ps__append(ep);
}

PS_HIDDEN int64_t ps__sock_room(const struct ps_endpoint *ep);
PS_HIDDEN int64_t ps__size_now(int fd, int kind);
PS_HIDDEN int64_t ps__size(const struct ps_endpoint *ep);

#endif
