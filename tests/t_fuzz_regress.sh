#!/bin/sh
# The differential fuzzer in the quick run: every saved sequence of
# tests/fuzz/regress/ replayed against the model (each was a failure the
# fuzzer found, shrunk), then FUZZ_CHECK_SEEDS random sequences from a
# fixed seed, and 100 more with pending bytes held in memory. The driver is built beside the tests (make tests).
dir=${1:-/tmp}
src=$(cd "$(dirname "$0")" && pwd)
driver=$(dirname "$PSPLICE_BIN")/tests/fuzz_driver
[ -x "$driver" ] || { echo "SKIP: no $driver (make tests)"; exit 77; }
mkdir -p "$dir/fuzz" || exit 1
"$driver" --dir "$dir/fuzz" --replay "$src"/fuzz/regress/*.seq || exit 1
"$driver" --dir "$dir/fuzz" --seed 20261204 --count "${FUZZ_CHECK_SEEDS:-300}" --time 120 \
	--save "$dir/fuzz" || exit 1
# Pairs that may keep no pipe hold their pending bytes in memory.
PSPLICE_MAX_PIPES=0 "$driver" --dir "$dir/fuzz" --seed 20261205 --count 100 --time 60 \
	--save "$dir/fuzz" || exit 1
rmdir "$dir/fuzz" 2>/dev/null
exit 0
