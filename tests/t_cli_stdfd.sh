#!/bin/sh
# Each subcommand started with standard input, output or error closed does
# what GNU cat, cp and tee do: its own use of that descriptor fails with
# EBADF (said, exit 1), no file or socket it opens takes the descriptor's
# place, and no data is touched. A closed descriptor must not be the next
# open()'s: psplice tee would write its input twice into the file, cp -i
# would read its answer from the source and truncate the destination, cat
# --to would read its own socket. Checked against GNU coreutils where it is
# installed; a running relay and bench are looked at in /proc.
[ -z "${BASH_VERSION:-}" ] && command -v bash >/dev/null && exec bash "$0" "$@"
name=t_cli_stdfd; . "$(dirname "$0")/cli-lib.sh"
command -v python3 >/dev/null || { skip "python3 is needed for the receiving end"; exit 77; }
gnu=
cp --version 2>/dev/null | grep -q 'GNU coreutils' && gnu=1
[ -n "$gnu" ] || skip "GNU coreutils is not installed: not compared with it"
rpid= bpid=
cli_cleanup() {
	for p in $rpid $bpid; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
}

# closed N CMD...: CMD with descriptor N closed; the others: standard input
# from $in, output into out, error into err (left empty when N is 2).
# The status in $rc.
in=/dev/null
closed() {
	n=$1; shift
	: > out; : > err
	case $n in
	0) "$@" <&- >out 2>err ;;
	1) "$@" <"$in" >&- 2>err ;;
	2) "$@" <"$in" >out 2>&- ;;
	esac
	rc=$?
}
# gnu_too LINE N CMD...: when GNU coreutils is here, CMD (a GNU tool) run as
# closed N runs it gives the status psplice gave, which is kept in $rc.
gnu_too() {
	l=$1 n=$2 prc=$rc; shift 2
	[ -n "$gnu" ] || return 0
	mv out out.ps; mv err err.ps
	closed "$n" "$@"
	[ "$rc" -eq "$prc" ] || fail "$l" "GNU $*: exit $rc, psplice $prc"
	mv out.ps out; mv err.ps err; rc=$prc
}
# content_is LINE FILE TEXT: FILE holds exactly TEXT and a newline
content_is() { printf '%s\n' "$3" > want.c; cmp -s want.c "$2" || fail "$1" "$2: '$(cat "$2")'"; }
# on_devnull LINE PID N: descriptor N of process PID is /dev/null, not a
# file or socket the process opened
on_devnull() { is "$1" /dev/null "$(readlink "/proc/$2/fd/$3")"; }
# running PID: the process is there and not a zombie
running() { st=$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null); [ -n "$st" ] && [ "$st" != Z ]; }
# wait_until LINE TEST...: poll TEST for at most 10 s
wait_until() {
	l=$1; shift
	i=0
	until "$@"; do
		i=$((i + 1)); [ $i -le 200 ] || fail "$l" "timed out waiting for: $*"
		sleep 0.05
	done
}
# receive WHERE OUT: a one-connection receiver on WHERE (tcp: loopback, any
# port; else a unix socket path) saving to OUT until EOF, 10 s at most; its
# address in $addr, its pid in $rpid.
receive() {
	rm -f addr "$2"
	python3 - "$1" "$2" addr <<'PY' &
import os, socket, sys
where, out, addrfile = sys.argv[1:4]
if where == "tcp":
    s = socket.socket(); s.bind(("127.0.0.1", 0))
    name = "127.0.0.1:%d" % s.getsockname()[1]
else:
    s = socket.socket(socket.AF_UNIX); s.bind(where)
    name = "unix:" + where
s.listen(1); s.settimeout(10)
open(addrfile + ".tmp", "w").write(name); os.rename(addrfile + ".tmp", addrfile)
with open(out, "wb") as f:
    c, _ = s.accept(); c.settimeout(10)
    while True:
        b = c.recv(1 << 16)
        if not b:
            break
        f.write(b)
PY
	rpid=$!
	wait_until $LINENO test -s addr
	addr=$(cat addr)
}
# received LINE OUT TEXT: the receiver ended and OUT holds TEXT (and a
# newline; nothing at all when TEXT is empty)
received() {
	wait "$rpid"; rpid=
	if [ -z "$3" ]; then is "$1" 0 "$(wc -c < "$2")"; else content_is "$1" "$2" "$3"; fi
}
ebadf_in="psplice: error reading 'standard input': Bad file descriptor"
ebadf_out="psplice: error writing 'standard output': Bad file descriptor"

