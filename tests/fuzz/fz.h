/* The differential fuzzer: a model of psplice's contract and a driver that
 * runs sequences of operations through the public API, checking each step
 * against the model. A sequence is a pair of endpoints (the source and the
 * sink, each with the thread at its other end) and a list of operations. */
#ifndef FZ_H
#define FZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define FZ_MAX_OPS 64

/* Endpoint kinds; FZ_DEV is /dev/zero as a source, /dev/null as a sink. */
enum fz_kind { FZ_TMPFS, FZ_DISK, FZ_PIPE, FZ_UNIX, FZ_TCP, FZ_DEV, FZ_PTY, FZ_NKINDS };
/* How the sink's reader behaves: it reads everything (fast or slowly), or
 * closes or resets the connection after peer_after bytes, or reads nothing
 * (its buffer fills) until a call could wait for it or the run ends. */
enum fz_peer { FZ_FAST, FZ_SLOW, FZ_CLOSE, FZ_RESET, FZ_STALL, FZ_NPEERS };

enum fz_opc {
	FZ_MOVE,  /* psplice_ex, one step */
	FZ_COPY,  /* psplice_copy */
	FZ_PNEW,  /* psplice_pair_new (the pair before it freed) */
	FZ_PMOVE, /* psplice_pair_move */
	FZ_PCOPY, /* psplice_pair_copy */
	FZ_PTAKE, /* psplice_pair_take of len pending bytes */
	FZ_PFREE, /* psplice_pair_free: pending bytes handed back */
	FZ_BAD,   /* a call refused before any byte moves (arg says which) */
	FZ_HIOFF, /* offsets near INT64_MAX (arg: 0 input, 1 output) */
	FZ_SEEK,  /* the positional offsets set to len (arg: 0 input, 1 output) */
	FZ_SWAP,  /* the input's or output's fd number another kind of fd for a
	             one-shot call of its own, then itself again (arg bit 0: the
	             output; arg >> 1: the kind: pipe, Unix socket, file, device) */
	FZ_NOPS
};

/* offs: bit 0 a positional input offset, bit 1 a positional output one. */
struct fz_op {
	uint8_t code, offs, arg;
	uint32_t flags;
	uint64_t len;
};

struct fz_seq {
	uint8_t in_kind, out_kind, peer, slow_feed;
	uint8_t fdmode;      /* bit 0: the input fd O_NONBLOCK, bit 1: the output;
	                        bit 2: the output O_APPEND */
	uint32_t seed;       /* of the source's bytes */
	uint64_t size;       /* the source's bytes (a file's size, a stream's length) */
	uint64_t peer_after; /* FZ_CLOSE, FZ_RESET: bytes read before */
	size_t n;
	struct fz_op op[FZ_MAX_OPS];
};

/* Figures of a run, for the report. */
struct fz_stats {
	uint64_t seqs, ops, bytes, failures;
};

/* Run a sequence against the model in dir_disk (a directory on the work
 * disk) and dir_tmpfs. 0 when every step agreed; -1 with why (a static
 * text naming the step and the disagreement) otherwise. FZ_TRACE in the
 * environment prints each call and its result on stderr. */
int fz_run(const struct fz_seq *s, const char *dir_disk, const char *dir_tmpfs,
	   struct fz_stats *st, const char **why);

/* A random fan-out sequence of up to steps operations on a tee, made from
 * seed and checked against the tee's model (fz_tee.c); as fz_run. */
int fz_tee_run(uint64_t seed, size_t steps, const char *dir_disk, const char *dir_tmpfs,
	       struct fz_stats *st, const char **why);

/* A random sequence of n operations from a seed. */
void fz_random(struct fz_seq *s, uint64_t seed, size_t n);
/* A sequence from any byte string (the libFuzzer harness's input). */
void fz_decode(struct fz_seq *s, const uint8_t *data, size_t size);
/* The text form: write, and read back (-1 on a malformed file). */
void fz_write(FILE *f, const struct fz_seq *s);
int fz_read(FILE *f, struct fz_seq *s);
/* Shrink a failing sequence: drop operations, then shrink sizes, while it
 * still fails; returns the number of runs it took. */
int fz_shrink(struct fz_seq *s, const char *dir_disk, const char *dir_tmpfs, int max_runs);

/* Call before the first sequence, then after each: 0 while no fd leaked
 * (the library may keep up to five internal pipes), -1 and msg otherwise. */
int fz_fd_check(char *msg, size_t size);

const char *fz_kind_name(int kind);
const char *fz_op_name(int code);
uint8_t fz_byte(uint32_t seed, uint64_t i);

#endif
