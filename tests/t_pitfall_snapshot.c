/* Splicing a file hands the reader references to the file's
 * cached pages, not a copy: a write to the source after the call, before
 * the bytes are consumed, may show through. What psplice guarantees, and
 * this test holds it to:
 *  - a file output is a copy: once the call returned, later writes to the
 *    source never change it;
 *  - a copy through user memory is a snapshot of the file when it was read;
 *  - a pipe or socket output carries, at every position, the file's byte as
 *    it was when the call read it or as it was rewritten later: never a
 *    byte from elsewhere, never a shifted or missing byte.
 * Callers that need a snapshot into a pipe or socket must not write the
 * source until the reader has consumed the bytes (psplice(3)).
 * Seen in systemd/systemd#29044 (splice as a general copy corrupted
 * backups). */
#include <fcntl.h>
#include <unistd.h>

#include "t.h"

#define SIZE 16384
#define AT 4096  /* the rewritten range */
#define LEN 4096
#define OLD 11
#define NEW 12

static int src_fd;

static void rewrite(void)
{
	uint8_t buf[LEN];

	t_gen(NEW, 0, buf, LEN);
	T_EQ(pwrite(src_fd, buf, LEN, AT), LEN);
}

static void restore(void)
{
	uint8_t buf[LEN];

	t_gen(OLD, AT, buf, LEN);
	T_EQ(pwrite(src_fd, buf, LEN, AT), LEN);
}

/* Read SIZE bytes from fd: outside the rewritten range the old bytes, inside
 * each byte old or new; with snapshot, the old bytes only. */
static void check_stream(int fd, bool snapshot)
{
	uint8_t got[SIZE], old[SIZE], new[LEN];
	size_t n = 0;
	ssize_t k;

	while (n < SIZE && (k = read(fd, got + n, SIZE - n)) > 0)
		n += (size_t)k;
	T_EQ(n, SIZE);
	t_gen(OLD, 0, old, SIZE);
	t_gen(NEW, 0, new, LEN);
	T_ASSERT(memcmp(got, old, AT) == 0);
	T_ASSERT(memcmp(got + AT + LEN, old + AT + LEN, SIZE - AT - LEN) == 0);
	for (size_t i = 0; i < LEN; i++) {
		if (got[AT + i] == old[AT + i])
			continue;
		if (snapshot || got[AT + i] != new[i])
			T_FAILED("byte %zu: %#x is neither the old %#x nor the new %#x",
				 AT + i, got[AT + i], old[AT + i], new[i]);
	}
}

static void file_output(void)
{
	int out = open(t_path("copy"), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	struct psplice_result r;
	int64_t oi = 0, oo = 0;

	T_OK(out);
	T_EQ(psplice_copy(src_fd, &oi, out, &oo, PSPLICE_TO_EOF, 0, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, SIZE, SIZE);
	rewrite();
	T_ASSERT(t_check_fd(out, 0, SIZE, OLD, 0));
	/* Through the internal pipe too: drained before the call returns. */
	oi = oo = 0;
	restore();
	T_EQ(psplice_copy(src_fd, &oi, out, &oo, PSPLICE_TO_EOF,
			  PSPLICE_F_ONLY(PSPLICE_METHOD_SPLICE_PIPE), &r), 0);
	T_EQ(r.method, PSPLICE_METHOD_SPLICE_PIPE);
	rewrite();
	T_ASSERT(t_check_fd(out, 0, SIZE, OLD, 0));
	restore();
	close(out);
}

/* Into a pipe by splice, by user memory, and into a socket by sendfile; the
 * source is rewritten between the call and the reading. */
static void stream_output(unsigned int flags, int method, bool socket, bool snapshot)
{
	struct psplice_result r;
	int64_t oi = 0;
	int fds[2];

	if (socket)
		t_unix_pair(fds);
	else
		t_pipe(fds);
	/* The pipe's writing end is fds[1], the socket's either. */
	T_EQ(psplice_copy(src_fd, &oi, fds[1], NULL, SIZE, flags, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, SIZE, SIZE);
	T_EQ(r.method, method);
	rewrite();
	close(fds[1]);
	check_stream(fds[0], snapshot);
	close(fds[0]);
	restore();
}

int main(int argc, char **argv)
{
	t_dir(argc, argv);
	alarm(55);
	src_fd = t_make_file(t_path("src"), SIZE, OLD);
	file_output();
	stream_output(0, PSPLICE_METHOD_SPLICE, false, false);
	stream_output(PSPLICE_F_ONLY(PSPLICE_METHOD_READWRITE), PSPLICE_METHOD_READWRITE,
		      false, true);
	stream_output(0, PSPLICE_METHOD_SENDFILE, true, false);
	close(src_fd);
	return T_PASS;
}
