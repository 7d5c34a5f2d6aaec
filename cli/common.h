/* What the psplice subcommands share: the command table entry, option
 * handling, cp/cat-style messages, the -v report and the copy loop
 * (common.c); sizes and ranges (parse.c), socket addresses (addr.c), the
 * progress line (progress.c). */
#ifndef CLI_COMMON_H
#define CLI_COMMON_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "psplice.h"

#define CLI_NAME "psplice"

/* Copied at a time where a copy goes in chunks (write-behind, a progress
 * line, extents): write-behind's default chunk, psplice_wb_new's chunk 0,
 * so that each call completes one chunk and writeback starts on it. */
#define CLI_CHUNK ((uint64_t)PSPLICE_WB_CHUNK)

/* CLOCK_MONOTONIC in nanoseconds. */
int64_t cli_now_ns(void);
/* The same file: device and inode. */
bool cli_same_inode(const struct stat *a, const struct stat *b);
/* A FIFO smaller than CLI_PIPE_SIZE is grown to it, where the limits allow. */
#define CLI_PIPE_SIZE (1 << 20)
void cli_grow_pipe(int fd);

/* Long options every subcommand takes, after its own. */
enum { CLI_OPT_HELP = 0x100, CLI_OPT_VERSION };
#define CLI_COMMON_LONGOPTS \
	{ "help", no_argument, NULL, CLI_OPT_HELP }, \
	{ "version", no_argument, NULL, CLI_OPT_VERSION }, \
	{ NULL, 0, NULL, 0 }

struct cli_cmd {
	const char *name;
	const char *args;     /* the operands, for the usage line */
	const char *summary;  /* one line, for psplice --help */
	const char *help;     /* description and options, for psplice NAME --help */
	int (*main)(const struct cli_cmd *cmd, int argc, char **argv);
};

/* Runs the benchmark, psplice-bench, with the path of this psplice in the
 * environment variable CLI_BENCH_ENV: the command it measures. */
extern const struct cli_cmd cli_cmd_bench;
#define CLI_BENCH_ENV "PSPLICE_BENCH_PSPLICE"
extern const struct cli_cmd cli_cmd_cat;
extern const struct cli_cmd cli_cmd_cp;
extern const struct cli_cmd cli_cmd_exec;
extern const struct cli_cmd cli_cmd_relay;
extern const struct cli_cmd cli_cmd_sync;
extern const struct cli_cmd cli_cmd_tee;

/* Set (by the option fuzzer) to have each subcommand parse and check its
 * arguments, then return 0 without running: nothing opened, written,
 * connected or run, no name looked up. */
extern bool cli_parse_only;
/* Every exit of the option handling below goes through cli_exit: it calls
 * cli_exit_hook when set (which must not return; the fuzzer longjmps), then
 * exit(code). */
extern void (*cli_exit_hook)(int code);
void cli_exit(int code) __attribute__((noreturn));

/* Handle an option that is not the subcommand's own: --help and --version
 * exit 0, anything else is a usage error (exit 1). */
void cli_common_option(const struct cli_cmd *cmd, int c) __attribute__((noreturn));
void cli_help(const struct cli_cmd *cmd) __attribute__((noreturn));
void cli_version(void) __attribute__((noreturn));
/* "psplice: MSG" and the --help hint on stderr; exits 1. */
void cli_usage_error(const struct cli_cmd *cmd, const char *fmt, ...)
	__attribute__((noreturn, format(printf, 2, 3)));

/* "psplice: MSG: strerror(err)" on stderr (no ": ..." when err is 0), after
 * what stdout holds. Like every message here, one write(2) of the whole
 * line, so that lines from several threads never mix; errno is kept. */