# --- The cases as first seen.
# tee: its input went once into out and once more into out, on fd 1.
echo data > data
in=data closed 1 "$P" tee t.out; rc_is $LINENO 1
err_is $LINENO "$ebadf_out"
content_is $LINENO t.out data
in=data gnu_too $LINENO 1 tee g.out
# cp -i: the prompt read the source as its answer and truncated dst.
echo yes > src; echo old > dst
closed 0 "$P" cp -i src dst; rc_is $LINENO 1
err_is $LINENO "psplice: overwrite 'dst'? $ebadf_in"
content_is $LINENO dst old
echo old > g.dst; gnu_too $LINENO 0 cp -i src g.dst
content_is $LINENO g.dst old
# Several files: each is asked and kept, the read error said once.
mkdir -p many.s many.d
for f in a b c; do echo new > many.s/$f; echo old > many.d/$f; done
closed 0 "$P" cp -i many.s/a many.s/b many.s/c many.d; rc_is $LINENO 1
is $LINENO 1 "$(grep -c 'error reading' err)"
is $LINENO 3 "$(grep -o 'overwrite' err | wc -l)"
is $LINENO "old old old" "$(cat many.d/a many.d/b many.d/c | tr '\n' ' ' | sed 's/ $//')"
# cp -v: the report, on standard output, went inside d. Lost, it fails the
# command, as cp -v fails when its output cannot be written.
printf 'payload\n' > s
"$P" cp -v s d <&- >&- 2>err; rc=$?; rc_is $LINENO 1
err_is $LINENO "psplice: write error: Bad file descriptor"
content_is $LINENO d payload
if [ -n "$gnu" ]; then cp -v s g.d <&- >&- 2>err; rc=$?; rc_is $LINENO 1; fi
# cat --to: standard input was the socket; cat read its own output.
receive tcp got
closed 0 timeout 10 "$P" cat --to "$addr"; rc_is $LINENO 1
err_is $LINENO "$ebadf_in"
received $LINENO got ""
# tee --to: the socket took fd 1 and the peer got everything twice.
receive tcp got
in=data closed 1 timeout 10 "$P" tee --to "$addr"; rc_is $LINENO 1
err_is $LINENO "$ebadf_out"
received $LINENO got data

# --- What psplice prints itself, checked as it exits.
closed 1 "$P" --version; rc_is $LINENO 1
err_is $LINENO "psplice: write error: Bad file descriptor"
gnu_too $LINENO 1 cat --version
for n in 0 2; do
	closed $n "$P" --version; rc_is $LINENO 0
	grep -q '^psplice ' out || fail $LINENO "--version: '$(cat out)'"
done

# --- Without a /dev/null to put there (an empty /dev in a mount namespace
# of its own), nothing is done: exit 1.
printf 'one\n' > f
ns=
for u in "unshare -rm" "unshare -m"; do
	$u sh -c 'mount -t tmpfs none /dev' 2>/dev/null && { ns=$u; break; }
done
if [ -n "$ns" ]; then
	$ns sh -c 'mount -t tmpfs none /dev && exec "$@"' sh "$P" cp f nodev <&- 2>err; rc=$?
	rc_is $LINENO 1
	err_is $LINENO "psplice: cannot open '/dev/null' on a closed descriptor 0: No such file or directory"
	[ ! -e nodev ] || fail $LINENO "cp ran without a standard input"
else
	skip "no mount namespace here: not run without /dev/null"
fi

# --- cat
for n in 0 1 2; do
	closed $n "$P" cat f
	case $n in
	0) rc_is $LINENO 0; content_is $LINENO out one ;;
	1) rc_is $LINENO 1; err_is $LINENO "$ebadf_out" ;;
	2) rc_is $LINENO 0; content_is $LINENO out one ;;
	esac
	gnu_too $LINENO $n cat f
done
# Standard input itself: an error of that input, the next file still read.
closed 0 "$P" cat - f; rc_is $LINENO 1
err_is $LINENO "$ebadf_in"
content_is $LINENO out one
gnu_too $LINENO 0 cat - f
closed 2 "$P" cat nope f; rc_is $LINENO 1
content_is $LINENO out one
gnu_too $LINENO 2 cat nope f
# The socket of --to on fd 2 got the --verbose line after the data.
receive tcp got
closed 2 timeout 10 "$P" cat --verbose --to "$addr" f; rc_is $LINENO 1
received $LINENO got one

# --- tee: reading a closed input creates the files and fails.
for n in 0 1 2; do
	rm -f t.out
	in=data closed $n "$P" tee t.out
	case $n in
	0) rc_is $LINENO 1; err_is $LINENO "$ebadf_in"; is $LINENO 0 "$(wc -c < t.out)" ;;
	1) rc_is $LINENO 1; err_is $LINENO "$ebadf_out"; content_is $LINENO t.out data ;;
	2) rc_is $LINENO 0; content_is $LINENO out data; content_is $LINENO t.out data ;;
	esac
	in=data gnu_too $LINENO $n tee g.out
