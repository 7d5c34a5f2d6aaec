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
"$bin" sync 2>/dev/null && fail "no operand accepted"
"$bin" sync --help | grep -q -- '--metadata' || fail "--help lacks --metadata"
exit 0
