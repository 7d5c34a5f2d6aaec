#!/bin/sh
# The psplice command line: cat and cp copy the right bytes, say the kernel
# path with -v, report errors in cp/cat style with the right exit status,
# and handle options like coreutils. $1 is the scratch directory, the CLI is
# $PSPLICE_BIN. Silent on pass.
# Failures name the line; dash has no $LINENO, bash (always on Debian) has.
[ -z "${BASH_VERSION:-}" ] && command -v bash >/dev/null && exec bash "$0" "$@"
name=t_cli; . "$(dirname "$0")/cli-lib.sh"

head -c 1048576 /dev/urandom >a
head -c 70001 /dev/urandom >b
head -c 4095 /dev/urandom >c
: >empty
mkdir dir

# --- cat ---------------------------------------------------------------
"$P" cat a >o 2>err; rc=$?
rc_is $LINENO 0; same $LINENO a o; err_is $LINENO

"$P" cat <a >o 2>err; rc=$?
rc_is $LINENO 0; same $LINENO a o

"$P" cat - <b >o 2>err; rc=$?
rc_is $LINENO 0; same $LINENO b o

# several files, standard input among them, in order
cat a b a >want.abcab 2>/dev/null; cat c >>want.abcab; cat b >>want.abcab
"$P" cat a b a - b <c >o 2>err; rc=$?
rc_is $LINENO 0; same $LINENO want.abcab o

"$P" cat empty <empty >o 2>err; rc=$?
rc_is $LINENO 0; is $LINENO 0 "$(wc -c <o)"

# a regular file on standard input is read from its position, which is left
# at the end, as cat(1) does: after the shell read a line, twice in a row,
# and for the next reader of the same open file
printf 'one\ntwo\nthree\n' >lines
{ read -r x; "$P" cat; } <lines >o 2>err; rc=$?
rc_is $LINENO 0; is $LINENO "two
three" "$(cat o)"
"$P" cat - - <lines >o 2>err; rc=$?
rc_is $LINENO 0; same $LINENO lines o
is $LINENO 0 "$( ("$P" cat >/dev/null; cat | wc -c) <lines)"
# with --offset, a file is read there and its position stays
is $LINENO "three
one" "$( ("$P" cat --offset=8 >/dev/null; "$P" cat --offset=8; head -n 1) <lines)"

# a missing file is reported, the next one is still copied
cat a b >want.ab
"$P" cat a nope b >o 2>err; rc=$?
rc_is $LINENO 1; same $LINENO want.ab o
err_is $LINENO "psplice: cannot open 'nope': No such file or directory"

# a read error (a directory) is attributed to the input; cat goes on
"$P" cat a dir b >o 2>err; rc=$?
rc_is $LINENO 1; same $LINENO want.ab o
err_is $LINENO "psplice: error reading 'dir': Is a directory"

# into a pipe: spliced; into a file: copied in the kernel
"$P" cat --verbose a 2>err | cat >o
same $LINENO a o
err_is $LINENO "psplice: 'a' -> 'standard output': 1,048,576 bytes by splice"
"$P" cat --verbose a >o 2>err; rc=$?
rc_is $LINENO 0; same $LINENO a o
grep -Eqx "psplice: 'a' -> 'standard output': 1,048,576 bytes by $methods" err ||
	fail $LINENO "-v line: $(cat err)"
# and out of a pipe into a file, and through two psplice cats
cat b | "$P" cat --verbose >o 2>err; rc=$?
rc_is $LINENO 0; same $LINENO b o
err_is $LINENO "psplice: 'standard input' -> 'standard output': 70,001 bytes by splice"
"$P" cat a | "$P" cat >o 2>err
same $LINENO a o
"$P" cat --verbose empty >o 2>err; rc=$?
rc_is $LINENO 0
err_is $LINENO "psplice: 'empty' -> 'standard output': 0 bytes"

# a write error ends cat: one message, not one per file
"$P" cat a b >/dev/full 2>err; rc=$?
rc_is $LINENO 1
err_is $LINENO "psplice: error writing 'standard output': No space left on device"

# a file that is also standard output is refused, not grown forever
cp a self
"$P" cat self >>self 2>err; rc=$?
rc_is $LINENO 1; same $LINENO a self
err_is $LINENO "psplice: 'self': input file is output file"

# a reader that goes away ends cat silently, by SIGPIPE, as cat(1)
{ "$P" cat a a a a 2>err; echo $? >rc.out; } | head -c 1 >/dev/null
rc=$(cat rc.out)
rc_is $LINENO 141; err_is $LINENO
# unless SIGPIPE is ignored: then it is a write error like any other
{ trap '' PIPE; "$P" cat a a a a 2>err; echo $? >rc.out; } | head -c 1 >/dev/null
rc=$(cat rc.out)
rc_is $LINENO 1
err_is $LINENO "psplice: error writing 'standard output': Broken pipe"

