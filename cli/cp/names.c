/* psplice cp -r: the names in a tree, for its walk (tree.c): a
 * directory's entries read whole, and an entry's path under its
 * directory's. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cp.h"
#include "out.h"

/* dir/name, made twice for every entry of a tree: by hand, as asprintf
 * would parse its format each time. */
char *cp_join(const char *dir, const char *name)
{
	size_t d = strlen(dir), n = strlen(name);
	bool slash = dir[d - 1] != '/';
	char *p = malloc(d + slash + n + 1);

	if (!p)
		return NULL;
	memcpy(p, dir, d);
	p[d] = '/';
	memcpy(p + d + slash, name, n + 1);
	return p;
}

/* names[*n] = a copy of name, names grown as needed (one slot is kept
 * for the NULL that ends them). 0, or -1: no memory. */
static int add_name(char ***names, size_t *n, size_t *size, const char *name)
{
	char **more;

	if (*n + 1 >= *size) {
		*size = *size ? 2 * *size : 16;
		more = realloc(*names, *size * sizeof(**names));
		if (!more)
			return -1;
		*names = more;
	}
	(*names)[*n] = strdup(name);
	if (!(*names)[*n])
		return -1;
	(*n)++;
	return 0;
}

/* The entries of directory fd, read whole before any is copied: the
 * descriptor that reads them is closed before the walk goes deeper. They
 * are read by getdents64 itself: fdopendir would ask the descriptor what
 * it is first (fstat, fcntl twice), three calls a directory for nothing.
 * NULL-ended; NULL with the error said. */
char **cp_read_names(int fd, const char *src)
{
	union { struct dirent64 e; char b[32768]; } buf;
	const struct dirent64 *e;
	char **names = NULL;
	size_t n = 0, size = 0;
	ssize_t len, off;
	int rd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC), err = 0;

	if (rd < 0) {
		cli_error(errno, "cannot access %s", cli_quote(src));
		return NULL;
	}
	while (!err && (len = getdents64(rd, &buf.e, sizeof(buf.b))) > 0) {
		for (off = 0; !err && off < len; off += e->d_reclen) {
			e = (const struct dirent64 *)(buf.b + off);
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
			    add_name(&names, &n, &size, e->d_name) < 0)
				err = ENOMEM;
		}
	}
	if (!err && len < 0)
		err = errno;
	/* An empty directory has had no slot made yet. */
	if (!err && !names && !(names = malloc(sizeof(*names))))
		err = ENOMEM;
	close(rd);
	if (!err) {
		names[n] = NULL;
		return names;
	}
	cli_error(err, "cannot read directory %s", cli_quote(src));
	while (n)
		free(names[--n]);
	free(names);
	return NULL;
}
