/* psplice relay: the folder's header, what its files share. The command
 * offers the rest of psplice one thing, cli_cmd_relay (opts.h). Its files,
 * each calling only those below it:
 *   listener.h   the listeners' handles and the calls that make them
 *   cmd.c        the command line, the log file; then
 *   config.c     --config: a file's lines, a listener each, read by
 *   options.c    the options and operands of a command line or a line
 *   supervise.c  the main thread: listeners, workers, signals, the stats
 *                line, drain, SIGUSR2 reload, the takeover, the end; over
 *                every listener of a --config file
 *   say.c        its lines: each listener, its counters
 *   claim.c      --config: which line takes which listener passed or
 *                taken, and which binds its own
 *   metrics_http.c  --metrics: its listener, the thread that serves it
 *   metrics.c    the counters in Prometheus's text format
 *   net.c        makes the listeners, or has them taken by
 *   activate.c   from a service manager (socket activation), or by
 *   replace.c    from the running relay --replace names (peer.c:
 *                what its /proc says: a relay? its --metrics address)
 *   reload.c     hands the listeners to the relay that replaces this one
 *   worker.c     a worker's epoll loop: accepts, timeouts, the drain
 *   conn.c       one connection's state machine: connect, the two pairs
 *   proxy.c      the PROXY protocol on a connection (proxy_hdr.c: its
 *                header, parsed and written)
 *   close.c      the end of a connection: its close or reset, its record;
 *                its watch, ended when its fds cannot be watched
 *   targets.c    which TARGET, failover, the health checks
 *   gate.c       who may connect: --allow, --deny, --proxy-from (acl.c:
 *                their lists, read and matched), --max-conns-per-source
 *   log.c        the records and lines a connection leaves
 *   take.c       what a move takes: its output's room, its tokens
 *   rate.c       the token buckets of --rate and --rate-total
 *   watch.c      what the worker's epoll set waits for
 *   sock.c       an address's text, the listeners' handles and those made
 *                elsewhere, TCP options
 *   nofile.c     the open-file limit, raised for --max-conns at start
 *   notify.c     the state said to a service manager (NOTIFY_SOCKET)
 *   pidfile.c    --pid-file: written once the relay serves, removed at its
 *                end unless another relay took its listeners
 * A connection does not call its worker back: it sets what it waits for
 * through watch.c, below both, and returns; the PROXY reader says whether
 * the header is whole and the connection goes on to TARGET itself. */
#ifndef CLI_RELAY_H
#define CLI_RELAY_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "psplice.h"
#include "addr.h"
#include "sys.h"
#include "proxy_hdr.h"
#include "gate.h"

struct cli_cmd;

#define CHUNK (1u << 20)     /* asked of each move, at most */
#define ROOM_MIN (16u << 10) /* an output with less room is waited for */
#define TAKE_BLIND (32u << 10) /* a move takes as much without asking its
                                  output's room (take.c) */
#define BUDGET 16            /* calls per direction per event: fairness */
#define KEEP_MAX 1024       /* closed connections whose memory a worker keeps */
#define ACCEPT_TRIES 4     /* accepts a wakeup, through EINTR and ECONNABORTED */
#define RETRY_MS 100         /* a paused listener looks again this often */
#define RECONNECT_MS 20      /* a unix target with a full queue, the same */
#define NEVER INT64_MAX
#define NOTE_MS 5000         /* a repeated error is said at most this often */
#define PROXY_WAIT_MS 3000   /* --accept-proxy: the header comes within this */
/* The signal and value a relay started with --replace queues to the relay
 * it replaces (sigqueue(3)): that relay's listeners are served already, so
 * it drains and leaves them listening. A real-time signal, because those
 * queue: a SIGTERM already pending would swallow a second one, and the
 * relay replaced would take the handover for a plain stop. */
#define HANDOVER_SIGNAL (SIGRTMIN + 1)
#define HANDOVER_VALUE 0x72706c63
#define CUT_WAIT_MS 2000     /* a second stop signal waits this long for the workers */
#define PACE_MS 20           /* a direction out of tokens waits for this much worth */
#define RATE_MAX (1ull << 40) /* --rate and --rate-total: 1 TiB/s at most */

/* --rate or --rate-total: bytes a second (0: no limit) and the bucket's
 * size (rate.c). The state of each bucket is its "empty at" time. */
struct rate {
	uint64_t bps;
	uint64_t burst;      /* tokens a bucket holds at most */
	uint64_t quantum;    /* a direction out of tokens waits for this many */
	int64_t burst_ns;    /* the time burst takes at bps */
};

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

