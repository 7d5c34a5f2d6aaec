#!/bin/sh
# psplice exec: real programs (dd, cp, tar, python) under the preload
# library write the same bytes and exit the same way as without it; the
# file's own dirty+writeback pages stay bounded while it is written and its
# pages are gone from the cache after; pages another process had cached
# stay cached under --read-behind, and pages the command brought in do not;
# a failing write (a full tmpfs) fails with the same message and status;
# children (sh -c) are covered; without the configuration nothing happens.
[ -z "${BASH_VERSION:-}" ] && command -v bash >/dev/null && exec bash "$0" "$@"
name=t_cli_exec; . "$(dirname "$0")/cli-lib.sh"
top=$(cd "$(dirname "$0")/.." && pwd)
lib=$(dirname "$P")/libpsplice-preload.so
cs() { python3 "$top/tests/cachestat.py" "$@"; }
[ -r "$lib" ] || fail $LINENO "$lib is not built"
python3 -c 'import ctypes' 2>/dev/null || { skip "python3 with ctypes is not installed"; exit 77; }
cs /dev/null >/dev/null; [ $? -eq 77 ] && { skip "cachestat(2) needs Linux 6.5"; exit 77; }
M=1048576
# cached FILE: the bytes of FILE in the page cache
cached() { cs "$1" | cut -d' ' -f1; }
# below LINE WHAT BYTES LIMIT
below() { [ "$3" -le "$4" ] || fail "$1" "$2: $3 bytes, want at most $4"; }

# Exit status: the command's own; 127 not found, 126 not runnable.
$P exec -- sh -c 'exit 7'; rc=$?; rc_is $LINENO 7
$P exec -- false; rc=$?; rc_is $LINENO 1
$P exec -- ./no-such-command 2>err; rc=$?; rc_is $LINENO 127
err_is $LINENO "psplice: cannot run './no-such-command': No such file or directory"
$P exec 2>err; rc=$?; rc_is $LINENO 1
$P exec --sync=sometimes -- true 2>/dev/null; rc=$?; rc_is $LINENO 1
PSPLICE_PRELOAD=$d/none.so $P exec -- true 2>err; rc=$?; rc_is $LINENO 125
# --help says the exit status once, and what it is (issue 40: it also said
# "0 on success, 1 on any error", which a command's own status belies).
$P exec --help >help; rc=$?; rc_is $LINENO 0
is $LINENO 1 "$(grep -c -i 'exit status' help)"
grep -q "The exit status is COMMAND's; 125 .*" help || fail $LINENO "$(cat help)"
grep -q '1 for a usage error' help || fail $LINENO "$(cat help)"
grep -q '0 on success, 1 on any error' help && fail $LINENO "$(cat help)"
# The others keep theirs.
$P cat --help | grep -q '^Exit status is 0 on success, 1 on any error.$' ||
	fail $LINENO "cat --help lost its exit status"
# The environment the command sees; an LD_PRELOAD there is kept, first.
is $LINENO "/x.so:$lib" "$(LD_PRELOAD=/x.so $P exec -- sh -c 'echo "$LD_PRELOAD"' 2>/dev/null)"
is $LINENO "chunk=1048576,min=0,sync=data,read-behind=1,verbose=0" \
	"$($P exec --chunk=1M --min-size=0 --sync=data --read-behind -- printenv PSPLICE_EXEC)"

# -v, a program that will not load the library: said before it runs, and
# only with -v. A static one, a script whose interpreter is one, and a
# set-user-ID one (the loader then ignores LD_PRELOAD: its maps show no
# library, where the same program's without the bit do).
say_static="psplice exec: './st' is statically linked: nothing is paced"
printf 'int main(void) { return 3; }\n' >st.c
if cc -static -o st st.c 2>/dev/null; then
	$P exec -v -- ./st 2>err; rc=$?; rc_is $LINENO 3
	is $LINENO "$say_static" "$(tail -n 1 err)"
	$P exec -- ./st 2>err; rc=$?; rc_is $LINENO 3
	err_is $LINENO
	printf '#!%s/st\n' "$d" >st.sh && chmod +x st.sh
	$P exec -v -- ./st.sh 2>err; rc=$?; rc_is $LINENO 3
	is $LINENO "psplice exec: './st.sh' runs '$d/st', which is statically linked: nothing is paced" \
		"$(tail -n 1 err)"
else
	skip "cc -static cannot link (libc6-dev's libc.a)"
