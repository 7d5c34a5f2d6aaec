#!/bin/sh
# The differential fuzzer's model of fan-out in the quick run: random
# psplice_tee_* sequences (tests/fuzz/fz_tee.c) from a fixed seed, then
# more with the sinks' pending bytes held in memory (no pipe kept).
dir=${1:-/tmp}
driver=$(dirname "$PSPLICE_BIN")/tests/fuzz_driver
[ -x "$driver" ] || { echo "SKIP: no $driver (make tests)"; exit 77; }
mkdir -p "$dir/fuzz-tee" || exit 1
"$driver" --tee --dir "$dir/fuzz-tee" --seed 20261206 --count "${FUZZ_CHECK_SEEDS:-200}" \
	--time 90 || exit 1
PSPLICE_MAX_PIPES=0 "$driver" --tee --dir "$dir/fuzz-tee" --seed 20261207 --count 100 \
	--time 45 || exit 1
rmdir "$dir/fuzz-tee" 2>/dev/null
exit 0
