#!/bin/sh
# psplice cp --sync and write-behind: --sync=data and =full succeed and --debug
# names the level, a bad --sync is a usage error, a large copy is
# byte-identical with and without write-behind, and write-behind really ran:
# the destination's pages left the page cache, which they do not without it.
# $1 is the scratch directory, the CLI is $PSPLICE_BIN. Silent on pass, but
# for checks it cannot make, which say why.
[ -z "${BASH_VERSION:-}" ] && command -v bash >/dev/null && exec bash "$0" "$@"
name=t_cli_cpsync; . "$(dirname "$0")/cli-lib.sh"

head -c 1048576 /dev/urandom >a
mkdir dir

# --- --sync ------------------------------------------------------------
"$P" cp --sync=data a o.data 2>err; rc=$?
rc_is $LINENO 0; same $LINENO a o.data; err_is $LINENO
"$P" cp --sync=full a o.full 2>err; rc=$?
rc_is $LINENO 0; same $LINENO a o.full; err_is $LINENO
"$P" cp --sync=none a o.none 2>err; rc=$?
rc_is $LINENO 0; same $LINENO a o.none; err_is $LINENO

# --debug: the copy line, then the level reached; none adds no line
"$P" cp --debug --sync=data a v.data 2>err >/dev/null; rc=$?
rc_is $LINENO 0; same $LINENO a v.data
grep -Eqx "psplice: 'a' -> 'v.data': 1,048,576 bytes by $methods" err ||
	fail $LINENO "--debug copy line: $(cat err)"
[ "$(sed -n 2p err)" = "psplice: 'v.data': data-durable" ] || fail $LINENO "level: $(cat err)"
[ "$(wc -l <err)" -eq 2 ] || fail $LINENO "--debug: $(cat err)"
"$P" cp --debug --sync=full a dir 2>err >/dev/null; rc=$?
rc_is $LINENO 0; same $LINENO a dir/a
[ "$(sed -n 2p err)" = "psplice: 'dir/a': file-durable" ] || fail $LINENO "level: $(cat err)"
"$P" cp --debug --sync=none a v.none 2>err >/dev/null; rc=$?
rc_is $LINENO 0
[ "$(wc -l <err)" -eq 1 ] || fail $LINENO "--sync=none --debug: $(cat err)"

# a bad level is a usage error, and nothing is copied
"$P" cp --sync=bogus a bad 2>err; rc=$?
rc_is $LINENO 1; [ ! -e bad ] || fail $LINENO "copied anyway"
err_is $LINENO "psplice: invalid argument 'bogus' for '--sync'" \
	"Valid arguments are:" "  - 'none'" "  - 'data'" "  - 'full'" \
	"Try 'psplice cp --help' for more information."
"$P" cp a bad --sync 2>err; rc=$?
rc_is $LINENO 1; [ ! -e bad ] || fail $LINENO "copied anyway"
err_is $LINENO "psplice: option '--sync' requires an argument" \
	"Try 'psplice cp --help' for more information."

# a destination with nothing to make durable: the copy is done, the sync
# is an error, cp-style
"$P" cp --sync=data a /dev/null 2>err; rc=$?
rc_is $LINENO 1
grep -q "^psplice: error syncing '/dev/null': " err || fail $LINENO "stderr: $(cat err)"

"$P" cp --help >out 2>err; rc=$?
rc_is $LINENO 0
grep -q -- '--sync=' out || fail $LINENO "cp --help has no --sync"
grep -q -- '--no-write-behind' out || fail $LINENO "cp --help has no --no-write-behind"

# --- write-behind --------------------------------------------------------
# 96 MiB, 12 chunks of 8 MiB, written behind as --write-behind asks (by
# default only past the dirty background threshold: t_cli_cpwb.sh).
size=100663296
head -c $size /dev/urandom >big

# Resident bytes of a file, or nothing when fincore (util-linux) cannot say.
resident() { fincore --bytes --noheadings --output RES "$1" 2>/dev/null; }
fs=$(stat -f -c %T .)
cache_check=yes
if ! command -v fincore >/dev/null; then
	skip "page cache checks: fincore (util-linux) not found"; cache_check=
elif [ "$fs" = tmpfs ] || [ "$fs" = ramfs ]; then
	# There the page cache is the storage: nothing can be dropped.
	skip "page cache checks: the scratch directory is on $fs"; cache_check=
fi

"$P" cp --debug --write-behind big wb 2>err >/dev/null; rc=$?
rc_is $LINENO 0
grep -Eqx "psplice: 'big' -> 'wb': 100,663,296 bytes by $methods" err ||
	fail $LINENO "--debug line: $(cat err)"
# Before cmp reads it back in: write-behind dropped each chunk once it was
# written. A reflink writes nothing and caches nothing either way.
if [ -n "$cache_check" ]; then
	res=$(resident wb)
	[ -n "$res" ] || fail $LINENO "fincore gave nothing for wb"
	[ "$res" -lt $((size / 4)) ] ||
		fail $LINENO "write-behind: $res of $size bytes still cached"
fi
same $LINENO big wb

"$P" cp --no-write-behind big nowb 2>err; rc=$?
rc_is $LINENO 0; err_is $LINENO
# Without it the copy sits in the cache, dirty, until the kernel's own
# writeback gets to it.
if [ -n "$cache_check" ] && ! grep -Eq "by clone$" err; then
	res=$(resident nowb)
	[ "$res" -gt $((size * 3 / 4)) ] ||
		fail $LINENO "--no-write-behind: only $res of $size bytes cached"
fi
same $LINENO big nowb

# the final sync is write-behind's (on with --sync past one chunk), and
# --debug says what it reached
"$P" cp --debug --sync=full big wbfull 2>err >/dev/null; rc=$?
rc_is $LINENO 0; same $LINENO big wbfull
if ! grep -Eq "by clone$" err; then
	is $LINENO "psplice: 'wbfull': write-behind: on (96.0 MiB, past the --sync threshold 8.0 MiB)" \
		"$(sed -n 2p err)"
fi
[ "$(tail -n 1 err)" = "psplice: 'wbfull': file-durable" ] || fail $LINENO "level: $(cat err)"
rm -f wb nowb wbfull

# A paced copy that fails is reported and cleaned up as any other: a DEST
# cp created is removed. A 32 MiB tmpfs, in a private mount namespace.
if [ "$(id -u)" -ne 0 ]; then
	skip "ENOSPC under write-behind: needs root to mount"
elif ! unshare -m --propagation private true 2>/dev/null; then
	skip "ENOSPC under write-behind: cannot make a mount namespace"
else
	mkdir full
	unshare -m --propagation private sh -c '
		mount -t tmpfs -o size=32m tmpfs full || exit 77
		"$1" cp --write-behind big full/new 2>err; echo $? >rc
		ls full >left' sh "$P"
	if [ $? -eq 77 ]; then
		skip "ENOSPC under write-behind: cannot mount a tmpfs"
	else
		rc=$(cat rc)
		rc_is $LINENO 1
		err_is $LINENO "psplice: error writing 'full/new': No space left on device"
		[ ! -s left ] || fail $LINENO "left on the full tmpfs: $(cat left)"
	fi
fi
exit 0
