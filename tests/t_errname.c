/* errno's names as the tests and the command print them (errname.h): under
 * glibc, its list gives every number the name strerrorname_np gives it, so
 * that a musl build prints what a glibc one does; under any libc, the names
 * the tests compare most often. */
#include "t.h"

int main(int argc, char **argv)
{
	static const struct { int err; const char *name; } known[] = {
		{ 0, "0" }, { EPERM, "EPERM" }, { EAGAIN, "EAGAIN" }, { EINTR, "EINTR" },
		{ EPIPE, "EPIPE" }, { ENOSPC, "ENOSPC" }, { EOPNOTSUPP, "EOPNOTSUPP" },
		{ ECONNRESET, "ECONNRESET" }, { EHWPOISON, "EHWPOISON" },
	};
	size_t i;

	t_dir(argc, argv);
	for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (!ps_errname(known[i].err) || strcmp(ps_errname(known[i].err), known[i].name))
			T_FAILED("errno %d: want %s, got %s", known[i].err, known[i].name,
				 ps_errname(known[i].err) ? ps_errname(known[i].err) : "NULL");
	T_ASSERT(!ps_errname(-1) && !ps_errname(4095) && !ps_errdesc(4095));
	T_ASSERT(ps_errdesc(ENOENT) && strcmp(ps_errdesc(ENOENT), "ENOENT"));
#ifdef PS_GLIBC_ERRNAMES
	for (int e = -1; e < 4096; e++) {
		const char *a = strerrorname_np(e), *b = ps_errname_listed(e);

		if ((a || b) && (!a || !b || strcmp(a, b)))
			T_FAILED("errno %d: strerrorname_np %s, the list %s", e, a ? a : "NULL",
				 b ? b : "NULL");
	}
#endif
	return T_PASS;
}
