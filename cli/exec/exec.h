/* psplice exec: the folder's header. The command offers the rest of
 * psplice one thing, cli_cmd_exec (opts.h). Its files:
 *   cmd.c    the options, and running the command with the preload
 *            library in its environment
 *   loads.c  whether the command it runs will load that library (-v)
 * cmd.c calls loads.c, which calls nothing of cmd.c. */
#ifndef CLI_EXEC_H
#define CLI_EXEC_H

#include <stddef.h>

/* Why the program cmd names (found as execvp finds it) will not load the
 * ELF library lib: "is statically linked", "is set-user-ID", ..., written
 * into why and returned; NULL when nothing said so (a dynamic program of
 * the library's kind, or one this cannot read). A script is judged by its
 * interpreter, which why then names. */
const char *exec_unloaded(const char *cmd, const char *lib, char *why, size_t n);

#endif
