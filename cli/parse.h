/* Sizes, ranges and human-readable numbers (parse.c). */
#ifndef CLI_PARSE_H
#define CLI_PARSE_H

#include <stddef.h>
#include <stdint.h>

/* "64M" -> 67108864; K, M, G, T are powers of 1024. -1 when malformed. */
int64_t cli_parse_size(const char *s);
/* OFF:LEN (sizes as cli_parse_size takes them); LEN 0 or empty means to
 * end of file. -1 when malformed. */
int cli_parse_range(const char *arg, int64_t *off, int64_t *len);
/* 1234567 -> "1.2 MiB" */
const char *cli_human(double n, char *buf, size_t size);

#endif
