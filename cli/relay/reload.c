/* psplice relay: replaced in place (SIGUSR2). The relay runs again the
 * command line it was started with, from the path its program was found at
 * when it started (a package upgrade puts a new file there), and hands the
 * new process its listening sockets as a service manager would (LISTEN_FDS,
 * activate.c). The sockets are the same kernel objects in both
 * processes, so a client connecting meanwhile is queued, never refused. The
 * new process says on a pipe that it serves; only then does this one stop
 * accepting and drain. A new process that fails leaves this one serving.
 * The signals the relay takes stay blocked across the exec, so that one
 * sent to the new process before it takes them waits for it rather than
 * ends it by its default action. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "relay.h"
#include "out.h"

#define READY_ENV "PSPLICE_RELAY_READY_FD"
#define FIRST_FD 3             /* SD_LISTEN_FDS_START */
#define PID_DIGITS 20

extern char **environ;

/* What the forked child needs, all made before fork: between fork and exec
 * a threaded process may call only async-signal-safe functions. */
struct spawn {
	char *path;
	char **argv, **envp;
	char *pid_var;         /* "LISTEN_PID=" and room for the child's pid */
	int *fds, nfds;        /* the listeners, in the order passed */
	int ready;             /* the pipe's write end */
	sigset_t mask;         /* the relay's signals, blocked across exec */
};

/* The signals the relay takes from its signalfd (supervise.c), blocked in
 * every thread. Blocked too in a reload's new process from its fork to
 * its signalfd: the mask is kept across exec, and a signal blocked waits
 * as pending. */
void relay_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGHUP);
	sigaddset(set, SIGUSR1);
	sigaddset(set, SIGUSR2);
	sigaddset(set, HANDOVER_SIGNAL);
}

/* The whole file, or NULL; *len its size. */
char *slurp(const char *path, size_t *len)
{
	size_t size = 4096, used = 0;
	char *buf = malloc(size), *more;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	while (fd >= 0 && buf) {
		if (used == size) {
			more = realloc(buf, size *= 2);
			if (!more)
				break;
			buf = more;
		}
		n = read(fd, buf + used, size - used);
		if (n <= 0) {
			close(fd);
			*len = used;
			return n < 0 ? (free(buf), NULL) : buf;
		}
		used += (size_t)n;
	}
	if (fd >= 0)
		close(fd);
	free(buf);
	return NULL;
}

/* The file argv[0] named, searched in PATH as the shell searched it, into
 * path: a symbolic link is kept, for an upgrade may point it at another
 * file. NULL when it cannot be found. */
static char *program_path(const char *argv0, char *path, size_t size)
{
	const char *dirs = getenv("PATH"), *end;
	size_t len;

	if (strchr(argv0, '/')) {
		while (!strncmp(argv0, "./", 2))
			argv0 += 2;
		if (argv0[0] == '/')
			snprintf(path, size, "%s", argv0);
		else if (!getcwd(path, size) || strlen(path) + strlen(argv0) + 2 > size)
			return NULL;
		else
			strcat(strcat(path, "/"), argv0);
		return path;
	}
	for (; dirs && *dirs; dirs = *end ? end + 1 : end) {
		end = strchrnul(dirs, ':');
		len = (size_t)(end - dirs);
		if (len && len + strlen(argv0) + 2 <= size) {
			snprintf(path, size, "%.*s/%s", (int)len, dirs, argv0);
			if (access(path, X_OK) == 0)
				return path;
		}
	}
	return NULL;
}

/* The program's path and its command line, read as the relay starts: by
 * the time of a reload the file at that path may be another one (that is
 * the point). /proc/self/exe only if argv[0] names no file: it names the
 * file this process runs, which an upgrade deletes. */
int reload_prepare(struct relay *r)
{
	char exe[4096];
	const char *path;
	ssize_t n;
	size_t len = 0, i;
	int argc = 0;
	char *cmdline = slurp("/proc/self/cmdline", &len);

	if (!cmdline || !len || cmdline[len - 1] != '\0')
		goto fail;
	path = program_path(cmdline, exe, sizeof(exe));
	if (!path) {
		n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		if (n < 0)
			goto fail;
		exe[n] = '\0';
	}
	for (i = 0; i < len; i++)
		argc += cmdline[i] == '\0';
	r->re_argv = calloc((size_t)argc + 1, sizeof(char *));
	r->re_path = strdup(exe);
	if (!r->re_argv || !r->re_path)
		goto fail;
	for (i = 0, argc = 0; i < len; i += strlen(cmdline + i) + 1)
		r->re_argv[argc++] = cmdline + i;
	return 0;
fail:
	free(cmdline);
	free(r->re_argv);
	free(r->re_path);
	r->re_argv = NULL;
	r->re_path = NULL;
	return -1;
}

