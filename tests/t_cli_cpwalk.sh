#!/bin/sh
# psplice cp -r -j N: a tree walked by N threads is the copy GNU cp -a makes
# (the same bytes, types, modes, sizes, times, link counts, owners and link
# targets, hard links kept across directories that different threads
# copied, holes kept) with -j 1, 2 and 4; with few descriptors (ulimit -n 32
# and 128) too; a directory that cannot be made is said and fails the copy,
# and all else is copied; -j 2 copies in two threads, -j 1 and -v in one,
# and so does a tree on tmpfs without -j, unlike one elsewhere.
# $1 is the scratch directory, the CLI is $PSPLICE_BIN. Silent on pass, but
# for checks it cannot make, which say why.
[ -z "${BASH_VERSION:-}" ] && command -v bash >/dev/null && exec bash "$0" "$@"
name=t_cli_cpwalk; . "$(dirname "$0")/cli-lib.sh"
cp --version 2>/dev/null | grep -q 'GNU coreutils' ||
	{ skip "GNU cp is not cp here: nothing to compare with"; exit 0; }

# The tree: 64 directories two levels deep with 6 files each of 0 to
# 64 KiB, hard links to one file from three other directories, symbolic
# links, a sparse file, a FIFO, and a chain of 120 directories.
mkdir src && awk 'BEGIN {
	srand(11)
	for (i = 0; i < 4096; i++) blob = blob sprintf("%c", 32 + int(rand() * 90))
	for (i = 0; i < 4; i++) blob = blob blob
	for (i = 0; i < 64; i++) {
		dir = sprintf("src/a%d/b%d", i % 8, i)
		system("mkdir -p " dir)
		for (j = 0; j < 6; j++) {
			f = sprintf("%s/f%d", dir, j)
			printf "%s", substr(blob, 1 + j, int(rand() * 65536)) > f
			close(f)
		}
	}
}' || fail $LINENO "cannot make the tree"
ln src/a0/b0/f1 src/a3/b3/hard && ln src/a0/b0/f1 src/a7/b63/hard &&
	ln src/a5/b13/f2 src/a6/b14/hard2 && ln -s ../b0/f0 src/a0/b8/rel &&
	ln -s /nonexistent src/a1/dangling && mkfifo src/a2/fifo &&
	truncate -s 4M src/a4/sparse && echo end >>src/a4/sparse && chmod 751 src/a5 &&
	chmod 600 src/a6/b14/f0 || fail $LINENO "cannot make the special cases"
( cd src/a1 && for i in $(seq 120); do mkdir deep_directory_name && cd deep_directory_name ||
	exit 1; done && echo bottom >f ) || fail $LINENO "cannot make the deep chain"
touch -d @1000000000 src/a3 src/a3/b3 src/a1/b1/f1

# list TREE: what -a keeps of each entry, by path
list() { (cd "$1" && find . -printf '%y %m %s %T@ %n %u %g %l %P\n' | sort); }
# like LINE TREE GNUCOPY: TREE holds what GNU cp -a's copy does
like() {
	list "$2" >got; list "$3" >want
	cmp -s want got || fail "$1" "$2 is not GNU's copy: $(diff want got | head -5)"
	diff -r --no-dereference -x fifo "$3" "$2" >/dev/null || fail "$1" "$2: other data"
	[ "$2/a0/b0/f1" -ef "$2/a3/b3/hard" ] && [ "$2/a0/b0/f1" -ef "$2/a7/b63/hard" ] &&
		[ "$2/a5/b13/f2" -ef "$2/a6/b14/hard2" ] || fail "$1" "$2: hard links not kept"
	[ "$(stat -c %b "$2/a4/sparse")" -lt 1024 ] || fail "$1" "$2: the holes were filled"
}

cp -a src gnu || fail $LINENO "GNU cp -a failed"
for j in 1 2 4; do
	"$P" cp -a -j $j src j$j 2>err; rc=$?
	rc_is $LINENO 0; err_is $LINENO
	like $LINENO j$j gnu
done
"$P" cp -a --jobs=3 src j3 2>err; rc=$?
rc_is $LINENO 0; err_is $LINENO; like $LINENO j3 gnu

