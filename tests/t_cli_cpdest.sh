#!/bin/sh
# psplice cp and an existing DST, where GNU cp 9.1 is the reference: with
# --attributes-only an existing DST keeps its data, so a link or a FIFO is
# not put in its place ("cannot create symbolic link 'f': File exists",
# exit 1) unless -f or --remove-destination asks for it; a backup that
# would be the SOURCE itself is refused ("backing up 'a' might destroy
# source;  'a~' not copied", exit 1), the source intact; a DST that -u
# leaves, as newer than SOURCE, stands for SOURCE's copy: SOURCE's other
# hard links are linked to it (-au: one inode, two names). -i asks about
# a directory where a file goes, as about any DST, before it says that
# it cannot overwrite it. A DST that is a link to nothing is refused
# ("not writing through dangling symlink"), but with POSIXLY_CORRECT set
# written through, its target made, as POSIX asks and GNU does (-f too);
# --remove-destination replaces the link. A DEST that cannot be looked at
# for another reason than not being there is "cannot stat", as in GNU's
# (coreutils' tests/cp/fail-perm.sh).
# $1 is the scratch directory, the CLI is $PSPLICE_BIN.
[ -z "${BASH_VERSION:-}" ] && command -v bash >/dev/null && exec bash "$0" "$@"
name=t_cli_cpdest; . "$(dirname "$0")/cli-lib.sh"