#define MAX_TARGETS 64       /* a connection's tried targets fit a uint64_t */

/* How a connection's target is chosen among the ones that are up. */
enum balance {
	BAL_ROUNDROBIN,  /* each in turn */
	BAL_FIRST,       /* the first in the command line's order */
	BAL_LEASTCONN    /* the one with the fewest open connections */
};

/* One TARGET operand. Its state is shared by every worker and the
 * checker: a connect that fails marks it down, a probe or a connect that
 * succeeds marks it up again, each change said once. */
struct target {
	struct cli_addr addr;
	atomic_bool down;
	atomic_uint_fast64_t conns;      /* connections to it, open or opening */
	atomic_uint_fast64_t failed;     /* connects to it that failed (--metrics) */
};

/* A listener's options, targets and counters; the counters are summed by
 * the stats line. With --config, one for each line of the file, linked by
 * next: each has its own listeners and counters, and the options its
 * connections take (struct conn's r). The first one also holds what is
 * the process's: the workers, which serve every line's listeners, the
 * reload, --replace, --metrics, the connections' ids, and the flags
 * draining, cutting, handed_over and listener_lost, which every worker
 * reads there (w->proc): N lines cost jobs workers, not N * jobs. */
struct relay {
	struct relay *next;              /* the next line's; NULL */
	struct relay *first;             /* the first line's: the process's */
	struct worker *w;                /* the first line's: the jobs workers */
	struct listener *lis;            /* jobs * nlisten: worker i's from
	                                    lis + i * nlisten (listener_at) */
	const char *config;              /* --config's file; or NULL */
	int line;                        /* its line there */
	char *config_text;               /* the file, which the lines point into */
	char **gone;                     /* socket files of listeners passed and no
	                                    longer in the file (claim.c) */
	struct cli_addr listen, target;  /* target: the first of targets */
	struct target *targets;
	int ntargets;
	enum balance balance;
	atomic_uint_fast64_t turn;       /* --balance=roundrobin's next */
	int64_t check_ms;                /* probe the down targets; 0: never */
	int64_t probe_at;                /* the checker's next probes of them */
	pthread_t checker;               /* the first line's: every line's checker */
	bool checking;                   /* it runs */
	pthread_mutex_t check_lock;      /* guards check_stop, for check_cond */
	pthread_cond_t check_cond;
	bool check_stop;
	int jobs;
	uint64_t max_conns;              /* 0: no limit */
	uint64_t per_source;             /* --max-conns-per-source; 0: no limit */
	struct acl allow, deny, proxy_from;
	struct gate *gate;               /* their state (gate.c); NULL: none asked */
	atomic_uint_fast64_t refused[REFUSE_N]; /* clients refused, by why */
	int64_t idle_ms, connect_ms, drain_ms, stats_ms;
	unsigned int pair_flags;         /* --copy: the planning flags of each pair */
	struct rate rate, rate_total;    /* per direction of a connection; of the process */
	atomic_int_fast64_t total_empty_at[2]; /* --rate-total's buckets, a direction each */
	int notsent_lowat;               /* TCP_NOTSENT_LOWAT of each socket; 0: none */
	bool nagle;                      /* leave TCP_NODELAY off */
	bool tune_accepted;              /* listeners not made here: tune each client */
	bool reuseport;                  /* share the port with other processes */
	bool shared;                     /* one set of listeners for all the workers */
	bool inherited;                  /* LISTEN "-": the service manager's sockets */
	bool made_file;                  /* its unix socket's file made here */
	int nlisten;                     /* of this line, each worker watches */
	char **listen_names;             /* LISTEN_FDNAMES, one a listener; or NULL */
	int unix_mode;                   /* a unix listener's mode; -1: the umask's */
	int send_proxy;                  /* --send-proxy: 1, --send-proxy-v2: 2; 0: none */
	bool accept_proxy;               /* a PROXY header starts each connection */
	bool verbose;
	bool json;                       /* --log-format=json */
	int log_fd;                      /* --log's file; standard error */
	atomic_bool draining;
	atomic_bool cutting;             /* a second stop signal: end every connection now */
	atomic_uint_fast64_t open, total, ids, bytes[2];
	atomic_int_fast64_t pending[2];  /* held by the pairs, per direction */
	atomic_uint_fast64_t copied;     /* delivered through user memory */
	atomic_uint_fast64_t paced;      /* times a direction waited for tokens */
	atomic_uint_fast64_t ended[16];  /* connections closed, by enum end_how */
	const char *metrics_text;        /* --metrics's address as given; or NULL */
	struct cli_addr metrics_addr;
	struct metrics *metrics;         /* its listener and thread (metrics_http.c) */
	struct note accept_failed;
	int done_fd;                     /* eventfd: a worker has finished */
	char *re_path, **re_argv;        /* what a reload runs (reload.c) */
	int ready_fd;                    /* started by a reload: say so here; or -1 */
	atomic_bool handed_over;         /* a reload or --replace took the listeners */
	atomic_bool listener_lost;       /* another process shut a listener down */
	/* A reload's child holds a copy of every fd from its fork to its
	 * exec: a connection's fds closed meanwhile stay in the workers'
	 * epoll sets. Taken for writing around fork, for reading around a
	 * connection's close, which takes its fds out of the set first while
	 * forks is not 0, as it does for memory it frees (watch.c). */
	pthread_rwlock_t fork_lock;
	atomic_int forks;                /* reloads forked, not yet ended */
	pid_t replace_pid;               /* --replace: the relay replaced; or 0 */
	int replace_fd;                  /* its pidfd until it is told; or -1 */
	const char *pid_file;            /* --pid-file; or NULL */
};