fi
cc -o dyn st.c || fail $LINENO "cc cannot build a program"
$P exec -v -- ./dyn 2>err; rc=$?; rc_is $LINENO 3
is $LINENO 1 "$(wc -l <err)"
# A program for another machine (e_machine, at byte 18, made EM_ARM): the
# kernel will not run it (execvp then hands it to sh, which fails), but -v
# has said first why nothing would be paced.
cp dyn arm && printf '\050\000' | dd of=arm bs=1 seek=18 conv=notrunc status=none ||
	fail $LINENO "cannot patch a copy of dyn"
$P exec -v -- ./arm 2>err; rc=$?
is $LINENO "psplice exec: './arm' is built for another machine or word size than the library: nothing is paced" \
	"$(sed -n 2p err)"
# A FIFO named as the program, or as a script's interpreter: execve(2)
# refuses it (126) at once, and -v, which reads the file first, must not
# wait in its open for a writer that never comes.
mkfifo fifo && chmod +x fifo || fail $LINENO "cannot make a FIFO"
printf '#!%s/fifo\n' "$d" >fifo.sh && chmod +x fifo.sh
for prog in ./fifo ./fifo.sh; do
	timeout 10 $P exec -v -- $prog 2>err; rc=$?; rc_is $LINENO 126
done
cp "$(command -v cat)" mycat || fail $LINENO "cannot copy cat"
$P exec -v -- ./mycat /proc/self/maps >maps 2>err; rc=$?; rc_is $LINENO 0
is $LINENO 1 "$(wc -l <err)"
grep -q libpsplice-preload maps || fail $LINENO "the library is not in a plain cat's maps"
# The loader run as the program (ld.so PROG) has no PT_INTERP either, but
# it loads the preload library into the program it runs: nothing to say.
# A static-pie program, shaped like it (ET_DYN) but without a DT_SONAME, is.
ld=$(sed -n 's/.*interpreter: \(.*\)]/\1/p' <<EOF_LD
$(LC_ALL=C readelf -l mycat 2>/dev/null)
EOF_LD
)
if [ -n "$ld" ]; then
	$P exec -v -- "$ld" ./mycat /proc/self/maps >maps 2>err; rc=$?; rc_is $LINENO 0
	is $LINENO 1 "$(wc -l <err)"
	grep -q libpsplice-preload maps || fail $LINENO "the library is not in the maps of cat run by $ld"
else
	skip "readelf cannot name the loader (binutils)"
fi
if cc -static-pie -o stp st.c 2>/dev/null; then
	$P exec -v -- ./stp 2>err; rc=$?; rc_is $LINENO 3
	is $LINENO "psplice exec: './stp' is statically linked: nothing is paced" "$(tail -n 1 err)"
else
	skip "cc -static-pie cannot link (libc6-dev's rcrt1.o)"
fi
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1 && chown nobody mycat && chmod u+s mycat &&
	python3 -c 'import os, sys; sys.exit(os.statvfs(".").f_flag & os.ST_NOSUID)'; then
	$P exec -v -- ./mycat /proc/self/maps >maps 2>err; rc=$?; rc_is $LINENO 0
	! grep -q libpsplice-preload maps || fail $LINENO "the library is in a set-user-ID cat's maps"
	is $LINENO "psplice exec: './mycat' is set-user-ID (the loader then ignores LD_PRELOAD): nothing is paced" \
		"$(tail -n 1 err)"
else
	skip "a set-user-ID program needs root, the user nobody and a mount without nosuid"
fi

# dd of 256 MiB: the same bytes; while it ran, the file's dirty+writeback
# pages (sampled every 10 ms) stayed within a few 8 MiB chunks, and after,
# its pages are out of the cache, where plain dd leaves them all.
head -c $((M + 12345)) /dev/urandom >seed
for i in 1 2 3 4 5 6 7 8; do cat seed seed seed seed; done >src.1
for i in 1 2 3 4 5 6 7 8; do cat src.1; done >src && rm src.1
dd if=src of=plain bs=1M status=none; rc=$?; rc_is $LINENO 0
peak=$(cs --watch paced -- $P exec -- dd if=src of=paced bs=1M status=none); rc=$?
rc_is $LINENO 0
below $LINENO "peak dirty+writeback of dd's file" "$peak" $((32 * M))
below $LINENO "pages of dd's file cached after" "$(cached paced)" $((16 * M))
same $LINENO plain paced
[ "$(cached plain)" -ge $((200 * M)) ] || skip "plain dd's file was not cached (memory pressure?)"

