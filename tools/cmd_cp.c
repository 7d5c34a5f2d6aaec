/* psplice cp: one file to another, or into a directory, by reflink where
 * the filesystem shares extents, else copy_file_range, splice, read/write. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"

static const struct option longopts[] = {
	{ "verbose", no_argument, NULL, 'v' },
	CLI_COMMON_LONGOPTS
};

struct cp_job {
	const char *src;
	char *dst;        /* the file written: DST, or DST/basename(SRC) */
	struct stat st;   /* of the source */
	bool created;     /* DST did not exist: remove it if the copy fails */
	bool verbose;
};

static bool same_inode(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* "dir" + "x/y/" -> "dir/y" */
static char *path_in_dir(const char *dir, const char *src)
{
	size_t len = strlen(src), dlen = strlen(dir);
	const char *base;
	char *p;

	while (len > 1 && src[len - 1] == '/')
		len--;
	base = memrchr(src, '/', len);
	base = base ? base + 1 : src;
	len -= (size_t)(base - src);
	p = malloc(dlen + len + 2);
	if (!p)
		return NULL;
	memcpy(p, dir, dlen);
	if (!dlen || dir[dlen - 1] != '/')
		p[dlen++] = '/';
	memcpy(p + dlen, base, len);
	p[dlen + len] = '\0';
	return p;
}

static char *target_path(const char *src, const char *dst)
{
	struct stat st;

	if (stat(dst, &st) == 0 && S_ISDIR(st.st_mode))
		return path_in_dir(dst, src);
	return strdup(dst);
}

static int refuse_same(const struct cp_job *j)
{
	cli_error(0, "%s and %s are the same file", cli_quote(j->src), cli_quote(j->dst));
	return -1;
}

/* An existing destination is opened without O_TRUNC and checked against
 * the source first: through a hard or symbolic link it may be the source
 * itself, and truncating it would destroy the data to be copied. */
static int open_existing(struct cp_job *j)
{
	struct stat st;
	int fd = open(j->dst, O_WRONLY | O_CLOEXEC);

	if (fd < 0) {
		if (errno == EISDIR)
			cli_error(0, "cannot overwrite directory %s with non-directory",
				  cli_quote(j->dst));
		else
			cli_error(errno, "cannot open %s for writing", cli_quote(j->dst));
		return -1;
	}
	if (fstat(fd, &st) == 0 && same_inode(&st, &j->st)) {
		close(fd);
		return refuse_same(j);
	}
	/* Devices and FIFOs have nothing to truncate. */
	if (S_ISREG(st.st_mode) && ftruncate(fd, 0) < 0) {
		cli_error(errno, "cannot truncate %s", cli_quote(j->dst));
		close(fd);
		return -1;
	}
	return fd;
}

static int open_target(struct cp_job *j)
{
	mode_t mode = S_ISREG(j->st.st_mode) ? j->st.st_mode & 0777 : 0666;
	struct stat st;
	int fd;

	/* Checked before opening too, so that a source we may not write is
	 * still reported as the same file, as cp(1) does. */
	if (stat(j->dst, &st) == 0 && same_inode(&st, &j->st))
		return refuse_same(j);
	fd = open(j->dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	if (fd >= 0) {
		j->created = true;
		return fd;
	}
	if (errno == EEXIST)
		return open_existing(j);
	cli_error(errno, "cannot create regular file %s", cli_quote(j->dst));
	return -1;
}

static int copy_data(const struct cp_job *j, int in, int out)
{
	struct cli_copy c;

	/* Reflink first: where the filesystem cannot share extents, the
	 * engine falls back to copy_file_range on its first call. */
	if (cli_copy(in, out, PSPLICE_F_REFLINK, &c) < 0) {
		cli_copy_error(j->src, j->dst, &c);
		return -1;
	}
	if (j->verbose)
		cli_report(j->src, j->dst, &c);
	return 0;
}

static int copy_to(struct cp_job *j, int in)
{
	int out = open_target(j), rc;

	if (out < 0)
		return -1;
	rc = copy_data(j, in, out);
	/* Some filesystems (NFS) report a failed write-back only here. */
	if (close(out) < 0 && rc == 0) {
		cli_error(errno, "error writing %s", cli_quote(j->dst));
		rc = -1;
	}
	if (rc < 0 && j->created && unlink(j->dst) < 0)
		cli_error(errno, "cannot remove %s", cli_quote(j->dst));
	return rc;
}

static int cp_file(const char *src, const char *dst, bool verbose)
{
	struct cp_job j = { .src = src, .verbose = verbose };
	int in, rc = -1;

	in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0) {
		cli_error(errno, "cannot open %s", cli_quote(src));
		return -1;
	}
	if (fstat(in, &j.st) < 0)
		cli_error(errno, "cannot stat %s", cli_quote(src));
	else if (S_ISDIR(j.st.st_mode))
		cli_error(0, "-r not specified; omitting directory %s", cli_quote(src));
	else if (!(j.dst = target_path(src, dst)))
		cli_error(ENOMEM, "cannot copy %s", cli_quote(src));
	else
		rc = copy_to(&j, in);
	free(j.dst);
	close(in);
	return rc;
}

static int cp_main(const struct cli_cmd *cmd, int argc, char **argv)
{
	bool verbose = false;
	int c;

	while ((c = getopt_long(argc, argv, "v", longopts, NULL)) != -1) {
		if (c == 'v')
			verbose = true;
		else
			cli_common_option(cmd, c);
	}
	if (optind == argc)
		cli_usage_error(cmd, "missing file operand");
	if (optind + 1 == argc)
		cli_usage_error(cmd, "missing destination file operand after %s",
				cli_quote(argv[optind]));
	if (optind + 2 < argc)
		cli_usage_error(cmd, "extra operand %s", cli_quote(argv[optind + 2]));
	return cp_file(argv[optind], argv[optind + 1], verbose) < 0 ? 1 : 0;
}

const struct cli_cmd cli_cmd_cp = {
	.name = "cp",
	.args = "SOURCE DEST",
	.summary = "copy a file",
	.help =
	"Copy SOURCE to DEST, or into DEST under SOURCE's name when DEST is a\n"
	"directory. The kernel moves the bytes: extents are shared (reflink)\n"
	"where the filesystem can, else copy_file_range(2), sendfile(2) or\n"
	"splice(2), and read/write only as a last resort. A new DEST gets\n"
	"SOURCE's permission bits (less the umask); a DEST created by a copy\n"
	"that fails is removed.\n"
	"\n"
	"  -v, --verbose      tell on standard error which kernel path moved the\n"
	"                     bytes, and how many\n",
	.main = cp_main,
};
