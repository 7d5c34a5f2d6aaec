/* psplice relay's main thread, once the options are read (cmd.c): the
 * listeners made, the workers started (worker.c), then signals and the
 * stats line handled until the workers end: a stop drains, a second stop
 * cuts, SIGUSR2 reloads (reload.c), a takeover (--replace) hands the
 * listeners over; the counters said at the end. With --config, each of
 * these is done for every line's relay and its listener; the workers, the
 * first line's, serve them all. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/un.h>
#include <unistd.h>

#include "relay.h"
#include "out.h"
#include "outq.h"

/* Every connected socket of the process set to close with a reset: the
 * kernel would end each with a FIN when the process dies, and a stream cut
 * there must not look ended to its peer. Only for workers that did not end
 * in time (die_of): they may still run, so the fds are found in /proc
 * rather than in their lists; one closed and reused under us is another of
 * our sockets, cut all the same. A unix socket has no reset: its peer
 * reads an end. */
static void reset_all(void)
{
	struct linger now = { .l_onoff = 1, .l_linger = 0 };
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int fd, listening;
	socklen_t len;

	while (d && (e = readdir(d))) {
		fd = atoi(e->d_name);
		len = sizeof(listening);
		if (fd > STDERR_FILENO && fd != dirfd(d) &&
		    getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) == 0 && !listening)
			(void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &now, sizeof(now));
	}
	if (d)
		closedir(d);
}

/* Each worker looks at what the main thread changed once woken: the end
 * of its drain, and r->cutting (start_drain). */
static void wake_workers(const struct relay *r)
{
	uint64_t one = 1;
	int i;

	for (i = 0; i < r->jobs; i++)
		if (write(r->w[i].wake.fd, &one, sizeof(one)) < 0)
			cli_error(errno, "relay: eventfd");
}

/* Connections open, every listener's. */
static uint64_t open_conns(const struct relay *r)
{
	uint64_t open = 0;

	for (; r; r = r->next)
		open += atomic_load(&r->open);
	return open;
}

/* Whether every worker ended within CUT_WAIT_MS, on the monotonic clock
 * (a step of the wall clock neither cuts the wait short nor stretches it). */
static bool workers_ended(const struct relay *r)
{
	struct timespec until;
	int64_t ns;
	int i;

	clock_gettime(CLOCK_MONOTONIC, &until);
	ns = until.tv_nsec + (int64_t)CUT_WAIT_MS * 1000000;
	until.tv_sec += ns / 1000000000;
	until.tv_nsec = ns % 1000000000;
	for (i = 0; i < r->jobs; i++)
		if (cli_clockjoin(r->w[i].thread, &until))
			return false;
	return true;
}

/* A second stop signal: the connections are not waited for, and each
 * still open is reset. The workers do it (cutting), each connection's
 * record saying so, and end: a connection that ends meanwhile ends as it
 * would have, before the process goes, and is not reset by another thread
 * as it closes, which would drop its unsent tail. A worker stuck past
 * CUT_WAIT_MS (writing to a --log=FILE that does not drain) has the rest
 * reset under it; the lines still queued have as long to be written, the
 * rest is lost with the process.
 * The relay ends as the signal's default action ends a program, not with
 * an exit status of its own: a shell that sees its child killed by SIGINT
 * stops the script it runs too, as it would for any program interrupted
 * by Ctrl-C (an exit status of 130 would let the script go on). The
 * kernel closes every socket. */
static _Noreturn void die_of(struct relay *r, int signo)
{
	uint64_t open = open_conns(r);
	sigset_t set;

	if (open)
		cli_say("relay: stopping now: %" PRIu64 " connection%s cut", open,
			open == 1 ? "" : "s");
	atomic_store(&r->cutting, true);
	wake_workers(r);
	if (!workers_ended(r))
		reset_all();
	pidfile_remove(r);
	/* The lines queued, for as long at most. */
	cli_outq_flush(CUT_WAIT_MS);
	signal(signo, SIG_DFL);
	sigemptyset(&set);
	sigaddset(&set, signo);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	raise(signo);
	_exit(128 + signo);
}

