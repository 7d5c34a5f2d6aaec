/* psplice relay --replace=PID: a relay started by hand, with options of its
 * own, takes the listening sockets of the running relay PID. It copies them
 * out of that process with pidfd_getfd(2): the copies are the same kernel
 * sockets, so a client that connects meanwhile waits in their queue, never
 * refused. Once this relay serves them, it tells PID to stop accepting and
 * drain (HANDOVER_SIGNAL carrying HANDOVER_VALUE, which also tells it to leave the
 * sockets listening and a unix socket's file in place). Whatever fails
 * before that leaves PID as it was: nothing of it is changed until then. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "relay.h"
#include "out.h"

/* The sockets taken so far, and the text of PID's other listeners. */
struct taken {
	int *fds;
	ino_t *inos;         /* each socket once, whatever fds PID has for it */
	int n, size;
	char others[512];
	size_t olen;
	struct cli_addr metrics; /* PID's --metrics listener, not one to take */
	bool has_metrics;
};

/* Raw syscalls: glibc has had wrappers only since 2.36. */
static int sys_pidfd_open(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

static int sys_pidfd_getfd(int pidfd, int fd)
{
	return (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
}

static int sys_pidfd_send_signal(int pidfd, int sig, siginfo_t *info)
{
	return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, info, 0);
}

static void say_no_permission(pid_t pid, int err)
{
	cli_error(err, "relay: cannot take the listeners of process %ld (pidfd_getfd "
		  "needs ptrace permission over it: the same user and no Yama "
		  "restriction, or CAP_SYS_PTRACE)", (long)pid);
}

/* pidfd_open came in Linux 5.3, pidfd_getfd in 5.6. */
static void say_no_pidfd(pid_t pid)
{
	cli_error(0, "relay: cannot replace process %ld: the kernel cannot take another "
		  "process's fds (pidfd_getfd needs Linux 5.6 or later)", (long)pid);
}

/* pidfd_getfd(2) checks the right to take pid's fds (ptrace access) before
 * it looks the fd up: asked for fd -1, which no process has, it fails with
 * EBADF when the fds may be taken. Then this process may also signal pid:
 * told once it serves, pid must hear it. */
static bool may_take(pid_t pid, int pidfd)
{
	if (sys_pidfd_getfd(pidfd, -1) >= 0 || errno != EBADF) {
		if (errno == ESRCH)
			cli_error(0, "relay: cannot replace process %ld: it has exited",
				  (long)pid);
		else if (errno == ENOSYS)
			say_no_pidfd(pid);
		else
			say_no_permission(pid, errno);
		return false;
	}
	if (sys_pidfd_send_signal(pidfd, 0, NULL) < 0) {
		cli_error(errno, "relay: cannot replace process %ld: cannot signal it",
			  (long)pid);
		return false;
	}
	return true;
}

/* A pidfd of the relay pid, one this process may take the fds of and
 * signal; -1 once said why not. The pidfd names that process alone: the
 * checks after it are of that process, not of another given its pid. */
static int open_relay(pid_t pid)
{
	int pidfd;

	if (pid == getpid()) {
		cli_error(0, "relay: cannot replace process %ld: it is this one", (long)pid);
		return -1;
	}
	pidfd = sys_pidfd_open(pid);
	if (pidfd < 0) {
		if (errno == ESRCH)
			cli_error(0, "relay: cannot replace process %ld: there is no such "
				  "process", (long)pid);
		else if (errno == ENOSYS)
			say_no_pidfd(pid);
		else
			cli_error(errno, "relay: cannot replace process %ld: pidfd_open",
				  (long)pid);
		return -1;
	}
	if (!is_relay(pid) || !may_take(pid, pidfd)) {
		close(pidfd);
		return -1;
	}
	return pidfd;
}

/* A TCP or unix stream socket that listens. */
static bool listens(int fd)
{
	int conn = 0, type = 0, domain = 0;
	socklen_t len = sizeof(int);

	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &conn, &len) < 0 || !conn)
		return false;
	len = sizeof(int);
	getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len);
	len = sizeof(int);
	getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len);
	return type == SOCK_STREAM &&
	       (domain == AF_INET || domain == AF_INET6 || domain == AF_UNIX);
}

