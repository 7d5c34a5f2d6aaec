#!/bin/sh
# psplice cp SOURCE... DIRECTORY never overwrites what it made itself a
# moment before: two SOURCEs of one name (a/f b/f into c) would leave
# c/f the second's with the first's lost and exit 0, and with -dR a link
# made from the first SOURCE would be written through by the second, to a
# file outside DIRECTORY. GNU cp refuses both ("will not overwrite
# just-created 'c/f' with 'b/f'", "will not copy 'y/1' through
# just-created symlink 'z/1'", exit 1; coreutils' tests/cp/into-self and
# cp-parents cases); the same SOURCE given twice is a warning and the
# second is left out. -n leaves it alone; directories still merge.
# $1 is the scratch directory, the CLI is $PSPLICE_BIN.
[ -z "${BASH_VERSION:-}" ] && command -v bash >/dev/null && exec bash "$0" "$@"
name=t_cli_cpmade; . "$(dirname "$0")/cli-lib.sh"

fresh() { rm -rf ./*; mkdir a b c; echo a >a/f; echo b >b/f; }

for o in "" -f --remove-destination -b -l "-b --suffix=.old" -p -a; do
	fresh
	"$P" cp $o a/f b/f c 2>err; rc=$?
	rc_is $LINENO 1
	err_is $LINENO "psplice: will not overwrite just-created 'c/f' with 'b/f'"
	is $LINENO a "$(cat c/f)"
	is $LINENO "a/f b/f c/f" "$(echo */f*)"
done
# -t, and a DEST that was there before the command: the first SOURCE's
# copy is the one kept either way.
fresh; echo old >c/f
"$P" cp -t c a/f b/f 2>err; rc=$?
rc_is $LINENO 1; is $LINENO a "$(cat c/f)"
# -s: the link made first stays.
fresh
"$P" cp -s "$d/a/f" "$d/b/f" c 2>err; rc=$?
rc_is $LINENO 1; is $LINENO "$d/a/f" "$(readlink c/f)"
# A hard link of the first, or a link to it: still another SOURCE.
fresh; rm b/f; ln a/f b/f
"$P" cp a/f b/f c 2>err; rc=$?
rc_is $LINENO 1

# A link made from the first SOURCE is not written through by the second.
rm -rf ./*; mkdir x y z; echo keep >t; ln -s ../t x/1; echo payload >y/1
"$P" cp -dR x/1 y/1 z 2>err; rc=$?
rc_is $LINENO 1
err_is $LINENO "psplice: will not copy 'y/1' through just-created symlink 'z/1'"
is $LINENO keep "$(cat t)"
is $LINENO ../t "$(readlink z/1)"
# ... nor replaced, with --remove-destination.
rm -rf ./*; mkdir x y z; echo keep >t; ln -s ../t x/1; echo payload >y/1
"$P" cp -dR --remove-destination x/1 y/1 z 2>err; rc=$?
rc_is $LINENO 1; is $LINENO ../t "$(readlink z/1)"; is $LINENO keep "$(cat t)"

# The same SOURCE twice: said, the second left out.
rm -rf ./*; mkdir d; echo a >a
"$P" cp a a d/ 2>err; rc=$?
rc_is $LINENO 0
err_is $LINENO "psplice: warning: source file 'a' specified more than once"
is $LINENO a "$(cat d/a)"
# ... but with --backup the second would back up the first's copy.
rm -rf d; mkdir d
"$P" cp --backup a a d/ 2>err; rc=$?
rc_is $LINENO 1; is $LINENO "d/a" "$(echo d/*)"

# -n leaves the first's copy alone, quietly.
fresh
"$P" cp -n a/f b/f c 2>err; rc=$?
rc_is $LINENO 0; err_is $LINENO; is $LINENO a "$(cat c/f)"

# Directories of one name merge, their files overwritten as cp(1) does.
rm -rf ./*; mkdir -p a/d b/d c; echo 1 >a/d/x; echo 2 >b/d/y; echo 3 >b/d/x
"$P" cp -r a/d b/d c 2>err; rc=$?
rc_is $LINENO 0; err_is $LINENO
is $LINENO "c/d/x c/d/y" "$(echo c/d/*)"; is $LINENO 3 "$(cat c/d/x)"
exit 0
