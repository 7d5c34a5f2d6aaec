#!/bin/sh
# The house rules ARCHITECTURE.md states, kept: no file of src/, cli/,
# bench/ or preload/ over 500 lines, no function over 50, and no two files
# of cli/ or bench/ that call each other, directly or round a loop, as
# the built objects' symbols say (tests/house.py; nm, from binutils).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
build=$(dirname "$PSPLICE_BIN")
command -v nm >/dev/null || { echo "SKIP: no nm (binutils)"; exit 77; }
python3 "$top/tests/house.py" "$top" "$build"