/* SIGTERM, SIGINT or SIGHUP: the first stops accepting and lets the open
 * connections finish, and says so (someone who pressed Ctrl-C would
 * otherwise wait on a silent relay); the second stops at once. */
static void stop(struct relay *r, int signo)
{
	uint64_t open = open_conns(r);
	struct relay *x;

	if (atomic_load(&r->draining))
		die_of(r, signo);
	if (open)
		cli_say("relay: draining %" PRIu64 " connection%s (again to stop now)", open,
			open == 1 ? "" : "s");
	else if (r->verbose)
		cli_say("relay: stopping: no connections to drain");
	/* The socket file a new relay serves stays. */
	for (x = r; x; x = x->next)
		if (x->listen.ss.ss_family == AF_UNIX && !atomic_load(&r->handed_over))
			unlink(((struct sockaddr_un *)&x->listen.ss)->sun_path);
	if (!atomic_load(&r->handed_over))
		notify_stopping();
	atomic_store(&r->draining, true);
	wake_workers(r);
}

/* A reload under way: the new process and the pipe it says "ready" on;
 * and the process a reload handed the service to, or -1. */
struct reload {
	pid_t pid;
	int fd;
	pid_t successor;
};

/* SIGUSR2: start the new relay, unless one is already starting or this one
 * is draining (its listeners may be closed already). */
static void reload(struct relay *r, struct reload *re)
{
	if (atomic_load(&r->draining)) {
		cli_say("relay: not reloading: draining");
		return;
	}
	if (re->fd >= 0) {
		cli_say("relay: not reloading: process %ld is starting already",
			(long)re->pid);
		return;
	}
	notify_reloading();
	re->pid = reload_start(r, &re->fd);
	if (re->pid < 0) {
		notify_reloaded(0);
		cli_say("relay: still serving (process %ld)", (long)getpid());
	}
}

/* Process pid serves the listeners: this relay stops accepting and
 * drains, the sockets left listening and a unix socket's file in place
 * for it. Already draining, it goes on as it was: the stop signal that
 * began it is not repeated, which would end it at once. */
static void handed_over(struct relay *r, pid_t pid, int signo)
{
	if (r->verbose)
		cli_say("relay: process %ld serves in place of this one", (long)pid);
	atomic_store(&r->handed_over, true);
	/* Scrapes go to the new relay, which listens beside this one. */
	metrics_wake(r);
	if (!atomic_load(&r->draining))
		stop(r, signo);
}

/* The new relay said it serves, or failed: in the first case this one
 * stops accepting and drains, its listeners left to the new one. */
static void reloaded(struct relay *r, struct reload *re)
{
	bool ok = reload_ended(r, re->pid, re->fd);
	struct relay *x;

	/* Exec'd (it said ready) or reaped: the fds' copies are gone. */
	for (x = r; x; x = x->next)
		atomic_fetch_sub(&x->forks, 1);
	re->fd = -1;
	if (!atomic_load(&r->draining))
		notify_reloaded(ok ? re->pid : 0);
	if (ok && !atomic_load(&r->draining)) {
		re->successor = re->pid;
		handed_over(r, re->pid, SIGUSR2);
	}
}

/* Tell process pid that serving serves its listeners now. */
static void tell_replaced(pid_t pid, pid_t serving)
{
	if (replace_forward(pid, serving) < 0)
		cli_error(errno, "relay: cannot stop process %ld", (long)pid);
}

/* The relay a reload started and that has not said it serves is stopped
 * with this one: it is this relay's child, not handed the service, and
 * would otherwise go on alone. A stop signal stops it with a SIGTERM (the
 * operator asked for none to serve, and this one removes a unix socket's
 * file); a relay started with --replace that serves the listeners now
 * (serving, its pid) is named to it as to this one, so that it leaves
 * them to that relay. */
static void stop_reload(struct reload *re, pid_t serving)
{
	if (re->fd < 0)
		return;
	cli_say("relay: stopping process %ld, which was starting to replace this one",
		(long)re->pid);
	if (serving)
		tell_replaced(re->pid, serving);
	else if (kill(re->pid, SIGTERM) < 0)
		cli_error(errno, "relay: cannot stop process %ld", (long)re->pid);
	close(re->fd);
	re->fd = -1;
}

