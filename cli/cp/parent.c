/* psplice cp: the directory a path names its last component in, which
 * the destination's checks (dest.c), a file's copy (file.c) and
 * --sync's directory sync (data.c) all ask for. */
#include <stdlib.h>
#include <string.h>

#include "cp.h"

/* "a/b" -> "a", "b" -> ".", "/b" -> "/" */
char *cp_parent_of(const char *path)
{
	size_t len = strlen(path);
	const char *slash;

	while (len > 1 && path[len - 1] == '/')
		len--;
	slash = memrchr(path, '/', len);
	if (!slash)
		return strdup(".");
	len = (size_t)(slash - path);
	while (len > 1 && path[len - 1] == '/')
		len--;
	return strndup(path, len ? len : 1);
}
