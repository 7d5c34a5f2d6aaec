/* psplice cp -v: what cp(1) says of each copy, on standard output, where
 * scripts read it: "'a' -> 'b'", with " (backup: 'b~')" when DST was
 * backed up first, and "removed 'b'" for a DST removed to make room.
 * -v walks a tree in one thread (tree.c), so the backup named between
 * the decision on DST and the copy is a plain variable. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cp.h"
#include "out.h"

static char *backup_made;

void cp_say_backup(const struct cp_opts *o, const char *path, const char *suffix)
{
	if (!o->verbose)
		return;
	free(backup_made);
	if (asprintf(&backup_made, "%s%s", path, suffix) < 0)
		backup_made = NULL;
}

void cp_say(const struct cp_opts *o, const char *src, const char *dst)
{
	if (!o->verbose)
		return;
	printf("%s -> %s", cli_quote(src), cli_quote(dst));
	if (backup_made)
		printf(" (backup: %s)", cli_quote(backup_made));
	putchar('\n');
	free(backup_made);
	backup_made = NULL;
}

void cp_say_removed(const struct cp_opts *o, const char *dst)
{
	if (o->verbose)
		printf("removed %s\n", cli_quote(dst));
}
