#!/bin/sh
# psplice cp, the coreutils-like options: a sparse SOURCE stays sparse in
# DEST (only its data is written: st_blocks alike, bytes equal); -n leaves
# an existing DEST alone and succeeds; -f replaces a DEST that cannot be
# opened (a running program); -p keeps mode, owner and times to the
# nanosecond; -r copies trees (diff -r equal, links as links, modes,
# sparse files, FIFOs; into itself refused); --reflink=always fails cleanly where extents cannot be shared (ext4) and
# shares them where they can (an XFS loop mount, root only), never and auto
# copy.
# $1 is the scratch directory, the CLI is $PSPLICE_BIN. Silent on pass, but
# for checks it cannot make, which say why.
[ -z "${BASH_VERSION:-}" ] && command -v bash >/dev/null && exec bash "$0" "$@"
name=t_cli_cp2; . "$(dirname "$0")/cli-lib.sh"
pid=
cli_cleanup() { [ -n "$pid" ] && kill $pid 2>/dev/null; }
blocks() { stat -c %b "$1"; }

head -c 1048576 /dev/urandom >a

# --- sparse files ----------------------------------------------------------
# sparse_file NAME MiB: NAME is MiB long, with 1 MiB of data at 1, 17 and
# 40 MiB (when it is that long) and a hole everywhere else, the end too.
sparse_file() {
	truncate -s "$2M" "$1"
	for at in 1 17 40; do
		[ "$at" -lt "$2" ] || continue
		head -c 1048576 /dev/urandom |
			dd of="$1" bs=1M seek="$at" conv=notrunc status=none
	done
}
# sparse_ok LINE SRC DST: equal bytes, and DST no fuller than SRC (a few
# blocks of slack for the filesystem's own allocation).
sparse_ok() {
	same "$1" "$2" "$3"
	is "$1" "$(stat -c %s "$2")" "$(stat -c %s "$3")"
	[ "$(blocks "$3")" -le $(($(blocks "$2") + 64)) ] ||
		fail "$1" "$3: $(blocks "$3") blocks, $2 has $(blocks "$2")"
}

sparse_file s 64
if [ "$(blocks s)" -ge $((64 * 2048)) ]; then
	skip "sparse files: this filesystem does not make holes"
else
	"$P" cp s s.copy 2>err; rc=$?
	rc_is $LINENO 0; err_is $LINENO; sparse_ok $LINENO s s.copy
	# --debug counts the bytes of data, not of holes
	"$P" cp --debug s s.v 2>err >/dev/null; rc=$?
	rc_is $LINENO 0; sparse_ok $LINENO s s.v
	grep -Eq "^psplice: 's' -> 's.v': (3,145,728|67,108,864) bytes by " err ||
		fail $LINENO "--debug: $(cat err)"
	# over an existing, full file: truncated first, so holes again
	head -c 4194304 /dev/zero >s.old
	"$P" cp s s.old 2>err; rc=$?
	rc_is $LINENO 0; sparse_ok $LINENO s s.old
	# written behind (96 MiB, 12 chunks), and not
	sparse_file big 96
	"$P" cp --write-behind big big.wb 2>err; rc=$?
	rc_is $LINENO 0; sparse_ok $LINENO big big.wb
	"$P" cp --no-write-behind big big.nowb 2>err; rc=$?
	rc_is $LINENO 0; sparse_ok $LINENO big big.nowb
	# all hole, and data that ends where the file does
	truncate -s 8M hole
	"$P" cp hole hole.copy 2>err; rc=$?
	rc_is $LINENO 0; sparse_ok $LINENO hole hole.copy
	truncate -s 2M tail; head -c 4096 /dev/urandom >>tail
	"$P" cp tail tail.copy 2>err; rc=$?
	rc_is $LINENO 0; sparse_ok $LINENO tail tail.copy
	# into a pipe, the holes are read as zeros
	"$P" cp s /dev/stdout 2>err | cmp -s - s || fail $LINENO "into a pipe: differs"
	rm -f s.* big big.* hole* tail*
fi
# --- -n ---------------------------------------------------------------------
head -c 5000 /dev/urandom >b
cp b b.orig
"$P" cp -n a b 2>err; rc=$?
rc_is $LINENO 0; err_is $LINENO; same $LINENO b.orig b
"$P" cp --no-clobber a n.new 2>err; rc=$?
rc_is $LINENO 0; err_is $LINENO; same $LINENO a n.new
mkdir ndir; cp b ndir/a
"$P" cp -n a ndir 2>err; rc=$?
rc_is $LINENO 0; same $LINENO b ndir/a
# a dangling symbolic link is an existing DEST too, and is not followed
ln -s nowhere dangling
"$P" cp -n a dangling 2>err; rc=$?
rc_is $LINENO 0; [ ! -e nowhere ] || fail $LINENO "-n followed a dangling link"
# the same file is still refused
"$P" cp -n a a 2>err; rc=$?
rc_is $LINENO 1; err_is $LINENO "psplice: 'a' and 'a' are the same file"

