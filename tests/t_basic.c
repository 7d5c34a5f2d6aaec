/* The simplest pairs, each shape of call: proves the plumbing before the
 * matrix does it thoroughly. */
#include <fcntl.h>
#include <unistd.h>

#include "t.h"

int main(int argc, char **argv)
{
	struct psplice_result r;
	int in, out, p[2];
	int64_t oi = 0, oo = 0;

	t_dir(argc, argv);
	in = t_make_file(t_path("a"), 100000, 1);
	out = open(t_path("b"), O_RDWR | O_CREAT | O_TRUNC, 0644);
	T_OK(out);
	T_EQ(psplice_copy(in, &oi, out, &oo, PSPLICE_TO_EOF, 0, &r), 0);
	T_RESULT(r, 0, PSPLICE_SIDE_NONE, 100000, 100000);
	T_EQ(r.method, PSPLICE_METHOD_COPY_FILE_RANGE);
	T_EQ(oi, 100000);
	T_EQ(oo, 100000);
	T_EQ(t_pos(in), 0);
	T_EQ(t_pos(out), 0);
	T_ASSERT(t_check_file(t_path("b"), 100000, 1));

	/* file -> pipe -> file, through the file positions */
	t_pipe(p);
	T_EQ(psplice_ex(in, NULL, p[1], NULL, 4096, 0, &r), 4096);
	T_EQ(r.method, PSPLICE_METHOD_SPLICE);
	T_EQ(t_pos(in), 4096);
	close(out);
	out = open(t_path("c"), O_RDWR | O_CREAT | O_TRUNC, 0644);
	T_EQ(psplice(p[0], NULL, out, NULL, 65536, 0), 4096);
	T_EQ(t_pos(out), 4096);
	T_ASSERT(t_check_file(t_path("c"), 4096, 1));
	T_EQ(strcmp(psplice_method_name(psplice_last()->method), "splice"), 0);
	return T_PASS;
}
