/* Messages: cp/cat-style lines on standard error or a log file, each in
 * one write(2); file names quoted for them; the exit check (out.c). */
#ifndef CLI_OUT_H
#define CLI_OUT_H

#include <stdbool.h>
#include <stddef.h>

#include "compat.h"

/* The program's own name, where it stays whatever psplice was run by: its
 * usage as psplice, the names of its man pages and its processes. */
#define CLI_NAME "psplice"
/* The name each message starts with, getopt's included: CLI_NAME, or
 * the argv[0] psplice was run by when that names a command (a link named
 * cp, cat or tee: "cp", "/usr/bin/cp"), as GNU's programs name themselves.
 * Set once by main, before any thread. */
extern const char *cli_name;

/* "NAME: MSG: strerror(err)" (NAME is cli_name) on stderr (no ": ..." when err is 0), after
 * what stdout holds. Like every message here, one write(2) of the whole
 * line, so that lines from several threads never mix; errno is kept. */
void cli_error(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "NAME: MSG" on stderr, in one write(2); errno is kept. */
void cli_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The same line on fd (a log file opened O_APPEND). */
void cli_say_to(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* buf, a whole line, written to fd; a write that fails fails the command
 * at exit, as a lost message does. */
void cli_put(int fd, const char *buf, size_t len);
/* From now on (on) every message line is escaped: control bytes, C1
 * controls and bytes that are not UTF-8 as \xNN, a backslash as \\; for a
 * command whose lines carry names others chose (a relay's peers). */
void cli_escape_messages(bool on);
/* The length of the valid UTF-8 sequence at s (n bytes left), 0 when there
 * is none (overlong forms and surrogates are not valid). */
size_t cli_utf8_len(const unsigned char *s, size_t n);
/* name in single quotes, control characters shown as '?' (left for the
 * escape when messages are escaped). Storage of the
 * calling thread's, a few calls may be live at once. */
const char *cli_quote(const char *name);

/* Register the check that standard output was written (for --help and
 * --version into a full disk or a closed pipe), and that no message failed
 * to reach standard error: either ends the command with status 1. */
void cli_check_stdout_at_exit(void);

#endif
