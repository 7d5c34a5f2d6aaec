#!/bin/sh
# psplice cp -v says what GNU cp 9.1's says, on standard output, which
# scripts read: "'SOURCE' -> 'DEST'" for each thing copied or made
# (directories made, before what they hold; links, FIFOs, files; -l and -s
# links), with " (backup: 'DEST~')" when DEST was backed up, "removed
# 'DEST'" before a DEST removed to make room (after the line, for one -f
# replaces as it could not be opened), "a -> e/a" for each
# directory --parents makes; nothing for a file left alone (-n, -u) and
# nothing on standard error. --debug says the same, and on standard
# error how each regular file was copied: its bytes and the kernel path
# that moved them, whether write-behind paced it, and --sync's level.
# $1 is the scratch directory, the CLI is $PSPLICE_BIN.
[ -z "${BASH_VERSION:-}" ] && command -v bash >/dev/null && exec bash "$0" "$@"
name=t_cli_cpverbose; . "$(dirname "$0")/cli-lib.sh"

# out_is LINE TEXT...: standard output was exactly these lines
out_is() {
	l=$1; shift
	printf '%s\n' "$@" >want
	cmp -s want out || fail "$l" "stdout: want '$(cat want)', got '$(cat out)'"
}

mkdir -p a/s; echo x >a/f; ln -s f a/l; mkfifo a/p; echo y >a/s/g
"$P" cp -rv a b >out 2>err; rc=$?
rc_is $LINENO 0; err_is $LINENO
# A tree's order is its directory's: sorted, for the comparison.
sort out >sorted; mv sorted out
out_is $LINENO "'a' -> 'b'" "'a/f' -> 'b/f'" "'a/l' -> 'b/l'" "'a/p' -> 'b/p'" \
	"'a/s' -> 'b/s'" "'a/s/g' -> 'b/s/g'"
# A directory is said before what it holds, when it is made: not one
# merged into.
"$P" cp -rv a/s c >out 2>err; rc=$?
rc_is $LINENO 0; out_is $LINENO "'a/s' -> 'c'" "'a/s/g' -> 'c/g'"
"$P" cp -rvT a/s c >out 2>err; rc=$?
rc_is $LINENO 0; out_is $LINENO "'a/s/g' -> 'c/g'"
mkdir y; (cd y && "$P" cp -av --backup ../a/s/. . >../out 2>../err); rc=$?
rc_is $LINENO 0; err_is $LINENO; out_is $LINENO "'../a/s/./g' -> '././g'"

"$P" cp -v a/f b/f >out 2>err; rc=$?
rc_is $LINENO 0; err_is $LINENO; out_is $LINENO "'a/f' -> 'b/f'"
"$P" cp -bv a/f b/f >out 2>err; rc=$?
rc_is $LINENO 0; out_is $LINENO "'a/f' -> 'b/f' (backup: 'b/f~')"
"$P" cp -v --backup=numbered a/f b/f >out 2>err; rc=$?
rc_is $LINENO 0; out_is $LINENO "'a/f' -> 'b/f' (backup: 'b/f.~1~')"
"$P" cp -v --remove-destination a/f b/f >out 2>err; rc=$?
rc_is $LINENO 0; out_is $LINENO "removed 'b/f'" "'a/f' -> 'b/f'"
echo z >r1; "$P" cp -Pv a/l r1 >out 2>err; rc=$?
rc_is $LINENO 0; out_is $LINENO "removed 'r1'" "'a/l' -> 'r1'"
"$P" cp -vl a/f lnk >out 2>err; rc=$?; rc_is $LINENO 0; out_is $LINENO "'a/f' -> 'lnk'"
"$P" cp -vs a/f sym >out 2>err; rc=$?; rc_is $LINENO 0; out_is $LINENO "'a/f' -> 'sym'"
mkdir e; "$P" cp -v --parents a/s/g e >out 2>err; rc=$?
rc_is $LINENO 0; out_is $LINENO "a -> e/a" "a/s -> e/a/s" "'a/s/g' -> 'e/a/s/g'"
# Left alone: nothing said.
for o in -vn -vu; do
	"$P" cp $o a/f b/f >out 2>err; rc=$?
	rc_is $LINENO 0; err_is $LINENO; [ ! -s out ] || fail $LINENO "$o said: $(cat out)"
done
# A copy that fails was said before it was tried, as GNU's.
if [ -w /dev/full ]; then
	"$P" cp -v a/f /dev/full >out 2>err; rc=$?
	rc_is $LINENO 1; out_is $LINENO "'a/f' -> '/dev/full'"
fi

# -f replacing a DEST it may not write: "removed" after the copy's line
# (as another user: root may write any).
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null &&
	setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null; then
	chmod 755 .; mkdir w; chmod 777 w; echo x >w/s
	setpriv --reuid=65534 --regid=65534 --clear-groups sh -c \
		'echo y >w/ro; chmod 444 w/ro; "$0" cp -vf w/s w/ro' "$P" >out 2>err; rc=$?
	rc_is $LINENO 0; err_is $LINENO; out_is $LINENO "'w/s' -> 'w/ro'" "removed 'w/ro'"
	is $LINENO x "$(cat w/ro)"
else
	skip "not root, or no setpriv: -vf of a read-only DEST not checked"
fi

# --debug: -v's line, and how the data went on standard error.
"$P" cp --debug a/f d1 >out 2>err; rc=$?
rc_is $LINENO 0; out_is $LINENO "'a/f' -> 'd1'"
grep -Eqx "psplice: 'a/f' -> 'd1': 2 bytes by [a-z_]+" err || fail $LINENO "$(cat err)"
"$P" cp --debug --sync=data a/f d2 >out 2>err; rc=$?
rc_is $LINENO 0; is $LINENO "psplice: 'd2': data-durable" "$(tail -n 1 err)"

# side CP...: in a directory of its own, the tree and CP's -v for each of
# the commands, with its exit status
side() {
	rm -rf side; mkdir side; cd side || exit 1
	mkdir -p a/s b e2; echo x >a/f; ln -s f a/l; mkfifo a/p; echo y >a/s/g; echo o >b/f
	for args in "-rv a g" "-bv a/f b/f" "-v --remove-destination a/f b/f" "-vl a/f lnk2" \
		"-vs a/f sym2" "-v --parents a/s/g e2" "-av a/l b/f"; do
		"$@" $args 2>&1 | sort; echo "$args: ${PIPESTATUS[0]}"
	done
	cd .. && rm -rf side
}
if cp --version 2>/dev/null | grep -q 'GNU coreutils'; then
	side cp >gnu
	side "$P" cp >ours
	sed -i 's/^cp: /psplice: /' gnu
	diff gnu ours >diffs || fail $LINENO "not GNU's -v: $(cat diffs)"
else
	skip "GNU cp is not cp here: -v is not compared with GNU's"
fi
exit 0