void reload_free(struct relay *r)
{
	if (r->re_argv)
		free(r->re_argv[0]);
	free(r->re_argv);
	free(r->re_path);
}

/* Set by relay_main when this process was started by a reload: the fd to
 * say "ready" on once it serves; -1 otherwise. */
int reload_ready_fd(void)
{
	const char *s = getenv(READY_ENV);
	char *end;
	long fd;

	if (!s)
		return -1;
	fd = strtol(s, &end, 10);
	unsetenv(READY_ENV);
	if (*end || fd < FIRST_FD || fd > 65535 || fcntl((int)fd, F_SETFD, FD_CLOEXEC) < 0)
		return -1;
	return (int)fd;
}

/* The new process serves: the old one may go. -1, said, when the old one
 * cannot be told (it is gone). */
int reload_say_ready(struct relay *r)
{
	char ok = 'R';
	int rc = 0;

	if (r->ready_fd < 0)
		return 0;
	if (write(r->ready_fd, &ok, 1) != 1) {
		cli_error(errno, "relay: cannot tell the relay it replaces that it serves");
		rc = -1;
	}
	close(r->ready_fd);
	r->ready_fd = -1;
	return rc;
}

/* Each listener of each line once (shared ones are the same fd in every
 * worker); n: room for them all. */
static int *listener_fds(const struct relay *r, int *n)
{
	const struct relay *x;
	int i, k, *fds;

	for (*n = 0, x = r; x; x = x->next)
		*n += x->jobs * x->nlisten;
	fds = calloc((size_t)*n, sizeof(int));
	for (*n = 0, x = r; x && fds; x = x->next)
		for (i = 0; i < (x->shared ? 1 : x->jobs); i++)
			for (k = 0; k < x->nlisten; k++)
				fds[(*n)++] = listener_at(x, i, k)->h.fd;
	return fds;
}

/* Around the fork: see fork_lock. Every line's, in their order. */
static void fork_lock(struct relay *r, bool lock)
{
	for (; r; r = r->next) {
		if (lock) {
			pthread_rwlock_wrlock(&r->fork_lock);
			atomic_fetch_add(&r->forks, 1);
		} else {
			pthread_rwlock_unlock(&r->fork_lock);
		}
	}
}

/* The fork failed: no copy of the fds to wait for. */
static void fork_undo(struct relay *r)
{
	for (; r; r = r->next)
		atomic_fetch_sub(&r->forks, 1);
}

/* The environment less the variables this process sets for the child. */
static char **child_env(int nfds, char **pid_var)
{
	size_t n = 0, i, j = 0;
	char **env, buf[64];
	const char *drop[] = { "LISTEN_FDS=", "LISTEN_PID=", "LISTEN_FDNAMES=", READY_ENV "=" };

	while (environ[n])
		n++;
	env = calloc(n + 4, sizeof(*env));
	if (!env)
		return NULL;
	for (i = 0; i < n; i++) {
		size_t d;

		for (d = 0; d < 4 && strncmp(environ[i], drop[d], strlen(drop[d])); d++)
			;
		if (d == 4)
			env[j++] = environ[i];
	}
	snprintf(buf, sizeof(buf), "LISTEN_FDS=%d", nfds);
	env[j++] = strdup(buf);
	snprintf(buf, sizeof(buf), READY_ENV "=%d", FIRST_FD + nfds);
	env[j++] = strdup(buf);
	*pid_var = env[j++] = calloc(1, sizeof("LISTEN_PID=") + PID_DIGITS);
	if (!env[j - 1] || !env[j - 2] || !env[j - 3]) {
		free(env[j - 1]);
		free(env[j - 2]);
		free(env[j - 3]);
		free(env);
		return NULL;
	}
	return env;
}

static void free_spawn(struct spawn *s)
{
	size_t n = 0;

	if (s->envp) {
		while (s->envp[n])
			n++;
		/* The last three are this process's own. */
		free(s->envp[n - 1]);
		free(s->envp[n - 2]);
		free(s->envp[n - 3]);
	}
	free(s->envp);
	free(s->fds);
}

/* In the child, async-signal-safe: "LISTEN_PID=1234". */
static void put_pid(char *var)
{
	char digits[PID_DIGITS];
	long pid = (long)getpid();
	int n = 0;

	memcpy(var, "LISTEN_PID=", sizeof("LISTEN_PID=") - 1);
	var += sizeof("LISTEN_PID=") - 1;
	do
		digits[n++] = (char)('0' + pid % 10);
	while ((pid /= 10) && n < PID_DIGITS);
	while (n)
		*var++ = digits[--n];
	*var = '\0';
}

