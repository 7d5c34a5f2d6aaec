/* psplice exec -v: whether the command will load libpsplice-preload.so.
 *
 * psplice is replaced by the command (execvp), so nothing of it is left to
 * hear from the library once the command runs; staying as a parent to
 * listen (a pipe the library would write to at load) would change the pid,
 * the signals and the exit status the caller sees. What the loader decides
 * from the file itself can be read before the exec, though, and that covers
 * the usual ways the library is not loaded: a program with no PT_INTERP
 * (static, static-pie) has no loader to read LD_PRELOAD; a set-user-ID or
 * set-group-ID program runs in secure-execution mode (AT_SECURE, ld.so(8)),
 * where a preload path with a slash is ignored; and the loader skips a
 * library of another ELF class or machine ("wrong ELF class"). A script is
 * judged by its interpreter, as the kernel runs that (binfmt_script). A
 * program that clears LD_PRELOAD for its own children is not seen. */
#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "out.h"
#include "exec.h"

/* The kernel follows at most this many interpreters (BINPRM_MAX_RECURSION
 * in include/linux/binfmts.h), and reads this much of a "#!" line
 * (BINPRM_BUF_SIZE). */
#define MAX_DEPTH 4
#define SHEBANG_MAX 256

/* A file is opened to be read, never to wait: a FIFO named as the program
 * (or as a script's interpreter, or as the library) would block the open
 * until a writer came, where execve(2) refuses it at once. Nor may a
 * terminal become our controlling one. */
#define READ_FLAGS (O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)

/* The ELF identity the loader compares: class, byte order, machine. */
struct elf_id {
	unsigned char cls, data;
	uint16_t machine;
};

static bool read_all(int fd, void *buf, size_t n, off_t off)
{
	return pread(fd, buf, n, off) == (ssize_t)n;
}

/* The ELF identity of the open file; false when it is not ELF. e_machine
 * lies at the same offset in both classes. */
static bool elf_id(int fd, struct elf_id *id)
{
	unsigned char h[EI_NIDENT + 4];

	if (!read_all(fd, h, sizeof(h), 0) || memcmp(h, ELFMAG, SELFMAG))
		return false;
	id->cls = h[EI_CLASS];
	id->data = h[EI_DATA];
	memcpy(&id->machine, h + EI_NIDENT + 2, sizeof(id->machine));
	return true;
}

/* Whether the dynamic section at ph names the file itself (DT_SONAME): a
 * shared library's mark, which a static-pie program has not. */
static bool has_soname(int fd, const ElfW(Phdr) *ph)
{
	ElfW(Dyn) d;
	size_t i;

	for (i = 0; i < ph->p_filesz / sizeof(d); i++) {
		if (!read_all(fd, &d, sizeof(d), (off_t)(ph->p_offset + i * sizeof(d))) ||
		    d.d_tag == DT_NULL)
			return false;
		if (d.d_tag == DT_SONAME)
			return true;
	}
	return false;
}

/* Whether the program, of the library's own kind, is linked statically:
 * an executable with no loader named (PT_INTERP), static or static-pie.
 * Not an object file or a core, which execve refuses anyway, nor a shared
 * library run as a program: the loader itself (ld.so PROG) honours
 * LD_PRELOAD for the program it runs. False when the file cannot be read,
 * so as to say nothing. */
static bool is_static(int fd)
{
	ElfW(Ehdr) eh;
	ElfW(Phdr) ph;
	bool dyn_named = false;
	unsigned int i;

	if (!read_all(fd, &eh, sizeof(eh), 0) || eh.e_phentsize != sizeof(ph) ||
	    (eh.e_type != ET_EXEC && eh.e_type != ET_DYN))
		return false;
	for (i = 0; i < eh.e_phnum; i++) {
		if (!read_all(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * sizeof(ph))))
			return false;
		if (ph.p_type == PT_INTERP)
			return false;
		if (ph.p_type == PT_DYNAMIC && eh.e_type == ET_DYN)
			dyn_named = has_soname(fd, &ph);
	}
	return !dyn_named;
}

