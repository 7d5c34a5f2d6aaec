#!/bin/sh
# psplice cp side by side with GNU cp on the same cases: hard links kept
# by -a, -d and --preserve=links (inside a tree, across its directories and
# across SOURCE operands; with -L and -H by cp(1)'s rules), not by -r; a
# link that cannot be made is an error; --sparse=always makes holes of
# zeros (at the start, inside, at the end: as many blocks as GNU's copy,
# the bytes equal), never writes them, auto keeps SOURCE's; a tree whose
# paths are longer than PATH_MAX is copied whole (GNU cp 9.1 cannot: "File
# name too long"); -i asks GNU's questions, "overwrite", "unwritable ...
# try anyway" and with -f or --remove-destination "replace ..., overriding
# mode", and y replaces, n keeps; -x, --remove-destination,
# --attributes-only, --strip-trailing-slashes and --copy-contents make the
# same trees as GNU's, with the same exit status and messages.
# $1 is the scratch directory, the CLI is $PSPLICE_BIN. Silent on pass, but
# for checks it cannot make, which say why.
[ -z "${BASH_VERSION:-}" ] && command -v bash >/dev/null && exec bash "$0" "$@"
name=t_cli_cpgnu; . "$(dirname "$0")/cli-lib.sh"
gnu=
cp --version 2>/dev/null | grep -q 'GNU coreutils' && gnu=1
[ -n "$gnu" ] || skip "GNU cp is not cp here: no side by side comparisons"

# groups DIR: each file (not directory nor link) with the first name, in
# sorted order, of its inode: the same lines for two copies that link the
# same names, whatever order each tree was walked in
groups() {
	(cd "$1" && find . ! -type d ! -type l -printf '%i %p\n' | sort -k2 |
		awk '{ if (!($1 in first)) first[$1] = $2; print $2, first[$1] }')
}

# --- 1. hard links -------------------------------------------------------------
# t/f, t/s1/f2 and t/s2/f3 are one inode, t/s1/g and t/g2 another; z and z2
# are a third, given as two operands; t/lf is a link to t/f, an operand too.
mkdir -p t/s1 t/s2 && echo x >t/f && ln t/f t/s1/f2 && ln t/f t/s2/f3 &&
	echo y >t/s1/g && ln t/s1/g t/g2 && echo z >z && ln z z2 && ln -s f t/lf
mkdir a; "$P" cp -a t z z2 a 2>err; rc=$?
rc_is $LINENO 0; err_is $LINENO
is $LINENO "./t/f ./t/f ./t/f ./z" \
	"$(groups a | awk '$1 ~ /f[23]?$|z2$/ { printf "%s%s", s, $2; s = " " }')"
is $LINENO "$(stat -c %i a/t/s1/g)" "$(stat -c %i a/t/g2)"
is $LINENO 3 "$(stat -c %h a/t/f)"
"$P" cp -r t r 2>err; rc=$?
rc_is $LINENO 0; is $LINENO 1 "$(stat -c %h r/f)"
rm -rf a r
if [ -n "$gnu" ]; then
	for o in -a -r -dR "-r --preserve=links" "-a --no-preserve=links" \
		"-rL --preserve=links" -rL "-rH --preserve=links" "-rl --preserve=links"; do
		mkdir g p
		cp $o t z z2 t/lf g 2>gerr
		"$P" cp $o t z z2 t/lf p 2>err; rc=$?
		is $LINENO "$(cat gerr)" "$(sed 's/^psplice:/cp:/' err)"
		is $LINENO "$(groups g)" "$(groups p)"
		rm -rf g p
	done
	# -H: an operand that is a link to another operand
	mkdir g p
	cp -H --preserve=links z t/lf t/f g
	"$P" cp -H --preserve=links z t/lf t/f p 2>err; rc=$?
	rc_is $LINENO 0; is $LINENO "$(groups g)" "$(groups p)"
	is $LINENO "$(stat -c %i p/f)" "$(stat -c %i p/lf)"
	rm -rf g p
