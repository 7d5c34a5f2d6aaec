#!/bin/sh
# psplice cp where SOURCE and DST are one file, the table of coreutils'
# tests/cp/same-file.sh: six pairs (a file and a link to it, a file and
# itself, two links to one file, a file and its hard link, a link and its
# hard link) by nineteen option sets. GNU cp 9.1's rule, kept: a backup
# keeps DST's data, so a DST that is not SOURCE's own entry is backed up
# and copied over (and SOURCE's own entry too with -f: `cp -bf F F` makes
# F.~1~); a link copied as a link onto another name of itself, or -l of
# the file onto a name it has, is a no-op; -l of a link copied as a link
# replaces DST. Each row's exit status, the names left and whether both
# operands still hold the data are asserted for the rows that differed,
# and the whole table is compared with GNU cp's where it is cp.
# $1 is the scratch directory, the CLI is $PSPLICE_BIN.
[ -z "${BASH_VERSION:-}" ] && command -v bash >/dev/null && exec bash "$0" "$@"
name=t_cli_cpsame; . "$(dirname "$0")/cli-lib.sh"

# table CP...: one line a row, "ARGS OPTIONS: RC (NAMES) [FAILED|loop]"
table() {
	for args in 'foo symlink' 'symlink foo' 'foo foo' 'sl1 sl2' 'foo hardlink' 'hlsl sl2'; do
		for options in '' -d -f -df --rem -b -bd -bf -bdf -l -dl -fl -dfl -bl -bdl -bfl \
			-bdfl -s -sf; do
			row "$args" "$options" "$@"
		done
	done
}
# row ARGS OPTIONS CP...
row() {
	rm -rf t; mkdir t; (cd t && row_in "$@"); rm -rf t
}
row_in() {
	args=$1 options=$2; shift 2
	echo XYZ >foo
	case "$args" in *symlink*) ln -s foo symlink ;; esac
	case "$args" in *hardlink*) ln foo hardlink ;; esac
	case "$args" in *sl1*) ln -s foo sl1 ;; esac
	case "$args" in *sl2*) ln -s foo sl2 ;; esac
	case "$args" in *hlsl*) ln sl2 hlsl ;; esac
	VERSION_CONTROL=numbered "$@" $options $args 2>/dev/null </dev/null
	rc=$?
	ls=$(ls -gG . | sed -e '/^total /d' -e 's/^\([^ ]*  *\)\{6\}//' | tr '\n' ' ')
	ok=
	for f in $args; do
		if [ -f $f ]; then [ "$(cat $f)" = XYZ ] || ok="$ok FAILED"; else ok="$ok loop"; fi
	done
	echo "$args $options: $rc ($ls)$ok"
}

table "$P" cp >ours
# The rows where psplice refused, or made no backup, before; GNU's.
while IFS= read -r want; do
	grep -qxF -- "$want" ours || fail $LINENO "want '$want', got '$(grep -F -- "${want%%:*}:" ours)'"
done <<'ROWS'
foo symlink -b: 0 (foo symlink symlink.~1~ -> foo )
foo symlink -bd: 0 (foo symlink symlink.~1~ -> foo )
foo symlink -bf: 0 (foo symlink symlink.~1~ -> foo )
foo symlink -bdf: 0 (foo symlink symlink.~1~ -> foo )
foo foo -b: 1 (foo )
foo foo -bf: 0 (foo foo.~1~ )
foo foo -bdf: 0 (foo foo.~1~ )
foo foo -bl: 0 (foo )
foo foo -bfl: 0 (foo foo.~1~ )
foo foo -bdfl: 0 (foo foo.~1~ )
sl1 sl2 -b: 0 (foo sl1 -> foo sl2 sl2.~1~ -> foo )
sl1 sl2 -bf: 0 (foo sl1 -> foo sl2 sl2.~1~ -> foo )
sl1 sl2 -dl: 0 (foo sl1 -> foo sl2 -> foo )
foo hardlink -b: 0 (foo hardlink hardlink.~1~ )
foo hardlink -bd: 0 (foo hardlink hardlink.~1~ )
foo hardlink -bf: 0 (foo hardlink hardlink.~1~ )
foo hardlink -bdf: 0 (foo hardlink hardlink.~1~ )
foo hardlink -bfl: 0 (foo hardlink )
hlsl sl2 -d: 0 (foo hlsl -> foo sl2 -> foo )
hlsl sl2 -df: 0 (foo hlsl -> foo sl2 -> foo )
hlsl sl2 -b: 0 (foo hlsl -> foo sl2 sl2.~1~ -> foo )
hlsl sl2 -bd: 0 (foo hlsl -> foo sl2 -> foo sl2.~1~ -> foo )
hlsl sl2 -bf: 0 (foo hlsl -> foo sl2 sl2.~1~ -> foo )
hlsl sl2 -bdf: 0 (foo hlsl -> foo sl2 -> foo sl2.~1~ -> foo )
ROWS

# The links each makes: -bf of a file onto itself copies (two inodes),
# -bfl links (one, two names); -dl of a link makes DST its hard link, and
# a link onto its own hard link is left as it was.
mkdir k && cd k || exit 1
echo XYZ >foo; "$P" cp -bf foo foo 2>../err; rc=$?
rc_is $LINENO 0; is $LINENO "1 1" "$(stat -c %h foo) $(stat -c %h foo~)"
rm -f ./*; echo XYZ >foo; "$P" cp -bfl foo foo 2>../err; rc=$?
rc_is $LINENO 0; is $LINENO "$(stat -c %i foo) 2" "$(stat -c %i foo~) $(stat -c %h foo)"
rm -f ./*; echo XYZ >foo; echo B >bar; ln -s foo sl1; ln -s bar sb; echo R >reg
for t in sb reg; do
	"$P" cp -dl sl1 $t 2>../err; rc=$?
	rc_is $LINENO 0; is $LINENO "$(stat -c %i sl1)" "$(stat -c %i $t)"
done
rm -f ./*; echo XYZ >foo; ln -s foo sl2; ln sl2 hlsl; i=$(stat -c %i sl2)
"$P" cp -d hlsl sl2 2>../err; rc=$?
rc_is $LINENO 0; is $LINENO "$i 2" "$(stat -c %i sl2) $(stat -c %h sl2)"
cd .. || exit 1

if cp --version 2>/dev/null | grep -q 'GNU coreutils'; then
	table cp >gnu
	diff gnu ours >diffs || fail $LINENO "not GNU's table: $(cat diffs)"
else
	skip "GNU cp is not cp here: the table is not compared with GNU's"
fi
exit 0