void cli_error(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "psplice: MSG" on stderr, in one write(2); errno is kept. */
void cli_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The same line on fd (a log file opened O_APPEND). */
void cli_say_to(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* buf, a whole line, written to fd; a write that fails fails the command
 * at exit, as a lost message does. */
void cli_put(int fd, const char *buf, size_t len);
/* name in single quotes, control characters shown as '?'. Storage of the
 * calling thread's, a few calls may be live at once. */
const char *cli_quote(const char *name);

/* One copy from fd_in to fd_out, to end of input. */
struct cli_copy {
	uint64_t bytes;  /* delivered to the output */
	int method;      /* enum psplice_method: the last that moved bytes */
	int error;       /* 0, or the errno that stopped the copy */
	int side;        /* enum psplice_side of that error */
};

/* Add bytes a call moved to c's total, and its method if it moved any. */
void cli_copy_add(struct cli_copy *c, uint64_t bytes, int method);
/* Keep why c stopped: error (an errno) on side (enum psplice_side); -1. */
int cli_copy_fail(struct cli_copy *c, int error, int side);

/* Copy to end of input with psplice_pair_copy() on a pair prepared once. An
 * fd that was handed over in non-blocking mode is waited for with poll()
 * rather than failed; bytes taken and not yet delivered wait in the pair
 * and go out first. 0, or -1 with c->error set. */
int cli_copy(int fd_in, int fd_out, unsigned int flags, struct cli_copy *c);
/* The same for at most len bytes (PSPLICE_TO_EOF: no limit). Success with
 * c->bytes below len means the input ended. */
int cli_copy_len(int fd_in, int fd_out, uint64_t len, unsigned int flags,
		 struct cli_copy *c);
/* The same from a positional input offset (advanced by what was delivered);
 * off_in NULL uses the file position. */
int cli_copy_at(int fd_in, int64_t *off_in, int fd_out, uint64_t len,
		unsigned int flags, struct cli_copy *c);
/* The flags that plan a pair; the others are each call's. */
#define CLI_PLAN_FLAGS PSPLICE_F_PLAN_MASK
/* A pair for the copies below, prepared with the planning flags of flags;
 * NULL with c->error and c->side set. */
struct psplice_pair *cli_pair(int fd_in, int fd_out, unsigned int flags,
			      struct cli_copy *c);
/* cli_copy_at on a prepared pair of fd_in and fd_out. */
int cli_pair_copy(struct psplice_pair *p, int64_t *off_in, int fd_in, int fd_out,
		  uint64_t len, unsigned int flags, struct cli_copy *c);

/* OFF:LEN (sizes as cli_parse_size takes them); LEN 0 or empty means to
 * end of file. -1 when malformed. */
int cli_parse_range(const char *arg, int64_t *off, int64_t *len);

/* A stream socket address as given on the command line. */
struct cli_addr {
	struct sockaddr_storage ss;
	socklen_t len;
	const char *text;    /* as given, for messages */
};
/* "unix:/path", "[v6]:port", "host:port" -> a socket address; passive for
 * one to listen on. -1 with *why set when malformed or unknown. */
int cli_parse_addr(const char *s, struct cli_addr *a, bool passive, const char **why);
/* Its "[v6]:port" or "host:port" text cut into host (size bytes) and
 * port, checked, with no lookup. -1 with *why set when malformed. */
int cli_split_addr(const char *s, char *host, size_t size, const char **port, bool passive,
		   const char **why);
/* A blocking stream socket connected to ADDR (--to); -1 when it cannot be
 * reached, said on stderr. An invalid ADDR is a usage error of cmd. With
 * cli_parse_only, -1 once ADDR is checked, silently. */
int cli_connect(const struct cli_cmd *cmd, const char *arg);

/* A pv-like line on standard error while a long copy runs: bytes, rate and
 * ETA (total 0: unknown), a few times a second. Asked for (--progress), it
 * ends with a line of the totals, 100 % when the copy was complete, else
 * where it stopped; shown unasked, it is cleared at the end. Copies through
 * cli_copy_at go in chunks while it is on; others call cli_progress_add
 * themselves. */
void cli_progress_begin(const char *what, uint64_t total, bool asked);
void cli_progress_add(uint64_t n);
void cli_progress_end(bool complete);
/* Between cli_progress_begin and cli_progress_end. */
bool cli_progress_on(void);

/* 1234567 -> "1.2 MiB" */
const char *cli_human(double n, char *buf, size_t size);
/* "64M" -> 67108864; K, M, G, T are powers of 1024. -1 when malformed. */
int64_t cli_parse_size(const char *s);

/* The -v line: "psplice: 'a' -> 'b': 1,048,576 bytes by copy_file_range". */
void cli_report(const char *in, const char *out, const struct cli_copy *c);
/* A reader gone ends psplice as it ends cat: by SIGPIPE, when its
 * disposition is the default (the engine kept the signal from us);
 * returns otherwise. */
void cli_die_of_sigpipe(void);
/* The error of a failed copy, told by side: "error reading 'a': ...",
 * "error writing 'b': ...", or "cannot copy 'a' to 'b': ...". */
void cli_copy_error(const char *in, const char *out, const struct cli_copy *c);

/* Register the check that standard output was written (for --help and
 * --version into a full disk or a closed pipe), and that no message failed
 * to reach standard error: either ends the command with status 1. */
void cli_check_stdout_at_exit(void);
/* Give each closed standard descriptor (0, 1, 2) /dev/null, opened so that
 * using it fails with EBADF, close-on-exec. First thing in main, before
 * any file or socket is opened; exits 1 if /dev/null cannot be opened. */
void cli_std_fds(void);

#endif
