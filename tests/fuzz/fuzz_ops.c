/* libFuzzer: a byte string decoded into a sequence of psplice calls (the
 * random driver's generator, fed by the input's bytes), run against the
 * model. Fresh fds for each input; none may stay open after it. */
#include <stdio.h>
#include <stdlib.h>

#include "fz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool first = true;
	char msg[160];
	const char *disk = getenv("FZ_DIR") ? getenv("FZ_DIR") : ".";
	struct fz_stats st = { 0 };
	struct fz_seq s;
	const char *why;

	if (first)
		fz_fd_check(msg, sizeof(msg));
	first = false;
	fz_decode(&s, data, size);
	if (fz_run(&s, disk, "/dev/shm", &st, &why) != 0) {
		fprintf(stderr, "fuzz_ops: %s\n", why);
		fz_write(stderr, &s);
		abort();
	}
	if (fz_fd_check(msg, sizeof(msg)) < 0) {
		fprintf(stderr, "fuzz_ops: %s\n", msg);
		fz_write(stderr, &s);
		abort();
	}
	return 0;
}
