#!/bin/sh
# make check: every part in turn, each run whatever the one before it gave,
# then one closing line that counts every part:
#   check: N passed, N failed, N skipped
# A part whose runner prints its own "N passed, N failed, N skipped" line
# (tests/run.sh, install-check, abi-check, the fuzzers) is counted by it; a
# part that failed without saying so (a build error) counts one failure, and
# one that passed without counting (check-abi) one pass.
# MAKE is the make that called us; the parts are its targets.
make=${MAKE:-make}
# The project's own check builds with -Werror (a plain make does not).
WERROR=${WERROR--Werror}
export WERROR
log=$(mktemp)
trap 'rm -f "$log" "$log.rc"' EXIT
total_p=0 total_f=0 total_s=0 failed_parts=
start=$(date +%s)

for part in check-quick check-asan check-tsan check-valgrind check-clang check-musl \
		install-check check-abi check-rust check-python fuzz-quick check-gnu; do
	t0=$(date +%s)
	echo "== $part"
	# Shown as it runs; sh has no pipefail, so the status goes by a file.
	{ $make --no-print-directory "$part" 2>&1; echo $? >"$log.rc"; } | tee "$log"
	rc=$(cat "$log.rc")
	set -- $(awk '/^([a-z-]+: )?[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$/ {
		sub(/^[a-z-]+: /, ""); p += $1; f += $3; s += $5; n++ }
		END { printf "%d %d %d %d", p, f, s, n }' "$log")
	p=$1 f=$2 s=$3 n=$4
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=$((f + 1))
	elif [ "$rc" -eq 0 ] && [ "$n" -eq 0 ]; then p=1; fi
	[ "$rc" -eq 0 ] || failed_parts="$failed_parts $part"
	total_p=$((total_p + p)) total_f=$((total_f + f)) total_s=$((total_s + s))
	echo "== $part: $p passed, $f failed, $s skipped in $(($(date +%s) - t0)) s"
done

[ -z "$failed_parts" ] || echo "parts that failed:$failed_parts"
echo "make check took $(($(date +%s) - start)) s"
echo "check: $total_p passed, $total_f failed, $total_s skipped"
[ -z "$failed_parts" ]