/* In the child, async-signal-safe: the listeners to fds 3, 4, ... and the
 * pipe after them, each first moved above that range so that no dup2
 * overwrites one not yet moved; dup2 leaves the new fds open across exec.
 * The signals the relay ignored are the program's again; those it takes
 * stay blocked until the new relay takes them, and no other is. The
 * open-file limit is the one the relay started with (nofile.c). */
static void child(struct spawn *s)
{
	int k, top = FIRST_FD + s->nfds + 1, err;

	for (k = 0; k < s->nfds; k++)
		if ((s->fds[k] = fcntl(s->fds[k], F_DUPFD_CLOEXEC, top)) < 0)
			goto fail;
	if ((s->ready = fcntl(s->ready, F_DUPFD_CLOEXEC, top)) < 0)
		goto fail;
	for (k = 0; k < s->nfds; k++)
		if (dup2(s->fds[k], FIRST_FD + k) < 0)
			goto fail;
	if (dup2(s->ready, FIRST_FD + s->nfds) < 0)
		goto fail;
	put_pid(s->pid_var);
	nofile_restore();
	sigprocmask(SIG_SETMASK, &s->mask, NULL);
	signal(SIGPIPE, SIG_DFL);
	execve(s->path, s->argv, s->envp);
fail:
	/* 'E' and the errno: the parent says it, as this process cannot. */
	err = errno;
	if (write(s->ready, "E", 1) == 1 && write(s->ready, &err, sizeof(err)) < 0)
		err = 0;
	_exit(127);
}

/* Start the new process; its pid, or -1 once said why not. *ready_rd is
 * the read end of the pipe it will say "ready" on. */
pid_t reload_start(struct relay *r, int *ready_rd)
{
	struct spawn s = { .path = r->re_path, .argv = r->re_argv };
	int p[2] = { -1, -1 };
	pid_t pid = -1;

	if (!r->re_path) {
		cli_error(0, "relay: cannot reload: the program's path and command line "
			  "could not be read at start (/proc not mounted?)");
		return -1;
	}
	s.fds = listener_fds(r, &s.nfds);
	if (!s.fds || pipe2(p, O_CLOEXEC) < 0) {
		cli_error(errno, "relay: cannot reload");
		goto out;
	}
	s.ready = p[1];
	relay_signals(&s.mask);
	s.envp = child_env(s.nfds, &s.pid_var);
	if (!s.envp) {
		cli_error(ENOMEM, "relay: cannot reload");
		goto out;
	}
	/* From here to its exec, the child holds every fd: see fork_lock. */
	fork_lock(r, true);
	pid = fork();
	if (pid == 0)
		child(&s);
	fork_lock(r, false);
	if (pid < 0) {
		fork_undo(r);
		cli_error(errno, "relay: cannot reload: fork");
	}
out:
	free_spawn(&s);
	if (p[1] >= 0)
		close(p[1]);
	if (pid > 0)
		*ready_rd = p[0];
	else if (p[0] >= 0)
		close(p[0]);
	return pid;
}

/* The pipe has something, or was closed: true when the new process
 * serves; otherwise, it has failed, and why is said and the child reaped. */
bool reload_ended(struct relay *r, pid_t pid, int fd)
{
	char c = 0;
	int err = 0, status = 0;
	ssize_t n = read(fd, &c, 1);

	(void)r;
	if (n == 1 && c == 'R') {
		close(fd);
		return true;
	}
	if (n == 1 && c == 'E' && read(fd, &err, sizeof(err)) == sizeof(err))
		cli_error(err, "relay: reload failed: cannot run %s", cli_quote(r->re_path));
	close(fd);
	if (waitpid(pid, &status, 0) < 0)
		cli_error(errno, "relay: reload failed: waitpid");
	else if (!err && WIFEXITED(status) && WEXITSTATUS(status) == 0)
		cli_error(0, "relay: reload failed: the new relay (process %ld) stopped "
			  "before it served", (long)pid);
	else if (!err && WIFEXITED(status))
		cli_error(0, "relay: reload failed: the new relay (process %ld) exited "
			  "with status %d", (long)pid, WEXITSTATUS(status));
	else if (!err && WIFSIGNALED(status))
		cli_error(0, "relay: reload failed: the new relay (process %ld) was "
			  "killed by signal %d", (long)pid, WTERMSIG(status));
	cli_say("relay: still serving (process %ld)", (long)getpid());
	return false;
}
