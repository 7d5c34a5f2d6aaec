#!/bin/sh
# psplice cp and the modes of what it makes, GNU cp 9.1's: --no-preserve=mode
# gives a new file 0666 and a new directory 0777, less the umask, whatever
# SOURCE's (with -a too, and --parents' directories), until a later -p,
# -a or --preserve=mode keeps it again. -p by a user who cannot keep
# SOURCE's owner and group drops the set-user-ID and set-group-ID bits
# (both, if either is lost), and keeps them when both are kept. While a
# copy that keeps the owner is written, only its owner may read it
# (-rw-------): its group and owner are not SOURCE's yet; its mode is
# set at the end (-rw-r--r-- for a 644 FIFO read with --copy-contents).
# --parents -p gives each directory of the path, made or there already,
# its SOURCE's mode and times, once the file is in; a path through a file
# is refused before anything is made.
# $1 is the scratch directory, the CLI is $PSPLICE_BIN.
[ -z "${BASH_VERSION:-}" ] && command -v bash >/dev/null && exec bash "$0" "$@"
name=t_cli_cpmode; . "$(dirname "$0")/cli-lib.sh"

# mode LINE WANT PATH: PATH's permission bits, in octal
mode() { is "$1" "$2" "$(stat -c %a "$3")"; }

# --- --no-preserve=mode ---------------------------------------------------------
echo a >f; chmod 600 f; mkdir d; echo b >d/g; chmod 700 d/g; chmod 705 d; mkfifo p
chmod 600 p
"$P" cp --no-preserve=mode f f1 2>err; rc=$?; rc_is $LINENO 0; mode $LINENO 644 f1
"$P" cp -a --no-preserve=mode f f2 2>err; rc=$?; rc_is $LINENO 0; mode $LINENO 644 f2
for o in -a -R; do
	"$P" cp $o --no-preserve=mode d d$o 2>err; rc=$?; rc_is $LINENO 0
	mode $LINENO 755 d$o; mode $LINENO 644 d$o/g
	"$P" cp $o --no-preserve=mode p p$o 2>err; rc=$?; rc_is $LINENO 0
	mode $LINENO 644 p$o
done
mkdir e; "$P" cp --parents --no-preserve=mode d/g e 2>err; rc=$?; rc_is $LINENO 0
mode $LINENO 755 e/d; mode $LINENO 644 e/d/g
# The last of them decides.
chmod 4755 f
"$P" cp --preserve=mode --no-preserve=mode f f3 2>err; rc=$?; rc_is $LINENO 0; mode $LINENO 644 f3
"$P" cp --no-preserve=mode --preserve=mode f f4 2>err; rc=$?; rc_is $LINENO 0; mode $LINENO 4755 f4
"$P" cp --no-preserve=mode,ownership -p f f5 2>err; rc=$?; rc_is $LINENO 0; mode $LINENO 4755 f5
# Without it, a new file has SOURCE's bits less the umask.
chmod 600 f; "$P" cp f f6 2>err; rc=$?; rc_is $LINENO 0; mode $LINENO 600 f6

# --- --parents ------------------------------------------------------------------
rm -rf ./*; mkdir -p a/b/d e/a; echo x >a/b/d/foo; chmod 755 a; chmod 750 e/a
touch -d 2001-01-01 a a/b a/b/d
"$P" cp -p --parents a/b/d/foo e 2>err; rc=$?
rc_is $LINENO 0; err_is $LINENO
for x in a a/b a/b/d; do
	is $LINENO "$(stat -c '%a %Y' $x)" "$(stat -c '%a %Y' e/$x)"
done
# Without -p, a directory there is left as it is.
rm -rf e; mkdir -p e/a; chmod 750 e/a
"$P" cp --parents a/b/d/foo e 2>err; rc=$?
rc_is $LINENO 0; mode $LINENO 750 e/a; mode $LINENO 755 e/a/b
rm -rf ./*; echo x >f; mkdir d
"$P" cp --parents f/g d 2>err; rc=$?
rc_is $LINENO 1; err_is $LINENO "psplice: failed to get attributes of 'f': Not a directory"
is $LINENO "" "$(ls -A d)"

# --- a copy that keeps the owner is private while it is written --------------
rm -rf ./*; mkfifo p; chmod 644 p
for o in -p --preserve=ownership; do
	"$P" cp $o --copy-contents p c 2>err &
	pid=$!
	exec 7>p
	echo data >&7
	i=0; while [ ! -s c ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
	is $LINENO "-rw-------" "$(stat -c %A c)"
	exec 7>&-
	wait $pid; rc=$?
	rc_is $LINENO 0; is $LINENO "-rw-r--r-- data" "$(stat -c %A c) $(cat c)"
	rm -f c
done

# --- -p by a user who cannot keep the owner -----------------------------------
# runs CMD... as nobody (uid and gid 65534, no other group)
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null || ! as_nobody true 2>/dev/null; then
	skip "not root, or no setpriv: -p by another user not checked"
	exit 0
fi
rm -rf ./*; chmod 777 .
# owner:group of SOURCE, and the mode its copy by nobody gets
for og in 0:0 0:65534 65534:0 65534:65534; do
	echo x >s; chown $og s; chmod 6755 s
	want=755; [ $og = 65534:65534 ] && want=6755
	as_nobody "$P" cp -p s c 2>err; rc=$?
	rc_is $LINENO 0; err_is $LINENO
	is $LINENO "$want 65534:65534" "$(stat -c %a c) $(stat -c %u:%g c)"
	rm -f s c
done
exit 0
