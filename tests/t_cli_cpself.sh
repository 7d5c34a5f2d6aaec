#!/bin/sh
# psplice cp never puts a symbolic link in the place of the file it leads
# to: `cp -d sym foo`, sym -> foo, would leave foo a link to itself and its
# data gone. GNU cp refuses it ("'sym' and 'foo' are the same file", exit
# 1; coreutils' tests/cp/same-file.sh). Checked for every option that
# copies a link as a link (-d, -P, -a, -R, -rf, --remove-destination),
# for a link given by an absolute path and through another link, in a tree
# and across filesystems; -dl and -dfl are no-ops (DST already is what the
# link leads to), and a backup (-bd) keeps the data under DST's backup
# name, as GNU's do.
# $1 is the scratch directory, the CLI is $PSPLICE_BIN.
[ -z "${BASH_VERSION:-}" ] && command -v bash >/dev/null && exec bash "$0" "$@"
name=t_cli_cpself; . "$(dirname "$0")/cli-lib.sh"

# intact LINE FILE: FILE is still a regular file holding "data"
intact() {
	[ -f "$2" ] && [ ! -L "$2" ] || fail "$1" "$2 is no longer a regular file: $(ls -l "$2")"
	is "$1" data "$(cat "$2")"
}

for o in -d -P -a -R -rf "--remove-destination -d" "-d -f" "-a --remove-destination"; do
	rm -rf ./*; echo data >foo; ln -s foo sym
	"$P" cp $o sym foo 2>err; rc=$?
	rc_is $LINENO 1
	err_is $LINENO "psplice: 'sym' and 'foo' are the same file"
	intact $LINENO foo
done

# An absolute link, and a chain of two links.
rm -rf ./*; echo data >foo; ln -s "$d/foo" abs; ln -s abs chain
for s in abs chain; do
	"$P" cp -P $s foo 2>err; rc=$?
	rc_is $LINENO 1; intact $LINENO foo
done

# -l of the link (not followed): foo already is what it leads to.
for o in -dl -dfl; do
	rm -rf ./*; echo data >foo; ln -s foo sym
	"$P" cp $o sym foo 2>err; rc=$?
	rc_is $LINENO 0; err_is $LINENO; intact $LINENO foo
done

# --backup keeps the data: foo.~1~ holds it, foo is the copied link.
rm -rf ./*; echo data >foo; ln -s foo sym
VERSION_CONTROL=numbered "$P" cp -bd sym foo 2>err; rc=$?
rc_is $LINENO 0; intact $LINENO foo.~1~
is $LINENO foo "$(readlink foo)"

# In a tree: src/l -> ../dst/f, copied into dst.
rm -rf ./*; mkdir -p src dst; echo data >dst/f; ln -s ../dst/f src/f
"$P" cp -a src/. dst 2>err; rc=$?
rc_is $LINENO 1
grep -q "are the same file$" err || fail $LINENO "$(cat err)"
intact $LINENO dst/f

# Across filesystems: the link on this one, the file on a tmpfs.
other=/dev/shm
if [ -d "$other" ] && [ -w "$other" ] &&
	[ "$(stat -c %d "$other")" != "$(stat -c %d .)" ]; then
	f=$(mktemp "$other/t_cli_cpself.XXXXXX") && echo data >"$f"
	cli_cleanup() { rm -f "$f"; }
	ln -s "$f" far
	"$P" cp -d far "$f" 2>err; rc=$?
	rc_is $LINENO 1; intact $LINENO "$f"
else
	skip "no writable filesystem other than the scratch one at $other: across filesystems not checked"
fi
exit 0
