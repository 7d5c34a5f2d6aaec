/* psplice cp: what was just copied handed to write-behind, which both
 * ways of writing a file's data use: the copy in chunks (data.c) and
 * the blocks of zeros left holes (sparse.c). */
#include <errno.h>

#include "cp.h"

int cp_wb_wrote(struct psplice_wb *wb, int64_t off, uint64_t n, struct cli_copy *c)
{
	if (!wb || !n || psplice_wb_wrote(wb, off, n) == 0)
		return 0;
	return cli_copy_fail(c, errno, PSPLICE_SIDE_OUT);
}