fi
# over an existing copy: the names are linked again, not left apart
"$P" cp -a t e 2>err && echo other >e/s2/f3.new && mv e/s2/f3.new e/s2/f3
"$P" cp -a t/. e 2>err; rc=$?
rc_is $LINENO 0; err_is $LINENO
is $LINENO "$(stat -c %i e/f)" "$(stat -c %i e/s2/f3)"; is $LINENO x "$(cat e/s2/f3)"
rm -rf e
"$P" cp --preserve=links,bogus z q 2>err; rc=$?
rc_is $LINENO 1; is $LINENO "psplice: invalid argument 'bogus' for '--preserve'" "$(head -1 err)"
# a link that cannot be made: the second name's directory is another
# filesystem (a tmpfs mounted on it), so the link is EXDEV
if [ "$(id -u)" -eq 0 ] && unshare -m --propagation private true 2>/dev/null; then
	mkdir -p x/m dx/x/m && echo 1 >x/a && ln x/a x/m/b
	unshare -m --propagation private sh -c '
		mount -t tmpfs none dx/x/m 2>/dev/null || exit 77
		"$1" cp -a x dx 2>err; echo $? >rc' sh "$P"
	if [ $? -eq 77 ]; then
		skip "hard link errors: cannot mount a tmpfs"
	else
		rc=$(cat rc); rc_is $LINENO 1
		case $(cat err) in
		"psplice: cannot create hard link 'dx/x/m/b' to 'dx/x/a': Invalid cross-device link" | \
		"psplice: cannot create hard link 'dx/x/a' to 'dx/x/m/b': Invalid cross-device link") ;;
		*) fail $LINENO "$(cat err)" ;;
		esac
	fi
	rm -rf x dx rc
else
	skip "hard link errors: needs root and mount namespaces"
fi
rm -rf t z z2

