/* ps-writer: write MIB mebibytes of generated data to FILE with bounded
 * dirty memory, then make it as durable as asked.
 *
 *   ps-writer [-c CHUNK_MIB] [-s none|written|data|file] FILE MIB
 *
 * What it shows: write-behind (psplice_wb_new, psplice_wb_wrote after each
 * write, psplice_wb_finish) for a long sequential writer, such as a log,
 * a backup or a download, which would otherwise fill memory with dirty
 * pages until the kernel throttles it and evicts what others need; and the
 * final sync at a chosen level (written: handed to the device, which may
 * still hold it in its cache; data: fdatasync; file: fsync), with the
 * level the sync truly reached (none on tmpfs, whatever was asked). It
 * reports the peak of the system's Dirty memory (/proc/meminfo) during
 * the write: a few chunks above where it started, where a plain writer
 * would leave the whole file dirty.
 *
 * The data: each 8-byte word holds its own offset in the file, so that any
 * part of the file can be checked on its own. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <psplice.h>

#define BUF_WORDS (((size_t)1 << 20) / sizeof(uint64_t))

/* The system's Dirty memory in KiB, or -1 when /proc/meminfo says nothing. */
static long dirty_kib(void)
{
	FILE *f = fopen("/proc/meminfo", "re");
	char line[128];
	long kib = -1;

	if (!f)
		return -1;
	while (kib < 0 && fgets(line, sizeof(line), f))
		if (sscanf(line, "Dirty: %ld kB", &kib) != 1)
			kib = -1;
	fclose(f);
	return kib;
}

/* Write all of buf at off (write(2) may be short), then tell write-behind. */
static int write_all(int fd, struct psplice_wb *wb, const char *buf, size_t len, int64_t off)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || psplice_wb_wrote(wb, off, (size_t)n) < 0)
			return -1;
		buf += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

/* The sync levels by name: the flags that ask for each. */
static int sync_flags(const char *level, unsigned int *flags)
{
	static const struct { const char *name; unsigned int flags; } levels[] = {
		{ "none", 0 },
		{ "written", PSPLICE_SYNC_WAIT_BEFORE | PSPLICE_SYNC_WRITE | PSPLICE_SYNC_WAIT_AFTER },
		{ "data", PSPLICE_SYNC_DATA },
		{ "file", PSPLICE_SYNC_METADATA },
	};

	for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++)
		if (!strcmp(level, levels[i].name)) {
			*flags = levels[i].flags;
			return 0;
		}
	return -1;
}

/* Generate and write mib MiB, keeping the highest Dirty seen after a write. */
static int generate(int fd, struct psplice_wb *wb, long mib, long *peak)
{
	static uint64_t buf[BUF_WORDS];
	int64_t off = 0;

	for (long i = 0; i < mib; i++) {
		long now;

		for (size_t w = 0; w < BUF_WORDS; w++)
			buf[w] = (uint64_t)off + w * sizeof(uint64_t);
		if (write_all(fd, wb, (const char *)buf, sizeof(buf), off) < 0)
			return -1;
		off += (int64_t)sizeof(buf);
		now = dirty_kib();
		if (now > *peak)
			*peak = now;
	}
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: ps-writer [-c CHUNK_MIB] [-s none|written|data|file] FILE MIB\n");
	return 2;
}

static int fail(const char *file, int err)
{
	fprintf(stderr, "ps-writer: %s: %s\n", file, strerror(err));
	return 1;
}

int main(int argc, char **argv)
{
	enum psplice_sync_level level = PSPLICE_LEVEL_NONE;
	const char *sync_name = "data", *file;
	long chunk_mib = 0, mib, start, peak;
	unsigned int flags;
	struct psplice_wb *wb;
	char *end;
	int fd, c;

	while ((c = getopt(argc, argv, "c:s:")) != -1) {
		if (c == 's') {
			sync_name = optarg;
		} else if (c != 'c' || (chunk_mib = strtol(optarg, &end, 10)) < 1 ||
			   chunk_mib > 1024 || *end) {
			return usage();
		}
	}
	if (argc - optind != 2 || sync_flags(sync_name, &flags) < 0 ||
	    (mib = strtol(argv[optind + 1], &end, 10)) < 0 || *end)
		return usage();
	file = argv[optind];
	fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (fd < 0 || !(wb = psplice_wb_new(fd, (size_t)chunk_mib << 20, 0)))
		return fail(file, errno);
	start = peak = dirty_kib();
	if (generate(fd, wb, mib, &peak) < 0) {
		int err = errno;

		/* It frees the state; the write's error is the one to tell. */
		psplice_wb_finish(wb, 0, NULL);
		return fail(file, err);
	}
	/* The first writeback error of the whole write, or the sync's. */
	if (psplice_wb_finish(wb, flags, &level) < 0 || close(fd) < 0)
		return fail(file, errno);
	printf("%ld MiB written, sync %s reached %s\n", mib, sync_name,
	       psplice_sync_level_name(level));
	if (start >= 0)
		printf("Dirty: %ld MiB at start, %ld MiB at most\n", start >> 10, peak >> 10);
	return 0;
}
