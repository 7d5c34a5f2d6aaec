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
# Sizes take coreutils' suffixes as head -c does (issue 40): the forms GNU
# head takes are taken, the others refused, each with head's value.
for s in 1 0 010 1b 7b 1k 1K 3kB 1KB 1kD 1KiB 1kiB 1m 1M 1MB 1mB 1MiB 1miB; do
	head -c "$s" /dev/zero >"$t/want"
	"$bin" cat --length "$s" /dev/zero >"$t/got" || fail "--length $s: exit $?"
	cmp -s "$t/got" "$t/want" || fail "--length $s: $(wc -c <"$t/got") bytes"
done
for s in 1G 1GB 1GiB 1T 1TB 1TiB 1P 1PB 1PiB 7E 7EB 7EiB 1Z 1Y 1c 1w 1B 1Ki 1g 1gB \
	1t 1R 1Q 1x 1kb 1KIB 1Kib 1MIB 1iB 0x10 1.5K 1e3 1KB2 16E \
	99999999999999999999; do
	head -c "$s" /dev/null 2>/dev/null; grc=$?
	"$bin" cat --length "$s" /dev/null 2>/dev/null; rc=$?
	[ $rc = $grc ] || fail "--length $s: exit $rc, head -c: $grc"
done
# Values past a signed 64-bit offset are refused, saying so.
for s in 8E 9223372036854775808 1Z 99999999999999999999; do
	out=$("$bin" cat --offset "$s" "$t/f" 2>&1) && fail "--offset $s accepted"
	[ "$(echo "$out" | head -1)" = "psplice: invalid offset '$s': too large (at most 9223372036854775807)" ] ||
		fail "--offset $s: '$out'"
done
"$bin" cat --length 9223372036854775807 "$t/f" >"$t/got" && cmp -s "$t/f" "$t/got" ||
	fail "--length INT64_MAX"
# Multiples past 32 bits, read where a sparse file has them.
if truncate -s 2T "$t/sparse" 2>/dev/null; then
	printf 'one' | dd of="$t/sparse" bs=1 seek=1099511627776 conv=notrunc 2>/dev/null
	printf 'two' | dd of="$t/sparse" bs=1 seek=1000000000000 conv=notrunc 2>/dev/null
	[ "$("$bin" cat --offset 1TiB --length 3 "$t/sparse")" = one ] || fail "--offset 1TiB"
	[ "$("$bin" cat --offset 1T --length 3 "$t/sparse")" = one ] || fail "--offset 1T"
	[ "$("$bin" cat --offset 1TB --length 3 "$t/sparse")" = two ] || fail "--offset 1TB"
	[ "$("$bin" cat --offset 1000GB --length 3 "$t/sparse")" = two ] || fail "--offset 1000GB"
	rm -f "$t/sparse"
else
	echo "SKIP part: no 2 TiB sparse file here"
fi
# --output-offset: the output written from there, not truncated, as dd
# seek= conv=notrunc; several inputs one after the other; past the end a
# hole; the options that show the bytes too.
printf 'xyz' >"$t/in"
printf 'AAAAAAAAAA' >"$t/o"; cp "$t/o" "$t/o.dd"
"$bin" cat --output-offset 3 "$t/in" 1<>"$t/o" || fail "--output-offset: exit $?"
dd if="$t/in" of="$t/o.dd" bs=1 seek=3 conv=notrunc 2>/dev/null
cmp -s "$t/o" "$t/o.dd" || fail "--output-offset 3: '$(cat "$t/o")'"
"$bin" cat --output-offset=1 "$t/in" - "$t/in" 1<>"$t/o" <"$t/in" || fail "three inputs: exit $?"
[ "$(cat "$t/o")" = "Axyzxyzxyz" ] || fail "three inputs: '$(cat "$t/o")'"
"$bin" cat --output-offset 20 "$t/in" 1<>"$t/o" || fail "past the end: exit $?"
{ printf 'Axyzxyzxyz'; head -c 10 /dev/zero; printf 'xyz'; } | cmp -s - "$t/o" || fail "past the end"
head -c 4096 /dev/zero | tr '\0' A >"$t/o"
"$bin" cat -n --output-offset 1k "$t/in" 1<>"$t/o" || fail "-n: exit $?"
{ head -c 1024 /dev/zero | tr '\0' A; printf '     1\txyz'; head -c 3062 /dev/zero | tr '\0' A; } |
	cmp -s - "$t/o" || fail "-n --output-offset 1k"
# An output that cannot seek, or that appends: said, exit 1, nothing read.
out=$( ("$bin" cat --output-offset 3 "$t/in" 2>"$t/err"; echo $? >"$t/rc") | cat)
[ -z "$out" ] && [ "$(cat "$t/rc")" = 1 ] || fail "pipe: exit $(cat "$t/rc"), output '$out'"
[ "$(cat "$t/err")" = "psplice: cannot write 'standard output' at offset 3: Illegal seek" ] ||
	fail "pipe: '$(cat "$t/err")'"
printf 'AAAA' >"$t/o"
"$bin" cat --output-offset 1 "$t/in" >>"$t/o" 2>"$t/err"; rc=$?
[ $rc = 1 ] && [ "$(cat "$t/o")" = AAAA ] || fail "append: exit $rc, '$(cat "$t/o")'"
[ "$(cat "$t/err")" = "psplice: cannot write 'standard output' at offset 1: it appends (>>); open it with 1<> instead" ] ||
	fail "append: '$(cat "$t/err")'"
for bad in x -1 1Q ''; do
	"$bin" cat --offset "$bad" "$t/f" > /dev/null 2>&1 && fail "offset '$bad' accepted"
	"$bin" cat --length "$bad" "$t/f" > /dev/null 2>&1 && fail "length '$bad' accepted"
done
out=$("$bin" cat --offset x "$t/f" 2>&1)
[ "$(echo "$out" | head -1)" = "psplice: invalid offset 'x'" ] || fail "message: '$out'"
exit 0