enum handle_kind { H_LISTEN, H_WAKE, H_CLIENT, H_TARGET };

/* epoll's data names one of these, inside its owner, with its gen then
 * (watch.c): an event registered for an fd since closed says an older one. */
struct handle {
	enum handle_kind kind;
	int fd;
	uint32_t events;     /* registered with epoll; 0: not registered */
	unsigned int known;  /* a connection's socket, as the relay made it:
	                        PSPLICE_FD_TCP or _UNIX, | _NONBLOCK */
	uint16_t gen;        /* bumped as its fd is closed */
};

/* D_PACED: out of tokens, waiting for the timer, input not watched. */
enum dir_state { D_READ, D_WRITE, D_PACED, D_DONE };

/* One direction: 0 is client to target, 1 target to client. */
struct dir {
	struct handle *in, *out;
	struct psplice_pair *pair; /* in to out, prepared once connected */
	enum dir_state state;
	uint64_t bytes;      /* delivered */
	uint64_t pending;    /* taken from in, held by the pair for out */
	size_t cap;          /* a move takes at most (take.c) */
	uint64_t unread;     /* at the close: left in in, dropped (close.c) */
	unsigned int methods; /* 1 << each psplice_method that moved bytes */
	atomic_int_fast64_t empty_at; /* --rate's bucket */
	int64_t wake_at;     /* D_PACED: when tokens are there, in ms */
};

/* How a connection ended, for its reset and its record. */
enum end_how {
	END_FIN,         /* both directions ended by their sender */
	END_RST,         /* a peer reset it (ECONNRESET reading it) */
	END_CLOSED,      /* a peer closed or reset it while bytes were still
	                    going to it (EPIPE writing it) */
	END_ERROR,       /* another error reading or writing a peer */
	END_IDLE,        /* --idle-timeout */
	END_DRAIN,       /* --drain-timeout after a stop signal */
	END_CONNECT,     /* TARGET could not be reached */
	END_SETUP,       /* the pairs could not be prepared, or a socket
	                    watched (the relay's resources) */
	END_PROXY,       /* --accept-proxy: no valid header in time */
	END_STOP         /* a second stop signal */
};
_Static_assert(END_STOP < 16, "struct relay's ended[] has a count for each end");

enum end_side { SIDE_RELAY, SIDE_CLIENT, SIDE_TARGET };

struct ending {
	enum end_how how;
	enum end_side side;  /* whose error, whose FIN came first */
	bool reading;        /* the error came reading from side, not writing */
	int err;
};

struct conn {
	struct conn *prev, *next;
	struct relay *r;     /* its listener's line: options, targets, counters */
	struct handle client, target;
	struct target *tgt;  /* the one tried last, connected to at the end */
	bool counted;        /* in tgt->conns */
	uint64_t tried;      /* 1 << index of each target tried */
	unsigned int turn;   /* its place in roundrobin's count */
	struct dir d[2];
	bool connecting;
	int64_t retry_at;    /* connect again then (unix target busy); 0: no */
	bool dead;           /* closed; freed after this batch of events */
	bool kept;           /* closed, its memory kept for the next one */
	uint64_t id;
	int64_t deadline;    /* connect timeout, then idle timeout */
	enum end_side first_fin; /* whose end of stream came first */
	int64_t start_ns;    /* CLOCK_REALTIME, with --log-format=json */
	int64_t start_mono;  /* cli_now_ns(), the same */
	char peer[128];      /* "unix:" and a whole sun_path */
	bool awaiting;       /* --accept-proxy: the client's header not read yet */
	struct source src;   /* its count under --max-conns-per-source */
	uint16_t hdr_len, hdr_off; /* --send-proxy*: the header, and how much is sent */
	unsigned char hdr[PROXY_OUT_MAX];
};

