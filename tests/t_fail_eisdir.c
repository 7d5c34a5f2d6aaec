/* A directory as input is EISDIR on the input side, as read(2) says, with
 * or without an offset, into every kind of output; nothing moves. A
 * directory can only be opened read-only, so as an output it is EBADF. */
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "t.h"

static int out, p[2], u[2];

static void nothing_moved(int dir)
{
	struct stat st;

	T_OK(fstat(out, &st));
	T_EQ(st.st_size, 0);
	T_EQ(t_pos(out), 0);
	T_EQ(t_pos(dir), 0);
	T_EQ(t_queued(p[0]), 0);
	T_EQ(t_queued(u[1]), 0);
}

static void from_dir(int dir, int to, bool offsets)
{
	int64_t oi = 0, oo = 0, *poi = offsets ? &oi : NULL;
	int64_t *poo = offsets && to == out ? &oo : NULL;
	struct psplice_result r;

	T_ERRNO(psplice(dir, poi, to, poo, 4096, 0), EISDIR);
	T_RESULT(*psplice_last(), EISDIR, PSPLICE_SIDE_IN, 0, 0);
	T_ERRNO(psplice_ex(dir, poi, to, poo, 4096, 0, &r), EISDIR);
	T_RESULT(r, EISDIR, PSPLICE_SIDE_IN, 0, 0);
	T_EQ(r.parked_len, 0);
	T_ERRNO(psplice_copy(dir, poi, to, poo, PSPLICE_TO_EOF, 0, &r), EISDIR);
	T_RESULT(r, EISDIR, PSPLICE_SIDE_IN, 0, 0);
	T_ERRNO(psplice_copy(dir, poi, to, poo, 4096,
			     PSPLICE_F_ONLY(PSPLICE_METHOD_READWRITE), &r), EISDIR);
	T_RESULT(r, EISDIR, PSPLICE_SIDE_IN, 0, 0);
	T_ERRNO(psplice_copy(dir, poi, to, poo, 4096, PSPLICE_F_NONBLOCK, &r), EISDIR);
	T_RESULT(r, EISDIR, PSPLICE_SIDE_IN, 0, 0);
	T_EQ(oi, 0);
	T_EQ(oo, 0);
	nothing_moved(dir);
}

static void each_dir(const char *path)
{
	int dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct psplice_result r;

	T_OK(dir);
	from_dir(dir, out, false);
	from_dir(dir, out, true);
	from_dir(dir, p[1], false);
	from_dir(dir, p[1], true);
	from_dir(dir, u[0], false);
	/* As an output: not open for writing. */
	T_ERRNO(psplice_ex(out, NULL, dir, NULL, 4096, 0, &r), EBADF);
	T_RESULT(r, EBADF, PSPLICE_SIDE_OUT, 0, 0);
	nothing_moved(dir);
	close(dir);
}

int main(int argc, char **argv)
{
	const char *dir = t_dir(argc, argv), *shm = t_tmpfs_dir();

	T_OK(mkdir(t_path("sub"), 0755));
	T_OK(close(t_make_file(t_path("sub/f"), 100, 1)));
	out = open(t_path("out"), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	T_OK(out);
	t_pipe(p);
	t_unix_pair(u);
	each_dir(dir);
	each_dir(t_path("sub"));
	if (shm)
		each_dir(shm);
	each_dir("/proc/self");
	return T_PASS;
}
