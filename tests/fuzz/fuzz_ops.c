/* libFuzzer: a byte string decoded into a sequence of psplice calls (the
 * random driver's generator, fed by the input's bytes), run against the
 * model. Fresh fds for each input; none may stay open after it. */
#include <stdio.h>
#include <stdlib.h>

#include "fz.h"
#include "t.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fds = -1;
	const char *disk = getenv("FZ_DIR") ? getenv("FZ_DIR") : ".";
	struct fz_stats st = { 0 };
	struct fz_seq s;
	const char *why;
	int n;

	fz_decode(&s, data, size);
	if (fz_run(&s, disk, "/dev/shm", &st, &why) != 0) {
		fprintf(stderr, "fuzz_ops: %s\n", why);
		fz_write(stderr, &s);
		abort();
	}
	n = t_count_fds();
	if (fds < 0)
		fds = n;
	if (n > fds) {
		fprintf(stderr, "fuzz_ops: %d fds open, %d after the first input\n", n, fds);
		fz_write(stderr, &s);
		abort();
	}
	return 0;
}