# -r: a FIFO made anew, the rest as GNU cp -r makes it
cp -r src gnu.r || fail $LINENO "GNU cp -r failed"
"$P" cp -r -j 4 src r4 2>err; rc=$?
rc_is $LINENO 0; err_is $LINENO
is $LINENO "$(cd gnu.r && find . -printf '%y %m %s %l %P\n' | sort)" \
	"$(cd r4 && find . -printf '%y %m %s %l %P\n' | sort)"

# Few descriptors: at 32 no thread is started, at 128 one task at a time
# whose walk closes the directories above it past 8 levels.
for n in 32 128; do
	(ulimit -n $n && "$P" cp -a -j 4 src u$n) 2>err; rc=$?
	rc_is $LINENO 0; err_is $LINENO
	like $LINENO u$n gnu
done

# A directory that cannot be made (a file has its name): said, the copy
# fails, and everything else is copied, the files under the directories
# above it, their times last, included.
mkdir -p e/src/a2 e/src/a6/b30 && echo x >e/src/a2/b26 && echo y >e/src/a6/b30/f3 &&
	cp -a e gnu.e || fail $LINENO "cannot make the obstacles"
cp -a src gnu.e 2>/dev/null
"$P" cp -a -j 4 src e 2>err; rc=$?
rc_is $LINENO 1
sort err >got
printf '%s\n' "psplice: cannot overwrite non-directory 'e/src/a2/b26' with directory 'src/a2/b26'" >want
cmp -s want got || fail $LINENO "stderr: $(cat err)"
like $LINENO e/src gnu.e/src

# The threads: -j 2 makes directories and copies files in two of them;
# -j 1 and -v (whose lines keep the walk's order) start none.
if command -v strace >/dev/null && strace -f -o /dev/null true 2>/dev/null; then
	# LeakSanitizer cannot run under ptrace.
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
	strace -f -qq -e trace=mkdirat,copy_file_range,sendfile,splice,read,clone,clone3 \
		-o trace "$P" cp -a -j 2 src t2 2>err; rc=$?
	rc_is $LINENO 0; like $LINENO t2 gnu
	n=$(grep -E '(mkdirat|copy_file_range|sendfile|splice)\(' trace | awk '{print $1}' |
		sort -u | wc -l)
	[ "$n" -ge 2 ] || fail $LINENO "-j 2: the copy was made by $n thread(s)"
	for opt in -j1 "-v -j4"; do
		strace -f -qq -e trace=clone,clone3 -o trace "$P" cp -a $opt src "t$opt" \
			>/dev/null 2>err; rc=$?
		rc_is $LINENO 0
		! grep -q clone trace || fail $LINENO "$opt: threads started: $(head -1 trace)"
	done
	# Without -j: threads, but for a tree on tmpfs.
	threads() {
		strace -f -qq -e trace=clone,clone3 -o trace "$P" cp -a "$1" "$2" 2>err ||
			fail $LINENO "cp -a $1 failed: $(cat err)"
		grep -c clone trace
	}
	if [ "$(stat -f -c %T .)" != tmpfs ]; then
		[ "$(threads src t.default)" -ge 1 ] || fail $LINENO "no threads without -j"
	fi
	shm=$(mktemp -d /dev/shm/t_cli_cpwalk.XXXXXX 2>/dev/null)
	if [ -n "$shm" ] && [ "$(stat -f -c %T "$shm")" = tmpfs ]; then
		cli_cleanup() { rm -rf "$shm"; }
		cp -a src/a0 "$shm/t" || fail $LINENO "cannot fill $shm"
		is $LINENO 0 "$(threads "$shm/t" "$shm/c")"
	else
		skip "the default on tmpfs: /dev/shm is not a writable tmpfs"
	fi
else
	skip "the threads: strace cannot trace here"
fi

# -j wants a count
for bad in 0 -1 x 65; do
	"$P" cp -r -j "$bad" src bad 2>err; rc=$?
	[ "$rc" -ne 0 ] || fail $LINENO "-j $bad accepted"
	grep -q "invalid --jobs" err || fail $LINENO "-j $bad: $(cat err)"
done
exit 0
