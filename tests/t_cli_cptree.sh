#!/bin/sh
# psplice cp -a of a tree of small files: the system calls each file costs
# are no more than GNU cp's on the same tree (counted by strace -c, per file
# by the difference between a tree and one with twice the files in the same
# directories, so that what the start and the directories cost cancels
# out); a filesystem without reflinks is asked for one once, not once a
# file, and two filesystems for a copy between them; and the copy is GNU's: the same bytes, types, modes, sizes, times,
# owners and link targets; under another umask too; into a directory whose
# default ACL a new file inherits, the same ACLs as GNU's copy (SOURCE's,
# not the inherited ones), and the same extended attributes.
# $1 is the scratch directory, the CLI is $PSPLICE_BIN. Silent on pass, but
# for checks it cannot make, which say why.
[ -z "${BASH_VERSION:-}" ] && command -v bash >/dev/null && exec bash "$0" "$@"
name=t_cli_cptree; . "$(dirname "$0")/cli-lib.sh"
cp --version 2>/dev/null | grep -q 'GNU coreutils' ||
	{ skip "GNU cp is not cp here: nothing to compare with"; exit 0; }

# mk TREE N: 8 directories of N files each, of 0 to 16 KiB, and in the
# first a symbolic link, an empty file, a read-only, a private and a
# set-user-ID file (and, as root, one of another owner)
mk() {
	for i in 0 1 2 3 4 5 6 7; do mkdir -p "$1/d$i/e"; done
	awk -v t="$1" -v n="$2" 'BEGIN {
		srand(7)
		for (i = 0; i < 1024; i++) blob = blob sprintf("%c", 32 + int(rand() * 90))
		for (i = 0; i < 4; i++) blob = blob blob
		for (i = 0; i < 8 * n; i++) {
			f = sprintf("%s/d%d/%sf%d", t, i % 8, i % 3 ? "" : "e/", i)
			printf "%s", substr(blob, 1, int(rand() * 16384)) > f
			close(f)
		}
	}' || fail $LINENO "cannot make $1"
	ln -s ../d1/f1 "$1/d0/link" && : >"$1/d0/empty" && echo ro >"$1/d0/ro" &&
		chmod 444 "$1/d0/ro" && echo priv >"$1/d0/priv" && chmod 600 "$1/d0/priv" &&
		echo suid >"$1/d0/suid" && chmod 4755 "$1/d0/suid" ||
		fail $LINENO "cannot make $1's special cases"
	[ "$(id -u)" -ne 0 ] || { echo other >"$1/d0/other" && chown 1234:5678 "$1/d0/other"; } ||
		fail $LINENO "cannot chown in $1"
}

# calls CMD...: the system calls CMD makes, all of its processes counted
calls() {
	strace -f -c -o calls.out "$@" 2>err || fail $LINENO "$* failed: $(cat err)"
	awk '$NF == "total" { print $4 }' calls.out
}

# listing TREE: each entry's type, mode, size, mtime, owner and link target
listing() {
	(cd "$1" && find . -printf '%P %y %m %s %T@ %U:%G %l\n' | sort)
}

# --- 1. the calls per file -------------------------------------------------
mk small 25
mk big 50
if ! command -v strace >/dev/null 2>&1; then
	skip "strace missing (tests/deps.sh check): system calls not counted"
elif ! strace -f -c -o /dev/null true 2>/dev/null; then
	skip "strace cannot trace here: system calls not counted"
