#!/bin/sh
# psplice cp, the options and cases of GNU cp that users rely on, each
# checked as GNU cp 9.1 behaves on the same case: new directories keep the
# sticky bit (and an inherited set-group-ID) without -p; -p keeps ACLs,
# --preserve=xattr and -a extended attributes; links, FIFOs and files in
# DST are replaced as cp -r replaces them, a dangling link is not written
# through, a FIFO in a tree is not waited for; 2,040 levels at ulimit -n
# 1024; several SOURCEs, -t, -T, -u, -i, -L/-P/-H, -l, -s, --backup,
# --sparse, --parents.
# $1 is the scratch directory, the CLI is $PSPLICE_BIN. Silent on pass, but
# for checks it cannot make, which say why.
[ -z "${BASH_VERSION:-}" ] && command -v bash >/dev/null && exec bash "$0" "$@"
name=t_cli_cpopts; . "$(dirname "$0")/cli-lib.sh"
modes() { stat -c %a "$@" | tr '\n' ' ' | sed 's/ $//'; }
xattr() { python3 -c 'import os, sys
try: print(os.getxattr(sys.argv[1], sys.argv[2], follow_symlinks=False).decode())
except OSError: print("-")' "$1" "$2"; }

echo a >a; echo b >b; echo c >c

# --- 1. modes of new directories, without -p --------------------------------
# cp -r: t 1755 -> 1755, s 1777 -> 1755 (the umask), g 2775 -> 755, sg 3770 -> 1750, a
# 4755 file -> 755; under a set-group-ID parent, directories get 2 from it.
mkdir -p t/s t/g t/sg sgp && chmod 1755 t && chmod 1777 t/s && chmod 2775 t/g &&
	chmod 3770 t/sg && chmod 2755 sgp && : >t/f && chmod 4755 t/f
"$P" cp -r t m 2>err; rc=$?
rc_is $LINENO 0; err_is $LINENO
is $LINENO "1755 1755 755 1750 755" "$(modes m m/s m/g m/sg m/f)"
"$P" cp -r t sgp/t 2>err; rc=$?
rc_is $LINENO 0; is $LINENO "3755 3755 2755 3750" "$(modes sgp/t sgp/t/s sgp/t/g sgp/t/sg)"
(umask 077; "$P" cp -r t m77) 2>err; rc=$?
rc_is $LINENO 0; is $LINENO "1700 1700 700" "$(modes m77 m77/s m77/g)"
# an existing directory keeps its own
mkdir keep && chmod 700 keep
"$P" cp -r t/. keep 2>err; rc=$?
rc_is $LINENO 0; is $LINENO 700 "$(modes keep)"
rm -rf t m sgp m77 keep

# --- 2. ACLs and extended attributes --------------------------------------------
python3 -c 'import os; os.setxattr("a", "user.k", b"v")' 2>/dev/null && xa=1 || xa=
if [ -z "$xa" ]; then
	skip "xattrs: the scratch filesystem has no user attributes"
else
	# -p: mode, owner, times and the ACL, not user attributes (cp -p)
	"$P" cp -p a a.p 2>err; rc=$?
	rc_is $LINENO 0; err_is $LINENO; is $LINENO - "$(xattr a.p user.k)"
	for o in --preserve=xattr -a --preserve=all; do
		rm -f a.x; "$P" cp $o a a.x 2>err; rc=$?
		rc_is $LINENO 0; err_is $LINENO; is $LINENO v "$(xattr a.x user.k)"
	done
	# --no-preserve takes them back
	rm -f a.x; "$P" cp -a --no-preserve=xattr a a.x 2>err; rc=$?
	rc_is $LINENO 0; is $LINENO - "$(xattr a.x user.k)"
	# in a tree, on directories too
	mkdir xt && python3 -c 'import os; os.setxattr("xt", "user.d", b"dir")'
	cp a xt/f && python3 -c 'import os; os.setxattr("xt/f", "user.f", b"file")'
	"$P" cp -a xt xt.a 2>err; rc=$?
	rc_is $LINENO 0; err_is $LINENO
	is $LINENO "dir file" "$(xattr xt.a user.d) $(xattr xt.a/f user.f)"
	rm -rf a.p a.x xt xt.a
fi
if command -v setfacl >/dev/null && command -v getfacl >/dev/null &&
	setfacl -m u:1234:rw a 2>/dev/null; then
	"$P" cp -p a acl.p 2>err; rc=$?
	rc_is $LINENO 0; err_is $LINENO
	is $LINENO "$(getfacl -c a 2>/dev/null)" "$(getfacl -c acl.p 2>/dev/null)"
	# without -p, none; with --preserve=xattr alone, none either (cp(1))
	"$P" cp a acl.n 2>err; rc=$?
	getfacl -c acl.n 2>/dev/null | grep -q 1234 && fail $LINENO "acl without -p"
	"$P" cp --preserve=xattr a acl.x 2>err; rc=$?
	getfacl -c acl.x 2>/dev/null | grep -q 1234 && fail $LINENO "acl with xattr"
	# a directory's default ACL
	mkdir dacl && setfacl -d -m u:1234:rwx dacl
	"$P" cp -rp dacl dacl.p 2>err; rc=$?
	rc_is $LINENO 0; is $LINENO "$(getfacl -c dacl 2>/dev/null)" "$(getfacl -c dacl.p 2>/dev/null)"
	# -p onto a file that had one, from one that has none: none left
	"$P" cp -p b acl.p 2>err; rc=$?
	rc_is $LINENO 0; getfacl -c acl.p 2>/dev/null | grep -q 1234 && fail $LINENO "acl left"
	setfacl -b a; rm -rf acl.* dacl dacl.p
else
	skip "ACLs: setfacl/getfacl missing or no ACLs here"
fi
# A filesystem without attributes (ramfs): -a and -p go on silently, a
# named --preserve=xattr fails; an ACL that cannot be kept fails -p.
if [ -n "$xa" ] && [ "$(id -u)" -eq 0 ] && unshare -m --propagation private true 2>/dev/null; then
	mkdir r
	unshare -m --propagation private sh -c '
		mount -t ramfs none r 2>/dev/null || exit 77
		"$1" cp -a a r/a 2>err.a; echo $? >rc.a
		"$1" cp -p a r/p 2>err.p; echo $? >rc.p
		"$1" cp --preserve=xattr a r/x 2>err.x; echo $? >rc.x
		cmp -s a r/a && cmp -s a r/p && cmp -s a r/x && echo same >same' sh "$P"
	if [ $? -eq 77 ]; then
		skip "xattrs on ramfs: cannot mount one"
	else
		rc=$(cat rc.a); rc_is $LINENO 0; mv err.a err; err_is $LINENO
		rc=$(cat rc.p); rc_is $LINENO 0; mv err.p err; err_is $LINENO
		rc=$(cat rc.x); rc_is $LINENO 1; mv err.x err
		err_is $LINENO "psplice: setting attributes for 'r/x': Operation not supported"
		[ -e same ] || fail $LINENO "copies on ramfs differ"
	fi
	rm -rf r rc.* err.* same
else
	skip "xattrs on ramfs: needs root, user attributes and mount namespaces"
fi

# --- 3. what is already in DST --------------------------------------------------
# cp -r over t: a file where SOURCE has a link is replaced by the link, a
# FIFO where it has a link too; a link where SOURCE has a file is written
# through (as cp(1): into what it points to).
mkdir t d && echo f >t/f && ln -s ../a t/l && ln -s nowhere t/dang && mkfifo t/fifo
echo old >d/dang; mkfifo d/l; ln -s ../b d/f; mkfifo d/fifo
"$P" cp -r t/. d 2>err; rc=$?
rc_is $LINENO 0; err_is $LINENO
is $LINENO "nowhere ../a ../b" "$(readlink d/dang) $(readlink d/l) $(readlink d/f)"
is $LINENO f "$(cat b)"; echo b >b
[ -p d/fifo ] || fail $LINENO "d/fifo is not a FIFO"
# at the top too, a link copied as a link replaces what is there
echo x >top; "$P" cp -P t/l top 2>err; rc=$?
rc_is $LINENO 0; is $LINENO ../a "$(readlink top)"
# a dangling link is not written through (nor by -f), at the top and in a tree
ln -s nowhere dl
"$P" cp a dl 2>err; rc=$?
rc_is $LINENO 1; [ ! -e nowhere ] || fail $LINENO "wrote through"
err_is $LINENO "psplice: not writing through dangling symlink 'dl'"
"$P" cp -f a dl 2>err; rc=$?
rc_is $LINENO 1
mkdir t2 d2 && echo z >t2/x && ln -s nowhere d2/x
"$P" cp -r t2/. d2 2>err; rc=$?
rc_is $LINENO 1; err_is $LINENO "psplice: not writing through dangling symlink 'd2/./x'"
# a FIFO in a tree where SOURCE has a file: cp(1) waits for a reader for
# ever; here no reader is an error, and -f replaces it
mkdir t3 d3 && echo y >t3/ff && mkfifo d3/ff
timeout 10 "$P" cp -r t3/. d3 2>err; rc=$?
rc_is $LINENO 1
err_is $LINENO "psplice: cannot create regular file 'd3/./ff': No such device or address"
timeout 10 "$P" cp -rf t3/. d3 2>err; rc=$?
rc_is $LINENO 0; same $LINENO t3/ff d3/ff
# a directory is not replaced
mkdir -p d4/l
"$P" cp -r t/. d4 2>err; rc=$?
rc_is $LINENO 1; err_is $LINENO "psplice: cannot overwrite directory 'd4/./l' with non-directory"
rm -rf t d t2 d2 t3 d3 d4 top dl

# --- 4. deep trees ---------------------------------------------------------------
# 2,040 levels (2 bytes each: the paths stay under PATH_MAX) with 1,024 fds
# (made by python: a shell's mkdir and cd, 2,040 times, take minutes)
python3 -c 'import os
os.mkdir("deep"); os.chdir("deep")
for _ in range(2040):
    os.mkdir("d"); os.chdir("d")
open("f", "w").write("end\n")' || fail $LINENO "cannot make the deep tree"
(ulimit -n 1024 && "$P" cp -r deep deep.copy) 2>err; rc=$?
rc_is $LINENO 0; err_is $LINENO
diff -r deep deep.copy >/dev/null || fail $LINENO "deep.copy differs"
rm -rf deep deep.copy

# --- 5. operands and options ------------------------------------------------------
mkdir dir
"$P" cp a b c dir 2>err; rc=$?
rc_is $LINENO 0; err_is $LINENO; same $LINENO a dir/a; same $LINENO c dir/c
# one missing source does not stop the others
rm dir/*; "$P" cp a nope b dir/ 2>err; rc=$?
rc_is $LINENO 1; err_is $LINENO "psplice: cannot stat 'nope': No such file or directory"
same $LINENO b dir/b
"$P" cp a b nodir 2>err; rc=$?
rc_is $LINENO 1; err_is $LINENO "psplice: target 'nodir': No such file or directory"
rm dir/*; "$P" cp -t dir a b 2>err; rc=$?
rc_is $LINENO 0; err_is $LINENO; same $LINENO b dir/b
"$P" cp -t a b 2>err; rc=$?
rc_is $LINENO 1; err_is $LINENO "psplice: target directory 'a': Not a directory"
"$P" cp -t dir 2>err; rc=$?
rc_is $LINENO 1; err_is $LINENO "psplice: missing file operand" \
	"Try 'psplice cp --help' for more information."
"$P" cp -t dir -T a b 2>err; rc=$?
rc_is $LINENO 1
err_is $LINENO "psplice: cannot combine --target-directory (-t) and --no-target-directory (-T)" \
	"Try 'psplice cp --help' for more information."
"$P" cp -T a dir 2>err; rc=$?
rc_is $LINENO 1; err_is $LINENO "psplice: cannot overwrite directory 'dir' with non-directory"
"$P" cp -T a b c 2>err; rc=$?
rc_is $LINENO 1; err_is $LINENO "psplice: extra operand 'c'" \
	"Try 'psplice cp --help' for more information."
# -rT: into DEST itself, not DEST/SOURCE
mkdir src && echo s >src/s
"$P" cp -rT src dir 2>err; rc=$?
rc_is $LINENO 0; same $LINENO src/s dir/s
rm -rf dir src

# -u: a DEST not older is left alone
echo new >s; touch -d 2020-01-01 s
echo old >o; touch -d 2019-01-01 o
"$P" cp -u s o 2>err; rc=$?
rc_is $LINENO 0; is $LINENO new "$(cat o)"
echo newer >o; touch -d 2021-01-01 o
"$P" cp -u s o 2>err; rc=$?
rc_is $LINENO 0; is $LINENO newer "$(cat o)"
touch -d 2020-01-01 o
"$P" cp -u s o 2>err; rc=$?
rc_is $LINENO 0; is $LINENO newer "$(cat o)"
"$P" cp -u s o.missing 2>err; rc=$?
rc_is $LINENO 0; same $LINENO s o.missing

# -i: asked on stderr, answered on stdin; the last of -i and -n counts
echo n | "$P" cp -i a o 2>err; rc=$?
rc_is $LINENO 0; is $LINENO newer "$(cat o)"; is $LINENO "psplice: overwrite 'o'? " "$(cat err)"
echo y | "$P" cp -i a o 2>err; rc=$?
rc_is $LINENO 0; same $LINENO a o
"$P" cp -i b o </dev/null 2>err; rc=$?
rc_is $LINENO 0; same $LINENO a o
"$P" cp -i -n b o </dev/null 2>err; rc=$?
rc_is $LINENO 0; err_is $LINENO; same $LINENO a o
echo y | "$P" cp -n -i b o 2>err; rc=$?
rc_is $LINENO 0; same $LINENO b o
echo n | "$P" cp -i a fresh 2>err; rc=$?
rc_is $LINENO 0; err_is $LINENO; same $LINENO a fresh
rm -f s o o.missing fresh

# -L, -P, -H: a link given as SOURCE, and one inside a tree
mkdir t && echo f >t/f && ln -s f t/l && ln -s t tl && ln -s a al
"$P" cp al al.L 2>err; rc=$?
rc_is $LINENO 0; [ ! -L al.L ] && same $LINENO a al.L || fail $LINENO "al.L is a link"
"$P" cp -P al al.P 2>err; rc=$?
rc_is $LINENO 0; is $LINENO a "$(readlink al.P)"
"$P" cp -r tl tl.r 2>err; rc=$?
rc_is $LINENO 0; is $LINENO t "$(readlink tl.r)"
"$P" cp -rH tl tl.H 2>err; rc=$?
rc_is $LINENO 0; [ -d tl.H ] && [ -L tl.H/l ] || fail $LINENO "-H: $(ls -l tl.H)"
"$P" cp -rL tl tl.L 2>err; rc=$?
rc_is $LINENO 0; [ -d tl.L ] && [ ! -L tl.L/l ] && same $LINENO t/f tl.L/l ||
	fail $LINENO "-L: $(ls -l tl.L)"

# -l: hard links (in a tree, of what links point to, as cp -rl); an
# existing DEST only with -f, the same file is no error
"$P" cp -l a a.l 2>err; rc=$?
rc_is $LINENO 0; is $LINENO "$(stat -c %i a)" "$(stat -c %i a.l)"
"$P" cp -l a a.l 2>err; rc=$?
rc_is $LINENO 0; err_is $LINENO
"$P" cp -l a b 2>err; rc=$?
rc_is $LINENO 1; err_is $LINENO "psplice: cannot create hard link 'b' to 'a': File exists"
cp b b.keep; "$P" cp -lf a b 2>err; rc=$?
rc_is $LINENO 0; is $LINENO "$(stat -c %i a)" "$(stat -c %i b)"; mv b.keep b
"$P" cp -rl t t.l 2>err; rc=$?
rc_is $LINENO 0; is $LINENO "$(stat -c %i t/f) $(stat -c %i t/f)" \
	"$(stat -c %i t.l/f) $(stat -c %i t.l/l)"
# -s: symbolic links; relative ones only in the current directory
"$P" cp -s a a.s 2>err; rc=$?
rc_is $LINENO 0; is $LINENO a "$(readlink a.s)"
"$P" cp -s a a.s 2>err; rc=$?
rc_is $LINENO 1; err_is $LINENO "psplice: cannot create symbolic link 'a.s' to 'a': File exists"
"$P" cp -sf b a.s 2>err; rc=$?
rc_is $LINENO 0; is $LINENO b "$(readlink a.s)"
mkdir sd; "$P" cp -s a sd 2>err; rc=$?
rc_is $LINENO 1
err_is $LINENO "psplice: 'sd/a': can make relative symbolic links only in current directory"
"$P" cp -s "$d/a" sd 2>err; rc=$?
rc_is $LINENO 0; is $LINENO "$d/a" "$(readlink sd/a)"
"$P" cp -ls a x 2>err; rc=$?
rc_is $LINENO 1; err_is $LINENO "psplice: cannot make both hard and symbolic links" \
	"Try 'psplice cp --help' for more information."
rm -rf t tl al al.* tl.* a.l a.s t.l sd

# --backup: existing DEST moved aside; simple, numbered, existing
echo 1 >bk
"$P" cp -b a bk 2>err; rc=$?
rc_is $LINENO 0; same $LINENO a bk; is $LINENO 1 "$(cat bk~)"
"$P" cp --backup=numbered b bk 2>err; rc=$?
"$P" cp --backup=t c bk 2>err; rc=$?
rc_is $LINENO 0; same $LINENO c bk; same $LINENO a bk.~1~; same $LINENO b bk.~2~
# existing: numbered now that there are some
"$P" cp --backup a bk 2>err; rc=$?
rc_is $LINENO 0; same $LINENO c bk.~3~
"$P" cp --backup=simple --suffix=.old b bk 2>err; rc=$?
rc_is $LINENO 0; same $LINENO a bk.old; same $LINENO b bk
VERSION_CONTROL=numbered "$P" cp -b c bk 2>err; rc=$?
rc_is $LINENO 0; same $LINENO b bk.~4~
# -S alone asks for backups; existing is simple where none is numbered
cp b bk2; "$P" cp -S .bak a bk2 2>err; rc=$?
rc_is $LINENO 0; same $LINENO b bk2.bak; same $LINENO a bk2
# a link DEST is moved aside, not written through
ln -s a bl; "$P" cp -b b bl 2>err; rc=$?
rc_is $LINENO 0; same $LINENO b bl; [ ! -L bl ] && is $LINENO a "$(readlink bl~)"
echo a >a.want; same $LINENO a.want a
"$P" cp --backup=sometimes a bk 2>err; rc=$?
rc_is $LINENO 1; err_is $LINENO "psplice: invalid argument 'sometimes' for 'backup type'" \
	"Valid arguments are:" "  - 'none', 'off'" "  - 'simple', 'never'" \
	"  - 'existing', 'nil'" "  - 'numbered', 't'" "Try 'psplice cp --help' for more information."
"$P" cp -n -b a bk 2>err; rc=$?
rc_is $LINENO 1
rm -f bk* bl* a.want

# --sparse: auto keeps a sparse file's holes, never fills them, always
# keeps them too; a bad value is a usage error
truncate -s 8M sp && echo data | dd of=sp bs=1M seek=4 conv=notrunc status=none
if [ "$(stat -c %b sp)" -lt 1024 ]; then
	for w in auto always never; do
		"$P" cp --sparse=$w sp sp.$w 2>err; rc=$?
		rc_is $LINENO 0; err_is $LINENO; same $LINENO sp sp.$w
	done
	[ "$(stat -c %b sp.auto)" -lt 1024 ] || fail $LINENO "auto: $(stat -c %b sp.auto) blocks"
	[ "$(stat -c %b sp.always)" -lt 1024 ] || fail $LINENO "always: $(stat -c %b sp.always)"
	[ "$(stat -c %b sp.never)" -ge 16384 ] || fail $LINENO "never: $(stat -c %b sp.never) blocks"
else
	skip "--sparse: no holes on this filesystem"
fi
"$P" cp --sparse=maybe sp sp.x 2>err; rc=$?
rc_is $LINENO 1; err_is $LINENO "psplice: invalid argument 'maybe' for '--sparse'" \
	"Valid arguments are:" "  - 'never'" "  - 'auto'" "  - 'always'" \
	"Try 'psplice cp --help' for more information."
rm -f sp*

# --parents: DIRECTORY/SOURCE, its directories made
mkdir -p x/y pd && echo z >x/y/z && chmod 750 x/y
"$P" cp --parents x/y/z pd 2>err; rc=$?
rc_is $LINENO 0; err_is $LINENO; same $LINENO x/y/z pd/x/y/z
is $LINENO 750 "$(modes pd/x/y)"
"$P" cp --parents x/y/z a 2>err; rc=$?
rc_is $LINENO 1; err_is $LINENO "psplice: with --parents, the destination must be a directory" \
	"Try 'psplice cp --help' for more information."
rm -rf x pd

# --preserve's list
"$P" cp --preserve=mode,bogus a p.x 2>err; rc=$?
rc_is $LINENO 1; [ ! -e p.x ] || fail $LINENO "copied anyway"
is $LINENO "psplice: invalid argument 'bogus' for '--preserve'" "$(head -1 err)"
chmod 4700 c; touch -d 2001-01-01 c
"$P" cp --preserve=timestamps c p.t 2>err; rc=$?
rc_is $LINENO 0; is $LINENO "700 $(stat -c %Y c)" "$(stat -c '%a %Y' p.t)"
"$P" cp --preserve=mode c p.m 2>err; rc=$?
rc_is $LINENO 0; is $LINENO 4700 "$(stat -c %a p.m)"
[ "$(stat -c %Y p.m)" -gt "$(stat -c %Y c)" ] || fail $LINENO "p.m: old mtime"
exit 0
