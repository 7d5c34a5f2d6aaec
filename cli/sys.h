/* The process and its descriptors (sys.c): what a command does first and
 * last, the clock, inodes and pipes. */
#ifndef CLI_SYS_H
#define CLI_SYS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

/* Give each closed standard descriptor (0, 1, 2) /dev/null, opened so that
 * using it fails with EBADF, close-on-exec. First thing in main, before
 * any file or socket is opened; exits 1 if /dev/null cannot be opened. */
void cli_std_fds(void);
/* A reader gone ends psplice as it ends cat: by SIGPIPE, when its
 * disposition is the default (the engine kept the signal from us);
 * returns otherwise. */
void cli_die_of_sigpipe(void);

/* CLOCK_MONOTONIC in nanoseconds. */
int64_t cli_now_ns(void);
/* The same file: device and inode. */
bool cli_same_inode(const struct stat *a, const struct stat *b);
/* A FIFO smaller than CLI_PIPE_SIZE is grown to it, where the limits allow. */
#define CLI_PIPE_SIZE (1 << 20)
void cli_grow_pipe(int fd);

#endif
