/* psplice cp: the values of its options, read as cp(1) reads them
 * (argmatch): a name, or any prefix of it that no name of another
 * meaning shares (--backup=nu, --preserve=time); an unknown or ambiguous
 * one is a usage error that lists the valid names, a line a meaning. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cp.h"
#include "out.h"

struct name {
	const char *name;
	int value;
};

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* The value named by arg's first len bytes: the name itself, or a prefix
 * of names that all mean one value. -1: none; -2: names of two meanings. */
static int match(const char *arg, size_t len, const struct name *names, size_t n)
{
	int found = -1;
	size_t i;

	for (i = 0; i < n; i++) {
		if (strncmp(names[i].name, arg, len))
			continue;
		if (strlen(names[i].name) == len)
			return names[i].value;
		if (found == -1)
			found = names[i].value;
		else if (found != names[i].value)
			found = -2;
	}
	return found;
}

/* The valid names into buf, cp(1)'s list: "  - 'none', 'off'", a line
 * a meaning (names of one meaning are neighbours in the table). */
static void valid(char *buf, size_t size, const struct name *names, size_t n)
{
	size_t i, at = 0;
	int w;

	for (i = 0; i < n && at < size; i++, at += w > 0 ? (size_t)w : 0) {
		w = snprintf(buf + at, size - at, i && names[i].value == names[i - 1].value ?
					", '%s'" : "\n  - '%s'", names[i].name);
	}
}

/* The value of arg's first len bytes for what (quoted, as messages name
 * it); a usage error, which exits, when it names none. */
static int value_of(const struct cli_cmd *cmd, const char *arg, size_t len,
		    const struct name *names, size_t n, const char *what)
{
	char word[256], list[512];
	int v = match(arg, len, names, n);

	if (v >= 0)
		return v;
	snprintf(word, sizeof(word), "%.*s", (int)len, arg);
	valid(list, sizeof(list), names, n);
	cli_usage_error(cmd, "%s argument %s for %s\nValid arguments are:%s",
			v == -2 ? "ambiguous" : "invalid", cli_quote(word), what, list);
}

unsigned int cp_value_sync(const struct cli_cmd *cmd, const char *arg)
{
	static const struct name names[] = {
		{ "none", 0 }, { "data", PSPLICE_SYNC_DATA }, { "full", PSPLICE_SYNC_METADATA },
	};

	return (unsigned int)value_of(cmd, arg, strlen(arg), names, N(names), "'--sync'");
}

enum cp_reflink cp_value_reflink(const struct cli_cmd *cmd, const char *arg)
{
	static const struct name names[] = {
		{ "auto", CP_REFLINK_AUTO }, { "always", CP_REFLINK_ALWAYS },
		{ "never", CP_REFLINK_NEVER },
	};

	/* A bare --reflink is --reflink=always, as in cp(1). */
	if (!arg)
		return CP_REFLINK_ALWAYS;
	return value_of(cmd, arg, strlen(arg), names, N(names), "'--reflink'");
}

enum cp_sparse cp_value_sparse(const struct cli_cmd *cmd, const char *arg)
{
	static const struct name names[] = {
		{ "never", CP_SPARSE_NEVER }, { "auto", CP_SPARSE_AUTO },
		{ "always", CP_SPARSE_ALWAYS },
	};

	return value_of(cmd, arg, strlen(arg), names, N(names), "'--sparse'");
}

enum cp_backup cp_value_backup(const struct cli_cmd *cmd, const char *arg, const char *what)
{
	static const struct name names[] = {
		{ "none", CP_BACKUP_NONE }, { "off", CP_BACKUP_NONE },
		{ "simple", CP_BACKUP_SIMPLE }, { "never", CP_BACKUP_SIMPLE },
		{ "existing", CP_BACKUP_EXISTING }, { "nil", CP_BACKUP_EXISTING },
		{ "numbered", CP_BACKUP_NUMBERED }, { "t", CP_BACKUP_NUMBERED },
	};

	if (!arg || !*arg)
		return CP_BACKUP_EXISTING;
	return value_of(cmd, arg, strlen(arg), names, N(names), what);
}

unsigned int cp_value_keep(const struct cli_cmd *cmd, const char *arg, const char *what,
			   unsigned int *named)
{
	static const struct name names[] = {
		{ "mode", CP_KEEP_MODE }, { "timestamps", CP_KEEP_TIMES },
		{ "ownership", CP_KEEP_OWNER }, { "links", CP_KEEP_LINKS },
		{ "context", CP_KEEP_CONTEXT }, { "xattr", CP_KEEP_XATTR },
		{ "all", CP_KEEP_ALL },
	};
	unsigned int bits = 0, v;
	size_t len;

	*named = 0;
	for (;;) {
		len = strcspn(arg, ",");
		v = (unsigned int)value_of(cmd, arg, len, names, N(names), what);
		bits |= v;
		if (v != CP_KEEP_ALL)
			*named |= v;
		if (!arg[len])
			return bits;
		arg += len + 1;
	}
}
