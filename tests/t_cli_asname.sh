#!/bin/sh
# psplice run by the name cp, cat or tee (a link to it or a copy of it, as
# busybox is run by its applets' names) is that command, and names itself
# as GNU's programs do, by its argv[0] as run: at the start of each
# message (getopt's included), in the Try line, in -i's question and in
# --help's usage lines; --version says "cp (psplice) VERSION". Run by a
# path (bin/cp), the path is the name, as GNU's say "/usr/bin/cp:".
# `psplice cp` keeps "psplice:" and "Try 'psplice cp --help'" in the same
# cases, and psplice under any other name (psplice-x) is psplice. Where
# GNU coreutils is installed, its messages and status are compared too.
[ -z "${BASH_VERSION:-}" ] && command -v bash >/dev/null && exec bash "$0" "$@"
name=t_cli_asname; . "$(dirname "$0")/cli-lib.sh"
gnu=
cp --version 2>/dev/null | grep -q 'GNU coreutils' && gnu=1
[ -n "$gnu" ] || skip "GNU coreutils is not installed: not compared with it"
version=$("$P" --version | sed -n '1s/^psplice //p')
[ -n "$version" ] || fail $LINENO "psplice --version: $("$P" --version)"

mkdir bin gbin
for c in cp cat tee psplice-x; do ln -s "$P" "bin/$c"; done
if [ -n "$gnu" ]; then
	for c in cp cat tee; do ln -s "$(command -v $c)" "gbin/$c"; done
fi
ours=$d/bin gnus=$d/gbin
: > in

# as DIR CMD ARGS...: CMD found in DIR by PATH, so that its argv[0] is
# CMD as typed (a path CMD is run as it is); standard input from in,
# output into out, error into err, the status in $rc.
as() {
	dir=$1; shift
	rc=0
	env PATH="$dir:$PATH" "$@" < in > out 2> err || rc=$?
}
# both LINE RC CMD ARGS...: ours run as CMD exits RC; when GNU's is here,
# it says on stderr what ours says, and exits as ours does.
both() {
	l=$1 want=$2; shift 2
	if [ -n "$gnu" ]; then
		as "$gnus" "$@"
		mv err gerr
		is "$l" "$want" "$rc"
	fi
	as "$ours" "$@"
	rc_is "$l" "$want"
	[ -z "$gnu" ] || cmp -s gerr err || fail "$l" "GNU said '$(cat gerr)', we said '$(cat err)'"
}
try() { echo "Try '$1 --help' for more information."; }

# --- cp ------------------------------------------------------------------------
touch a b
both $LINENO 1 cp
err_is $LINENO "cp: missing file operand" "$(try cp)"
both $LINENO 1 cp a
err_is $LINENO "cp: missing destination file operand after 'a'" "$(try cp)"
both $LINENO 1 cp nosuch x
err_is $LINENO "cp: cannot stat 'nosuch': No such file or directory"
both $LINENO 1 cp -Q a b
err_is $LINENO "cp: invalid option -- 'Q'" "$(try cp)"
both $LINENO 1 cp --bogus a b
err_is $LINENO "cp: unrecognized option '--bogus'" "$(try cp)"
both $LINENO 1 cp -t
err_is $LINENO "cp: option requires an argument -- 't'" "$(try cp)"
# -i asks under the name, with no newline after the question.
echo n > in
both $LINENO 0 cp -i a b
printf "cp: overwrite 'b'? " > want
cmp -s want err || fail $LINENO "stderr: '$(cat err)'"
: > in
echo data > a
as "$ours" cp a c
rc_is $LINENO 0; err_is $LINENO; same $LINENO a c
as "$ours" cp --help
rc_is $LINENO 0
is $LINENO "Usage: cp [OPTION]... SOURCE DEST" "$(sed -n 1p out)"
is $LINENO "  or:  cp [OPTION]... SOURCE... DIRECTORY" "$(sed -n 2p out)"
is $LINENO "  or:  cp [OPTION]... -t DIRECTORY SOURCE..." "$(sed -n 3p out)"
[ -z "$gnu" ] || is $LINENO "$(cp --help | sed -n 2,3p)" "$(sed -n 2,3p out)"
as "$ours" cp --version
rc_is $LINENO 0; is $LINENO "cp (psplice) $version" "$(cat out)"

