/* psplice bench, groups "cat" and "cp": the psplice CLI against the tools
 * people already use for the same job (cat, pv, cp), on the same cached
 * data in the same run. Each command runs through /bin/sh, so its wall
 * time includes starting it and its CPU time is that of every process it
 * waited for. Variants run interleaved (A B C A B C) so that they share
 * the machine's noise, and the fastest run of each counts. This file runs
 * the items; bench_cat.c, bench_cp.c and bench_reflink.c make them. */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "bench_peers.h"

#define RW_BUF (128 * 1024)

/* Append s to cmd in single quotes, for /bin/sh. */
void peer_add_quoted(char *cmd, size_t size, const char *s)
{
	size_t len = strlen(cmd);

	if (len + 1 < size)
		cmd[len++] = '\'';
	for (; *s && len + 5 < size; s++) {
		if (*s == '\'') {
			memcpy(cmd + len, "'\\''", 4);
			len += 4;
		} else {
			cmd[len++] = *s;
		}
	}
	if (len + 1 < size)
		cmd[len++] = '\'';
	cmd[len < size ? len : size - 1] = '\0';
}

void peer_add(char *cmd, size_t size, const char *fmt, ...)
{
	size_t len = strlen(cmd);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd + len, size - len, fmt, ap);
	va_end(ap);
}

struct variant *peer_variant(struct item *it, const char *name, bool baseline,
			     const char *note)
{
	struct variant *v = &it->v[it->n++];

	*v = (struct variant){ .name = name, .baseline = baseline, .note = note };
	return v;
}

/* peer_add() and peer_add_quoted() stop at the end of the buffer; a command cut
 * short there must not run (a long scratch path). */
static void check_len(struct variant *v, const char *buf, size_t size)
{
	if (strlen(buf) + 8 >= size)
		v->skip = "the command is too long (the scratch path?)";
}

/* "exec timeout ... prog": exec, so that no extra shell stays around, and
 * the CPU of everything timeout waited for still reaches wait4. */
static void timed_prefix(struct variant *v)
{
	snprintf(v->cmd, sizeof(v->cmd), "exec timeout -k 5 %d ", RUN_TIMEOUT);
}

/* A command of a program and the item's files: "prog args SRC DST". */
void peer_command(struct item *it, struct variant *v, const char *prog, const char *args)
{
	timed_prefix(v);
	peer_add_quoted(v->cmd, sizeof(v->cmd), prog);
	peer_add(v->cmd, sizeof(v->cmd), " %s%s", args, *args ? " " : "");
	peer_add_quoted(v->cmd, sizeof(v->cmd), it->src);
	peer_add(v->cmd, sizeof(v->cmd), " ");
	peer_add_quoted(v->cmd, sizeof(v->cmd), it->dst);
	check_len(v, v->cmd, sizeof(v->cmd));
}

/* v's command: "bash -c INNER" under timeout; INNER was built in a buffer
 * of size bytes. */
void peer_bash(struct variant *v, const char *inner, size_t size)
{
	timed_prefix(v);
	peer_add(v->cmd, sizeof(v->cmd), "bash -c ");
	peer_add_quoted(v->cmd, sizeof(v->cmd), inner);
	check_len(v, inner, size);
	check_len(v, v->cmd, sizeof(v->cmd));
}

/* "A FILE... | B > /dev/null" under bash with pipefail: dash, /bin/sh on
 * Debian, would tell only B's status, and a failing A must not pass for a
 * fast one. */
void peer_pipeline(struct variant *v, const char *a, const char *b, const char *file,
		   int copies)
{
	char inner[sizeof(v->cmd) / 2] = "set -o pipefail; ";

	peer_add(inner, sizeof(inner), "%s", a);
	for (int i = 0; i < copies; i++) {
		peer_add(inner, sizeof(inner), " ");
		peer_add_quoted(inner, sizeof(inner), file);
	}
	peer_add(inner, sizeof(inner), " | %s > /dev/null", b);
	peer_bash(v, inner, sizeof(inner));
}

/* What cp(1) would do without the kernel's help: read and write 128 KiB at
 * a time, the buffer size coreutils uses. 0, or an errno. */