/* One of the process's jobs workers: its handles of every line's
 * listeners (listener_at(x, i, k)) and the connections they accepted. */
struct worker {
	pthread_t thread;
	struct relay *proc;  /* the first line's: the process's state */
	int i;               /* its place among the workers */
	int ep;
	struct handle wake;
	bool paused;         /* some listener off: --max-conns reached, or no fds */
	bool rotate;         /* a line has --rate-total: see rotate() */
	int64_t drain_end;   /* NEVER until draining */
	int64_t next_check;  /* earliest deadline worth a sweep */
	struct conn head;    /* circular list of open connections */
	struct conn *dead;   /* closed in this batch, linked by next */
	struct conn *spare;  /* closed earlier, kept for new ones (watch.c) */
	size_t nconns;
	int nkept;           /* closed and kept, in dead or spare */
};

extern const char *const relay_dir_name[2];

static inline int64_t now_ms(void)
{
	return cli_now_ns() / 1000000;
}

#define WAIT_MAX_MS 3600000  /* the longest wait epoll_wait or poll is given */

/* The timeout of a wait for at (ms; NEVER: -1, none). An int holds 24.8
 * days of ms: a later deadline (--idle-timeout=3000000) cast to one would
 * wrap, a negative timeout waiting for ever. It is waited for in parts. */
static inline int wait_ms(int64_t at, int64_t now)
{
	if (at == NEVER)
		return -1;
	if (at <= now)
		return 0;
	return at - now < WAIT_MAX_MS ? (int)(at - now) : WAIT_MAX_MS;
}

/* options.c: the options into r and o, from a command line; from a config
 * line (o NULL), which takes those of a listener alone. Then LISTEN and
 * the TARGETs, at optind. Any error is a usage error. */
struct relay_opts {
	uint64_t jobs;       /* 0: not given */
	const char *log, *config;
	bool check;          /* --check: read and check, start nothing */
};
void relay_options(const struct cli_cmd *cmd, int argc, char **argv, struct relay *r,
		   struct relay_opts *o);
void relay_operands(const struct cli_cmd *cmd, int argc, char **argv, struct relay *r);

/* config.c: the lines of path, each a relay made from base; errors name
 * the line. config_free frees them all. */
struct relay *config_read(const struct cli_cmd *cmd, const char *path,
			  const struct relay *base);
void config_free(struct relay *head);

/* claim.c: every line's listeners, passed, taken or bound (-1 once said
 * why not); once the relay serves, the files of unix listeners removed
 * from the file go (release, serving; or only the memory). */
int claim_listeners(struct relay *head);
void claim_release(struct relay *head, bool serving);

/* say.c: each listener's line, as it starts; its counters. */
void relay_listening(const struct relay *r);
void relay_stats(const struct relay *r);

/* supervise.c: the main thread, from the listeners to the end; the
 * command's exit status. */
int relay_run(struct relay *r);

/* sock.c: an address's text for messages, each worker's handles of the
 * listeners (no fd yet; free_listeners frees them), a connection's TCP
 * options. */
void addr_text(const struct sockaddr *sa, socklen_t len, char *buf, size_t size);
int listener_handles(struct relay *r);
int serve_fds(struct relay *r, int *fds, int n);
void tune(const struct relay *r, int fd);

/* notify.c */
void notify_ready(pid_t main_pid);
void notify_reloading(void);
void notify_reloaded(pid_t pid);
void notify_stopping(void);

/* pidfile.c */
void pidfile_write(const struct relay *r);
void pidfile_remove(const struct relay *r);

/* nofile.c */
void nofile_raise(const struct relay *r);
void nofile_restore(void);

/* reload.c */
void relay_signals(sigset_t *set);
char *slurp(const char *path, size_t *len);
int reload_prepare(struct relay *r);
void reload_free(struct relay *r);
int reload_ready_fd(void);
int reload_say_ready(struct relay *r);
pid_t reload_start(struct relay *r, int *ready_rd);
bool reload_ended(struct relay *r, pid_t pid, int fd);

/* worker.c */
void note_error(struct note *n, int err);
void note_flush(struct note *n, bool final);
int worker_init(struct relay *proc, struct worker *w, int i);
void *worker_main(void *arg);

