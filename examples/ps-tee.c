/* ps-tee: copy standard input to standard output and to each FILE.
 *
 *   ps-tee [-a] [-v] FILE...
 *
 * What it shows: a tee prepared once (psplice_tee_new) and copied to the end
 * of input (psplice_tee_copy). From a pipe the bytes never pass through the
 * process: tee(2) duplicates the pipe's pages for every output but the
 * last, which takes the pages themselves. Each output has its own result:
 * one that fails (a full disk, a reader gone) is reported by name and left
 * out, and the others still get every byte, as tee(1) does. -a appends,
 * which splice(2) cannot do, so those outputs are written from one copy of
 * the bytes in memory; -v says, per output, how its bytes went. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <psplice.h>

/* Output i's name: standard output is the last, so that it takes the
 * pages themselves rather than a duplicate. */
static const char *name(char **files, size_t n, size_t i)
{
	return i + 1 == n ? "standard output" : files[i];
}

static int open_outputs(char **files, size_t n, int append, int *fds)
{
	int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC);

	for (size_t i = 0; i + 1 < n; i++) {
		fds[i] = open(files[i], flags, 0666);
		if (fds[i] < 0) {
			fprintf(stderr, "ps-tee: %s: %s\n", files[i], strerror(errno));
			while (i--)
				close(fds[i]);
			return -1;
		}
	}
	fds[n - 1] = STDOUT_FILENO;
	return 0;
}

/* Every output's fate: an error by name, or with -v what it got and how. */
static int report(const struct psplice_result *res, char **files, size_t n, int verbose)
{
	int rc = 0;

	for (size_t i = 0; i < n; i++) {
		if (res[i].error) {
			fprintf(stderr, "ps-tee: %s: %s (after %" PRIu64 " bytes)\n",
				name(files, n, i), strerror(res[i].error), res[i].out_bytes);
			rc = 1;
		} else if (verbose) {
			fprintf(stderr, "ps-tee: %s: %" PRIu64 " bytes by %s\n", name(files, n, i),
				res[i].out_bytes, psplice_method_name(res[i].method));
		}
	}
	return rc;
}

/* A failure of the call itself: the input's, or one that is no output's
 * (psplice_last says which). */
static int input_error(int err)
{
	if (psplice_last()->side == PSPLICE_SIDE_IN)
		fprintf(stderr, "ps-tee: standard input: %s\n", strerror(err));
	else
		fprintf(stderr, "ps-tee: %s\n", strerror(err));
	return 1;
}

/* The copy itself: it fails for the input, or for the outputs that failed
 * while the others were served to the end. */
static int copy(const int *fds, size_t n, char **files, int verbose)
{
	struct psplice_result *res = calloc(n, sizeof(*res));
	struct psplice_tee *t;
	int rc;

	if (!res) {
		perror("ps-tee");
		return 1;
	}
	t = psplice_tee_new(STDIN_FILENO, fds, n, 0, PSPLICE_F_SIGPIPE_IGNORED);
	if (!t) {
		rc = input_error(errno);
	} else {
		rc = psplice_tee_copy(t, PSPLICE_TO_EOF, 0, res) < 0 &&
		     psplice_last()->side != PSPLICE_SIDE_OUT ? input_error(errno) : 0;
		rc |= report(res, files, n, verbose);
	}
	psplice_tee_free(t);
	free(res);
	return rc;
}

static int tee_all(char **files, size_t n, int append, int verbose)
{
	int *fds = calloc(n, sizeof(*fds));
	int rc;

	if (!fds) {
		perror("ps-tee");
		return 1;
	}
	if (open_outputs(files, n, append, fds) < 0) {
		free(fds);
		return 1;
	}
	rc = copy(fds, n, files, verbose);
	for (size_t i = 0; i + 1 < n; i++)
		if (close(fds[i]) < 0) {
			fprintf(stderr, "ps-tee: %s: %s\n", files[i], strerror(errno));
			rc = 1;
		}
	free(fds);
	return rc;
}

int main(int argc, char **argv)
{
	int append = 0, verbose = 0, c;

	while ((c = getopt(argc, argv, "av")) != -1) {
		if (c == 'a')
			append = 1;
		else if (c == 'v')
			verbose = 1;
		else
			return 2;
	}
	if (optind == argc || argc - optind >= PSPLICE_TEE_MAX) {
		fprintf(stderr, "usage: ps-tee [-a] [-v] FILE... (at most %d)\n",
			PSPLICE_TEE_MAX - 1);
		return 2;
	}
	/* A reader that leaves is one output's EPIPE, not the end of all. */
	if (signal(SIGPIPE, SIG_IGN) == SIG_ERR) {
		perror("ps-tee: signal");
		return 1;
	}
	return tee_all(argv + optind, (size_t)(argc - optind) + 1, append, verbose);
}
