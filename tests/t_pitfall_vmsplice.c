/* Vmsplice hands the kernel user pages that must not change
 * or be freed until the reader consumed them, and SPLICE_F_GIFT is going
 * away. psplice's planner never uses it (PSPLICE_METHOD_VMSPLICE is
 * reserved): asking for it alone fails with EOPNOTSUPP and moves nothing,
 * and no transfer reports it.
 * Seen in uutils/coreutils#7625 (a vmspliced buffer freed while a pipe
 * still held its pages), checkpoint-restore/criu#3077. */
#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "t.h"

#define ONLY_VM PSPLICE_F_ONLY(PSPLICE_METHOD_VMSPLICE)
#define SIZE 10000

static void refused(int in, int out)
{
	struct psplice_result r;
	int64_t before = t_pos(in);

	T_EQ(psplice_copy(in, NULL, out, NULL, PSPLICE_TO_EOF, ONLY_VM, &r), -1);
	T_EQ(errno, EOPNOTSUPP);
	T_RESULT(r, EOPNOTSUPP, PSPLICE_SIDE_NONE, 0, 0);
	T_EQ(r.parked_len, 0);
	T_ERRNO(psplice(in, NULL, out, NULL, 4096, ONLY_VM), EOPNOTSUPP);
	T_EQ_U(psplice_last()->in_bytes, 0);
	if (before >= 0)
		T_EQ(t_pos(in), before);
}

int main(int argc, char **argv)
{
	struct psplice_result r;
	int f, out, p[2], q[2], s[2];
	int64_t oi = 0;

	t_dir(argc, argv);
	alarm(55);
	f = t_make_file(t_path("src"), SIZE, 18);
	T_EQ(lseek(f, 0, SEEK_SET), 0);
	out = open(t_path("out"), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	T_OK(out);
	t_pipe(p);
	t_pipe(q);
	t_unix_pair(s);

	refused(f, p[1]);        /* file to pipe */
	refused(f, out);         /* file to file */
	T_EQ(t_pos(out), 0);
	t_fill_fd(q[1], 1000, 18);
	refused(q[0], p[1]);     /* pipe to pipe */
	T_EQ(t_queued(q[0]), 1000);
	t_fill_fd(s[1], 1000, 18);
	refused(s[0], p[1]);     /* socket to pipe */
	T_EQ(t_queued(s[0]), 1000);
	refused(q[0], s[1]);     /* pipe to socket */
	T_EQ(t_queued(q[0]), 1000);
	T_EQ(t_queued(p[0]), 0);

	/* The planner's own choice for the pairs vmsplice would suit. */
	T_EQ(psplice_copy(f, &oi, p[1], NULL, SIZE, 0, &r), 0);
	T_ASSERT(r.method != PSPLICE_METHOD_VMSPLICE);
	T_EQ(psplice_copy(q[0], NULL, p[1], NULL, 1000, 0, &r), 0);
	T_ASSERT(r.method != PSPLICE_METHOD_VMSPLICE);
	T_EQ(t_queued(p[0]), SIZE + 1000);
	T_ASSERT(t_check_fd(p[0], -1, SIZE, 18, 0));
	T_ASSERT(t_check_fd(p[0], -1, 1000, 18, 0));
	return T_PASS;
}
