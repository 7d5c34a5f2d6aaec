/* The bugs the differential fuzzer (tests/fuzz/) found, each as a plain
 * test; the shrunk sequences are in tests/fuzz/regress/.
 *
 * A file at its end (or an input offset past it, however far) into a pipe
 * whose reader is gone: the end of input, 0 with no error, as into a
 * socket, and no SIGPIPE. splice(2) looks for the reader before it reads
 * the file, and said EPIPE; so does sendfile(2) (PSPLICE_F_ONLY).
 *
 * The same into a full pipe, O_NONBLOCK or with PSPLICE_F_NONBLOCK: the
 * end of input, not EAGAIN (splice(2) looks for room first). And into a
 * full blocking socket with PSPLICE_F_NONBLOCK, where the poll made before
 * the step said EAGAIN. */
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include "t.h"

static volatile sig_atomic_t sigpipes;

static void on_sigpipe(int sig)
{
	(void)sig;
	sigpipes++;
}

static void at_end_into_gone_reader(int fd, int w)
{
	int64_t offs[] = { 5, 4096, INT64_MAX - 7 }, off;
	struct psplice_result r;
	struct psplice_pair *p;
	size_t i;

	for (i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		off = offs[i];
		T_EQ(psplice_ex(fd, &off, w, NULL, 4, 0, &r), 0);
		T_RESULT(r, 0, PSPLICE_SIDE_NONE, 0, 0);
		T_EQ(off, offs[i]);
		off = offs[i];
		T_EQ(psplice_copy(fd, &off, w, NULL, PSPLICE_TO_EOF, 0, &r), 0);
		T_RESULT(r, 0, PSPLICE_SIDE_NONE, 0, 0);
	}
	/* sendfile(2) alone, which looks for the reader first too. */
	off = 5;
	T_EQ(psplice_ex(fd, &off, w, NULL, 4, PSPLICE_F_ONLY(PSPLICE_METHOD_SENDFILE), &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, 0, 0);
	T_EQ(lseek(fd, 0, SEEK_END), 5);
	T_EQ(psplice(fd, NULL, w, NULL, 65536, 0), 0);
	T_EQ(psplice_copy(fd, NULL, w, NULL, PSPLICE_TO_EOF, PSPLICE_F_NONBLOCK, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, 0, 0);
	p = psplice_pair_new(fd, w, 0);
	T_ASSERT(p);
	T_EQ(psplice_pair_move(p, NULL, NULL, 4096, 0, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, 0, 0);
	psplice_pair_free(p);
	/* Short of the end, the gone reader is the error, as before. */
	off = 0;
	T_ERRNO(psplice_ex(fd, &off, w, NULL, 4, 0, &r), EPIPE);
	T_RESULT(r, EPIPE, PSPLICE_SIDE_OUT, 0, 0);
}

static void at_end_into_full_pipe(int fd)
{
	int64_t off = 65536, big = INT64_MAX - 7;
	struct psplice_result r;
	struct psplice_pair *p;
	int pp[2];

	T_OK(pipe2(pp, O_NONBLOCK));
	T_EQ(fcntl(pp[1], F_GETPIPE_SZ), 65536);
	T_EQ(psplice_copy(fd, NULL, pp[1], NULL, PSPLICE_TO_EOF, 0, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, 65536, 65536);
	/* Short of the end, a full pipe is EAGAIN on the output, as before. */
	T_ERRNO(psplice_ex(fd, &(int64_t){ 0 }, pp[1], NULL, 4096, 0, &r), EAGAIN);
	T_EQ(r.side, PSPLICE_SIDE_OUT);
	T_EQ(psplice_ex(fd, NULL, pp[1], NULL, 4096, 0, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, 0, 0);
	T_EQ(psplice_ex(fd, &off, pp[1], NULL, 4096, PSPLICE_F_NONBLOCK, &r), 0);
	T_EQ(psplice_ex(fd, &big, pp[1], NULL, 7, 0, &r), 0);
	T_EQ(psplice_ex(fd, &big, pp[1], NULL, 7, PSPLICE_F_ONLY(PSPLICE_METHOD_SENDFILE), &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, 0, 0);
	T_EQ(psplice_copy(fd, &off, pp[1], NULL, PSPLICE_TO_EOF, 0, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, 0, 0);
	p = psplice_pair_new(fd, pp[1], 0);
	T_ASSERT(p);
	T_EQ(psplice_pair_move(p, NULL, NULL, 65536, PSPLICE_F_NONBLOCK, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, 0, 0);
	psplice_pair_free(p);
	/* A blocking pipe with PSPLICE_F_NONBLOCK: the same. */
	T_OK(fcntl(pp[1], F_SETFL, 0));
	T_EQ(psplice_ex(fd, NULL, pp[1], NULL, 4096, PSPLICE_F_NONBLOCK, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, 0, 0);
	close(pp[0]);
	close(pp[1]);
}

static void at_end_into_full_socket(int fd)
{
	static char junk[65536];
	struct psplice_result r;
	struct psplice_pair *p;
	int sv[2], i;

	T_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	for (i = 0; i < 10000 && send(sv[1], junk, sizeof(junk), MSG_DONTWAIT) > 0; i++)
		;
	T_EQ(lseek(fd, 0, SEEK_END), 65536);
	T_ERRNO(psplice_ex(fd, &(int64_t){ 0 }, sv[1], NULL, 4096, PSPLICE_F_NONBLOCK, &r),
		EAGAIN);
	T_EQ(r.side, PSPLICE_SIDE_OUT);
	T_EQ(psplice_ex(fd, NULL, sv[1], NULL, 4096, PSPLICE_F_NONBLOCK, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, 0, 0);
	T_EQ(psplice_copy(fd, NULL, sv[1], NULL, PSPLICE_TO_EOF, PSPLICE_F_NONBLOCK, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, 0, 0);
	p = psplice_pair_new(fd, sv[1], 0);
	T_ASSERT(p);
	T_EQ(psplice_pair_move(p, NULL, NULL, 65536, PSPLICE_F_NONBLOCK, &r), 0);
	psplice_pair_free(p);
	close(sv[0]);
	close(sv[1]);
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_sigpipe };
	int fd, p[2];

	t_dir(argc, argv);
	sigaction(SIGPIPE, &sa, NULL);
	fd = t_make_file(t_path("five"), 5, 1);
	T_OK(pipe(p));
	close(p[0]);
	at_end_into_gone_reader(fd, p[1]);
	T_EQ(sigpipes, 0);
	/* The same for a caller that keeps SIGPIPE ignored and says so. */
	signal(SIGPIPE, SIG_IGN);
	T_EQ(psplice(fd, NULL, p[1], NULL, 4, PSPLICE_F_SIGPIPE_IGNORED), 0);
	close(p[1]);
	close(fd);
	fd = t_make_file(t_path("64k"), 65536, 2);
	at_end_into_full_pipe(fd);
	at_end_into_full_socket(fd);
	close(fd);
	return T_PASS;
}
