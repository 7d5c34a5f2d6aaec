/* psplice-bench: the benchmark, a program of its own that psplice bench
 * runs with its arguments (cli/psplice.c). */
#include "bench.h"
#include "opts.h"
#include "out.h"
#include "sys.h"

int main(int argc, char **argv)
{
	cli_std_fds();
	cli_check_stdout_at_exit();
	/* Messages read "psplice: ...", as psplice bench's always have. */
	argv[0] = (char *)CLI_NAME;
	return bench_cmd.main(&bench_cmd, argc, argv);
}