# --- cp ----------------------------------------------------------------
"$P" cp a a2 2>err; rc=$?
rc_is $LINENO 0; same $LINENO a a2; err_is $LINENO
"$P" cp --debug a a3 2>err >/dev/null; rc=$?
rc_is $LINENO 0; same $LINENO a a3
grep -Eqx "psplice: 'a' -> 'a3': 1,048,576 bytes by $methods" err ||
	fail $LINENO "-v line: $(cat err)"

# into a directory, under the source's name, with or without the slash
"$P" cp --debug b dir 2>err >/dev/null; rc=$?
rc_is $LINENO 0; same $LINENO b dir/b
grep -Eqx "psplice: 'b' -> 'dir/b': 70,001 bytes by $methods" err ||
	fail $LINENO "-v line: $(cat err)"
"$P" cp "$d/c" dir/ 2>err; rc=$?
rc_is $LINENO 0; same $LINENO c dir/c

# a new file gets the source's mode (less the umask); an existing one
# keeps its own, and is truncated
chmod 640 c; "$P" cp c m640; is $LINENO 640 "$(stat -c %a m640)"
chmod 755 c; "$P" cp c m755; is $LINENO 755 "$(stat -c %a m755)"
chmod 666 c; (umask 077; "$P" cp c m600); is $LINENO 600 "$(stat -c %a m600)"
cp a old; chmod 604 old
"$P" cp b old 2>err; rc=$?
rc_is $LINENO 0; same $LINENO b old; is $LINENO 604 "$(stat -c %a old)"

# from a pipe (not a regular file)
cat b | "$P" cp --debug /dev/stdin fromstdin 2>err >/dev/null; rc=$?
rc_is $LINENO 0; same $LINENO b fromstdin
grep -Eqx "psplice: '/dev/stdin' -> 'fromstdin': 70,001 bytes by $methods" err ||
	fail $LINENO "-v line: $(cat err)"

# a file onto itself, by name, through a directory, a hard or a soft link
cp a keep
"$P" cp a a 2>err; rc=$?
rc_is $LINENO 1; same $LINENO keep a
err_is $LINENO "psplice: 'a' and 'a' are the same file"
"$P" cp a . 2>err; rc=$?
rc_is $LINENO 1; same $LINENO keep a
err_is $LINENO "psplice: 'a' and './a' are the same file"
ln a hard; ln -s a soft
"$P" cp hard a 2>err; rc=$?
rc_is $LINENO 1; same $LINENO keep a
err_is $LINENO "psplice: 'hard' and 'a' are the same file"
"$P" cp a soft 2>err; rc=$?
rc_is $LINENO 1; same $LINENO keep a
err_is $LINENO "psplice: 'a' and 'soft' are the same file"

# a missing source, a directory source: nothing is created
"$P" cp nope x 2>err; rc=$?
rc_is $LINENO 1; [ ! -e x ] || fail $LINENO "x was created"
err_is $LINENO "psplice: cannot stat 'nope': No such file or directory"
"$P" cp dir x 2>err; rc=$?
rc_is $LINENO 1; [ ! -e x ] || fail $LINENO "x was created"
err_is $LINENO "psplice: -r not specified; omitting directory 'dir'"

# a destination that cannot be created or written
"$P" cp a nodir/x 2>err; rc=$?
rc_is $LINENO 1
err_is $LINENO "psplice: cannot create regular file 'nodir/x': No such file or directory"
# DST/ must be a directory, as with cp(1)
"$P" cp a nodir/ 2>err; rc=$?
rc_is $LINENO 1; err_is $LINENO "psplice: cannot create regular file 'nodir/': Not a directory"
"$P" cp b a/ 2>err; rc=$?
rc_is $LINENO 1; err_is $LINENO "psplice: cannot stat 'a/': Not a directory"
mkdir -p dir/a
"$P" cp a dir 2>err; rc=$?
rc_is $LINENO 1
err_is $LINENO "psplice: cannot overwrite directory 'dir/a' with non-directory"
"$P" cp a /dev/full 2>err; rc=$?
rc_is $LINENO 1
err_is $LINENO "psplice: error writing '/dev/full': No space left on device"

# operands
"$P" cp 2>err; rc=$?
rc_is $LINENO 1
err_is $LINENO "psplice: missing file operand" \
	"Try 'psplice cp --help' for more information."