# --- --attributes-only: an existing DST is not replaced ----------------------
for o in -a "-R --attributes-only"; do
	rm -rf ./*; echo 1 >file1; echo 2 >file2; ln -s file1 sym1
	"$P" cp $o --attributes-only sym1 file2 2>err; rc=$?
	rc_is $LINENO 1
	err_is $LINENO "psplice: cannot create symbolic link 'file2': File exists"
	[ -f file2 ] && [ ! -L file2 ] || fail $LINENO "file2 replaced: $(ls -l file2)"
	is $LINENO 2 "$(cat file2)"
done
rm -rf ./*; echo 2 >file2; mkfifo ff
"$P" cp -R --attributes-only ff file2 2>err; rc=$?
rc_is $LINENO 1; err_is $LINENO "psplice: cannot create fifo 'file2': File exists"
[ -f file2 ] && is $LINENO 2 "$(cat file2)"
# -f and --remove-destination replace it; a new DST is the link.
for o in -f --remove-destination; do
	rm -rf ./*; echo 1 >file1; echo 2 >file2; ln -s file1 sym1
	"$P" cp -a $o --attributes-only sym1 file2 2>err; rc=$?
	rc_is $LINENO 0; err_is $LINENO; is $LINENO file1 "$(readlink file2)"
done
"$P" cp -a --attributes-only sym1 new 2>err; rc=$?
rc_is $LINENO 0; is $LINENO file1 "$(readlink new)"

# --- a backup that would be SOURCE --------------------------------------------
for o in --backup=simple "-b -S .bak"; do
	rm -rf ./*; echo a >a; echo t >'a~'; echo t >a.bak
	src='a~'; [ "$o" = --backup=simple ] || src=a.bak
	"$P" cp $o "$src" a 2>err; rc=$?
	rc_is $LINENO 1
	err_is $LINENO "psplice: backing up 'a' might destroy source;  '$src' not copied"
	is $LINENO a "$(cat a)"; is $LINENO t "$(cat "$src")"
done
# A numbered backup is a new name: no harm.
rm -rf ./*; echo a >a; echo t >'a~'
"$P" cp --backup=numbered 'a~' a 2>err; rc=$?
rc_is $LINENO 0; is $LINENO t "$(cat a)"; is $LINENO a "$(cat a.~1~)"; is $LINENO t "$(cat 'a~')"

# --- -u: a DST left stands for the copy -------------------------------------
rm -rf ./*; mkdir -p s t/s; echo x >s/f; ln s/f s/g; echo y >t/s/f
touch -d 2000-01-01 s/f
"$P" cp -au s t 2>err; rc=$?
rc_is $LINENO 0; err_is $LINENO
is $LINENO "$(stat -c %i t/s/f) 2" "$(stat -c %i t/s/g) $(stat -c %h t/s/f)"
is $LINENO y "$(cat t/s/g)"
# Once an inode has its copy, -u does not keep its other names' DSTs,
# newer or older: each becomes a link to the copy (coreutils'
# tests/cp/preserve-link.sh).
for first in f linkm; do
	rm -rf s t; mkdir -p s t/s; touch s/f; ln s/f s/linkm; ln s/f s/linke; ln s/f s/fileo
	ln s/f s/fileu; touch t/s/$first; ln t/s/$first t/s/linke
	touch -d '-1 hour' t/s/fileo; touch -d '+1 hour' t/s/fileu
	"$P" cp -au s t 2>err; rc=$?
	rc_is $LINENO 0; err_is $LINENO
	for n in linkm linke fileo fileu; do
		is $LINENO "$(stat -c %i t/s/f)" "$(stat -c %i t/s/$n)"
	done
done
rm -rf s t; mkdir -p s t/s; echo x >s/f; ln s/f s/g; echo y >t/s/f
touch -d 2000-01-01 s/f
# -n leaves it too, but as no copy: g is copied (GNU's).
rm -rf t; mkdir -p t/s; echo y >t/s/f
"$P" cp -an s t 2>err; rc=$?
rc_is $LINENO 0; is $LINENO "y x 1" "$(cat t/s/f) $(cat t/s/g) $(stat -c %h t/s/g)"

# --- -i and a directory in a file's place ---------------------------------------
rm -rf ./*; mkdir -p a b/a/f k/g; echo x >a/f; echo x >g
echo n | "$P" cp -iR a b 2>err; rc=$?
rc_is $LINENO 0; is $LINENO "psplice: overwrite 'b/a/f'? " "$(cat err)"
echo y | "$P" cp -iR a b 2>err; rc=$?
rc_is $LINENO 1
is $LINENO "psplice: overwrite 'b/a/f'? psplice: cannot overwrite directory 'b/a/f' with non-directory" "$(cat err)"
echo n | "$P" cp -i g k 2>err; rc=$?
rc_is $LINENO 0; is $LINENO "psplice: overwrite 'k/g'? " "$(cat err)"
[ -d b/a/f ] && [ -d k/g ] || fail $LINENO "a directory was replaced"

# --- a dangling link as DST ---------------------------------------------------------
rm -rf ./*; echo x >s; ln -s t dl; ln -s sub/t dl2
"$P" cp s dl 2>err; rc=$?
rc_is $LINENO 1; err_is $LINENO "psplice: not writing through dangling symlink 'dl'"
[ ! -e t ] || fail $LINENO "t made"
for o in "" -f; do
	rm -f t; POSIXLY_CORRECT=1 "$P" cp $o s dl 2>err; rc=$?
	rc_is $LINENO 0; err_is $LINENO; is $LINENO "t x" "$(readlink dl) $(cat t)"
done
POSIXLY_CORRECT=1 "$P" cp s dl2 2>err; rc=$?
rc_is $LINENO 1
err_is $LINENO "psplice: cannot create regular file 'dl2': No such file or directory"
rm -f t; POSIXLY_CORRECT=1 "$P" cp --remove-destination s dl 2>err; rc=$?
rc_is $LINENO 0; [ -f dl ] && [ ! -L dl ] && [ ! -e t ] || fail $LINENO "$(ls -l)"

# --- a DEST that cannot be looked at ------------------------------------------------
rm -rf ./*; echo x >F; ln -s loop1 loop2; ln -s loop2 loop1
for o in "" -T -r; do
	"$P" cp $o F F/x 2>err; rc=$?
	rc_is $LINENO 1; err_is $LINENO "psplice: cannot stat 'F/x': Not a directory"
	"$P" cp $o F loop1 2>err; rc=$?
	rc_is $LINENO 1; err_is $LINENO "psplice: cannot stat 'loop1': Too many levels of symbolic links"
done
# -f and --remove-destination replace a loop (coreutils'
# tests/cp/thru-dangling.sh, dir-rm-dest.sh), but not a file on the path.
for o in -f --remove-destination; do
	rm -f loop; ln -s loop loop
	"$P" cp $o F loop 2>err; rc=$?
	rc_is $LINENO 0; err_is $LINENO; [ ! -L loop ] && is $LINENO x "$(cat loop)"
	"$P" cp $o F F/x 2>err; rc=$?
	rc_is $LINENO 1; err_is $LINENO "psplice: cannot stat 'F/x': Not a directory"
done
"$P" cp F nodir/x 2>err; rc=$?
rc_is $LINENO 1; err_is $LINENO "psplice: cannot create regular file 'nodir/x': No such file or directory"
exit 0