/* The file a unix socket was bound to, as a path from here (pid's
 * working directory for a relative one); false when unnamed or abstract. */
static bool bound_path(pid_t pid, const struct sockaddr_un *un, socklen_t len, char *path,
		       size_t size)
{
	char bound[sizeof(un->sun_path) + 1];
	size_t n = len > offsetof(struct sockaddr_un, sun_path) ?
		   len - offsetof(struct sockaddr_un, sun_path) : 0;

	memcpy(bound, un->sun_path, n);
	bound[n] = '\0';
	if (!bound[0])
		return false;
	if (bound[0] == '/')
		snprintf(path, size, "%s", bound);
	else
		snprintf(path, size, "/proc/%ld/cwd/%s", (long)pid, bound);
	return true;
}

/* A unix socket bound to the file LISTEN names: the same file, reached from
 * here and from pid's working directory when pid bound a relative path. */
static bool same_socket_file(pid_t pid, const struct sockaddr_un *un, socklen_t len,
			     const struct sockaddr_un *want)
{
	char path[sizeof(un->sun_path) + 64];
	struct stat a, b;

	return bound_path(pid, un, len, path, sizeof(path)) && stat(path, &a) == 0 &&
	       stat(want->sun_path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* A unix listener no client can reach any more: its file was removed (a
 * relay that began to drain unlinks it) or is no socket. Taking it would
 * serve nothing. Whether the file there is this very socket's is not
 * known without sock_diag; a socket file is taken to be it. */
static bool unreachable(pid_t pid, const struct sockaddr *sa, socklen_t len)
{
	char path[sizeof(((struct sockaddr_un *)0)->sun_path) + 64];
	struct stat st;

	if (sa->sa_family != AF_UNIX ||
	    !bound_path(pid, (const struct sockaddr_un *)sa, len, path, sizeof(path)))
		return false;
	return stat(path, &st) < 0 || !S_ISSOCK(st.st_mode);
}

/* The same IPv4 or IPv6 address and port. */
static bool same_inet(const struct sockaddr *sa, const struct sockaddr *want)
{
	const struct sockaddr_in *a4 = (const void *)sa, *w4 = (const void *)want;
	const struct sockaddr_in6 *a6 = (const void *)sa, *w6 = (const void *)want;

	if (sa->sa_family != want->sa_family)
		return false;
	if (sa->sa_family == AF_INET)
		return a4->sin_port == w4->sin_port &&
		       a4->sin_addr.s_addr == w4->sin_addr.s_addr;
	return sa->sa_family == AF_INET6 && a6->sin6_port == w6->sin6_port &&
	       !memcmp(&a6->sin6_addr, &w6->sin6_addr, sizeof(a6->sin6_addr)) &&
	       a6->sin6_scope_id == w6->sin6_scope_id;
}

/* Whether the listener sa, which process pid bound, is want: the same
 * address and port, or the same socket file; any (LISTEN "-"): every
 * listener. */
bool listener_matches(const struct sockaddr_storage *ss, bool any, pid_t pid,
		      const struct sockaddr *sa, socklen_t len)
{
	const struct sockaddr *want = (const struct sockaddr *)ss;

	if (unreachable(pid, sa, len))
		return false;
	if (any)
		return true;
	if (sa->sa_family != AF_UNIX)
		return same_inet(sa, want);
	return want->sa_family == AF_UNIX &&
	       same_socket_file(pid, (const void *)sa, len, (const void *)want);
}

/* Keep fd, a socket not taken before; -1 without the memory. */
static int keep(struct taken *t, int fd, ino_t ino)
{
	if (t->n == t->size) {
		int size = t->size ? t->size * 2 : 8;
		int *fds = realloc(t->fds, (size_t)size * sizeof(*fds));
		ino_t *inos = fds ? realloc(t->inos, (size_t)size * sizeof(*inos)) : NULL;

		if (fds)
			t->fds = fds;
		if (!inos)
			return -1;
		t->inos = inos;
		t->size = size;
	}
	t->fds[t->n] = fd;
	t->inos[t->n++] = ino;
	return 0;
}

/* Another listener's address, for the messages: once, though a
 * --reuseport relay has a socket per worker there. */
static void note_other(struct taken *t, const char *text)
{
	size_t len = strlen(text);
	const char *at;

	for (at = t->others; (at = strstr(at, text)); at += len)
		if ((at == t->others || at[-1] == ' ') && (!at[len] || at[len] == ','))
			return;
	if (t->olen < sizeof(t->others))
		t->olen += (size_t)snprintf(t->others + t->olen, sizeof(t->others) - t->olen,
					    "%s%s", t->olen ? ", " : "", text);
}

/* fd, a copy of one of pid's sockets: kept when it is a listener LISTEN
 * names (any, r NULL) and not kept already, closed otherwise (another listener's address
 * noted for the messages). -1 without the memory. */
static int consider(const struct relay *r, pid_t pid, struct taken *t, int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	struct stat st;
	char text[300];
	int i;

	if (!listens(fd) || fstat(fd, &st) < 0 ||
	    getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		goto drop;
	/* Its --metrics listener serves its scrapes, not clients. */
	if (t->has_metrics && same_inet((struct sockaddr *)&ss, (struct sockaddr *)&t->metrics.ss))
		goto drop;
	for (i = 0; i < t->n; i++)
		if (t->inos[i] == st.st_ino)
			goto drop;
	if (!r ||
	    listener_matches(&r->listen.ss, r->inherited, pid, (struct sockaddr *)&ss, len))
		return keep(t, fd, st.st_ino) < 0 ? (close(fd), -1) : 0;
	addr_text((struct sockaddr *)&ss, len, text, sizeof(text));
	note_other(t, text);
drop:
	close(fd);
	return 0;
}

/* Copy each of pid's sockets and keep the listeners LISTEN names. A socket
 * closed meanwhile is passed over; the listeners are not closed while pid
 * serves. -1 once said why. */
static int take_sockets(const struct relay *r, pid_t pid, int pidfd, struct taken *t)
{
	char dir[64], link[64];
	struct dirent *e;
	DIR *d;
	ssize_t n;
	int fd, err = 0;

	snprintf(dir, sizeof(dir), "/proc/%ld/fd", (long)pid);
	d = opendir(dir);
	if (!d) {
		say_no_permission(pid, errno);
		return -1;
	}
	t->has_metrics = metrics_addr_of(pid, &t->metrics);
	while (!err && (e = readdir(d))) {
		n = readlinkat(dirfd(d), e->d_name, link, sizeof(link) - 1);
		if (n < 0 || (link[n] = '\0', strncmp(link, "socket:[", 8)))
			continue;
		fd = sys_pidfd_getfd(pidfd, atoi(e->d_name));
		if (fd < 0 && errno != EBADF)
			err = errno;
		else if (fd >= 0 && consider(r, pid, t, fd) < 0)
			err = ENOMEM;
	}
	closedir(d);
	if (err == EPERM)
		say_no_permission(pid, err);
	else if (err)
		cli_error(err, "relay: cannot take the listeners of process %ld", (long)pid);
	return err ? -1 : 0;
}

/* None of pid's listeners is LISTEN: say which it has. */
static void say_none(const struct relay *r, pid_t pid, const struct taken *t)
{
	if (!t->olen)
		cli_error(0, "relay: cannot replace process %ld: it has no listening "
			  "socket", (long)pid);
	else
		cli_error(0, "relay: cannot replace process %ld: it does not listen on "
			  "%s (it listens on %s)", (long)pid, cli_quote(r->listen.text),
			  t->others);
}

/* --replace=PID: the listeners of the relay PID that LISTEN names, copied
 * into this process (pidfd_getfd(2) makes them close-on-exec); -1 once said
 * why not, PID left as it was. */
int replace_take(struct relay *r)
{
	struct taken t = { 0 };
	pid_t pid = r->replace_pid;
	int pidfd = open_relay(pid), k;

	if (pidfd < 0)
		return -1;
	if (take_sockets(r, pid, pidfd, &t) == 0) {
		if (!t.n)
			say_none(r, pid, &t);
		else if (serve_fds(r, t.fds, t.n) == 0)
			goto done;
	}
	for (k = 0; k < t.n; k++)
		close(t.fds[k]);
	close(pidfd);
	pidfd = -1;
done:
	if (pidfd >= 0 && t.olen)
		cli_say("relay: process %ld listens on %s too: not taken", (long)pid, t.others);
	free(t.fds);
	free(t.inos);
	r->replace_fd = pidfd;
	return pidfd < 0 ? -1 : 0;
}

/* HANDOVER_SIGNAL with HANDOVER_VALUE, naming the relay that serves. */
static void handover_info(siginfo_t *si, pid_t serving)
{
	memset(si, 0, sizeof(*si));
	si->si_signo = HANDOVER_SIGNAL;
	si->si_code = SI_QUEUE;
	si->si_pid = serving;
	si->si_uid = getuid();
	si->si_value.sival_int = HANDOVER_VALUE;
}

/* This relay serves: the one it replaces stops accepting and drains. The
 * signal, HANDOVER_SIGNAL with HANDOVER_VALUE, carries this process's pid
 * for its message.
 * -1 when it cannot be told, once said. */
int replace_finish(struct relay *r)
{
	siginfo_t si;
	long pid = (long)r->replace_pid;
	int err = 0;

	if (r->replace_fd < 0)
		return 0;
	handover_info(&si, getpid());
	if (sys_pidfd_send_signal(r->replace_fd, HANDOVER_SIGNAL, &si) < 0)
		err = errno;
	close(r->replace_fd);
	r->replace_fd = -1;
	if (!err)
		cli_say("relay: took over the listeners of process %ld", pid);
	else if (err == ESRCH)
		cli_say("relay: took over the listeners of process %ld, which had exited", pid);
	else
		cli_error(err, "relay: cannot tell process %ld to drain", pid);
	return err && err != ESRCH ? -1 : 0;
}

/* The relay a reload of this one started, and which has not said it
 * serves, is told what this one was told: the relay serving pid took the
 * listeners. It drains and ends as this one does, the sockets left
 * listening and a unix socket's file in place for that relay (a SIGTERM
 * would have it remove the file). Not yet serving (from its fork to its
 * signalfd, the signal blocked and pending), it ends before it serves. The
 * child is not reaped yet, so its pid is still its own. -1 when it cannot
 * be told. */
int replace_forward(pid_t child, pid_t serving)
{
	siginfo_t si;

	handover_info(&si, serving);
	return (int)syscall(SYS_rt_sigqueueinfo, child, HANDOVER_SIGNAL, &si);
}

/* --replace=PID with --config: every listener of PID (its --metrics one
 * apart), copied into this process, in *fds; the lines choose among them
 * (claim.c). -1 once said why not, PID left as it was. */
int replace_collect(struct relay *r, int **fds, int *n)
{
	struct taken t = { 0 };
	int k;

	r->replace_fd = open_relay(r->replace_pid);
	if (r->replace_fd < 0)
		return -1;
	if (take_sockets(NULL, r->replace_pid, r->replace_fd, &t) < 0) {
		for (k = 0; k < t.n; k++)
			close(t.fds[k]);
		free(t.fds);
		free(t.inos);
		close(r->replace_fd);
		r->replace_fd = -1;
		return -1;
	}
	free(t.inos);
	*fds = t.fds;
	*n = t.n;
	return 0;
}