# --- 2. --sparse=always ----------------------------------------------------------
# zeros 64 KiB, data 100,000, zeros 1 MiB, data 5,000, zeros 300,000 at
# the end: written out, no holes in it
zeros() { head -c "$1" /dev/zero; }
sparse_case() { # DIR: the checks in one directory
	{ zeros 65536; head -c 100000 /dev/urandom; zeros 1048576
	  head -c 5000 /dev/urandom; zeros 300000; } >"$1/z"
	[ "$(stat -c %b "$1/z")" -ge 2960 ] || { skip "--sparse in $1: zeros not written"; return; }
	for w in always auto never; do
		"$P" cp --sparse=$w "$1/z" "$1/p.$w" 2>err; rc=$?
		rc_is $LINENO 0; err_is $LINENO; same $LINENO "$1/z" "$1/p.$w"
		is $LINENO 1519112 "$(stat -c %s "$1/p.$w")"
	done
	# holes: the zero blocks at the start, inside and at the end
	[ "$(stat -c %b "$1/p.always")" -le 240 ] ||
		fail $LINENO "$1: always: $(stat -c %b "$1/p.always") blocks"
	[ "$(stat -c %b "$1/p.never")" -ge 2960 ] || fail $LINENO "$1: never has holes"
	[ "$(stat -c %b "$1/p.auto")" -ge 2960 ] || fail $LINENO "$1: auto made holes"
	if [ -n "$gnu" ]; then
		cp --sparse=always "$1/z" "$1/g.always"
		is $LINENO "$(stat -c %b "$1/g.always")" "$(stat -c %b "$1/p.always")"
	fi
	# over an existing file, and a file that is only zeros
	"$P" cp --sparse=always "$1/z" "$1/p.never" 2>err; rc=$?
	rc_is $LINENO 0; same $LINENO "$1/z" "$1/p.never"
	is $LINENO "$(stat -c %b "$1/p.always")" "$(stat -c %b "$1/p.never")"
	zeros 100000 >"$1/zz"
	"$P" cp --sparse=always "$1/zz" "$1/p.zz" 2>err; rc=$?
	rc_is $LINENO 0; same $LINENO "$1/zz" "$1/p.zz"; is $LINENO 0 "$(stat -c %b "$1/p.zz")"
	# holes in SOURCE too, and a pipe as DST, which has none: zeros
	truncate -s 4M "$1/h" && cat "$1/z" >>"$1/h"
	"$P" cp --sparse=always "$1/h" "$1/p.h" 2>err; rc=$?
	rc_is $LINENO 0; same $LINENO "$1/h" "$1/p.h"
	is $LINENO "$(stat -c %b "$1/p.always")" "$(stat -c %b "$1/p.h")"
	"$P" cp --sparse=always "$1/z" /dev/stdout 2>err | cmp -s - "$1/z" ||
		fail $LINENO "into a pipe: differs"
	rm -f "$1"/*
}
sparse_case "$d"
if shm=$(mktemp -d /dev/shm/t_cli_cpgnu.XXXXXX 2>/dev/null); then
	sparse_case "$shm"; rmdir "$shm"
else
	skip "--sparse on tmpfs: /dev/shm is not writable"
fi
# a file whose size (0) does not say its length: read to its end
if [ -r /proc/version ]; then
	"$P" cp --sparse=always /proc/version pv 2>err; rc=$?
	rc_is $LINENO 0; err_is $LINENO
	# (through a pipe: cmp -s finds files of two sizes different unread)
	cat /proc/version | cmp -s - pv || fail $LINENO "/proc/version and pv differ"
	rm -f pv
fi

# --- 3. paths longer than PATH_MAX -----------------------------------------------
# 100 levels of 200-byte names (a 20 KB path), made and checked through
# descriptors, since no path reaches them; at the bottom a file, another
# name of it, a symbolic link and a FIFO
walk='import os, sys
def bottom(top):
    fd = os.open(top, os.O_RDONLY)
    for _ in range(100):
        n = os.open("y" * 200, os.O_RDONLY, dir_fd=fd); os.close(fd); fd = n
    return fd'
python3 -c "$walk"'
os.mkdir("long"); fd = os.open("long", os.O_RDONLY)
for _ in range(100):
    os.mkdir("y" * 200, dir_fd=fd)
    n = os.open("y" * 200, os.O_RDONLY, dir_fd=fd); os.close(fd); fd = n
f = os.open("f", os.O_WRONLY | os.O_CREAT, 0o640, dir_fd=fd); os.write(f, b"bottom\n")
os.utime(f, (1e9, 1e9)); os.close(f)
os.link("f", "g", src_dir_fd=fd, dst_dir_fd=fd); os.symlink("f", "l", dir_fd=fd)
os.mkfifo("p", dir_fd=fd)' || fail $LINENO "cannot make the long tree"
# what is at the bottom of $1: content mode links link-target fifo mtime
bottom() {
	python3 -c "$walk"'
import stat
fd = bottom(sys.argv[1]); s = [os.stat(x, dir_fd=fd, follow_symlinks=False) for x in "fglp"]
print(open(os.open("f", os.O_RDONLY, dir_fd=fd)).read().strip(), oct(s[0].st_mode & 0o7777),
      s[0].st_nlink, os.readlink("l", dir_fd=fd), stat.S_ISFIFO(s[3].st_mode), int(s[0].st_mtime))' "$1"
}
# at ulimit -n 32, only 4 levels stay open: the others are found again
# through ".." on the way back up
(ulimit -n 32 && "$P" cp -r long long.r) 2>err; rc=$?
rc_is $LINENO 0; err_is $LINENO
is $LINENO "bottom 0o640 1 f True" "$(bottom long.r | cut -d' ' -f1-5)"
(ulimit -n 1024 && "$P" cp -a long long.a) 2>err; rc=$?
rc_is $LINENO 0; err_is $LINENO
is $LINENO "bottom 0o640 2 f True 1000000000" "$(bottom long.a)"
# into a copy that is there: replaced, and the messages name the whole path
"$P" cp -rn long/. long.r 2>err; rc=$?
rc_is $LINENO 0; err_is $LINENO
echo n | "$P" cp -ri long/. long.r 2>err; rc=$?
rc_is $LINENO 0; [ "$(wc -c <err)" -gt 20000 ] || fail $LINENO "short path in: $(cut -c1-80 err)"
grep -q "'? psplice: overwrite '" err || fail $LINENO "prompts: $(cut -c1-80 err)"
rm -rf long long.r long.a

# --- 4. -i: cp(1)'s questions --------------------------------------------------
echo a >a; echo b >b; chmod 444 b
# as root, any file may be written: "overwrite"
if [ "$(id -u)" -eq 0 ]; then
	printf 'n\n' | "$P" cp -i a b 2>err; rc=$?
	rc_is $LINENO 0; is $LINENO "psplice: overwrite 'b'? " "$(cat err)"; is $LINENO b "$(cat b)"
fi
# as someone who may not write DST
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
	as() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
	chmod 755 "$d"; mkdir u && chmod 777 u && cd u
	as sh -c 'echo a >a; echo b >b; echo c >c; chmod 444 b; echo w >w; chmod 4751 c
		chmod u-w c' || fail $LINENO "cannot make nobody's files"
	for case in "n -i b" "y -i b" "n -if b" "y -if b" "n -i w" "y -i w" "y -i -f c" \
		"n -i --remove-destination b" "y -i --remove-destination b"; do
		ans=${case%% *} file=${case##* } opts=${case#* }
		set -- "$ans" "${opts% *}" "$file"
		[ -z "$gnu" ] || { cp -p b b.gnu; cp -p c c.gnu; cp -p w w.gnu; }
		cp -p b b.keep; cp -p c c.keep; cp -p w w.keep
		printf '%s\n' "$1" | as "$P" cp $2 a $3 2>err; rc=$?
		got="$rc $(cat $3) $(cat err)"
		if [ -n "$gnu" ]; then
			printf '%s\n' "$1" | as cp $2 a $3.gnu 2>gerr; grc=$?
			is $LINENO "$grc $(cat $3.gnu) $(sed "s/$3.gnu/$3/g" gerr)" \
				"$(echo "$got" | sed 's/psplice:/cp:/g')"
		fi
		mv b.keep b; mv c.keep c; mv w.keep w
		case "$case" in
		"n -i b") is $LINENO "0 b psplice: unwritable 'b' (mode 0444, r--r--r--); try anyway? " "$got" ;;
		"y -if b") is $LINENO "0 a psplice: replace 'b', overriding mode 0444 (r--r--r--)? " "$got" ;;
		"y -i -f c") is $LINENO "0 a psplice: replace 'c', overriding mode 4551 (r-sr-x--x)? " "$got" ;;
		"n -i --remove-destination b")
			is $LINENO "0 b psplice: replace 'b', overriding mode 0444 (r--r--r--)? " "$got" ;;
		"n -i w") is $LINENO "0 w psplice: overwrite 'w'? " "$got" ;;
		"y -i w") is $LINENO "0 a psplice: overwrite 'w'? " "$got" ;;
		esac
	done
	cd "$d"
else
	skip "-i on an unwritable DST: needs root (to be someone else) and setpriv"
fi

# --- 5. -x, --remove-destination, --attributes-only, --strip-trailing-slashes,
# --copy-contents -----------------------------------------------------------------
# listing DIR: each entry under DIR, sorted, with its type, mode, links,
# size, mtime when $fmt is set, and a link's target; then the checksum of
# each file
listing() {
	(cd "$1" && find . -mindepth 1 -printf "%p %y %m %n %s${fmt:+ %T@} %l\n" | LC_ALL=C sort &&
		find . -type f -exec cksum {} + | LC_ALL=C sort -k3)
}
# Tmpfs mounted by the cases of -x, unmounted at the end or before the next.
mounts=
cli_cleanup() {
	for m in $mounts; do umount -l "$m" 2>/dev/null; done
	mounts=
}
# side LINE SETUP ARGS...: SETUP (a function) makes the same tree in g and
# in p, every mtime in it one date (which $fmt compares); then in g GNU cp
# ARGS, in p psplice cp ARGS, each after $pre (a command run in the tree,
# may be empty). The exit status and the messages (those of GNU by $gsed)
# are the same, and so is every entry of the two trees. SETUP returning
# 77: returns 77.
side() {
	l=$1 setup=$2; shift 2
	cli_cleanup; rm -rf g p; mkdir g p
	for w in g p; do
		cd "$d/$w" || fail $l "cannot enter $w"
		$setup; r=$?
		cd "$d" || fail $l "cannot enter $d"
		[ $r -ne 77 ] || return 77
		[ $r -eq 0 ] && (cd $w && find . -exec touch -h -d 2003-01-01 {} +) ||
			fail $l "cannot set up $w"
	done
	(cd g && eval "${pre:-}" && timeout 60 cp "$@" 2>"$d/gerr"; echo $? >"$d/grc"; wait)
	(cd p && eval "${pre:-}" && timeout 60 "$P" cp "$@" 2>"$d/err"; echo $? >"$d/rc"; wait)
	is $l "$(cat grc) $(sed "${gsed:-}" gerr)" "$(cat rc) $(sed 's/^psplice:/cp:/' err)"
	is $l "$(listing g)" "$(listing p)"
}

# -x: a directory of another filesystem (a tmpfs mounted in the tree) is
# made, with its root's mode and times, and left empty; given as SOURCE, or
# reached through a followed link, the same; without -r, -x changes nothing
setup_x() {
	mkdir -p s/sub s/m && echo a >s/a && echo b >s/sub/b && ln -s m s/lm || return 1
	mount -t tmpfs -o mode=0750,size=1m none s/m 2>/dev/null || return 77
	mounts="$mounts $PWD/s/m"
	echo in >s/m/in && mkdir s/m/deep && echo d >s/m/deep/f
}
x_cases() {
	side $LINENO setup_x -rx s c || { skip "-x: cannot mount a tmpfs"; return; }
	fmt=1 side $LINENO setup_x -ax s c
	side $LINENO setup_x --one-file-system -rL s c
	side $LINENO setup_x -rx s/m c
	side $LINENO setup_x -x s/a c
	side $LINENO setup_x -rx s/m s/a s/sub
	cli_cleanup
}

# --remove-destination: DST removed before it is opened, where -f opens it
# first: another name of a file keeps the old data, a read-only file, a
# link (to something else, to nothing, to SOURCE) and a FIFO are replaced
# by a regular file; a directory is not removed; SOURCE itself is refused,
# another name of it is not
setup_rd() {
	echo new >src && echo old >d1 && ln d1 d1o && echo ro >d2 && chmod 444 d2 &&
		echo tgt >t && ln -s t d3 && ln -s nowhere d4 && ln -s src d5 &&
		mkfifo d6 && mkdir D && ln src sh && mkdir -p tr/in dt/in && echo a >tr/a &&
		echo b >tr/in/b && echo olda >dt/a && ln dt/a dt/a2 && ln -s ../a dt/in/b
}
rd_cases() {
	for dst in d1 d2 d3 d4 d5 d6 sh src ./src; do
		side $LINENO setup_rd --remove-destination src $dst
	done
	side $LINENO setup_rd -T --remove-destination src D
	side $LINENO setup_rd --remove-destination -f src d2
	side $LINENO setup_rd --remove-destination -l src d1
	side $LINENO setup_rd --remove-destination -s src d3
	side $LINENO setup_rd --remove-destination -b src d1
	side $LINENO setup_rd --remove-destination -n src d1
	side $LINENO setup_rd -r --remove-destination tr/. dt
	fmt=1 side $LINENO setup_rd -a --remove-destination tr/. dt
}

# dev NAME: a 0600 device like /dev/null, where we may make one (else none,
# in both trees)
dev() { ! mknod "$1" c 1 3 2>/dev/null || chmod 600 "$1"; }

# --attributes-only: no data; a new DST is empty, an existing one keeps its
# data (and, without -p, its attributes); a device or a FIFO is made anew
# with -r, else a regular file; a link is followed to the file it names
setup_ao() {
	echo newdata >src && chmod 640 src && echo olddata-long >ex && chmod 600 ex &&
		dev n && mkfifo -m 640 f && mkdir t &&
		echo x >t/a && ln -s a t/l && mkfifo t/p && echo hi >e2 && ln -s e2 lk
}
ao_cases() {
	side $LINENO setup_ao --attributes-only src new
	fmt=1 side $LINENO setup_ao --attributes-only -p src new
	fmt=1 side $LINENO setup_ao --attributes-only src ex
	fmt=1 side $LINENO setup_ao --attributes-only -p src ex
	fmt=1 side $LINENO setup_ao --attributes-only -p src lk
	side $LINENO setup_ao --attributes-only n dn
	side $LINENO setup_ao -r --attributes-only n dn
	side $LINENO setup_ao -r --attributes-only f df
	fmt=1 side $LINENO setup_ao -a --attributes-only t c
	side $LINENO setup_ao --attributes-only --reflink=always src rr
	side $LINENO setup_ao --attributes-only src src
	# -v: no bytes, and no word of write-behind, even for a file it would pace
	head -c 9M /dev/zero >big
	"$P" cp --debug --attributes-only --write-behind big vb 2>err >/dev/null; rc=$?
	rc_is $LINENO 0; err_is $LINENO "psplice: 'big' -> 'vb': 0 bytes"
	is $LINENO 0 "$(stat -c %s vb)"
	rm -f big vb
}

# --strip-trailing-slashes: "ld/" (ld a link to a directory) is ld, the
# link, when SOURCEs are copied into a DIRECTORY; SOURCE DEST keeps it
setup_ss() {
	mkdir d o && echo f >d/f && ln -s d ld && echo x >file
}
ss_cases() {
	for o in -P -rP -rd "-rP --parents"; do
		side $LINENO setup_ss $o ld/ o
		side $LINENO setup_ss $o --strip-trailing-slashes ld// o
	done
	side $LINENO setup_ss -P --strip-trailing-slashes ld/ n
	side $LINENO setup_ss -rP --strip-trailing-slashes ld/ n
	side $LINENO setup_ss -rPT --strip-trailing-slashes ld/ o
	side $LINENO setup_ss --strip-trailing-slashes -t o file/
	side $LINENO setup_ss --strip-trailing-slashes file/ n
	side $LINENO setup_ss --strip-trailing-slashes / o
}

# --copy-contents: with -r, a device or a FIFO is read as a file is (a FIFO
# after its writer, which is there) and its copy a regular file with its
# mode; links stay links unless followed; without -r, as always, and a copy
# of a device gets the device's mode
setup_cc() {
	mkdir t && echo x >t/a && ln -s a t/l && dev t/null &&
		mkfifo -m 640 t/p && ln -s null t/lnull
}
# a writer of the FIFO $1 that gives up after 10 s
feed() { (timeout 10 sh -c 'printf fifo-data >"$1"' sh "$1" &); }
cc_cases() {
	side $LINENO setup_cc -r t c
	pre="feed t/p" side $LINENO setup_cc -r --copy-contents t c
	pre="feed t/p" side $LINENO setup_cc -rL --copy-contents t c
	pre="feed t/p" side $LINENO setup_cc -r --copy-contents t/p c
	side $LINENO setup_cc t/null c
	side $LINENO setup_cc --copy-contents t/null c
	side $LINENO setup_cc -r --copy-contents t/null c
	side $LINENO setup_cc -a --copy-contents t/l c
	# a socket cannot be opened (cp(1) says "for reading" too)
	gsed='s/ for reading:/:/' side $LINENO setup_sock -r --copy-contents t c ||
		skip "--copy-contents of a socket: cannot bind one"
}
setup_sock() {
	mkdir t && { python3 -c 'import socket; socket.socket(socket.AF_UNIX).bind("t/s")' ||
		return 77; }
}

if [ -n "$gnu" ]; then
	x_cases; rd_cases; ao_cases; ss_cases; cc_cases
fi
rm -rf g p
exit 0
