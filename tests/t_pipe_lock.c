/* A blocking move from an idle socket into a pipe waits for its input
 * without holding the pipe. splice(2) waits for the socket inside the
 * kernel with the pipe's lock held: until a byte came, the pipe's reader
 * could neither read what the pipe already held nor close its end, and a
 * process exiting with an end of the pipe open could not finish; each
 * sleeps uninterruptibly, deaf even to SIGKILL. Here the reader takes the
 * bytes already in the pipe and leaves while the move waits, and the move
 * then fails with EPIPE on the output side, without SIGPIPE. Through
 * psplice_ex, psplice_copy and a prepared pair, from a Unix and a TCP
 * socket. Each case runs in a child of its own: one whose reader is stuck
 * still ends, when the child exits. */
#include <poll.h>
#include <pthread.h>
#include <unistd.h>

#include "t.h"

#define SEED 41
#define HEAD 5           /* bytes in the pipe before the move that waits */
#define LIMIT_MS 5000    /* far more than any step here needs */

enum entry { E_EX, E_COPY, E_PAIR, E_COUNT };

static const char *const entry_name[] = { "psplice_ex", "psplice_copy", "pair" };

struct side {
	int fd;              /* the pipe's read end (reader) or the socket (mover) */
	int out;             /* the mover's pipe write end */
	enum entry entry;
	struct psplice_result r;
	int done[2];         /* a byte arrives here when the thread is done */
	int tid;
	bool ok;
};

static void finish(struct side *s)
{
	T_EQ(write(s->done[1], "", 1), 1);
}

/* The move that waits: the socket stays idle. */
static void *mover(void *arg)
{
	struct side *s = arg;
	struct psplice_pair *p;

	__atomic_store_n(&s->tid, gettid(), __ATOMIC_RELEASE);
	if (s->entry == E_EX) {
		psplice_ex(s->fd, NULL, s->out, NULL, 4096, 0, &s->r);
	} else if (s->entry == E_COPY) {
		psplice_copy(s->fd, NULL, s->out, NULL, PSPLICE_TO_EOF, 0, &s->r);
	} else {
		p = psplice_pair_new(s->fd, s->out, 0);
		T_ASSERT(p);
		psplice_pair_move(p, NULL, NULL, 4096, 0, &s->r);
		psplice_pair_free(p);
	}
	finish(s);
	return NULL;
}

/* The pipe's reader: takes what is there, and leaves. */
static void *reader(void *arg)
{
	struct side *s = arg;
	char buf[HEAD];
	size_t got = 0;
	ssize_t n;

	while (got < HEAD && (n = read(s->fd, buf + got, HEAD - got)) > 0)
		got += (size_t)n;
	s->ok = got == HEAD && t_check_buf(buf, HEAD, SEED, 0);
	close(s->fd);
	finish(s);
	return NULL;
}

static bool done_within(const struct side *s, int ms)
{
	struct pollfd p = { .fd = s->done[0], .events = POLLIN };

	return poll(&p, 1, ms) == 1;
}

/* Until the thread sleeps: in its wait for the socket, as nothing else
 * in a move sleeps. */
static void wait_asleep(const struct side *s)
{
	char path[64], buf[256], *state;
	int tid, n = 0;
	FILE *f;

	while ((tid = __atomic_load_n(&s->tid, __ATOMIC_ACQUIRE)) == 0)
		usleep(1000);
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	for (; n < LIMIT_MS; n++) {
		f = fopen(path, "r");
		T_ASSERT(f && fgets(buf, sizeof(buf), f));
		fclose(f);
		state = strrchr(buf, ')');
		if (state && state[1] == ' ' && state[2] == 'S')
			return;
		usleep(1000);
	}
	T_FAILED("the move never waited");
}

static void one_case(void *arg)
{
	const int *c = arg;
	struct side mv = { .entry = (enum entry)c[1] }, rd = { 0 };
	struct psplice_result r;
	pthread_t tm, tr;
	int s[2], p[2];

	(c[0] ? t_tcp_pair : t_unix_pair)(s);
	t_pipe(p);
	T_OK(pipe(mv.done));
	T_OK(pipe(rd.done));
	t_fill_fd(s[1], HEAD, SEED);
	T_EQ(psplice_ex(s[0], NULL, p[1], NULL, HEAD, 0, &r), HEAD);
	mv.fd = s[0];
	mv.out = p[1];
	rd.fd = p[0];
	T_EQ(pthread_create(&tm, NULL, mover, &mv), 0);
	wait_asleep(&mv);
	T_EQ(pthread_create(&tr, NULL, reader, &rd), 0);
	if (!done_within(&rd, LIMIT_MS))
		T_FAILED("the pipe's reader is locked out while the move waits for input");
	T_ASSERT(rd.ok);
	if (!done_within(&mv, LIMIT_MS))
		T_FAILED("the move waits on after the pipe's reader left");
	T_EQ(pthread_join(tm, NULL), 0);
	T_EQ(pthread_join(tr, NULL), 0);
	T_RESULT(mv.r, EPIPE, PSPLICE_SIDE_OUT, 0, 0);
	T_EQ(mv.r.parked_len, 0);
	T_EQ(t_queued(s[0]), 0);
}

int main(int argc, char **argv)
{
	int fails = 0;

	t_dir(argc, argv);
	for (int tcp = 0; tcp < 2; tcp++)
		for (int e = 0; e < E_COUNT; e++) {
			int c[2] = { tcp, e };

			if (t_child(one_case, c) != T_PASS) {
				fprintf(stderr, "case failed: %s, %s->pipe\n", entry_name[e],
					tcp ? "tcp" : "unix");
				fails++;
			}
		}
	if (fails)
		T_FAILED("%d of %d cases failed", fails, 2 * E_COUNT);
	return T_PASS;
}