"$P" cp a 2>err; rc=$?
rc_is $LINENO 1
err_is $LINENO "psplice: missing destination file operand after 'a'" \
	"Try 'psplice cp --help' for more information."
# several SOURCEs go into a DIRECTORY (c is a file), as with cp(1)
"$P" cp a b c 2>err; rc=$?
rc_is $LINENO 1
err_is $LINENO "psplice: target 'c': Not a directory"

# --- options -----------------------------------------------------------
version=$(sed -n 's/^#define PSPLICE_VERSION_[A-Z]* //p' \
	"$(dirname "$0")/../include/psplice.h" | paste -sd.)
for cmd in "" cat cp; do
	# shellcheck disable=SC2086 # $cmd is empty or one word
	"$P" $cmd --help >out 2>err; rc=$?
	rc_is $LINENO 0; err_is $LINENO
	grep -q "^Usage: psplice ${cmd:-COMMAND} " out || fail $LINENO "$cmd --help: $(head -1 out)"
	# each subcommand's help names its own page, psplice's the overview
	tail -1 out | grep -q "See psplice${cmd:+-$cmd}(1)\.$" ||
		fail $LINENO "$cmd --help ends: $(tail -1 out)"
	# shellcheck disable=SC2086
	"$P" $cmd --version >out 2>err; rc=$?
	rc_is $LINENO 0; err_is $LINENO
	is $LINENO "psplice $version" "$(cat out)"
done
"$P" --help | grep -q '^  cat ' || fail $LINENO "psplice --help does not list cat"
"$P" --help | grep -q '^  cp ' || fail $LINENO "psplice --help does not list cp"
"$P" cat --help | grep -q -- '  --verbose' || fail $LINENO "cat --help has no --verbose"

"$P" cat --bogus a >out 2>err; rc=$?
rc_is $LINENO 1; is $LINENO 0 "$(wc -c <out)"
err_is $LINENO "psplice: unrecognized option '--bogus'" \
	"Try 'psplice cat --help' for more information."
"$P" cp -q a b 2>err; rc=$?
rc_is $LINENO 1; [ ! -e b.x ] || fail $LINENO "copied anyway"
err_is $LINENO "psplice: invalid option -- 'q'" \
	"Try 'psplice cp --help' for more information."
"$P" 2>err; rc=$?
rc_is $LINENO 1
err_is $LINENO "psplice: missing command" "Try 'psplice --help' for more information."
"$P" frobnicate 2>err; rc=$?
rc_is $LINENO 1
err_is $LINENO "psplice: unknown command 'frobnicate'" \
	"Try 'psplice --help' for more information."
"$P" --bogus 2>err; rc=$?
rc_is $LINENO 1
err_is $LINENO "psplice: unrecognized option '--bogus'" \
	"Try 'psplice --help' for more information."

# options after operands, and -- before a file named like an option
cp b ./-v
"$P" cat a --verbose 2>err >o; rc=$?
rc_is $LINENO 0; same $LINENO a o; [ -s err ] || fail $LINENO "--verbose after a file ignored"
# -v is cat's --show-nonprinting, never taken for --verbose; -u (POSIX:
# unbuffered) is accepted
"$P" cat -v a 2>err >o; rc=$?
rc_is $LINENO 0; err_is $LINENO
cat -v a >want.v; same $LINENO want.v o
"$P" cat -u a >o 2>err; rc=$?
rc_is $LINENO 0; same $LINENO a o; err_is $LINENO
"$P" cat -- -v >o 2>err; rc=$?
rc_is $LINENO 0; same $LINENO b o; err_is $LINENO

# cat grows the pipes it splices through to 1 MiB (fewer, larger splices);
# the reader asks the pipe's size once it has read everything.
pipe_size='import fcntl, sys; d = sys.stdin.buffer.read(); print(len(d), fcntl.fcntl(0, 1032))'
head -c 300000 /dev/zero > big
out=$("$P" cat big | python3 -c "$pipe_size")
[ "$out" = "300000 1048576" ] || fail $LINENO "output pipe: $out"
# The writer asks its own pipe's size once all its bytes are in: by then
# psplice cat has read from it, so it has had its chance to grow it.
python3 -c 'import fcntl, sys
sys.stdout.buffer.write(b"x" * 300000); sys.stdout.flush()
print(fcntl.fcntl(1, 1032), file=sys.stderr)' 2>in_size | "$P" cat >/dev/null
[ "$(cat in_size)" = 1048576 ] || fail $LINENO "input pipe: $(cat in_size)"

# --help into a full disk is an error, as in coreutils
"$P" cp --help >/dev/full 2>err; rc=$?
rc_is $LINENO 1
err_is $LINENO "psplice: write error: No space left on device"
exit 0
