#!/bin/sh
# psplice sync: the level reached for each flag set, ranges, and errors.
dir=$1
bin=${PSPLICE_BIN:?}
t=$(mktemp -d "$dir/cli-sync-XXXXXX") || exit 1
trap 'rm -rf "$t"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

head -c 3000000 /dev/urandom > "$t/f" || exit 1
expect_level() { # want, then the arguments
	want=$1; shift
	out=$("$bin" sync -v "$@" "$t/f" 2>&1) || fail "sync $*: exit $? ($out)"
	[ "$out" = "psplice: '$t/f': $want" ] || fail "sync $*: '$out', want level $want"
}
expect_level data-durable
expect_level data-durable --data
expect_level file-durable --metadata
expect_level submitted --write
expect_level written --wait-before --write --wait-after
expect_level written --range 1M:0 --wait-before --write --wait-after
expect_level submitted -r 4K:8K --write
expect_level none --wait-after
# Sizes with coreutils' suffixes, as cat's --offset takes them.
expect_level submitted -r 0:1k --write
expect_level submitted --range=1KiB:2MB --write
out=$("$bin" sync "$t/f") || fail "sync without -v: exit $?"
[ -z "$out" ] || fail "sync without -v printed '$out'"

mkfifo "$t/fifo"
out=$("$bin" sync "$t/fifo" 2>&1) && fail "sync of a fifo succeeded"
[ "$out" = "psplice: error syncing '$t/fifo': Illegal seek" ] || fail "fifo: '$out'"
out=$("$bin" sync "$t/missing" "$t/f" 2>&1); rc=$?
[ $rc -eq 1 ] || fail "missing file: exit $rc"
[ "$out" = "psplice: cannot open '$t/missing': No such file or directory" ] ||
	fail "missing file: '$out'"
for bad in x 1 1:x -1:0 1Q:0; do
	"$bin" sync --range "$bad" "$t/f" 2>/dev/null && fail "range '$bad' accepted"
done
# a directory has no data range: --write alone is an error, not a silent
# success; --data syncs it
mkdir "$t/d"
out=$("$bin" sync --write "$t/d" 2>&1); rc=$?
[ $rc -eq 1 ] || fail "sync --write DIR: exit $rc"
[ "$out" = "psplice: '$t/d' is a directory: it has no data range to write back (--data or --metadata syncs it)" ] ||
	fail "sync --write DIR: '$out'"
out=$("$bin" sync -v "$t/d" 2>&1) || fail "sync DIR: exit $? ($out)"
[ "$out" = "psplice: '$t/d': data-durable" ] || fail "sync DIR: '$out'"
# tmpfs keeps nothing across a power loss: the level says so
if [ -d /dev/shm ] && [ "$(stat -f -c %T /dev/shm)" = tmpfs ]; then
	m=$(mktemp /dev/shm/psplice-sync-XXXXXX) || fail "mktemp in /dev/shm"
	echo x >"$m"
	out=$("$bin" sync -v --metadata "$m" 2>&1); rc=$?
	rm -f "$m"
	[ $rc -eq 0 ] || fail "sync on tmpfs: exit $rc ($out)"
	[ "$out" = "psplice: '$m': none" ] || fail "sync on tmpfs: '$out'"
else
	echo "SKIP part: no tmpfs at /dev/shm"
fi
# sync(1)'s forms (issue 40): no operand syncs every file system (sync(2)),
# -f/--file-system the file system of each FILE (syncfs(2)), -d/--data the
# data of each (fdatasync(2)); -d with no FILE and -d with -f are refused
# as sync(1) refuses them.
out=$("$bin" sync 2>&1) || fail "sync with no operand: exit $? ($out)"
[ -z "$out" ] || fail "sync with no operand printed '$out'"
out=$("$bin" sync -v 2>&1) || fail "sync -v: exit $? ($out)"
[ "$out" = "psplice: every file system: synced" ] || fail "sync -v: '$out'"
out=$("$bin" sync -f 2>&1) || fail "sync -f with no operand: exit $? ($out)"
[ -z "$out" ] || fail "sync -f printed '$out'"
for f in -f --file-system; do
	out=$("$bin" sync -v $f "$t/f" "$t/d" 2>&1) || fail "sync $f: exit $? ($out)"
	[ "$out" = "psplice: '$t/f': file system synced
psplice: '$t/d': file system synced" ] || fail "sync $f: '$out'"
done
out=$("$bin" sync -f "$t/missing" "$t/f" 2>&1); rc=$?
[ $rc -eq 1 ] || fail "sync -f missing: exit $rc"
[ "$out" = "psplice: cannot open '$t/missing': No such file or directory" ] ||
	fail "sync -f missing: '$out'"
expect_level data-durable -d
out=$("$bin" sync -d 2>&1); rc=$?
[ $rc -eq 1 ] || fail "sync -d with no operand: exit $rc"
[ "$(echo "$out" | head -1)" = "psplice: --data needs at least one FILE" ] ||
	fail "sync -d: '$out'"
for bad in "-d -f" "-f --metadata" "-f -r 0:1" "-f --write" "--write" "-r 0:1"; do
	out=$("$bin" sync $bad 2>&1) && fail "sync $bad with no FILE accepted"
	"$bin" sync $bad "$t/f" 2>/dev/null
	case $bad in -f*|"-d -f") [ $? -eq 1 ] || fail "sync $bad FILE accepted" ;; esac
done
out=$("$bin" sync -d -f "$t/f" 2>&1)
[ "$(echo "$out" | head -1)" = "psplice: cannot specify both --data and --file-system" ] ||
	fail "sync -d -f: '$out'"
# The system calls, seen by strace.
if command -v strace >/dev/null; then
	calls() { ASAN_OPTIONS=detect_leaks=0 strace -f -qq -e trace=sync,syncfs,fsync,fdatasync \
		-o "$t/trace" "$bin" sync "$@" && sed -n 's/^[0-9]* *\([a-z]*\)(.*/\1/p' "$t/trace" | tr '\n' ' '; }
	[ "$(calls)" = "sync " ] || fail "sync: calls '$(calls)'"
	[ "$(calls -f "$t/f")" = "syncfs " ] || fail "sync -f: calls '$(calls -f "$t/f")'"
	[ "$(calls -d "$t/f")" = "fdatasync " ] || fail "sync -d: calls '$(calls -d "$t/f")'"
else
	echo "SKIP part: strace is not installed"
fi
"$bin" sync --help | grep -q -- '--metadata' || fail "--help lacks --metadata"
exit 0