# --- -f ---------------------------------------------------------------------
# A running program cannot be opened for writing (ETXTBSY), not even by
# root; -f removes it and writes a new file in its place.
cp "$(command -v sleep)" busy
./busy 30 2>/dev/null & pid=$!
# until the exec is done: only then is busy a running program
running=
for i in $(seq 100); do
	case $(readlink /proc/$pid/exe 2>/dev/null) in */busy) running=1; break ;; esac
	sleep 0.02
done
if [ -z "$running" ]; then
	skip "-f: cannot run a program from the scratch directory"
else
	"$P" cp a busy 2>err; rc=$?
	rc_is $LINENO 1
	err_is $LINENO "psplice: cannot create regular file 'busy': Text file busy"
	"$P" cp -f a busy 2>err; rc=$?
	rc_is $LINENO 0; err_is $LINENO; same $LINENO a busy
	# a new file, with SOURCE's mode (less the umask)
	is $LINENO "$(stat -c %a a)" "$(stat -c %a busy)"
fi
kill $pid 2>/dev/null; wait $pid 2>/dev/null; pid=
# and a writable DEST is simply overwritten, in place
cp b f.old; ino=$(stat -c %i f.old)
"$P" cp --force a f.old 2>err; rc=$?
rc_is $LINENO 0; same $LINENO a f.old; is $LINENO "$ino" "$(stat -c %i f.old)"

# --- -p ---------------------------------------------------------------------
# stamp: owner (as root), a set-user-ID mode (chown would clear it), and
# times; the atime again each time, as reading p.src moves it (relatime).
cp a p.src
[ "$(id -u)" -eq 0 ] && chown 1234:5678 p.src
chmod 4751 p.src
touch -m -d '2002-03-04 05:06:07.987654321' p.src
stamp() {
	touch -a -d '2001-02-03 04:05:06.123456789' p.src
	want="$(stat -c '%a %u %g %x %y' p.src)"
}
stamp
"$P" cp -p p.src p.dst 2>err; rc=$?
# (before cmp, whose reading would move the atime)
rc_is $LINENO 0; err_is $LINENO
is $LINENO "$want" "$(stat -c '%a %u %g %x %y' p.dst)"
same $LINENO a p.dst
# onto an existing file too, and through the sparse and large paths
cp b p.old; stamp
"$P" cp --preserve p.src p.old 2>err; rc=$?
rc_is $LINENO 0; is $LINENO "$want" "$(stat -c '%a %u %g %x %y' p.old)"
sparse_file p.sparse 80; chmod 600 p.sparse; touch -d '2003-01-01 00:00:00' p.sparse
"$P" cp -p p.sparse p.sparse2 2>err; rc=$?
rc_is $LINENO 0; same $LINENO p.sparse p.sparse2
is $LINENO "$(stat -c '%a %y' p.sparse)" "$(stat -c '%a %y' p.sparse2)"
# without -p: the umask'd mode, our owner, new times
"$P" cp p.src p.nop 2>err; rc=$?
rc_is $LINENO 0
is $LINENO "751 $(id -u)" "$(stat -c '%a %u' p.nop)"
[ "$(stat -c %Y p.nop)" -gt "$(stat -c %Y p.src)" ] || fail $LINENO "p.nop: old mtime"
# into a device, nothing is preserved (and /dev/null keeps its mode)
"$P" cp -p p.src /dev/null 2>err; rc=$?
rc_is $LINENO 0; is $LINENO 666 "$(stat -c %a /dev/null)"
rm -f p.*

# --- -r ---------------------------------------------------------------------
mkdir -p t/a/b t/e t/empty
cp a t/a/f; cp b t/a/b/g; : >t/zero
sparse_file t/a/sp 24
ln -s ../a/f t/e/rel; ln -s nowhere t/dang; ln -s "$d/a" t/abs
chmod 750 t/a; chmod 700 t/e
"$P" cp -r t t.copy 2>err; rc=$?
rc_is $LINENO 0; err_is $LINENO
diff -r --no-dereference t t.copy >/dev/null || fail $LINENO "diff -r: $(diff -r --no-dereference t t.copy 2>&1 | head -3)"
# links as links, with their targets as they were
for l in e/rel dang abs; do
	[ -L t.copy/$l ] || fail $LINENO "t.copy/$l is not a symbolic link"
	is $LINENO "$(readlink t/$l)" "$(readlink t.copy/$l)"