done

# --- cp: neither standard descriptor is its own without -i or -v.
for n in 0 1 2; do
	rm -f c.dst
	closed $n "$P" cp f c.dst; rc_is $LINENO 0
	content_is $LINENO c.dst one
	gnu_too $LINENO $n cp f g.dst
	# -i with an answer that cannot be read keeps dst; with the question
	# lost, the answer is still taken but the command fails (GNU cp too).
	echo old > c.dst; echo y > yes
	in=yes closed $n "$P" cp -i f c.dst
	case $n in
	0) rc_is $LINENO 1; content_is $LINENO c.dst old ;;
	1) rc_is $LINENO 0; content_is $LINENO c.dst one ;;
	2) rc_is $LINENO 1; content_is $LINENO c.dst one ;;
	esac
	echo old > g.dst; in=yes gnu_too $LINENO $n cp -i f g.dst
done

# --- sync: nothing of its own on 0 and 1; a lost -v line fails it.
for n in 0 1 2; do
	closed $n "$P" sync f; rc_is $LINENO 0
	closed $n "$P" sync -v f
	[ $n -eq 2 ] && { rc_is $LINENO 1; continue; }
	rc_is $LINENO 0
	grep -qx "psplice: 'f': [a-z-]*" err || fail $LINENO "sync -v said '$(cat err)'"
done

# --- exec: the program gets its standard descriptors as psplice got
# them, closed, and fails as it would on its own.
for n in 0 1 2; do
	closed $n "$P" exec -- sh -c "[ ! -e /proc/\$\$/fd/$n ]"; rc_is $LINENO 0
	closed $n "$P" exec -- cat - f
	mv out out.ps; mv err err.ps; prc=$rc
	closed $n cat - f
	is $LINENO "$rc" "$prc"; same $LINENO out out.ps; same $LINENO err err.ps
done

# --- relay: its sockets are not on 0, 1 or 2, and it relays.
printf 'through the relay\n' > r.in
for n in 0 1 2; do
	receive "$d/target" got
	rm -f listen
	case $n in
	0) "$P" relay -v "unix:$d/listen" "$addr" <&- >/dev/null 2>r.log & ;;
	1) "$P" relay -v "unix:$d/listen" "$addr" </dev/null >&- 2>r.log & ;;
	2) "$P" relay -v "unix:$d/listen" "$addr" </dev/null >/dev/null 2>&- & ;;
	esac
	bpid=$!
	wait_until $LINENO test -S listen
	on_devnull $LINENO $bpid $n
	"$P" cat --to "unix:$d/listen" r.in; rc=$?; rc_is $LINENO 0
	received $LINENO got "through the relay"
	on_devnull $LINENO $bpid $n
	kill -TERM $bpid; wait $bpid; rc=$?; bpid=
	# Its -v lines lost on a closed stderr fail it at the end.
	if [ $n -eq 2 ]; then rc_is $LINENO 1; else rc_is $LINENO 0; fi
	rm -f "$d/target"
done

# --- bench: its table on a closed stdout is a write error; its files are
# not on 0, 1 or 2 while it runs, and what it writes into --out is whole.
for n in 0 1 2; do
	closed $n "$P" bench --help
	case $n in
	1) rc_is $LINENO 1; err_is $LINENO "psplice: write error: Bad file descriptor" ;;
	*) rc_is $LINENO 0; grep -q '^Usage: psplice bench' out || fail $LINENO "bench --help" ;;
	esac
done
mkdir scratch
"$P" bench --quick --only per-call --secs 0.2 --dir scratch --out bout <&- >&- 2>&- &
bpid=$!
wait_until $LINENO sh -c "readlink /proc/$bpid/exe | grep -q 'psplice-bench\$'"
i=0
while running $bpid && [ $i -lt 100 ]; do
	for n in 0 1 2; do
		l=$(readlink "/proc/$bpid/fd/$n") || { running $bpid || break 2; }
		is $LINENO /dev/null "$l"
	done
	i=$((i + 1)); sleep 0.1
done
[ $i -gt 0 ] || fail $LINENO "bench ended before it could be looked at"
wait $bpid; rc=$?; bpid=
rc_is $LINENO 1
is $LINENO kind,group,item "$(head -1 bout/latest.csv | cut -d, -f1-3)"
grep -q '^\[per-call\]' bout/latest.txt || fail $LINENO "latest.txt: $(head -3 bout/latest.txt)"
exit 0
