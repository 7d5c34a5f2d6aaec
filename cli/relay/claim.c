/* psplice relay --config: each line's listeners. A relay started by a
 * reload (SIGUSR2) was passed every listener of the relay it replaces, and
 * one started with --replace takes copies of them; each line takes those
 * bound to its LISTEN (the same address and port, or the same socket
 * file), so that their queued clients are served, never refused. A line
 * none is bound to binds its own: a listener added to the file. A socket
 * no line takes is a listener removed from it: after a reload it is closed
 * here; after --replace it is left to the relay replaced, which drains it.
 * Once this relay serves, the file of a unix one is removed either way, so
 * that no client comes to it while the old relay drains. */
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "relay.h"
#include "out.h"

#define FIRST_FD 3             /* SD_LISTEN_FDS_START */

/* The sockets the lines choose among, and who bound them. */
struct pool {
	int *fds;            /* -1: taken by a line */
	int n;
	pid_t pid;
	bool reload;         /* passed by a reload; otherwise copied (--replace) */
};

/* The port of an IPv4 or IPv6 address, where it is; NULL for a unix one. */
static in_port_t *port_of(struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return &((struct sockaddr_in *)ss)->sin_port;
	if (ss->ss_family == AF_INET6)
		return &((struct sockaddr_in6 *)ss)->sin6_port;
	return NULL;
}

/* The address line x takes sockets on: its LISTEN; for port 0 (any port)
 * the port the socket on that address it was passed has, so that a
 * reload keeps the port clients were given. */
static void wanted(const struct relay *x, const struct pool *p,
		   struct sockaddr_storage *want)
{
	struct sockaddr_storage ss;
	socklen_t len;
	in_port_t *port;
	int k;

	*want = x->listen.ss;
	port = port_of(want);
	for (k = 0; port && !*port && k < p->n; k++) {
		len = sizeof(ss);
		if (p->fds[k] < 0 || getsockname(p->fds[k], (struct sockaddr *)&ss, &len) < 0 ||
		    ss.ss_family != want->ss_family)
			continue;
		*port = *port_of(&ss);
		if (!listener_matches(want, false, p->pid, (struct sockaddr *)&ss, len))
			*port = 0;
	}
}

/* Line x's sockets from the pool, or its own. */
static int claim_one(struct relay *x, struct pool *p)
{
	struct sockaddr_storage ss, want;
	socklen_t len;
	int k, n = 0, *mine = calloc((size_t)p->n + 1, sizeof(int)), rc;

	if (!mine) {
		cli_error(ENOMEM, "relay");
		return -1;
	}
	wanted(x, p, &want);
	for (k = 0; k < p->n; k++) {
		len = sizeof(ss);
		if (p->fds[k] >= 0 && getsockname(p->fds[k], (struct sockaddr *)&ss, &len) == 0 &&
		    listener_matches(&want, false, p->pid, (struct sockaddr *)&ss, len)) {
			mine[n++] = p->fds[k];
			p->fds[k] = -1;
		}
	}
	/* Made elsewhere, with clients queued already: each client's
	 * socket is tuned as it comes. */
	x->tune_accepted = n > 0;
	rc = n ? serve_fds(x, mine, n) : bind_listeners(x);
	free(mine);
	return rc;
}

/* A unix socket file no line names, to remove once this relay serves: a
 * path relative to the working directory of pid, which bound it, made
 * whole while pid is there to ask. */
static void forget_file(struct relay *head, pid_t pid, const struct sockaddr_un *un)
{
	char cwd[PATH_MAX], link[64], **more;
	ssize_t len = 0;
	int n = 0;

	if (un->sun_path[0] != '/') {
		snprintf(link, sizeof(link), "/proc/%ld/cwd", (long)pid);
		if ((len = readlink(link, cwd, sizeof(cwd) - 1)) < 0)
			return;
	}
	while (head->gone && head->gone[n])
		n++;
	more = realloc(head->gone, (size_t)(n + 2) * sizeof(*more));
	if (!more)
		return;
	head->gone = more;
	if (asprintf(&more[n], "%.*s%s%s", (int)len, cwd, len ? "/" : "", un->sun_path) < 0)
		more[n] = NULL;
	more[n + 1] = NULL;
}

/* The sockets no line took: said, and closed. */
static void drop_rest(struct relay *head, struct pool *p)
{
	struct sockaddr_storage ss;
	socklen_t len;
	char text[300];
	int k;

	for (k = 0; k < p->n; k++) {
		if (p->fds[k] < 0)
			continue;
		len = sizeof(ss);
		if (getsockname(p->fds[k], (struct sockaddr *)&ss, &len) < 0)
			len = 0;
		addr_text((struct sockaddr *)&ss, len, text, sizeof(text));
		if (!p->reload)
			cli_say("relay: process %ld listens on %s too: not in %s, left to it to "
				"drain", (long)p->pid, text, head->config);
		else
			cli_say("relay: %s is not in %s any more: not served", text, head->config);
		if (ss.ss_family == AF_UNIX && ((struct sockaddr_un *)&ss)->sun_path[0])
			forget_file(head, p->pid, (struct sockaddr_un *)&ss);
		close(p->fds[k]);
	}
}

int claim_listeners(struct relay *head)
{
	struct pool p = { .pid = head->replace_pid };
	struct relay *x;
	int k, rc = 0;

	if (head->ready_fd >= 0) {
		p.reload = true;
		p.pid = getpid();
		if ((p.n = passed_listeners(head)) < 0)
			return -1;
		if (!(p.fds = calloc((size_t)p.n + 1, sizeof(int)))) {
			cli_error(ENOMEM, "relay");
			return -1;
		}
		for (k = 0; k < p.n; k++)
			p.fds[k] = FIRST_FD + k;
	} else if (head->replace_pid && replace_collect(head, &p.fds, &p.n) < 0) {
		return -1;
	}
	/* Lines with a port first: one with port 0 takes what is left. */
	for (x = head; x && rc == 0; x = x->next)
		if (!port_of(&x->listen.ss) || *port_of(&x->listen.ss))
			rc = claim_one(x, &p);
	for (x = head; x && rc == 0; x = x->next)
		if (port_of(&x->listen.ss) && !*port_of(&x->listen.ss))
			rc = claim_one(x, &p);
	drop_rest(head, &p);
	free(p.fds);
	return rc;
}

/* This relay serves (serving), or will not: the socket files of the
 * listeners removed go in the first case, unless a line binds that path
 * anew. */
void claim_release(struct relay *head, bool serving)
{
	const struct relay *x;
	char **path;

	for (path = head->gone; path && *path; path++) {
		for (x = head; x; x = x->next)
			if (x->listen.ss.ss_family == AF_UNIX &&
			    !strcmp(((const struct sockaddr_un *)&x->listen.ss)->sun_path, *path))
				break;
		if (!x && serving)
			unlink(*path);
		free(*path);
	}
	free(head->gone);
	head->gone = NULL;
}
