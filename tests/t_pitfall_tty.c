/* A terminal in canonical mode reports end of file once per
 * VEOF: reading on after the 0 would take what the user types next. A copy
 * to end of input from a tty must stop at the first end of file and leave
 * the terminal's later input unread.
 * Seen in GNU coreutils commit e0a641674 (after end of file, do not read
 * a tty again). */
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <termios.h>
#include <unistd.h>

#include "t.h"

static void canonical_pty(int *master, int *slave)
{
	struct termios t;

	T_OK(openpty(master, slave, NULL, NULL, NULL));
	T_OK(tcgetattr(*slave, &t));
	t.c_lflag |= ICANON;
	t.c_lflag &= ~(tcflag_t)(ECHO | ECHONL);
	T_OK(tcsetattr(*slave, TCSANOW, &t));
}

static void type(int master, int slave, const char *s)
{
	struct termios t;
	char buf[16];
	size_t n = strlen(s);

	T_OK(tcgetattr(slave, &t));
	memcpy(buf, s, n);
	/* '\4' stands for the terminal's own VEOF character. */
	for (size_t i = 0; i < n; i++)
		if (buf[i] == '\4')
			buf[i] = (char)t.c_cc[VEOF];
	T_EQ(write(master, buf, n), (ssize_t)n);
}

/* The slave has a line ready within a bounded wait, and it is want. */
static void still_there(int slave, const char *want)
{
	struct pollfd p = { .fd = slave, .events = POLLIN };
	char buf[64];

	T_EQ(poll(&p, 1, 10000), 1);
	T_EQ(read(slave, buf, sizeof(buf)), (ssize_t)strlen(want));
	T_ASSERT(memcmp(buf, want, strlen(want)) == 0);
}

static void copy_to_eof(int slave, unsigned int flags)
{
	int out = open(t_path("out"), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	struct psplice_result r;
	char buf[16];

	T_OK(out);
	T_EQ(psplice_copy(slave, NULL, out, NULL, PSPLICE_TO_EOF, flags, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, 4, 4);
	T_EQ(pread(out, buf, sizeof(buf), 0), 4);
	T_ASSERT(memcmp(buf, "abc\n", 4) == 0);
	close(out);
}

static void session(unsigned int flags)
{
	int master, slave;

	canonical_pty(&master, &slave);
	/* Typed after the copy ended. */
	type(master, slave, "abc\n\4");
	copy_to_eof(slave, flags);
	type(master, slave, "xyz\n");
	still_there(slave, "xyz\n");

	/* Typed before the copy began: the line after the end of file is
	 * already waiting, and must stay. */
	type(master, slave, "abc\n\4xyz\n");
	copy_to_eof(slave, flags);
	still_there(slave, "xyz\n");
	close(master);
	close(slave);
}

int main(int argc, char **argv)
{
	t_dir(argc, argv);
	alarm(55);
	session(0);
	session(PSPLICE_F_ONLY(PSPLICE_METHOD_READWRITE));
	return T_PASS;
}
