/* copy_file_range(2): file to file inside the kernel (reflink where the
 * filesystem can). */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>

#include "accounting.h"
#include "endpoint.h"
#include "path.h"
#include "psplice.h"
#include "sys.h"

static atomic_bool cfr_missing; /* ENOSYS once: never ask again */
/* Two filesystems that cannot copy between them (EXDEV, the kernel's
 * answer since Linux 5.19 but where one filesystem does it for another,
 * as NFS and CIFS servers may) say so for every file alike. */
static __thread struct ps_refusal refused;

/* Errnos that mean "not for this pair", after which another path may try:
 * cross-filesystem (EXDEV: before Linux 5.3, libuv/libuv#3108; again
 * between filesystems of different types after the change
 * transmission/transmission#3654 met on 5.18), not supported here
 * (EOPNOTSUPP: NFS on Linux 3.10, golang/go#40731), or a seccomp filter that
 * answers EPERM instead of ENOSYS (a Docker host on Linux 4.10,
 * golang/go#40893); NFS and CIFS answer EIO or EINVAL. After
 * the call has moved bytes they are fatal all the same (the dispatch table
 * says so): a failed call may have written bytes before it failed
 * (EOVERFLOW, NFS's EIO). */
static bool cfr_falls_back(int err)
{
	switch (err) {
	case EXDEV: case EINVAL: case EOPNOTSUPP: case ENOSYS: case EPERM:
	case EBADF: case EIO: case ETXTBSY: case EOVERFLOW:
		return true;
	}
	return false;
}

ssize_t ps__path_cfr(struct ps_xfer *x)
{
	int64_t oi = x->off_in ? *x->off_in : 0, oo = x->off_out ? *x->off_out : 0;
	size_t len = x->len < PS_MAX_CHUNK ? x->len : PS_MAX_CHUNK;
	ssize_t n;

	/* copy_file_range refuses an O_APPEND output (EBADF, where sendfile
	 * says EINVAL: rust-lang/rust#82417), as does every kernel path after
	 * it: when the flags are known, they spare them all; when not, the
	 * call asks the kernel first, and the flags only after its EBADF. */
	if (x->in->kind != PS_K_FILE || x->out->kind != PS_K_FILE || ps_known_append(x->out))
		return ps_not_here(EINVAL);
	if (atomic_load_explicit(&cfr_missing, memory_order_relaxed))
		return ps_not_here(ENOSYS);
	if (ps__refused(&refused, x))
		return ps_not_here(EXDEV);
	n = ps_copy_file_range(x->in->fd, x->off_in ? &oi : NULL, x->out->fd,
			       x->off_out ? &oo : NULL, len);
	if (n < 0) {
		if (n == -ENOSYS)
			atomic_store_explicit(&cfr_missing, true, memory_order_relaxed);
		ps__refuse_exdev(&refused, x, (int)-n);
		if (n == -EBADF)
			(void)ps__fl(x->out);
		/* An O_DIRECT input's last block is shorter than the block
		 * size: the kernel refuses the direct read before it reads a
		 * byte (EINVAL), where read(2) and sendfile return the short
		 * tail (seen on ext4, Linux 6.18). Not a failure after
		 * progress, however far the copy got: the next path reads
		 * it. */
		if (n == -EINVAL && (ps__fl(x->in) & O_DIRECT))
			return ps_not_here(PS_WHY_NONE);
		if (cfr_falls_back((int)-n))
			return ps_not_here((int)-n);
		return ps__fail(x, (int)-n, ps__side_of(x, (int)-n));
	}
	if (n == 0)
		return ps__at_eof(x) ? 0 : ps_not_here(PS_WHY_ZERO);
	ps__moved(x, (uint64_t)n, (uint64_t)n, PSPLICE_METHOD_COPY_FILE_RANGE);
	ps__advance(x->off_in, (uint64_t)n);
	ps__advance(x->off_out, (uint64_t)n);
	return n;
}
