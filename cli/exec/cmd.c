/* psplice exec: run a command with libpsplice-preload.so, which keeps the
 * dirty pages of each large file it writes bounded (write-behind) and, on
 * request, drops the pages it read once that were not cached before. The
 * options reach the library through PSPLICE_EXEC; exec replaces psplice, so
 * the command's exit status is psplice's. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "copy.h"
#include "opts.h"
#include "out.h"
#include "parse.h"
#include "exec.h"

#ifndef PSPLICE_PRELOAD_PATH
#define PSPLICE_PRELOAD_PATH "/usr/local/lib/psplice/libpsplice-preload.so"
#endif
#define PRELOAD_NAME "libpsplice-preload.so"

enum { OPT_CHUNK = 0x200, OPT_MIN_SIZE, OPT_SYNC, OPT_READ_BEHIND };

static const struct option longopts[] = {
	{ "chunk", required_argument, NULL, OPT_CHUNK },
	{ "min-size", required_argument, NULL, OPT_MIN_SIZE },
	{ "sync", required_argument, NULL, OPT_SYNC },
	{ "read-behind", no_argument, NULL, OPT_READ_BEHIND },
	{ "verbose", no_argument, NULL, 'v' },
	CLI_COMMON_LONGOPTS
};

struct exec_opts {
	int64_t chunk, min_size;
	const char *sync;
	bool read_behind, verbose;
};

/* The library: $PSPLICE_PRELOAD, else next to this program (the build
 * tree), else where make install put it. */
static const char *find_preload(char *buf, size_t n)
{
	const char *env = getenv("PSPLICE_PRELOAD");
	ssize_t len;
	char *slash;

	if (env && *env)
		return env;
	len = readlink("/proc/self/exe", buf, n - sizeof(PRELOAD_NAME));
	if (len > 0) {
		buf[len] = '\0';
		slash = strrchr(buf, '/');
		if (slash) {
			strcpy(slash + 1, PRELOAD_NAME);
			if (access(buf, R_OK) == 0)
				return buf;
		}
	}
	return PSPLICE_PRELOAD_PATH;
}

/* LD_PRELOAD with the library added after what is there already. */
static int set_preload(const char *lib)
{
	const char *old = getenv("LD_PRELOAD");
	char *v;
	int r;

	if (!old || !*old)
		return setenv("LD_PRELOAD", lib, 1);
	if (asprintf(&v, "%s:%s", old, lib) < 0)
		return -1;
	r = setenv("LD_PRELOAD", v, 1);
	free(v);
	return r;
}

static void parse(const struct cli_cmd *cmd, int argc, char **argv, struct exec_opts *o)
{
	int c;

	while ((c = getopt_long(argc, argv, "+v", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_CHUNK:
			o->chunk = cli_parse_size(optarg);
			if (o->chunk < 4096 || o->chunk > ((int64_t)1 << 40))
				cli_usage_error(cmd, "invalid chunk size %s (4K to 1T)",
						cli_quote(optarg));
			break;
		case OPT_MIN_SIZE:
			o->min_size = cli_parse_size(optarg);
			if (o->min_size < 0)
				cli_usage_error(cmd, "invalid size %s%s", cli_quote(optarg),
						cli_size_why(o->min_size));
			break;
		case OPT_SYNC:
			if (strcmp(optarg, "data") && strcmp(optarg, "full"))
				cli_usage_error(cmd, "invalid --sync %s (data or full)",
						cli_quote(optarg));
			o->sync = optarg;
			break;
		case OPT_READ_BEHIND: o->read_behind = true; break;
		case 'v': o->verbose = true; break;
		default: cli_common_option(cmd, c);
		}
	}
	if (optind >= argc)
		cli_usage_error(cmd, "missing command");
}

/* -v: what is run and how; and, once it is replaced by the command, psplice
 * cannot tell whether the library was loaded, so what the file says of it
 * is told now. */
static void tell(const char *cmd, const char *lib, const char *conf)
{
	char why[PATH_MAX + 128];

	fprintf(stderr, "%s: exec %s with %s (%s)\n", cli_name, cli_quote(cmd), lib, conf);
	if (exec_unloaded(cmd, lib, why, sizeof(why)))
		fprintf(stderr, "%s exec: %s %s: nothing is paced\n", cli_name, cli_quote(cmd),
			why);
}

static int exec_main(const struct cli_cmd *cmd, int argc, char **argv)
{
	struct exec_opts o = { .chunk = CLI_CHUNK, .min_size = CLI_CHUNK, .sync = "none" };
	char conf[160], buf[PATH_MAX];
	const char *lib;

	parse(cmd, argc, argv, &o);
	if (cli_parse_only)
		return 0;
	lib = find_preload(buf, sizeof(buf));
	/* The loader splits LD_PRELOAD at spaces and colons. */
	if (strpbrk(lib, " :") || access(lib, R_OK) < 0) {
		cli_error(strpbrk(lib, " :") ? 0 : errno, "cannot use the preload library %s",
			  cli_quote(lib));
		return 125;
	}
	snprintf(conf, sizeof(conf), "chunk=%lld,min=%lld,sync=%s,read-behind=%d,verbose=%d",
		 (long long)o.chunk, (long long)o.min_size, o.sync, o.read_behind, o.verbose);
	if (setenv("PSPLICE_EXEC", conf, 1) < 0 || set_preload(lib) < 0) {
		cli_error(errno, "cannot set the environment");
		return 125;
	}
	if (o.verbose)
		tell(argv[optind], lib, conf);
	fflush(NULL);
	execvp(argv[optind], argv + optind);
	/* As env(1) and nice(1) say it: 127 not found, 126 found but not run. */
	cli_error(errno, "cannot run %s", cli_quote(argv[optind]));
	return errno == ENOENT ? 127 : 126;
}

const struct cli_cmd cli_cmd_exec = {
	.name = "exec",
	.args = "-- COMMAND [ARG]...",
	.summary = "run a command with its dirty and read-once pages kept bounded",
	.help =
	"Run COMMAND with libpsplice-preload.so: each regular file it writes\n"
	"forward gets write-behind once past --min-size (dirty pages bounded by\n"
	"about two chunks, and the pages it wrote dropped once on disk). Pages\n"
	"that were in the cache before the command touched them are never dropped.\n"
	"Files on tmpfs, ramfs and hugetlbfs are left alone: their pages are the\n"
	"file, with nothing to write back or drop.\n"
	"\n"
	"      --chunk=SIZE     write-behind chunk (default 8M; K, M, G, T, KiB...\n"
	"                       powers of 1024; kB, MB... of 1000; b = 512)\n"
	"      --min-size=SIZE  leave files smaller than SIZE alone (default 8M)\n"
	"      --sync=data|full at close, fdatasync or fsync each paced file\n"
	"      --read-behind    drop the pages a file read once brought in\n"
	"  -v, --verbose        say first when COMMAND will not load the library\n"
	"                       (static, set-user-ID); at exit, each process that\n"
	"                       paced or dropped something prints a summary on\n"
	"                       standard error\n",
	.status =
	"The exit status is COMMAND's; 125 when psplice cannot set it up,\n"
	"126 when COMMAND cannot be run, 127 when it is not found,\n"
	"and 1 for a usage error.\n",
	.main = exec_main,
};
