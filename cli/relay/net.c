/* psplice relay: the listeners, made before any worker starts (so that an
 * error exits 1), or taken from a service manager (activate.c) or from
 * the relay this one replaces (replace.c); their text for messages. */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "relay.h"
#include "out.h"

/* A unix socket file nobody listens on (a relay that was killed left it):
 * connecting to it is refused. */
static bool stale(const struct sockaddr *sa, socklen_t len)
{
	struct stat st;
	int fd, r;

	/* Connecting to a file that is not a socket is refused too. */
	if (lstat(((const struct sockaddr_un *)sa)->sun_path, &st) < 0 || !S_ISSOCK(st.st_mode))
		return false;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	r = connect(fd, sa, len);
	close(fd);
	return r < 0 && errno == ECONNREFUSED;
}

static int listen_on(const struct relay *r, const struct sockaddr *sa, socklen_t len,
		     bool reuseport)
{
	int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	const char *path = ((const struct sockaddr_un *)sa)->sun_path;
	int one = 1, err;

	if (fd < 0)
		return -errno;
	if (sa->sa_family != AF_UNIX) {
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		/* One listener per worker on the same port: the kernel spreads
		 * new connections across them, with no shared accept lock. */
		if (reuseport && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0)
			goto fail;
	}
	if (bind(fd, sa, len) < 0) {
		if (sa->sa_family != AF_UNIX || errno != EADDRINUSE || !stale(sa, len) ||
		    unlink(path) < 0 || bind(fd, sa, len) < 0)
			goto fail;
	}
	/* Before listen(), so that every client's socket inherits them (an
	 * accepted socket is a copy of its listener, made as the handshake
	 * ends): TCP_NODELAY and TCP_NOTSENT_LOWAT cost no call a client. */
	if (sa->sa_family != AF_UNIX)
		tune(r, fd);
	/* Before listen(): no client connects while the mode is still wrong. */
	if (sa->sa_family == AF_UNIX && r->unix_mode >= 0 &&
	    chmod(path, (mode_t)r->unix_mode) < 0)
		goto fail;
	if (listen(fd, SOMAXCONN) < 0)
		goto fail;
	return fd;
fail:
	err = errno;
	close(fd);
	return -err;
}

void free_listeners(struct relay *r)
{
	free(r->lis);
	r->lis = NULL;
	free_names(r->listen_names);
}

/* For messages: the address listener k (the first worker's) is bound to,
 * and the name the service manager gave it. */
void listener_text(const struct relay *r, int k, char *buf, size_t size)
{
	int fd = listener_at(r, 0, k)->h.fd;
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	size_t used;

	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0) {
		snprintf(buf, size, "fd %d", fd);
		return;
	}
	addr_text((struct sockaddr *)&ss, len, buf, size);
	used = strlen(buf);
	if (r->listen_names && used < size)
		snprintf(buf + used, size - used, " (%s)", r->listen_names[k]);
}

/* One listener, shared by the workers (each woken alone, EPOLLEXCLUSIVE).
 * With --reuseport on TCP, one SO_REUSEPORT listener per worker instead,
 * the kernel spreading connections among them; the first bind settles
 * port 0 and the others take the port it got. SO_REUSEPORT lets any process
 * of the same user bind the port too and take a share of its connections,
 * so a second relay started by mistake would do so silently: only when
 * asked. Unix: a stale socket file is replaced, a live one is not.
 * LISTEN "-", or a relay started by a reload: the sockets passed
 * (activate.c); --replace: those of the relay replaced
 * (replace.c). */
int make_listeners(struct relay *r)
{
	/* Listeners made elsewhere, set as their maker saw fit, with clients
	 * queued already: each client's socket is tuned as it comes. */
	r->tune_accepted = r->ready_fd >= 0 || r->replace_pid || r->inherited;
	if (r->ready_fd >= 0)
		return inherit_listeners(r);
	if (r->replace_pid)
		return replace_take(r);
	if (r->inherited)
		return inherit_listeners(r);
	return bind_listeners(r);
}

/* LISTEN bound here: one listener shared by the workers, or one each. */
int bind_listeners(struct relay *r)
{
	struct sockaddr_storage ss = r->listen.ss;
	socklen_t len = r->listen.len;
	bool unix_sock = ss.ss_family == AF_UNIX;
	int i, fd;

	r->nlisten = 1;
	if (listener_handles(r) < 0)
		return -1;
	r->shared = unix_sock || !r->reuseport;
	for (i = 0; i < r->jobs; i++) {
		if (r->shared && i) {
			listener_at(r, i, 0)->h.fd = listener_at(r, 0, 0)->h.fd;
			continue;
		}
		fd = listen_on(r, (struct sockaddr *)&ss, len, !r->shared);
		if (fd < 0 && r->config)
			cli_error(-fd, "%s:%d: cannot listen on %s", r->config, r->line,
				  cli_quote(r->listen.text));
		else if (fd < 0)
			cli_error(-fd, "cannot listen on %s", cli_quote(r->listen.text));
		if (fd < 0)
			return -1;
		if (!i && !r->shared)
			getsockname(fd, (struct sockaddr *)&ss, &len);
		listener_at(r, i, 0)->h.fd = fd;
	}
	r->made_file = unix_sock;
	return 0;
}

/* The relay will not serve: the socket files it made go, those it was
 * passed or took stay. */
void unlink_made(const struct relay *r)
{
	for (; r; r = r->next)
		if (r->made_file)
			unlink(((const struct sockaddr_un *)&r->listen.ss)->sun_path);
}

