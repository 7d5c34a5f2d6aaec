/* An internal pipe (pipepool.c), as a move borrows it and a pair or a tee
 * keeps it. */
#ifndef PS_PIPEPOOL_T_H
#define PS_PIPEPOOL_T_H

#include <stddef.h>

struct ps_pipe {
	int r, w;
	size_t size;
	unsigned int gen;  /* kept by a pair: the fork generation then */
};

#endif