done
is $LINENO "750 700 755" "$(stat -c %a t.copy/a t.copy/e t.copy/empty | tr '\n' ' ' | sed 's/ $//')"
sparse_ok $LINENO t/a/sp t.copy/a/sp
# into an existing directory, under SOURCE's name, with -R too
mkdir into
"$P" cp -R t into 2>err; rc=$?
rc_is $LINENO 0; diff -r --no-dereference t into/t >/dev/null || fail $LINENO "into/t differs"
# again over the copy (t/.: its contents, not t.copy/t): files overwritten,
# links already there replaced (as cp -r, even without -f), -n leaves all
# alone
echo changed >t.copy/a/f
"$P" cp -rn t/. t.copy 2>err; rc=$?
rc_is $LINENO 0; err_is $LINENO; is $LINENO changed "$(cat t.copy/a/f)"
"$P" cp -rf t/. t.copy 2>err; rc=$?
rc_is $LINENO 0; err_is $LINENO; same $LINENO t/a/f t.copy/a/f
"$P" cp -r t/. t.copy 2>err; rc=$?
rc_is $LINENO 0; err_is $LINENO; same $LINENO t/a/f t.copy/a/f
is $LINENO nowhere "$(readlink t.copy/dang)"
# -p: directory times too, set after their contents were made
touch -d '2004-05-06 07:08:09' t/a t
"$P" cp -rp t t.p 2>err; rc=$?
rc_is $LINENO 0; err_is $LINENO
is $LINENO "$(stat -c '%a %y' t/a t)" "$(stat -c '%a %y' t.p/a t.p)"
is $LINENO "$(stat -c %Y t/a/f)" "$(stat -c %Y t.p/a/f)"
# a FIFO is made anew, not read
mkfifo t/fifo
"$P" cp -r t t.fifo 2>err; rc=$?
rc_is $LINENO 0; [ -p t.fifo/fifo ] || fail $LINENO "t.fifo/fifo is not a FIFO"
rm t/fifo
# refused: a directory into itself (before anything is made), onto a
# file, and without -r
"$P" cp -r t t/inside 2>err; rc=$?
rc_is $LINENO 1; [ ! -e t/inside ] || fail $LINENO "t/inside was made"
err_is $LINENO "psplice: cannot copy a directory, 't', into itself, 't/inside'"
"$P" cp -r t a 2>err; rc=$?
rc_is $LINENO 1
err_is $LINENO "psplice: cannot overwrite non-directory 'a' with directory 't'"
"$P" cp t t.nor 2>err; rc=$?
rc_is $LINENO 1; [ ! -e t.nor ] || fail $LINENO "t.nor was made"
err_is $LINENO "psplice: -r not specified; omitting directory 't'"
# -r with a file is a plain copy
"$P" cp -r a r.file 2>err; rc=$?
rc_is $LINENO 0; same $LINENO a r.file
# a link to a directory inside DST is not followed: nothing is written
# outside DST; one given as DST itself is
mkdir -p m1/sub m2 realsub n2 && echo x >m1/sub/f && ln -s ../realsub m2/sub && ln -s n2 n2.link
"$P" cp -r m1/. m2 2>err; rc=$?
rc_is $LINENO 1; [ -z "$(ls realsub)" ] || fail $LINENO "wrote outside m2: $(ls realsub)"
err_is $LINENO "psplice: cannot overwrite non-directory 'm2/./sub' with directory 'm1/./sub'"
"$P" cp -r m1 n2.link 2>err; rc=$?
rc_is $LINENO 0; same $LINENO m1/sub/f n2/m1/sub/f
rm -rf t t.* into r.file m1 m2 realsub n2 n2.link

# --- files whose size says nothing of their length ------------------------------
# sysfs says 4096 bytes and no block for 23: the copy is what reading gives,
# not a sparse file padded to 4096.
for f in /sys/kernel/mm/transparent_hugepage/enabled /sys/kernel/mm/transparent_hugepage/defrag; do
	[ -r "$f" ] || continue
	cat "$f" >sys.want
	"$P" cp "$f" sys.copy 2>err; rc=$?
	rc_is $LINENO 0; err_is $LINENO; same $LINENO sys.want sys.copy
	rm -f sys.want sys.copy