# Run by a path, the path names it, as it names GNU's.
both $LINENO 1 bin/cp
err_is $LINENO "bin/cp: missing file operand" "$(try bin/cp)"
both $LINENO 1 "$ours/cp" -Q
err_is $LINENO "$ours/cp: invalid option -- 'Q'" "$(try "$ours/cp")"
# A copy of the binary under the name is the same.
mkdir copy && cp "$P" copy/cp
as "$d/copy" cp nosuch x
rc_is $LINENO 1; err_is $LINENO "cp: cannot stat 'nosuch': No such file or directory"

# --- cat -----------------------------------------------------------------------
both $LINENO 1 cat -Q
err_is $LINENO "cat: invalid option -- 'Q'" "$(try cat)"
both $LINENO 1 cat --bogus
err_is $LINENO "cat: unrecognized option '--bogus'" "$(try cat)"
as "$ours" cat nosuch
rc_is $LINENO 1; err_is $LINENO "cat: cannot open 'nosuch': No such file or directory"
as "$ours" cat a
rc_is $LINENO 0; err_is $LINENO; same $LINENO a out
as "$ours" cat --help
rc_is $LINENO 0; is $LINENO "Usage: cat [OPTION]... [FILE]..." "$(sed -n 1p out)"
[ -z "$gnu" ] || is $LINENO "$(cat --help | sed -n 1p)" "$(sed -n 1p out)"
as "$ours" cat --version
rc_is $LINENO 0; is $LINENO "cat (psplice) $version" "$(cat out)"

# --- tee -----------------------------------------------------------------------
both $LINENO 1 tee -Q
err_is $LINENO "tee: invalid option -- 'Q'" "$(try tee)"
as "$ours" tee nodir/x
rc_is $LINENO 1; err_is $LINENO "tee: cannot open 'nodir/x': No such file or directory"
cp a in
as "$ours" tee t
rc_is $LINENO 0; err_is $LINENO; same $LINENO a t; same $LINENO a out
: > in
as "$ours" tee --help
rc_is $LINENO 0; is $LINENO "Usage: tee [OPTION]... [FILE]..." "$(sed -n 1p out)"
[ -z "$gnu" ] || is $LINENO "$(tee --help | sed -n 1p)" "$(sed -n 1p out)"

# --- psplice cp, cat, tee: psplice's name, as before ----------------------------
as "$ours" "$P" cp
rc_is $LINENO 1; err_is $LINENO "psplice: missing file operand" "$(try "psplice cp")"
as "$ours" "$P" cp nosuch x
rc_is $LINENO 1; err_is $LINENO "psplice: cannot stat 'nosuch': No such file or directory"
as "$ours" "$P" cp -Q a b
rc_is $LINENO 1; err_is $LINENO "psplice: invalid option -- 'Q'" "$(try "psplice cp")"
echo n > in
as "$ours" "$P" cp -i a b
printf "psplice: overwrite 'b'? " > want
cmp -s want err || fail $LINENO "stderr: '$(cat err)'"
: > in
as "$ours" "$P" cp --help
is $LINENO "Usage: psplice cp [OPTION]... SOURCE DEST" "$(sed -n 1p out)"
is $LINENO "  or:  psplice cp [OPTION]... -t DIRECTORY SOURCE..." "$(sed -n 3p out)"
as "$ours" "$P" cp --version
is $LINENO "psplice $version" "$(cat out)"
as "$ours" "$P" cat -Q
rc_is $LINENO 1; err_is $LINENO "psplice: invalid option -- 'Q'" "$(try "psplice cat")"
as "$ours" "$P" tee nodir/x
rc_is $LINENO 1; err_is $LINENO "psplice: cannot open 'nodir/x': No such file or directory"

# --- another name: psplice itself ------------------------------------------------
as "$ours" psplice-x
rc_is $LINENO 1; err_is $LINENO "psplice: missing command" "$(try psplice)"
as "$ours" psplice-x cp nosuch x
rc_is $LINENO 1; err_is $LINENO "psplice: cannot stat 'nosuch': No such file or directory"
as "$ours" psplice-x --version
is $LINENO "psplice $version" "$(cat out)"
exit 0
