#!/bin/sh
# psplice cat --offset/--length: positional ranges of files (position left
# alone), skipped prefixes of pipes, and bad values.
dir=$1
bin=${PSPLICE_BIN:?}
t=$(mktemp -d "$dir/cli-catrange-XXXXXX") || exit 1
trap 'rm -rf "$t"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

head -c 1000003 /dev/urandom > "$t/f" || exit 1
# The reference: bytes OFF+1 .. OFF+LEN of the file, by tail and head.
want() { tail -c +$(($1 + 1)) "$t/f" | head -c "$2" > "$t/want"; }

for range in 0:1 1000:5000 4095:65537 999999:100 1000003:10 0:1000003 7:0; do
	off=${range%:*} len=${range#*:}
	want "$off" "$len"
	"$bin" cat --offset "$off" --length "$len" "$t/f" > "$t/got" || fail "file $range: exit $?"
	cmp -s "$t/got" "$t/want" || fail "file $range: wrong bytes"
	cat "$t/f" | "$bin" cat --offset "$off" --length "$len" > "$t/got" ||
		fail "pipe $range: exit $?"
	cmp -s "$t/got" "$t/want" || fail "pipe $range: wrong bytes"
done
# No --length: to the end; a K suffix.
want 4096 2000000
"$bin" cat --offset 4K "$t/f" > "$t/got" && cmp -s "$t/got" "$t/want" || fail "--offset 4K"
# The range applies to each file.
{ want 10 20; cat "$t/want"; cat "$t/want"; } > "$t/want2"
"$bin" cat --offset 10 --length 20 "$t/f" - < "$t/f" > "$t/got" &&
	cmp -s "$t/got" "$t/want2" || fail "two inputs"
# A file on standard input is read at the offset, its position untouched:
# the second command, from the same open file, starts where the first was.
{ "$bin" cat --offset 100 --length 10 > "$t/a" && head -c 5 > "$t/b"; } < "$t/f"
want 100 10; cmp -s "$t/a" "$t/want" || fail "stdin range"
want 0 5; cmp -s "$t/b" "$t/want" || fail "stdin position moved"
for bad in x -1 1Q ''; do
	"$bin" cat --offset "$bad" "$t/f" > /dev/null 2>&1 && fail "offset '$bad' accepted"
	"$bin" cat --length "$bad" "$t/f" > /dev/null 2>&1 && fail "length '$bad' accepted"
done
out=$("$bin" cat --offset x "$t/f" 2>&1)
[ "$(echo "$out" | head -1)" = "psplice: invalid offset 'x'" ] || fail "message: '$out'"
exit 0
