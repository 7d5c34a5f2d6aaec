/* Eight threads read one file through one fd with their own offsets into
 * eight sinks of different kinds at once, some with psplice_copy, some with
 * single psplice steps. Then many short-lived threads each use their own
 * internal pipe. Checks every byte, every offset, the shared file position
 * and that exiting threads give their pipes back. */
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include "t.h"

#define NJOBS 8
#define NCHURN 16
#define SEED 7
#define SIZE ((uint64_t)(16u << 20) + 3)
#define SHARED_POS 4321
#define CHURN_LEN 100000

enum sink { SINK_FILE, SINK_PIPE, SINK_UNIX, SINK_TCP };

struct job {
	int id, sink;
	bool steps;            /* psplice() steps rather than one psplice_copy */
	unsigned int flags;
	int want_method;
	int64_t start, off;    /* input offset: where it starts, where it ended */
	int src, out, peer;    /* out is written by the worker, peer drained */
	int rc, err, method;   /* what the worker saw */
	uint64_t moved, got;   /* delivered by psplice, read by the drainer */
	int64_t bad_at;        /* first byte the drainer found wrong, or -1 */
	pthread_t worker, drainer;
};

static const struct {
	int sink;
	bool steps;
	unsigned int flags;
	int method;
} plan[NJOBS] = {
	{ SINK_FILE, false, 0, PSPLICE_METHOD_COPY_FILE_RANGE },
	{ SINK_FILE, true, PSPLICE_F_ONLY(PSPLICE_METHOD_SPLICE_PIPE), PSPLICE_METHOD_SPLICE_PIPE },
	{ SINK_PIPE, false, 0, PSPLICE_METHOD_SPLICE },
	{ SINK_PIPE, true, 0, PSPLICE_METHOD_SPLICE },
	{ SINK_UNIX, false, 0, PSPLICE_METHOD_SENDFILE },
	/* sendfile cannot carry MORE: the internal pipe takes it. */
	{ SINK_TCP, true, PSPLICE_F_MORE, PSPLICE_METHOD_SPLICE_PIPE },
	{ SINK_UNIX, false, PSPLICE_F_ONLY(PSPLICE_METHOD_SPLICE_PIPE), PSPLICE_METHOD_SPLICE_PIPE },
	{ SINK_TCP, true, 0, PSPLICE_METHOD_SENDFILE },
};

static uint8_t *ref; /* the whole source, read only once the threads run */

static void run_steps(struct job *j, int64_t *oo)
{
	size_t chunk = 65536 + (size_t)j->id * 4099;
	uint64_t limit = SIZE / chunk + 100;
	ssize_t n;

	for (uint64_t i = 0; i < limit; i++) {
		n = psplice(j->src, &j->off, j->out, oo, chunk, j->flags);
		if (n <= 0) {
			j->rc = (int)n;
			j->err = n < 0 ? errno : 0;
			return;
		}
		j->moved += (uint64_t)n;
		j->method = psplice_last()->method;
	}
	j->rc = -1;
	j->err = ELOOP; /* never reached the end */
}

static void *work(void *arg)
{
	struct job *j = arg;
	struct psplice_result r;
	int64_t oo = 0, *oop = j->sink == SINK_FILE ? &oo : NULL;

	j->off = j->start;
	if (j->steps) {
		run_steps(j, oop);
	} else {
		j->rc = psplice_copy(j->src, &j->off, j->out, oop, PSPLICE_TO_EOF,
				     j->flags, &r);
		j->err = r.error;
		j->moved = r.out_bytes;
		j->method = r.method;
	}
	/* End of stream for the drainer. */
	if (j->sink != SINK_FILE)
		close(j->out);
	return NULL;
}

static void *drain(void *arg)
{
	struct job *j = arg;
	uint64_t want = SIZE - (uint64_t)j->start;
	uint8_t *buf = malloc(1 << 16);
	ssize_t n;

	j->bad_at = -1;
	for (;;) {
		n = read(j->peer, buf, 1 << 16);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (j->got + (uint64_t)n > want ||
		    memcmp(buf, ref + j->start + j->got, (size_t)n)) {
			j->bad_at = (int64_t)j->got;
			break;
		}
		j->got += (uint64_t)n;
	}
	free(buf);
	return NULL;
}

