/* ps-cp: copy one file to another, holes and all.
 *
 *   ps-cp [-v] SOURCE DEST
 *
 * What it shows: psplice_ex() steps with positional offsets (neither file's
 * position moves), the loop every such caller needs (short steps, EINTR, a
 * step that delivered some bytes and then met an error, the end of input),
 * an error message that names the file that failed by the result's side,
 * and, with -v, which kernel mechanism moved how many bytes. The data
 * extents are found with SEEK_DATA and SEEK_HOLE and copied at the same
 * offsets, so a sparse file stays sparse. psplice_copy(3) is the loop of
 * one extent in a single call. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <psplice.h>

#define STEP ((size_t)64 << 20)
#define NMETHODS (PSPLICE_METHOD_READWRITE + 1)

struct job {
	const char *src, *dst;
	int in, out;
	uint64_t by_method[NMETHODS];
};

/* The result's side says whose error it is: the source's, the
 * destination's, or the call's own (a refused flag, no pipe to be had). */
static int fail(const struct job *j, int side, int err)
{
	if (side == PSPLICE_SIDE_IN)
		fprintf(stderr, "ps-cp: reading '%s': %s\n", j->src, strerror(err));
	else if (side == PSPLICE_SIDE_OUT)
		fprintf(stderr, "ps-cp: writing '%s': %s\n", j->dst, strerror(err));
	else
		fprintf(stderr, "ps-cp: copying '%s' to '%s': %s\n", j->src, j->dst,
			strerror(err));
	return -1;
}

/* Copy [*off, end) to the same offsets. A step may deliver less than asked,
 * or some bytes and an error, which the next step then meets again. On
 * return *off is where the input ended, which is short of end only when
 * the file shrank under the copy. */
static int copy_extent(struct job *j, int64_t *off, int64_t end)
{
	int64_t off_out = *off;
	struct psplice_result r;

	while (*off < end) {
		size_t len = (uint64_t)(end - *off) < STEP ? (size_t)(end - *off) : STEP;
		ssize_t n = psplice_ex(j->in, off, j->out, &off_out, len, 0, &r);

		if (n > 0 && r.method < NMETHODS)
			j->by_method[r.method] += (uint64_t)n;
		if (n == 0)
			break;
		/* Nothing is parked: the source is a file, and what a step
		 * could not deliver is simply read again from *off. */
		if (n < 0 && r.error != EINTR)
			return fail(j, r.side, r.error);
	}
	return 0;
}

/* Each data extent in turn; the holes between them are left unwritten.
 * On return *size is where the copy ended: the size of the file, or less
 * if it shrank under the copy. */
static int copy_data(struct job *j, int64_t *size)
{
	int64_t off = 0, end;

	while (off < *size) {
		off = lseek(j->in, off, SEEK_DATA);
		if (off < 0 && errno == ENXIO)
			return 0; /* only a hole is left */
		if (off < 0 || (end = lseek(j->in, off, SEEK_HOLE)) < 0)
			return fail(j, PSPLICE_SIDE_IN, errno);
		if (end > *size)
			end = *size;
		if (copy_extent(j, &off, end) < 0)
			return -1;
		if (off < end)
			*size = off; /* the file shrank */
	}
	return 0;
}

/* The destination is opened without O_TRUNC and truncated only once it is
 * known not to be the source: ps-cp f f must not empty f. */
static int open_dest(struct job *j, const struct stat *in)
{
	struct stat st;

	j->out = open(j->dst, O_WRONLY | O_CREAT | O_CLOEXEC, in->st_mode & 0777);
	if (j->out < 0 || fstat(j->out, &st) < 0)
		return fail(j, PSPLICE_SIDE_OUT, errno);
	if (st.st_dev == in->st_dev && st.st_ino == in->st_ino) {
		fprintf(stderr, "ps-cp: '%s' and '%s' are the same file\n", j->src, j->dst);
		return -1;
	}
	if (ftruncate(j->out, 0) < 0)
		return fail(j, PSPLICE_SIDE_OUT, errno);
	return 0;
}

static void report(const struct job *j)
{
	for (int m = 0; m < NMETHODS; m++)
		if (j->by_method[m])
			fprintf(stderr, "ps-cp: '%s' -> '%s': %" PRIu64 " bytes by %s\n",
				j->src, j->dst, j->by_method[m], psplice_method_name(m));
}

/* Copy, give the destination its size (holes at the end included), and
 * close it, which is where some filesystems (NFS) report a failed write. */
static int copy_file(struct job *j)
{
	struct stat st;
	int64_t size;

	j->in = open(j->src, O_RDONLY | O_CLOEXEC);
	if (j->in < 0 || fstat(j->in, &st) < 0)
		return fail(j, PSPLICE_SIDE_IN, errno);
	if (!S_ISREG(st.st_mode))
		return fail(j, PSPLICE_SIDE_IN, S_ISDIR(st.st_mode) ? EISDIR : EINVAL);
	size = st.st_size;
	if (open_dest(j, &st) < 0 || copy_data(j, &size) < 0)
		return -1;
	if (ftruncate(j->out, size) < 0)
		return fail(j, PSPLICE_SIDE_OUT, errno);
	if (close(j->out) < 0) {
		j->out = -1;
		return fail(j, PSPLICE_SIDE_OUT, errno);
	}
	j->out = -1;
	return 0;
}

int main(int argc, char **argv)
{
	struct job j = { .in = -1, .out = -1 };
	int verbose = argc > 1 && !strcmp(argv[1], "-v");
	int rc;

	if (argc != 3 + verbose) {
		fprintf(stderr, "usage: ps-cp [-v] SOURCE DEST\n");
		return 2;
	}
	j.src = argv[1 + verbose];
	j.dst = argv[2 + verbose];
	rc = copy_file(&j);
	if (rc == 0 && verbose)
		report(&j);
	if (j.out >= 0)
		close(j.out); /* after a failure, which was reported */
	if (j.in >= 0)
		close(j.in);
	return rc < 0;
}
