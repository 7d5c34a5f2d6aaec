/* What an fd is (endpoint.c), as the planner, the paths, a pair and a tee
 * keep it. */
#ifndef PS_ENDPOINT_T_H
#define PS_ENDPOINT_T_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

enum ps_kind {
	PS_K_FILE, PS_K_BLOCK, PS_K_PIPE, PS_K_TCP, PS_K_UNIX, PS_K_SOCK,
	PS_K_CHR, PS_K_TTY, PS_K_DIR, PS_K_OTHER
};

/* What fstat says of an fd, and its F_GETFL flags once asked: the kernel
 * refuses an fd not open for the direction a call needs (EBADF) and an
 * O_APPEND output (EINVAL, EBADF) by itself, before a byte moves, so most
 * moves never need the flags. Read them through ps__fl() and the helpers
 * below, which ask on first use; a prepared pair asks when it is made. */
struct ps_endpoint {
	int fd;
	int kind;          /* enum ps_kind */
	int fl;            /* F_GETFL, or PS_FL_UNASKED */
	int mode;          /* recalled: the access mode (O_ACCMODE, O_PATH)
	                      F_GETFL last said, or PS_FL_UNASKED */
	dev_t dev;
	ino_t ino;
	int64_t size;      /* st_size for files and block devices, else 0; -1
	                      in a prepared pair: not known, ps__size asks */
	bool seekable;
};

#define PS_FL_UNASKED (-1)

#endif