static void make_sink(struct job *j, int i)
{
	char name[32];
	int fds[2];

	j->sink = plan[i].sink;
	switch (j->sink) {
	case SINK_FILE:
		snprintf(name, sizeof(name), "out%d", i);
		j->out = open(t_path(name), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		T_OK(j->out);
		j->peer = -1;
		return;
	case SINK_PIPE:
		t_pipe(fds);
		j->out = fds[1];
		j->peer = fds[0];
		return;
	case SINK_UNIX:
		t_unix_pair(fds);
		break;
	default:
		t_tcp_pair(fds);
		break;
	}
	j->out = fds[0];
	j->peer = fds[1];
}

static void start(struct job *j)
{
	T_EQ(pthread_create(&j->worker, NULL, work, j), 0);
	if (j->peer >= 0)
		T_EQ(pthread_create(&j->drainer, NULL, drain, j), 0);
}

static void finish(struct job *j)
{
	uint64_t want = SIZE - (uint64_t)j->start;
	struct stat st;

	T_EQ(pthread_join(j->worker, NULL), 0);
	if (j->peer >= 0)
		T_EQ(pthread_join(j->drainer, NULL), 0);
	if (j->rc != 0 || j->err)
		T_FAILED("job %d: rc %d, %s", j->id, j->rc, strerror(j->err));
	T_EQ_U(j->moved, want);
	T_EQ(j->off, (int64_t)SIZE);
	T_EQ(j->method, plan[j->id].method);
	if (j->sink == SINK_FILE) {
		T_OK(fstat(j->out, &st));
		T_EQ(st.st_size, (int64_t)want);
		T_ASSERT(t_check_fd(j->out, 0, want, SEED, (uint64_t)j->start));
		/* Positional on both sides: the output's position too. */
		T_EQ(t_pos(j->out), 0);
		close(j->out);
	} else {
		T_EQ(j->bad_at, -1);
		T_EQ_U(j->got, want);
		close(j->peer);
	}
}

static void readers(int src)
{
	struct job jobs[NJOBS];
	int i;

	memset(jobs, 0, sizeof(jobs));
	for (i = 0; i < NJOBS; i++) {
		jobs[i].id = i;
		jobs[i].src = src;
		jobs[i].steps = plan[i].steps;
		jobs[i].flags = plan[i].flags;
		/* Odd starts, so no two threads read the same pages in step. */
		jobs[i].start = (int64_t)i * 999983;
		make_sink(&jobs[i], i);
	}
	for (i = 0; i < NJOBS; i++)
		start(&jobs[i]);
	for (i = 0; i < NJOBS; i++)
		finish(&jobs[i]);
}

struct churn {
	int in[2], out[2];
	int rc, err, method;
	uint64_t moved;
	bool same;
	pthread_t t;
};

/* Socket to socket goes through this thread's own internal pipe, which the
 * thread's exit must close. */
static void *churn(void *arg)
{
	struct churn *c = arg;
	struct psplice_result r;
	uint8_t *buf = calloc(1, CHURN_LEN);
	uint64_t got = 0;
	ssize_t n;

	c->rc = -1;
	if (write(c->in[1], ref, CHURN_LEN) != CHURN_LEN)
		goto out;
	c->rc = psplice_copy(c->in[0], NULL, c->out[0], NULL, CHURN_LEN, 0, &r);
	c->err = r.error;
	c->moved = r.out_bytes;
	c->method = r.method;
	while (got < CHURN_LEN) {
		n = read(c->out[1], buf + got, CHURN_LEN - got);
		if (n <= 0)
			break;
		got += (uint64_t)n;
	}
	c->same = got == CHURN_LEN && !memcmp(buf, ref, CHURN_LEN);
out:
	free(buf);
	return NULL;
}

static void pool_churn(void)
{
	struct churn c[NCHURN];
	int i;

	memset(c, 0, sizeof(c));
	for (i = 0; i < NCHURN; i++) {
		t_unix_pair(c[i].in);
		t_unix_pair(c[i].out);
	}
	for (i = 0; i < NCHURN; i++)
		T_EQ(pthread_create(&c[i].t, NULL, churn, &c[i]), 0);
	for (i = 0; i < NCHURN; i++) {
		T_EQ(pthread_join(c[i].t, NULL), 0);
		T_EQ(c[i].rc, 0);
		T_EQ(c[i].err, 0);
		T_EQ_U(c[i].moved, CHURN_LEN);
		T_EQ(c[i].method, PSPLICE_METHOD_SPLICE_PIPE);
		T_ASSERT(c[i].same);
		close(c[i].in[0]);
		close(c[i].in[1]);
		close(c[i].out[0]);
		close(c[i].out[1]);
	}
}

int main(int argc, char **argv)
{
	int src, fds_before;

	t_dir(argc, argv);
	/* This thread never calls psplice: every internal pipe belongs to a
	 * thread that exits before the count is taken again. */
	fds_before = t_count_fds();
	T_ASSERT(fds_before > 0);
	src = t_make_file(t_path("src"), SIZE, SEED);
	ref = malloc(SIZE);
	T_ASSERT(ref);
	t_gen(SEED, 0, ref, SIZE);
	T_EQ(lseek(src, SHARED_POS, SEEK_SET), SHARED_POS);

	readers(src);
	T_EQ(t_pos(src), SHARED_POS);
	pool_churn();

	close(src);
	T_EQ(t_count_fds(), fds_before);
	free(ref);
	return T_PASS;
}