# cp (copy_file_range or read/write, as cp chooses) and tar xf.
rm -f paced
$P exec -- cp src copy; rc=$?; rc_is $LINENO 0
below $LINENO "pages of cp's copy cached after" "$(cached copy)" $((16 * M))
same $LINENO src copy
mkdir tree out && cp src tree/big && cp seed tree/small && echo x >tree/tiny &&
	tar cf tree.tar tree || fail $LINENO "cannot make tree.tar"
rm -f copy
$P exec -- tar xf tree.tar -C out; rc=$?; rc_is $LINENO 0
below $LINENO "pages of tar's big file cached after" "$(cached out/tree/big)" $((16 * M))
diff -r tree out/tree || fail $LINENO "tar xf under psplice exec changed the tree"
rm -rf out tree tree.tar

# python: os.write in 1 MiB pieces is paced; a file written through mmap
# passes through, the same bytes either way.
cat >w.py <<'EOF'
import mmap, os, sys
data = open("seed", "rb").read()
fd = os.open("py.out", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
for i in range(24):
    os.write(fd, data)
os.close(fd)
with open("py.map", "w+b") as f:
    f.truncate(len(data) * 4)
    m = mmap.mmap(f.fileno(), len(data) * 4)
    for i in range(4):
        m[i * len(data):(i + 1) * len(data)] = data
    m.close()
EOF
$P exec -- python3 w.py; rc=$?; rc_is $LINENO 0
below $LINENO "pages of python's os.write file cached after" "$(cached py.out)" $((16 * M))
for i in $(seq 24); do cat seed; done >want.out
same $LINENO want.out py.out
cat seed seed seed seed >want.map
same $LINENO want.map py.map
rm -f want.out py.out want.map py.map

# Children: sh -c runs two dd; each is paced (-v: one summary each).
$P exec -v -- sh -c 'dd if=src of=c1 bs=1M status=none && dd if=src of=c2 bs=256k status=none' \
	2>err; rc=$?; rc_is $LINENO 0
is $LINENO 2 "$(grep -c 'paced 1 file, 259 MiB written' err)"
below $LINENO "pages of the first child's file" "$(cached c1)" $((16 * M))
below $LINENO "pages of the second child's file" "$(cached c2)" $((16 * M))
same $LINENO src c1
same $LINENO src c2
rm -f c1 c2

# --read-behind: a file another process had cached stays fully cached; a
# file that was not cached is dropped after it was read; one cached in part
# keeps exactly its cached part. A machine that pages out idle page cache
# on its own (a DAMON pageout scheme, /sys/kernel/mm/damon: seen here
# taking 4 MiB of a file cat had just read, and once all of an 8 MiB range
# read a moment before, since its regions are coarser than one file) would
# make "kept" unmeasurable: as root, its running schemes are paused for
# these checks and started again after, as they were.
damon_paused=
damon_resume() {
	for s in $damon_paused; do echo on >"$s"; done
	damon_paused=
}
for s in /sys/kernel/mm/damon/admin/kdamonds/*/state; do
	[ -w "$s" ] && [ "$(cat "$s" 2>/dev/null)" = on ] && echo off >"$s" 2>/dev/null &&
		damon_paused="$damon_paused $s"
done
cli_cleanup() { damon_resume; }
cat plain >/dev/null
before=$(cached plain)
$P exec --read-behind -- cat plain >/dev/null; rc=$?; rc_is $LINENO 0
is $LINENO "$before" "$(cached plain)"
$P exec --read-behind -- dd if=src of=/dev/null bs=1M status=none; rc=$?; rc_is $LINENO 0
dd if=/dev/null of=src oflag=sync conv=notrunc,fsync status=none
python3 -c 'import os; fd = os.open("src", os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)'
below $LINENO "src cached before the read-behind run" "$(cached src)" $((1 * M))
$P exec --read-behind -- cat src >/dev/null; rc=$?; rc_is $LINENO 0
below $LINENO "pages of src cached after cat --read-behind" "$(cached src)" $((1 * M))
# A machine may page out idle page cache on its own (here a DAMON pageout
# scheme, /sys/kernel/mm/damon: pages of a file no process touched went
# at about 32 KiB a second): 64 KiB of slack, against the 8 MiB that would
# go if read-behind dropped them.
# cat asks fstat of its input, and the first read is judged by what that
# said: exactly the cached part stays. dd asks none: its first read (64 KiB
# here) is counted, not judged, so that a file read in one call costs
# nothing; what that read and the readahead behind it brought in is taken
# for cached before and kept (256 KiB seen), the rest is dropped.
partly_cached() {
	python3 -c 'import os; fd = os.open("src", os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)'
	python3 -c 'import os; fd = os.open("src", os.O_RDONLY); os.pread(fd, 8 << 20, 64 << 20)'
	part=$(cached src)
	[ "$part" -ge $((8 * M - 65536)) ] || fail $LINENO "the 8 MiB read is not cached ($part)"
}
partly_cached
$P exec --read-behind -- cat src >/dev/null; rc=$?; rc_is $LINENO 0
after=$(cached src)
[ "$after" -le "$part" ] && [ "$after" -ge $((part - 65536)) ] ||
	fail $LINENO "cached after cat --read-behind: $after bytes, $part before"
partly_cached
$P exec --read-behind -- dd if=src of=/dev/null bs=64k status=none; rc=$?; rc_is $LINENO 0
after=$(cached src)
[ "$after" -le $((part + 1 * M)) ] && [ "$after" -ge $((part - 65536)) ] ||
	fail $LINENO "cached after dd --read-behind: $after bytes, $part before"
damon_resume
cli_cleanup() { :; }

# A full filesystem: the same message and status with and without.
if [ "$(id -u)" = 0 ] && mkdir full && mount -t tmpfs -o size=1m tmpfs full 2>/dev/null; then
	cli_cleanup() { umount "$d/full" 2>/dev/null; }
	dd if=src of=full/a bs=64k count=40 2>want; want_rc=$?
	rm -f full/a
	$P exec --min-size=0 --chunk=64K -- dd if=src of=full/a bs=64k count=40 2>err; rc=$?
	rc_is $LINENO "$want_rc"
	[ "$want_rc" -ne 0 ] || fail $LINENO "dd onto a full tmpfs succeeded"
	# dd's statistics carry times; the records and the error must match.
	grep -v copied want >want.1 && grep -v copied err >err.1
	same $LINENO want.1 err.1
	grep -q 'No space left on device' err || fail $LINENO "dd's error: $(cat err)"
	umount full && cli_cleanup() { :; }
else
	skip "full-filesystem check needs root and a tmpfs mount"
fi

# Off means off: the library without PSPLICE_EXEC, or with one it does not
# understand, makes no call of its own; --sync=data syncs large files and
# leaves small ones alone.
if command -v strace >/dev/null; then
	calls='trace=fadvise64,sync_file_range,fdatasync,fsync'
	for env in "" "PSPLICE_EXEC=chunk=1M,bogus=1" "PSPLICE_EXEC=chunk=0"; do
		env $env LD_PRELOAD="$lib" strace -f -qq -e "$calls" -o trace \
			dd if=src of=off bs=1M status=none || fail $LINENO "dd failed ($env)"
		[ ! -s trace ] || fail $LINENO "'$env': calls made: $(head -3 trace)"
	done
	same $LINENO src off
	rm -f off
	strace -f -qq -e "$calls" -o trace $P exec --sync=data -- sh -c \
		'dd if=src of=big bs=1M status=none; for i in 1 2 3 4 5; do echo $i >small$i; done' ||
		fail $LINENO "sh failed under strace"
	grep -q sync_file_range trace || fail $LINENO "no sync_file_range under psplice exec"
	is $LINENO 1 "$(grep -c 'fdatasync(' trace)"

	# Small files cost no call of the library's own: N files of 4 KiB
	# written, then read twice, under --read-behind; 300 files against none.
	# A file written below --min-size: no fstat, fcntl or lseek per write.
	# A file read: judged by the program's own fstat (python's open asks
	# one), or, read without one, its first read is counted, and being short
	# of what it asked, it found the end of a small file.
	cat >small.py <<'EOF'
import os, sys
os.mkdir("sm")
for i in range(int(sys.argv[1])):
    with open("sm/%d" % i, "wb") as f:
        f.write(b"x" * 4096)
for i in range(int(sys.argv[1])):
    with open("sm/%d" % i, "rb") as f:
        f.read()
    fd = os.open("sm/%d" % i, os.O_RDONLY)
    while os.read(fd, 65536):
        pass
    os.close(fd)
EOF
	# n TRACE CALL: how many times CALL was made
	n() { grep -c "^[0-9]* *$2(" "$1"; }
	calls='trace=fstat,newfstatat,fcntl,lseek'
	for files in 0 300; do
		strace -f -qq -e "$calls" -o "plain.$files" python3 small.py $files ||
			fail $LINENO "python failed"
		rm -rf sm
		strace -f -qq -e "$calls" -o "ours.$files" $P exec --read-behind -- \
			python3 small.py $files || fail $LINENO "python failed under psplice exec"
		rm -rf sm
	done
	# The calls the 300 files cost, with the library and without.
	for c in fcntl lseek newfstatat; do
		more=$(($(n ours.300 $c) - $(n ours.0 $c) - $(n plain.300 $c) + $(n plain.0 $c)))
		[ "$more" -le 5 ] ||
			fail $LINENO "$c: 300 small files cost $more calls more, want none"
	done

	# A file in memory only (tmpfs) is not followed: the library makes no
	# call of its own for it, past one fstatfs per process for the
	# filesystem (cat reads three files: one), where the same commands on
	# the scratch filesystem (a disk) are paced and read-behind.
	mem=
	if [ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ] &&
		mem=$(mktemp -d /dev/shm/t_cli_exec.XXXXXX); then
		cli_cleanup() { rm -rf "$mem"; }
	elif [ "$(id -u)" = 0 ] && mkdir mem && mount -t tmpfs -o size=64m tmpfs mem 2>/dev/null; then
		mem=$d/mem
		cli_cleanup() { umount "$d/mem"; }
	fi
	# three.sh DIR: dd copies DIR/in to three files in DIR, cat reads them
	cat >three.sh <<'EOF'
for i in 1 2 3; do
	dd if="$1/in" of="$1/f$i" bs=1M status=none || exit
done
cat "$1/f1" "$1/f2" "$1/f3" >/dev/null
EOF
	# traced OUT DIR [EXEC]: three.sh DIR under strace, with psplice exec
	# when EXEC is given; OUT keeps the calls from the exec of sh on (not
	# psplice's own, which a sanitizer's runtime adds to)
	traced() {
		o=$1 dir=$2; shift 2
		head -c $((4 * M)) src >"$dir/in" || return
		strace -f -qq -o "$o.all" \
			-e trace=execve,fadvise64,sync_file_range,fstatfs,fstat,newfstatat,fcntl,lseek \
			"$@" sh three.sh "$dir" || return
		awk '/execve\("[^"]*\/sh"/ { on = 1 } on' "$o.all" >"$o"
	}
	# calls TRACE: how many calls wrote back or dropped pages (cat makes
	# an fadvise of its own, POSIX_FADV_SEQUENTIAL)
	calls() { grep -Ec '^[0-9]+ +(fadvise64\(.*DONTNEED|sync_file_range\()' "$1"; }
	exec_args="$P exec --min-size=1M --chunk=1M --read-behind --"
	if [ -n "$mem" ]; then
		traced disk "$d" $exec_args || fail $LINENO "three failed under psplice exec"
		grep -q 'sync_file_range(' disk || fail $LINENO "no write-behind on $d"
		grep -q 'fadvise64(.*DONTNEED' disk || fail $LINENO "no read-behind on $d"
		traced plain "$mem" || fail $LINENO "three failed on tmpfs"
		traced ours "$mem" $exec_args || fail $LINENO "three failed on tmpfs under psplice exec"
		is $LINENO 0 "$(calls ours)"
		same $LINENO "$mem/f3" f3
		# The most fstatfs one process made: 1 (each dd, and cat for its three).
		is $LINENO 1 "$(awk '/fstatfs\(/ { n[$1]++ } END { for (p in n) if (n[p] > m) m = n[p]; print m + 0 }' ours)"
		# No fstat, fcntl or lseek per read or write: at most two per file
		# opened (each dd opens two, cat three).
		more=$(($(grep -Ec '^[0-9]+ +(fstat|newfstatat|fcntl|lseek)\(' ours) -
			$(grep -Ec '^[0-9]+ +(fstat|newfstatat|fcntl|lseek)\(' plain)))
		[ "$more" -le 18 ] ||
			fail $LINENO "nine tmpfs files opened cost $more calls more, want at most 18"
	else
		skip "no tmpfs: /dev/shm is not one and a tmpfs cannot be mounted"
	fi
else
	skip "strace is not installed"
fi
exit 0
