/* Sizes, ranges and human-readable numbers (parse.c). */
#ifndef CLI_PARSE_H
#define CLI_PARSE_H

#include <stddef.h>
#include <stdint.h>

/* A size as coreutils' head -c takes one: digits and a suffix, b (512),
 * K, M, G, T, P, E (powers of 1024; also k, m, KiB, MiB...) or kB, KB, MB,
 * GB... (powers of 1000; also kD...). "64M" -> 67108864, "1kB" -> 1000.
 * CLI_SIZE_BAD when malformed, CLI_SIZE_TOO_LARGE past INT64_MAX. */
#define CLI_SIZE_BAD (-1)
#define CLI_SIZE_TOO_LARGE (-2)
int64_t cli_parse_size(const char *s);
/* What to add to "invalid size 'x'" for the negative r above: the limit
 * for a size too large, else nothing. */
const char *cli_size_why(int64_t r);
/* OFF:LEN (sizes as cli_parse_size takes them); LEN 0 or empty means to
 * end of file. CLI_SIZE_BAD or CLI_SIZE_TOO_LARGE as above. */
int cli_parse_range(const char *arg, int64_t *off, int64_t *len);
/* 1234567 -> "1.2 MiB" */
const char *cli_human(double n, char *buf, size_t size);

#endif
