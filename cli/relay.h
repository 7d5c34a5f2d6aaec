/* psplice relay: what its files share. cmd_relay.c reads the options and
 * runs the main thread (signals, stats, the end); relay_worker.c runs each
 * worker's event loop; relay_conn.c moves one connection; relay_net.c makes
 * the sockets, relay_activate.c takes those a service manager passed. */
#ifndef CLI_RELAY_H
#define CLI_RELAY_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "common.h"

#define CHUNK (1u << 20)     /* asked of each move */
#define BUDGET 16            /* calls per direction per event: fairness */
#define ACCEPT_BATCH 64
#define RETRY_MS 100         /* a paused listener looks again this often */
#define RECONNECT_MS 20      /* a unix target with a full queue, the same */
#define NEVER INT64_MAX
#define NOTE_MS 5000         /* a repeated error is said at most this often */

/* An error that may come many times a second, from every worker (accept
 * out of fds: the queue stays readable, and each retry fails again): said
 * the first time, then at most once per NOTE_MS with how often it came. */
struct note {
	pthread_mutex_t lock;
	const char *what;                /* "accept" */
	int err;                         /* the last said */
	int64_t said_at;                 /* when; 0: never */
	atomic_uint_fast64_t unsaid;     /* times it came since */
};

/* What every worker shares; the counters are summed by the stats line. */
struct relay {
	struct cli_addr listen, target;
	int jobs;
	uint64_t max_conns;              /* 0: no limit */
	int64_t idle_ms, connect_ms, drain_ms, stats_ms;
	unsigned int pair_flags;         /* --copy: the planning flags of each pair */
	int notsent_lowat;               /* TCP_NOTSENT_LOWAT of each socket; 0: none */
	bool nagle;                      /* leave TCP_NODELAY off */
	bool reuseport;                  /* share the port with other processes */
	bool shared;                     /* one set of listeners for all the workers */
	bool inherited;                  /* LISTEN "-": the service manager's sockets */
	int nlisten;                     /* listeners each worker watches */
	char **listen_names;             /* LISTEN_FDNAMES, one a listener; or NULL */
	int unix_mode;                   /* a unix listener's mode; -1: the umask's */
	bool verbose;
	atomic_bool draining;
	atomic_uint_fast64_t open, total, ids, bytes[2];
	atomic_int_fast64_t pending[2];  /* held by the pairs, per direction */
	atomic_uint_fast64_t copied;     /* delivered through user memory */
	struct note accept_failed;
	int done_fd;                     /* eventfd: a worker has finished */
};

enum handle_kind { H_LISTEN, H_WAKE, H_CLIENT, H_TARGET };

/* epoll's data.ptr points at one of these, inside its owner. */
struct handle {
	enum handle_kind kind;
	int fd;
	uint32_t events;     /* registered with epoll; 0: not registered */
};

enum dir_state { D_READ, D_WRITE, D_DONE };

/* One direction: 0 is client to target, 1 target to client. */
struct dir {
	struct handle *in, *out;
	struct psplice_pair *pair; /* in to out, prepared once connected */
	enum dir_state state;
	uint64_t bytes;      /* delivered */
	uint64_t pending;    /* taken from in, held by the pair for out */
};

struct conn {
	struct conn *prev, *next;
	struct handle client, target;
	struct dir d[2];
	bool connecting;
	int64_t retry_at;    /* connect again then (unix target busy); 0: no */
	bool dead;           /* closed; freed after this batch of events */
	uint64_t id;
	int64_t deadline;    /* connect timeout, then idle timeout */
	char peer[80];
};

struct worker {
	pthread_t thread;
	struct relay *r;
	int ep;
	struct handle *listeners;  /* r->nlisten of them */
	struct handle wake;
	bool paused;         /* listeners off: --max-conns reached, or no fds */
	int64_t drain_end;   /* NEVER until draining */
	int64_t next_check;  /* earliest deadline worth a sweep */
	struct conn head;    /* circular list of open connections */
	struct conn *dead;   /* closed in this batch, linked by next */
	size_t nconns;
};

extern const char *const relay_dir_name[2];

static inline int64_t now_ms(void)
{
	return cli_now_ns() / 1000000;
}

/* relay_net.c */
void addr_text(const struct sockaddr *sa, socklen_t len, char *buf, size_t size);
int listener_handles(struct relay *r, struct worker *w);
int make_listeners(struct relay *r, struct worker *w);
void free_listeners(struct relay *r, struct worker *w);
void listener_text(const struct relay *r, const struct worker *w, int k, char *buf,
		   size_t size);
void tune(const struct relay *r, int fd);

/* relay_activate.c */
int inherit_listeners(struct relay *r, struct worker *w);
void free_names(char **names);

/* relay_worker.c */
void note_error(struct note *n, int err);
void note_flush(struct note *n, bool final);
void update_interest(struct worker *w, struct conn *c);
void listener_on(struct worker *w, bool on);
int worker_init(struct relay *r, struct worker *w);
void *worker_main(void *arg);

/* relay_conn.c */
void conn_open(struct worker *w, int cfd, const struct sockaddr *sa, socklen_t len);
void conn_event(struct worker *w, struct conn *c, struct handle *h);
void conn_close(struct worker *w, struct conn *c, const char *how, int err);
void connect_failed(struct worker *w, struct conn *c, int err);
void try_connect(struct worker *w, struct conn *c);

#endif