done

# --- --reflink ----------------------------------------------------------------
fs=$(stat -f -c %T .)
for w in auto never; do
	"$P" cp --debug --reflink=$w a r.$w 2>err >/dev/null; rc=$?
	rc_is $LINENO 0; same $LINENO a r.$w
done
grep -Eq "by (copy_file_range|sendfile|splice|splice_pipe|readwrite)$" err ||
	fail $LINENO "--reflink=never: $(cat err)"
# An empty file is copied as empty by each (the end of input is no missing
# fast path), as cp does.
: >empty
for w in auto never; do
	"$P" cp --reflink=$w empty r.empty.$w 2>err; rc=$?
	rc_is $LINENO 0; err_is $LINENO; same $LINENO empty r.empty.$w
done
rm -f empty r.empty.*
if [ "$fs" = ext2/ext3 ]; then # ext4 says ext2/ext3: it shares no extents
	"$P" cp --reflink=always a r.always 2>err; rc=$?
	rc_is $LINENO 1
	err_is $LINENO "psplice: failed to clone 'r.always' from 'a': Operation not supported"
	[ ! -e r.always ] || fail $LINENO "--reflink=always left r.always behind"
	# a bare --reflink is always
	"$P" cp --reflink a r.always 2>err; rc=$?
	rc_is $LINENO 1; [ ! -e r.always ] || fail $LINENO "r.always left behind"
	# an existing DEST is not removed
	: >r.old
	"$P" cp --reflink=always a r.old 2>err; rc=$?
	rc_is $LINENO 1; [ -e r.old ] || fail $LINENO "r.old removed"
else
	skip "--reflink=always refused: the scratch directory is on $fs, not ext4"
fi
"$P" cp --reflink=sometimes a r.bad 2>err; rc=$?
rc_is $LINENO 1; [ ! -e r.bad ] || fail $LINENO "copied anyway"
err_is $LINENO "psplice: invalid argument 'sometimes' for '--reflink'" \
	"Valid arguments are:" "  - 'auto'" "  - 'always'" "  - 'never'" \
	"Try 'psplice cp --help' for more information."

# On XFS, always shares the extents (filefrag -v says "shared"), never
# does not. A loop mount in a private mount namespace, so that nothing is
# left mounted whatever happens to the test.
if [ "$(id -u)" -ne 0 ]; then
	skip "--reflink on XFS: needs root to mount"
elif ! command -v mkfs.xfs >/dev/null || ! command -v filefrag >/dev/null; then
	skip "--reflink on XFS: mkfs.xfs (xfsprogs) or filefrag (e2fsprogs) not found"
elif ! unshare -m --propagation private true 2>/dev/null; then
	skip "--reflink on XFS: cannot make a mount namespace"
else
	truncate -s 320M xfs.img
	mkdir x
	unshare -m --propagation private sh -c '
		mkfs.xfs -q -m reflink=1 xfs.img >/dev/null 2>&1 &&
			mount -o loop xfs.img x 2>/dev/null || exit 77
		head -c 4194304 /dev/urandom >x/src
		"$1" cp --reflink=always x/src x/always 2>err; echo $? >rc.always
		"$1" cp --reflink=never x/src x/never 2>>err; echo $? >rc.never
		: >x/empty
		"$1" cp --reflink=always x/empty x/always.empty 2>>err; echo $? >rc.empty
		[ -f x/always.empty ] && [ ! -s x/always.empty ] && echo empty >empty.ok
		sync
		filefrag -v x/always >frag.always 2>&1
		filefrag -v x/never >frag.never 2>&1
		cmp -s x/src x/always && cmp -s x/src x/never && echo same >same
		umount x' sh "$P"
	if [ $? -eq 77 ]; then
		skip "--reflink on XFS: cannot make or mount an XFS image"
	else
		rc=$(cat rc.always); rc_is $LINENO 0
		rc=$(cat rc.never); rc_is $LINENO 0
		rc=$(cat rc.empty); rc_is $LINENO 0
		[ -e empty.ok ] || fail $LINENO "--reflink=always of an empty file: no empty copy"
		err_is $LINENO
		[ -e same ] || fail $LINENO "the copies on XFS differ from the source"
		grep -q shared frag.always || fail $LINENO "always: not shared: $(cat frag.always)"
		! grep -q shared frag.never || fail $LINENO "never: shared: $(cat frag.never)"
	fi
	rm -rf xfs.img x rc.* empty.ok
fi
exit 0