static int rw_copy(const char *src, const char *dst)
{
	static char buf[RW_BUF];
	int in = open(src, O_RDONLY | O_CLOEXEC), out = -1, err = 0;
	ssize_t n, w;

	if (in < 0)
		return errno;
	out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (out < 0) {
		err = errno;
		goto out;
	}
	while ((n = read(in, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = errno;
			goto out;
		}
		for (ssize_t done = 0; done < n; done += w) {
			w = write(out, buf + done, (size_t)(n - done));
			if (w < 0 && errno == EINTR)
				w = 0;
			else if (w <= 0) {
				err = w < 0 ? errno : EIO;
				goto out;
			}
		}
	}
out:
	if (out >= 0 && close(out) < 0 && !err)
		err = errno;
	close(in);
	return err;
}

/* The destination of the previous run goes, and so does its writeback:
 * the dirty pages one run leaves behind must not be written on the next
 * one's time. */
static void settle(const struct item *it)
{
	if (it->dst)
		unlink(it->dst);
	if (it->sync_fd >= 0)
		syncfs(it->sync_fd);
}

static void run_once(const struct item *it, struct variant *v)
{
	double t0, c0, wall, cpu;
	int st;

	settle(it);
	if (v->inproc) {
		c0 = bench_cpu_thread();
		t0 = bench_now();
		st = rw_copy(it->src, it->dst);
		wall = bench_now() - t0;
		cpu = bench_cpu_thread() - c0;
	} else {
		st = bench_sh(v->cmd, &wall, &cpu);
	}
	if (st) {
		v->status = st;
		return;
	}
	if (!v->runs++ || wall < v->wall) {
		v->wall = wall;
		v->cpu = cpu;
	}
}

/* Rounds of every variant still standing, at least it->reps of them, and
 * up to max_reps while the item is within its time budget. */
void peer_run_item(struct item *it)
{
	double t0 = bench_now();

	for (int rep = 0; rep < it->max_reps; rep++) {
		if (rep >= it->reps && bench_now() - t0 > it->budget)
			break;
		for (int i = 0; i < it->n; i++)
			if (!it->v[i].status && !it->v[i].skip)
				run_once(it, &it->v[i]);
	}
	settle(it);
}

void peer_report(const struct item *it)
{
	double gib = (double)it->bytes / BENCH_GiB;
	const struct variant *v;
	char note[120];

	for (int i = 0; i < it->n; i++) {
		v = &it->v[i];
		if (v->skip)
			bench_skip(it->group, it->name, v->name, "%s", v->skip);
		else if (v->status == 124)
			bench_skip(it->group, it->name, v->name, "still running after %d s",
				   RUN_TIMEOUT);
		else if (v->status == -1 && !v->inproc)
			bench_skip(it->group, it->name, v->name, "could not start /bin/sh");
		else if (v->status && v->inproc)
			bench_skip(it->group, it->name, v->name, "%s", strerror(v->status));
		else if (v->status)
			bench_skip(it->group, it->name, v->name, "exit status %d", v->status);
		if (v->skip || v->status)
			continue;
		snprintf(note, sizeof(note), "%s%s%.4f s, best of %d", v->note,
			 *v->note ? "; " : "", v->wall, v->runs);
		bench_row(it->group, it->name, v->name, BENCH_GIBPS, gib / v->wall,
			  v->cpu / gib, v->baseline, note);
	}
}

void peer_skip_item(const struct item *it, const char *fmt, ...)
{
	char why[100];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	for (int i = 0; i < it->n; i++)
		bench_skip(it->group, it->name, it->v[i].name, "%s", why);
}

/* "512 MiB", "2 GiB" */
const char *peer_size_text(uint64_t size)
{
	static char buf[4][24];
	static int next;
	char *b = buf[next++ % 4];

	if (size % GiB == 0)
		snprintf(b, sizeof(buf[0]), "%llu GiB", (unsigned long long)(size / GiB));
	else
		snprintf(b, sizeof(buf[0]), "%llu MiB", (unsigned long long)(size / MiB));
	return b;
}

void peer_join(char *buf, size_t size, const char *dir, const char *name)
{
	snprintf(buf, size, "%s/%s", dir, name);
}

/* Unmount what we mounted: a file still open in it (a killed command's)
 * may keep it busy for a moment; detached at last, it goes when it is
 * free. */
void peer_unmount(const char *dir)
{
	for (int i = 0; i < 20; i++) {
		if (umount2(dir, 0) == 0 || errno != EBUSY)
			return;
		usleep(100000);
	}
	umount2(dir, MNT_DETACH);
}

/* why = the message; -1 */
int peer_fail(char *why, size_t n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, n, fmt, ap);
	va_end(ap);
	return -1;
}

int peer_tmpfs_dir(const struct bench_opts *o, uint64_t need, char *dir, size_t n, char *why,
		   size_t wn)
{
	char opts[64];
	struct statfs s;

	if (o->root) {
		peer_join(dir, n, o->dir, "peers-tmpfs");
		snprintf(opts, sizeof(opts), "size=%lluk,mode=0700",
			 (unsigned long long)(need >> 10));
		if ((mkdir(dir, 0700) < 0 && errno != EEXIST) ||
		    mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0) {
			peer_fail(why, wn, "cannot mount a tmpfs: %s", strerror(errno));
			rmdir(dir);
			return -1;
		}
		return 1;
	}
	if (statfs("/dev/shm", &s) < 0 || (unsigned long)s.f_type != TMPFS_MAGIC ||
	    (uint64_t)s.f_bavail * (uint64_t)s.f_bsize < need)
		return peer_fail(why, wn, "not root, and /dev/shm is no tmpfs with %s free",
				 peer_size_text(need));
	snprintf(dir, n, "/dev/shm/psplice-bench.XXXXXX");
	if (!mkdtemp(dir))
		return peer_fail(why, wn, "cannot make a directory in /dev/shm: %s",
				 strerror(errno));
	return 0;
}