/* watch.c: what the worker's epoll set waits for: h's events (0: out of
 * the set), a connection's from its state, the listeners on or off (a
 * line's, or every line's); each -errno when epoll_ctl fails. */
int set_events(struct worker *w, struct handle *h, uint32_t events);
int update_interest(struct worker *w, struct conn *c);
void unwatch(struct worker *w, struct handle *h);
struct handle *event_handle(uint64_t data);
bool closing_keeps(struct worker *w);
void closing_begin(struct worker *w, struct handle *a, struct handle *b, bool kept);
void closing_end(struct worker *w);
struct conn *conn_alloc(struct worker *w);
void conn_bury(struct worker *w, bool all);
int listener_on(struct worker *w, struct relay *x, bool on);
int listeners_on(struct worker *w, bool on);

/* close.c: the end of a connection, its record and its reset or close;
 * conn_watch: its fds watched for what it waits for, or its end when one
 * cannot be. */
void conn_close(struct worker *w, struct conn *c, const struct ending *e);
void conn_watch(struct worker *w, struct conn *c);
void conn_refuse(struct worker *w, struct conn *c);

/* conn.c */
void conn_open(struct worker *w, struct relay *r, int cfd, const struct sockaddr *sa,
	       socklen_t len);
void conn_event(struct worker *w, struct conn *c, struct handle *h, uint32_t events);
void connect_failed(struct worker *w, struct conn *c, int err);
void conn_idle(struct worker *w, struct conn *c);
int64_t conn_wake_at(const struct conn *c);
void conn_wake(struct worker *w, struct conn *c, int64_t now);
void try_connect(struct worker *w, struct conn *c);
int conn_target(struct worker *w, struct conn *c);

/* take.c: the length of d's next move, within its output's room and its
 * tokens; 0 when d waits (for EPOLLOUT, or D_PACED). writable: epoll said
 * d's output is. */
size_t move_take(struct worker *w, struct conn *c, struct dir *d, bool writable);
/* What a move of len gave (res): d takes less after its output refused
 * bytes, more again as its output keeps up. */
void move_taken(struct dir *d, const struct psplice_result *res, size_t len);

/* rate.c */
void rate_init(struct rate *rt, uint64_t bps);
uint64_t bucket_allows(const struct rate *rt, atomic_int_fast64_t *empty_at, int64_t now,
		       int64_t *ready);
void bucket_spend(const struct rate *rt, atomic_int_fast64_t *empty_at, int64_t now,
		  uint64_t n);

/* proxy.c */
void proxy_prepare(const struct relay *r, struct conn *c);
void proxy_start(struct worker *w, struct conn *c);
bool proxy_read(struct worker *w, struct conn *c);
void proxy_timeout(struct worker *w, struct conn *c);
int proxy_send(struct conn *c);

/* targets.c */
void targets_text(const struct relay *r, char *buf, size_t size);
struct target *target_pick(struct relay *r, struct conn *c);
void target_leave(struct relay *r, struct conn *c);
void target_down(struct relay *r, struct target *t, int err);
void target_up(struct relay *r, struct target *t);
int checker_start(struct relay *proc);
void checker_stop(struct relay *proc);

/* log.c: the records; each end's name, as the JSON record says it. */
/* Under --config, a connection's text line begins with its listener's
 * LISTEN, as the stats lines do: the two arguments of "%s%s". */
#define LISTENER(r) (r)->config ? (r)->listen.text : "", (r)->config ? ": " : ""
extern const char *const relay_end_name[END_STOP + 1];
void log_open(struct relay *r, struct conn *c);
void log_close(struct relay *r, const struct conn *c, const struct ending *e, bool cut);
void log_start(const struct relay *r);
void log_stop(void);

/* metrics.c: the exposition text of every counter, malloc'd; NULL when out
 * of memory. */
char *metrics_render(struct relay *r, size_t *len);


/* peer.c: whether pid runs psplice relay (said when not); the address
 * its --metrics listens on, from its command line: false when it has none
 * (or the line cannot be read). */
bool is_relay(pid_t pid);
bool metrics_addr_of(pid_t pid, struct cli_addr *a);

/* metrics_http.c: --metrics's listener, made before any worker starts (-1
 * when it cannot be, said); its thread; woken when the listeners were
 * handed over, it closes the listener; stopped and freed at the end. */
int metrics_listen(struct relay *r);
int metrics_start(struct relay *r);
void metrics_wake(struct relay *r);
void metrics_stop(struct relay *r);

/* Each worker's handle of a listener; what makes and takes them. */
#include "listener.h"
#endif
