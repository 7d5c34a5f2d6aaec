/* errno's names ("EPIPE") and texts, as the tests, the command and the
 * preload library print them. strerrorname_np and strerrordesc_np are
 * glibc's (2.32); another libc (musl) gets the names from the list below
 * and the text from strerror, which musl's makes a lookup in a table of
 * its own, safe in any thread. Each returns NULL for a number it does not
 * know, as glibc's do. */
#ifndef PS_ERRNAME_H
#define PS_ERRNAME_H

#include <errno.h>
#include <stddef.h>
#include <string.h>

#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 32)
#define PS_GLIBC_ERRNAMES 1
#endif

/* Every errno of Linux's by one name: the aliases (EWOULDBLOCK, EDEADLOCK,
 * ENOTSUP) have the name glibc gives their number. */
#define PS_ERRNOS(X) \
	X(EPERM) X(ENOENT) X(ESRCH) X(EINTR) X(EIO) X(ENXIO) X(E2BIG) X(ENOEXEC) \
	X(EBADF) X(ECHILD) X(EAGAIN) X(ENOMEM) X(EACCES) X(EFAULT) X(ENOTBLK) X(EBUSY) \
	X(EEXIST) X(EXDEV) X(ENODEV) X(ENOTDIR) X(EISDIR) X(EINVAL) X(ENFILE) X(EMFILE) \
	X(ENOTTY) X(ETXTBSY) X(EFBIG) X(ENOSPC) X(ESPIPE) X(EROFS) X(EMLINK) X(EPIPE) \
	X(EDOM) X(ERANGE) X(EDEADLK) X(ENAMETOOLONG) X(ENOLCK) X(ENOSYS) X(ENOTEMPTY) \
	X(ELOOP) X(ENOMSG) X(EIDRM) X(ECHRNG) X(EL2NSYNC) X(EL3HLT) X(EL3RST) X(ELNRNG) \
	X(EUNATCH) X(ENOCSI) X(EL2HLT) X(EBADE) X(EBADR) X(EXFULL) X(ENOANO) X(EBADRQC) \
	X(EBADSLT) X(EBFONT) X(ENOSTR) X(ENODATA) X(ETIME) X(ENOSR) X(ENONET) X(ENOPKG) \
	X(EREMOTE) X(ENOLINK) X(EADV) X(ESRMNT) X(ECOMM) X(EPROTO) X(EMULTIHOP) \
	X(EDOTDOT) X(EBADMSG) X(EOVERFLOW) X(ENOTUNIQ) X(EBADFD) X(EREMCHG) X(ELIBACC) \
	X(ELIBBAD) X(ELIBSCN) X(ELIBMAX) X(ELIBEXEC) X(EILSEQ) X(ERESTART) X(ESTRPIPE) \
	X(EUSERS) X(ENOTSOCK) X(EDESTADDRREQ) X(EMSGSIZE) X(EPROTOTYPE) X(ENOPROTOOPT) \
	X(EPROTONOSUPPORT) X(ESOCKTNOSUPPORT) X(EOPNOTSUPP) X(EPFNOSUPPORT) \
	X(EAFNOSUPPORT) X(EADDRINUSE) X(EADDRNOTAVAIL) X(ENETDOWN) X(ENETUNREACH) \
	X(ENETRESET) X(ECONNABORTED) X(ECONNRESET) X(ENOBUFS) X(EISCONN) X(ENOTCONN) \
	X(ESHUTDOWN) X(ETOOMANYREFS) X(ETIMEDOUT) X(ECONNREFUSED) X(EHOSTDOWN) \
	X(EHOSTUNREACH) X(EALREADY) X(EINPROGRESS) X(ESTALE) X(EUCLEAN) X(ENOTNAM) \
	X(ENAVAIL) X(EISNAM) X(EREMOTEIO) X(EDQUOT) X(ENOMEDIUM) X(EMEDIUMTYPE) \
	X(ECANCELED) X(ENOKEY) X(EKEYEXPIRED) X(EKEYREVOKED) X(EKEYREJECTED) \
	X(EOWNERDEAD) X(ENOTRECOVERABLE) X(ERFKILL) X(EHWPOISON)

#define PS_ERRNAME_AT(e) [e] = #e,

/* The list's name of err ("0" for 0, as glibc's); NULL for a number it
 * does not hold. */
static inline const char *ps_errname_listed(int err)
{
	static const char *const names[] = { [0] = "0", PS_ERRNOS(PS_ERRNAME_AT) };

	if (err < 0 || (size_t)err >= sizeof(names) / sizeof(names[0]))
		return NULL;
	return names[err];
}

static inline const char *ps_errname(int err)
{
#ifdef PS_GLIBC_ERRNAMES
	return strerrorname_np(err);
#else
	return ps_errname_listed(err);
#endif
}

static inline const char *ps_errdesc(int err)
{
#ifdef PS_GLIBC_ERRNAMES
	return strerrordesc_np(err);
#else
	return ps_errname_listed(err) ? strerror(err) : NULL;
#endif
}

#endif