else
	ps=$(( $(calls "$P" cp -a big ps.big) - $(calls "$P" cp -a small ps.small) ))
	gnu=$(( $(calls cp -a big gnu.big) - $(calls cp -a small gnu.small) ))
	# Both per file, as x100, for the message.
	[ "$ps" -le "$gnu" ] || fail $LINENO \
		"psplice cp -a: $((ps * 100 / 200)) calls per 100 files, GNU cp -a: $((gnu * 100 / 200))"
	rm -rf ps.big ps.small gnu.big gnu.small
	# A filesystem without reflinks is asked for one once, not once a
	# file (where it has them, each file is shared: none is refused); by
	# each of 4 threads at most, that may ask before the first answer.
	for j in 1 4; do
		strace -f -e trace=ioctl -o ioctl.out "$P" cp -a -j $j big ps.big 2>err ||
			fail $LINENO "cp -a failed: $(cat err)"
		refused=$(grep -c 'FICLONE.*EOPNOTSUPP' ioctl.out)
		[ "$refused" -le $j ] || fail $LINENO "-j $j: $refused clones refused, for 400 files"
		rm -rf ps.big
	done
	# Nor are two filesystems asked once a file for a clone or a
	# copy_file_range between them (EXDEV): a tree copied to /dev/shm.
	other=$(mktemp -d /dev/shm/t_cli_cptree.XXXXXX 2>/dev/null)
	if [ -z "$other" ] || [ "$(stat -c %d "$other")" = "$(stat -c %d .)" ]; then
		skip "no /dev/shm on another filesystem: EXDEV not counted"
	else
		cli_cleanup() { rm -rf "$other"; }
		strace -f -e trace=ioctl,copy_file_range -o exdev.out "$P" cp -a -j 1 big "$other/big" 2>err ||
			fail $LINENO "cp -a failed: $(cat err)"
		refused=$(grep -c 'EXDEV' exdev.out)
		[ "$refused" -le 2 ] || fail $LINENO "$refused calls refused by EXDEV, for 400 files"
		diff -r big "$other/big" >diff.out 2>&1 || fail $LINENO "$(head -3 diff.out)"
		rm -rf "$other/big"
	fi
fi

# --- 2. the copy is GNU's --------------------------------------------------
"$P" cp -a big ps 2>err; rc=$?
rc_is $LINENO 0; err_is $LINENO
cp -a big gnu
diff -r --no-dereference gnu ps >diff.out 2>&1 ||
	fail $LINENO "the copies differ: $(head -3 diff.out)"
is $LINENO "$(listing gnu)" "$(listing ps)"
is $LINENO "$(listing big)" "$(listing ps)"
rm -rf ps gnu

# Under umask 077, new files are made without the group's and others' bits:
# -a gives them SOURCE's all the same.
(umask 077 && "$P" cp -a big ps) 2>err; rc=$?
rc_is $LINENO 0; err_is $LINENO
is $LINENO "$(listing big)" "$(listing ps)"
rm -rf ps

# --- 3. ACLs and extended attributes ---------------------------------------
# In a directory whose default ACL a new file inherits, the copy's files
# have SOURCE's ACL (none, or their own), not the inherited one; and the
# extended attributes SOURCE has.
if ! command -v setfacl >/dev/null 2>&1 || ! command -v getfacl >/dev/null 2>&1; then
	skip "setfacl or getfacl missing (tests/deps.sh check): ACLs not compared"
elif ! { mkdir inh && setfacl -d -m u:1234:rwx,m::rwx inh; } 2>/dev/null; then
	skip "this filesystem keeps no ACLs: ACLs not compared"
else
	mkdir -p a/sub && echo plain >a/plain && echo acl >a/acl && setfacl -m u:4321:r a/acl &&
		setfacl -d -m g:4321:rx a/sub && echo in >a/sub/f || fail $LINENO "cannot set ACLs"
	setfattr -n user.colour -v blue a/plain 2>/dev/null || skip "no user xattrs here"
	mkdir gnuinh && setfacl -d -m u:1234:rwx,m::rwx gnuinh
	"$P" cp -a a inh/a 2>err; rc=$?
	rc_is $LINENO 0; err_is $LINENO
	cp -a a gnuinh/a
	is $LINENO "$(cd gnuinh && getfacl -R -p a 2>&1)" "$(cd inh && getfacl -R -p a 2>&1)"
	is $LINENO "$(getfacl -c a/plain 2>&1)" "$(getfacl -c inh/a/plain 2>&1)"
	if command -v getfattr >/dev/null 2>&1; then
		is $LINENO "$(cd gnuinh && getfattr -R -d a 2>&1)" "$(cd inh && getfattr -R -d a 2>&1)"
	fi
	# A new tree's top, made in a directory with a default ACL, inherits
	# it: the copy of a tree into it is the same as GNU's too.
	"$P" cp -a big inh/big 2>err; rc=$?
	rc_is $LINENO 0; err_is $LINENO
	cp -a big gnuinh/big
	is $LINENO "$(cd gnuinh && getfacl -R -p big 2>&1)" "$(cd inh && getfacl -R -p big 2>&1)"
fi
exit 0