/* A relay started with --replace took this one's listeners after a reload
 * had handed them on (the two crossed): the reload's relay serves them
 * too, and is told as this one was, so that only the last one serves. */
static void pass_on(struct reload *re, pid_t serving)
{
	if (re->successor < 0 || re->successor == serving)
		return;
	cli_say("relay: process %ld, which serves in place of this one, is replaced too",
		(long)re->successor);
	tell_replaced(re->successor, serving);
	re->successor = -1;
}

static void stop_all(struct relay *r, struct reload *re, int signo)
{
	stop_reload(re, 0);
	stop(r, signo);
}

/* The signal of a relay started with --replace that serves this one's
 * listeners now (replace.c). The same signal without the value is
 * taken as a stop, as its default action would end the process. */
static bool from_replacer(const struct signalfd_siginfo *si)
{
	return (int)si->ssi_signo == HANDOVER_SIGNAL && si->ssi_code == SI_QUEUE &&
	       si->ssi_int == HANDOVER_VALUE;
}

/* One signal the main thread took from the signalfd (supervise). */
static void on_signal(struct relay *r, struct reload *re, const struct signalfd_siginfo *si)
{
	if (si->ssi_signo == SIGUSR1) {
		relay_stats(r);
	} else if (si->ssi_signo == SIGUSR2) {
		reload(r, re);
	} else if (from_replacer(si)) {
		stop_reload(re, (pid_t)si->ssi_pid);
		pass_on(re, (pid_t)si->ssi_pid);
		handed_over(r, (pid_t)si->ssi_pid, HANDOVER_SIGNAL);
	} else {
		stop_all(r, re, (int)si->ssi_signo);
	}
}

/* Wait for the workers; SIGTERM, SIGINT and SIGHUP stop the relay (stop),
 * SIGUSR1 and the stats interval print the counters, SIGUSR2 starts the
 * relay that replaces this one; a relay started with --replace says it
 * has taken this one's listeners. */
static void supervise(struct relay *r, int sfd)
{
	struct pollfd p[3] = { { .fd = sfd, .events = POLLIN },
			       { .fd = r->done_fd, .events = POLLIN },
			       { .fd = -1, .events = POLLIN } };
	struct signalfd_siginfo si;
	struct reload re = { .pid = -1, .fd = -1, .successor = -1 };
	int running = r->jobs;
	uint64_t v;
	int64_t next_stats = r->stats_ms ? now_ms() + r->stats_ms : NEVER, now;

	while (running > 0) {
		now = now_ms();
		if (now >= next_stats) {
			relay_stats(r);
			next_stats = now + r->stats_ms;
		}
		p[2].fd = re.fd;
		if (poll(p, 3, wait_ms(next_stats, now)) < 0)
			continue;
		if ((p[1].revents & POLLIN) && read(r->done_fd, &v, sizeof(v)) == sizeof(v))
			running -= (int)v;
		/* The signal first: a stop or a takeover that came with the
		 * new relay's "ready" stops that relay rather than hand it
		 * the service. */
		if ((p[0].revents & POLLIN) && read(sfd, &si, sizeof(si)) == sizeof(si))
			on_signal(r, &re, &si);
		if (p[2].revents && re.fd >= 0)
			reloaded(r, &re);
	}
	if (re.fd >= 0)
		close(re.fd);
}

/* Signals go to the signalfd alone: workers inherit the mask. One sent
 * to a reload's new relay before this waits in it (reload.c). A peer that
 * went away must not end the relay: SIGPIPE is ignored before any pair is
 * prepared, so the pairs' moves need no guard against it
 * (psplice_pair_new(3)). The signalfd, or -1. */
static int take_signals(void)
{
	sigset_t set;

	signal(SIGPIPE, SIG_IGN);
	/* Inherited as ignored, SIGCHLD would have a reload's relay reaped
	 * as it ends, and its pid, which this one may still signal, free to
	 * be another process's. */
	signal(SIGCHLD, SIG_DFL);
	relay_signals(&set);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	return signalfd(-1, &set, SFD_CLOEXEC);
}

