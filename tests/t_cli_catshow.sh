#!/bin/sh
# psplice cat -A -b -e -E -n -s -t -T -v (and their long names) against GNU
# cat on the same inputs, byte for byte: every byte value, runs of blank
# lines, CRLF and a CR held across reads and files, files without a final
# newline, several files and standard input (numbering and squeezing go on
# from one file to the next), line numbers past six digits; the same exit
# status and diagnostics. With these options the bytes pass through the
# process; plain cat stays zero-copy.
[ -z "${BASH_VERSION:-}" ] && command -v bash >/dev/null && exec bash "$0" "$@"
name=t_cli_catshow; . "$(dirname "$0")/cli-lib.sh"
export P
cat --version 2>/dev/null | grep -q 'GNU coreutils' ||
	{ echo "SKIP: GNU cat is not installed"; exit 77; }

# both LINE ARGS...: GNU cat and psplice cat with ARGS, standard input from
# the file stdin: the same bytes out, the same exit status, as many lines
# on standard error.
both() {
	l=$1; shift
	grc=0; cat "$@" <stdin >g.out 2>g.err || grc=$?
	rc=0; "$P" cat "$@" <stdin >p.out 2>p.err || rc=$?
	is "$l" "$grc" "$rc"
	cmp -s g.out p.out || fail "$l" "cat $*: output differs from GNU cat's ($(cmp g.out p.out 2>&1))"
	is "$l" "$(wc -l <g.err)" "$(wc -l <p.err)"
}

# Every byte value, twice, and a line of each between newlines.
python3 -c '
import sys
b = bytes(range(256))
sys.stdout.buffer.write(b + b + b"\n".join(bytes([i]) for i in range(256)) + b"\n")
' >bytes
printf '\n\n\nfirst\n\n\n\n\nsecond\n\n\tthird\t\n\n' >blanks
printf 'one\r\ntwo\r\n\r\n\r\r\nlone\rcr\n\r\n\r\n\r\n' >crlf
printf 'no newline' >nonl
printf 'ends in cr\r' >endcr
printf '\nstarts with a newline\n' >startnl
printf '\n\n' >onlyblank
: >empty
head -c 1048583 /dev/urandom >random
printf 'from\n\n\n\nstandard input\r' >stdin

opts="-A -b -e -E -n -s -t -T -v -u -bn -nb -ns -bs -sE -nE -bE -vT -vE -nA -bA -sbE -sn -sA
--show-all --number-nonblank --show-ends --number --squeeze-blank --show-tabs
--show-nonprinting"
for o in $opts; do
	for f in bytes blanks crlf nonl endcr startnl onlyblank empty random; do
		both $LINENO $o $f
	done
	# Several files: the numbering, the squeezing and a held CR go on
	# from one to the next; standard input among them.
	both $LINENO $o blanks nonl startnl onlyblank blanks endcr crlf endcr nonl
	both $LINENO $o endcr startnl - onlyblank empty onlyblank bytes
	both $LINENO $o crlf random nonl blanks
done
# Combined in one word, and after the files.
both $LINENO -vETnsb crlf blanks
both $LINENO crlf blanks -nE

# From a pipe that gives the CR and the newline after it in two reads: a
# CR that ends a read is held until the next byte says what it is.
for o in -E -nE -A; do
	{ printf 'a\r'; sleep 0.2; printf '\nb\r'; sleep 0.2; printf 'c\r'; } | cat $o >g.out
	{ printf 'a\r'; sleep 0.2; printf '\nb\r'; sleep 0.2; printf 'c\r'; } | "$P" cat $o >p.out
	same $LINENO g.out p.out
done

# Line numbers past six digits: the field grows, as GNU's does.
seq 1000003 | sed 's/^.*5$//' >many
both $LINENO -n many
both $LINENO -b many

# A file that cannot be opened: said, the others shown, numbering on.
both $LINENO -n nonl nosuch blanks
is $LINENO 1 "$rc"
grep -q "cannot open 'nosuch'" p.err || fail $LINENO "$(cat p.err)"

# An input that is the output: refused as GNU refuses it, nothing written.
printf 'abc\n' >self; cp self self.keep
"$P" cat -n self >>self 2>err; rc=$?
rc_is $LINENO 1; same $LINENO self.keep self
err_is $LINENO "psplice: 'self': input file is output file"

# --offset and --length take the input's bytes, before they are shown.
tail -c +4 blanks | head -c 10 | cat -nE >want
"$P" cat -nE --offset 3 --length 10 blanks >got 2>err; rc=$?
rc_is $LINENO 0; same $LINENO want got
cat blanks | "$P" cat -nE --offset 3 --length 10 >got 2>err; rc=$?
rc_is $LINENO 0; same $LINENO want got

# Shown bytes are read and written by the process; plain cat into a pipe
# is still spliced.
"$P" cat --verbose -n random 2>err | cat >/dev/null
grep -q ' by readwrite$' err || fail $LINENO "$(cat err)"
"$P" cat --verbose random 2>err | cat >/dev/null
grep -q ' by splice$' err || fail $LINENO "$(cat err)"

# A reader that leaves ends the command by SIGPIPE, as cat's.
st=$(bash -c 'set -o pipefail; "$P" cat -n random random random | head -c 1 >/dev/null; echo "${PIPESTATUS[0]}"')
is $LINENO 141 "$st"

# --help names each option.
"$P" cat --help >help
for o in --show-all --number-nonblank -e --show-ends --number --squeeze-blank -t \
	--show-tabs --show-nonprinting; do
	grep -q -- "$o" help || fail $LINENO "--help lacks $o"
done
exit 0