/* Secure-execution mode: the set-user-ID bit of a file another user owns,
 * or the set-group-ID bit (with group execute, else it means mandatory
 * locking) of a group not the real one; not on a nosuid mount nor under
 * no_new_privs, where the kernel grants neither. */
static const char *secure(int fd, const struct stat *st)
{
	struct statvfs sv;
	bool su = (st->st_mode & S_ISUID) && st->st_uid != getuid();
	bool sg = (st->st_mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP) &&
		  st->st_gid != getgid();

	if (!su && !sg)
		return NULL;
	if ((fstatvfs(fd, &sv) == 0 && (sv.f_flag & ST_NOSUID)) ||
	    prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1)
		return NULL;
	return su ? "is set-user-ID (the loader then ignores LD_PRELOAD)" :
		"is set-group-ID (the loader then ignores LD_PRELOAD)";
}

/* The interpreter a "#!" line names, into interp; false when fd does not
 * start with one. */
static bool shebang(int fd, char *interp, size_t n)
{
	char line[SHEBANG_MAX + 1];
	ssize_t got = pread(fd, line, SHEBANG_MAX, 0);
	size_t a, b;

	if (got < 2 || line[0] != '#' || line[1] != '!')
		return false;
	line[got] = '\0';
	a = 2 + strspn(line + 2, " \t");
	b = a + strcspn(line + a, " \t\n");
	if (b == a || b - a >= n)
		return false;
	memcpy(interp, line + a, b - a);
	interp[b - a] = '\0';
	return true;
}

/* Why the program at path will not load a library of kind lib; NULL when
 * nothing says so. When path is a script, interp receives the interpreter
 * that decided (the last of a chain). */
static const char *judge(const char *path, const struct elf_id *lib, int depth, char *interp,
			 size_t n)
{
	struct elf_id id;
	struct stat st;
	const char *why = NULL;
	int fd = open(path, READ_FLAGS);

	if (fd < 0)
		return NULL;
	/* The kernel runs regular files only (EACCES else). */
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return NULL;
	}
	if (elf_id(fd, &id)) {
		if (id.cls != lib->cls || id.data != lib->data || id.machine != lib->machine)
			why = "is built for another machine or word size than the library";
		else if (is_static(fd))
			why = "is statically linked";
		else
			why = secure(fd, &st);
	} else if (depth < MAX_DEPTH && shebang(fd, interp, n)) {
		char next[PATH_MAX];

		snprintf(next, sizeof(next), "%s", interp);
		why = judge(next, lib, depth + 1, interp, n);
	}
	close(fd);
	return why;
}

/* cmd found as execvp finds it: as given when it has a slash, else the
 * first executable regular file of that name in $PATH (an empty entry is
 * the current directory). */
static bool find_prog(const char *cmd, char *out, size_t n)
{
	const char *p = getenv("PATH"), *end;
	struct stat st;
	int len;

	if (strchr(cmd, '/'))
		return snprintf(out, n, "%s", cmd) < (int)n;
	for (p = p ? p : "/bin:/usr/bin"; ; p = end + 1) {
		end = strchrnul(p, ':');
		len = snprintf(out, n, "%.*s%s%s", (int)(end - p), p, end > p ? "/" : "", cmd);
		if (len < (int)n && access(out, X_OK) == 0 && stat(out, &st) == 0 &&
		    S_ISREG(st.st_mode))
			return true;
		if (!*end)
			return false;
	}
}

const char *exec_unloaded(const char *cmd, const char *lib, char *why, size_t n)
{
	char path[PATH_MAX], interp[PATH_MAX] = "";
	struct elf_id id;
	const char *r;
	int fd = open(lib, READ_FLAGS);
	bool ok = fd >= 0 && elf_id(fd, &id);

	if (fd >= 0)
		close(fd);
	if (!ok || !find_prog(cmd, path, sizeof(path)))
		return NULL;
	r = judge(path, &id, 0, interp, sizeof(interp));
	if (!r)
		return NULL;
	if (*interp)
		snprintf(why, n, "runs %s, which %s", cli_quote(interp), r);
	else
		snprintf(why, n, "%s", r);
	return why;
}
