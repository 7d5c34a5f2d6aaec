#!/bin/sh
# psplice cp while its source changes, as psplice-cp(1) defines it: cp copies
# the source as it is while it runs, to the end the file has when the copy
# gets there. Cut short ahead of the copy, DEST ends at the new end; grown
# before the copy gets to its end, DEST has the new bytes too; cp exits 0
# in both cases (a changing source is not an error, as with cp(1)). Made
# deterministic with a FIFO as DEST: its reader takes 64 KiB, the copy then
# waits on the full FIFO far behind the point where the source changes.
[ -z "${BASH_VERSION:-}" ] && command -v bash >/dev/null && exec bash "$0" "$@"
name=t_cli_fault; . "$(dirname "$0")/cli-lib.sh"
cli_cleanup() { [ -n "${cppid:-}" ] && kill "$cppid" 2>/dev/null; :; }

head -c 8388608 /dev/urandom >orig
head -c 1048576 /dev/urandom >more

# change LINE ACTION: cp orig's copy src into the FIFO, read 64 KiB, run
# ACTION on src, read the rest; cp's status in $rc, what came out in got.
change() {
	cp orig src
	rm -f fifo && mkfifo fifo
	"$P" cp src fifo 2>err &
	cppid=$!
	{
		dd bs=65536 count=1 iflag=fullblock status=none of=got.1 || exit 1
		eval "$2"
		cat >got.2
	} <fifo || fail "$1" "reading the FIFO"
	wait "$cppid"; rc=$?
	cppid=
	cat got.1 got.2 >got
}

# cut to 4 MiB ahead of the copy: exactly the first 4 MiB
change $LINENO 'truncate -s 4194304 src'
rc_is $LINENO 0
err_is $LINENO
head -c 4194304 orig >want
same $LINENO want got

# grown by 1 MiB before the copy reaches the end: every byte, the new ones too
change $LINENO 'cat more >>src'
rc_is $LINENO 0
err_is $LINENO
cat orig more >want
same $LINENO want got

# cut to nothing: what the copy had taken is out, nothing else, exit 0
change $LINENO 'truncate -s 0 src'
rc_is $LINENO 0
err_is $LINENO
n=$(wc -c <got)
[ "$n" -ge 65536 ] && [ "$n" -le 2097152 ] || fail $LINENO "$n bytes after a cut to 0"
head -c 65536 orig >want
head -c 65536 got >got.head
same $LINENO want got.head

# To a regular file while another process keeps cutting and growing the
# source with its own bytes: each DEST is a prefix of orig, as long as cp
# read, never a byte from elsewhere.
cp orig src
( i=0; while [ $i -lt 100 ]; do
	truncate -s $(( (i * 7919 % 2048) * 4096 )) src
	tail -c +$(( (i * 7919 % 2048) * 4096 + 1 )) orig >>src
	i=$((i + 1))
done ) &
mut=$!
k=0
while [ $k -lt 20 ]; do
	"$P" cp src dst 2>err; rc=$?
	rc_is $LINENO 0
	n=$(wc -c <dst)
	head -c "$n" orig >want
	same $LINENO want dst
	k=$((k + 1))
done
wait "$mut"
exit 0
