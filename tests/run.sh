#!/bin/sh
# Run the test programs in BUILD/tests (all, or those named), each with a
# timeout, one line each, and a closing "N passed, N failed, N skipped",
# after "$RUN_LABEL: " when the caller names the run (make check-quick).
# The scratch directory lives on the work tree's filesystem (ext4 here).
build=${1:-build}
shift 2>/dev/null
timeout_s=${PSPLICE_TEST_TIMEOUT:-600}
dir=$(cd "$build" && pwd)/scratch
mkdir -p "$dir"
pass=0 fail=0 skip=0 failed=
# Compiled tests are build/tests/t_NAME; shell tests are tests/t_NAME.sh and
# find the CLI in $PSPLICE_BIN.
PSPLICE_BIN=$(cd "$build" && pwd)/psplice
export PSPLICE_BIN
src=$(cd "$(dirname "$0")" && pwd)
if [ $# -gt 0 ]; then tests=$*; else
	tests="$(cd "$build/tests" && ls t_* 2>/dev/null | grep -v '\.') $(cd "$src" && ls t_*.sh 2>/dev/null)"
fi
for t in $tests; do
	out=$(mktemp)
	start=$(date +%s%N)
	case $t in
	*.sh) set -- sh "$src/$t" ;;
	*) set -- $PSPLICE_TEST_WRAP "$build/tests/$t" ;;
	esac
	timeout -k 10 "$timeout_s" "$@" "$dir" >"$out" 2>&1
	rc=$?
	secs=$(awk -v a="$start" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
	case $rc in
	0) pass=$((pass + 1)); echo "PASS $t (${secs}s)" ;;
	77) skip=$((skip + 1)); echo "SKIP $t: $(grep -m1 SKIP "$out" | sed 's/^SKIP: *//')" ;;
	124|137) fail=$((fail + 1)); failed="$failed $t"; echo "FAIL $t (timeout after ${timeout_s}s)"; sed 's/^/    /' "$out" | tail -30 ;;
	*) fail=$((fail + 1)); failed="$failed $t"; echo "FAIL $t (exit $rc, ${secs}s)"; sed 's/^/    /' "$out" | tail -30 ;;
	esac
	rm -f "$out"
done
[ -n "$failed" ] && echo "failed:$failed"
echo "${RUN_LABEL:+$RUN_LABEL: }$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