/* A stop, or a takeover by a relay started with --replace, that came
 * while this one was starting (a reload's new relay has them blocked from
 * its fork): it ends before it serves, as if stopped with nothing to
 * drain, and the relay that started it serves on. SIGUSR1 and SIGUSR2
 * wait in the signalfd, taken once it serves. */
static bool stopped_starting(const struct relay *r)
{
	sigset_t pending;

	if (sigpending(&pending) < 0 || !(sigismember(&pending, SIGINT) ||
	    sigismember(&pending, SIGTERM) || sigismember(&pending, SIGHUP) ||
	    sigismember(&pending, HANDOVER_SIGNAL)))
		return false;
	if (r->verbose)
		cli_say("relay: stopped before it served");
	return true;
}

/* The workers made ready, each watching every listener; each
 * listener's line said with -v. */
static int prepare(struct relay *r)
{
	int i;

	for (i = 0; i < r->jobs; i++)
		if (worker_init(r, &r->w[i], i) < 0) {
			cli_error(errno, "relay: epoll");
			return -1;
		}
	for (; r && r->verbose; r = r->next)
		relay_listening(r);
	return 0;
}

/* The target checker and the workers, every line's: nothing fails after
 * them that would free what they use. */
static void start_workers(struct relay *r)
{
	int i, err;

	if ((err = checker_start(r)))
		cli_error(err, "relay: cannot start the target checker");
	for (i = 0; i < r->jobs; i++) {
		err = pthread_create(&r->w[i].thread, NULL, worker_main, &r->w[i]);
		if (err) {
			/* Workers already running use w: leave without freeing. */
			cli_error(err, "relay: cannot start a worker");
			exit(1);
		}
	}
}

/* The workers ended: 1 when a listener was lost. */
static int finish(struct relay *r)
{
	struct relay *x;
	int i;

	for (i = 0; i < r->jobs; i++)
		pthread_join(r->w[i].thread, NULL);
	checker_stop(r);
	for (x = r; x; x = x->next)
		note_flush(&x->accept_failed, true);
	return atomic_load(&r->listener_lost) ? 1 : 0;
}

static int serve(struct relay *r)
{
	int sfd, done, status = 0;
	bool by_reload = r->ready_fd >= 0;
	struct relay *x;

	if ((r->config ? claim_listeners(r) : make_listeners(r)) < 0 ||
	    metrics_listen(r) < 0)
		goto fail;
	sfd = take_signals();
	done = eventfd(0, EFD_CLOEXEC);
	if (sfd < 0 || done < 0) {
		cli_error(errno, "relay");
		goto fail;
	}
	if (stopped_starting(r)) {
		unlink_made(r);
		return 0;
	}
	for (x = r; x; x = x->next)
		x->done_fd = done;
	if (prepare(r) < 0 || metrics_start(r) < 0)
		goto fail;
	start_workers(r);
	/* The relay replaced must not be left serving alongside this one
	 * unknowing, nor this one serve when the one that started it is
	 * gone (stopped meanwhile): this one goes, the sockets left as
	 * they are. */
	if (reload_say_ready(r) < 0 || replace_finish(r) < 0) {
		atomic_store(&r->handed_over, true);
		stop(r, SIGTERM);
		status = 1;
	} else {
		claim_release(r, true);
		pidfile_write(r);
		if (!by_reload)
			notify_ready(getpid());
	}
	supervise(r, sfd);
	status |= finish(r);
	pidfile_remove(r);
	if (r->verbose)
		relay_stats(r);
	return status;
fail:
	/* Nothing served: the socket files this process made go. */
	unlink_made(r);
	return 1;
}

int relay_run(struct relay *r)
{
	struct relay *x;
	int status = 1;

	for (x = r; x; x = x->next) {
		x->first = r;
		if (gate_start(x) < 0)
			goto out;
	}
	if (!(r->w = calloc((size_t)r->jobs, sizeof(*r->w)))) {
		cli_error(ENOMEM, "relay");
		goto out;
	}
	status = serve(r);
	metrics_stop(r);
	if (r->replace_fd >= 0)
		close(r->replace_fd);
out:
	for (x = r; x; x = x->next) {
		free_listeners(x);
		gate_stop(x);
	}
	free(r->w);
	claim_release(r, false);
	reload_free(r);
	return status;
}
