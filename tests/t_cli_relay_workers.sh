#!/bin/sh
# psplice relay --config: every line is served by the one set of -j
# workers and the one target checker, not by threads of its own. A file
# of 50 lines (unix listeners, each to a unix target not there and a TCP
# echo target, --balance=first, --check-interval=0.2, --max-conns=1) at
# -j 2: the relay has at most 2 + 5 threads (the workers; main, the log's
# writer, the checker, room for a sanitizer's) and at most 50 + 20 fds
# (each listener once, an epoll set and an eventfd a worker, the
# process's own), where threads a line made 151 threads and 250 fds.
# Lines 1, 25 and 50 each echo bytes; a line at its --max-conns leaves the
# others serving, and its client waiting is served once a slot is free.
# SIGUSR2 with 60 lines: the new relay serves the lines added and kept,
# its threads and fds as bounded, and the lines that found the unix target
# down find it up once it listens. Loopback only; every wait and every
# peer is bounded.
[ -z "${BASH_VERSION:-}" ] && command -v bash >/dev/null && exec bash "$0" "$@"
name=t_cli_relay_workers; . "$(dirname "$0")/cli-lib.sh"
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 missing"; exit 77; }
pids=
cli_cleanup() {
	for p in $pids; do
		kill "$p" 2>/dev/null
	done
}

cat >peers.py <<'PY'
import asyncio, os, socket, sys, time
from relay_peers import echo, ready, recv_all

# Through unix socket PATH: N random bytes, the end of stream, and the
# same bytes back.
def through(path, n):
    data = os.urandom(n)
    c = socket.socket(socket.AF_UNIX)
    c.settimeout(20)
    c.connect(path)
    c.sendall(data)
    c.shutdown(socket.SHUT_WR)
    got = recv_all(c)
    if got != data:
        sys.exit("%s: %d bytes sent, %d back, %s" % (path, n, len(got),
                 "the same" if got == data else "not the same"))

# Connected to PATH until the file "release" is there.
def hold(path):
    c = socket.socket(socket.AF_UNIX)
    c.connect(path)
    ready("held", "1")
    while not os.path.exists("release"):
        time.sleep(0.05)
    c.close()

if sys.argv[1] == "echo":
    asyncio.run(echo(sys.argv[2], secs=100))
elif sys.argv[1] == "hold":
    hold(sys.argv[2])
elif sys.argv[1] == "listen":
    s = socket.socket(socket.AF_UNIX)
    s.bind(sys.argv[2])
    s.listen(64)
    time.sleep(60)
else:
    through(sys.argv[2], int(sys.argv[3]))
PY
timeout 110 python3 peers.py echo tport &
pids="$pids $!"
wait_for tport . || fail $LINENO "the echo target did not start"
tport=$(cat tport)

# lines N: a config file of N lines, unix:$d/sK to unix:$d/late, which
# is not there (down after a line's first connect, then probed), or else
# to the echo target.
opts="--balance=first --check-interval=0.2"
lines() {
	for k in $(seq 1 "$1"); do
		echo "unix:$d/s$k unix:$d/late 127.0.0.1:$tport $opts${2:+ $2}"
	done >c.conf.tmp && mv c.conf.tmp c.conf
}
# bounded PID LINE LISTENERS: threads and fds of the relay within bounds.
bounded() {
	t=$(ls /proc/$1/task | wc -l); f=$(ls /proc/$1/fd | wc -l)
	[ "$t" -le 7 ] || fail $2 "$t threads for $3 lines at -j 2, want 7 at most"
	[ "$f" -le $(($3 + 20)) ] || fail $2 "$f fds for $3 lines at -j 2, want $(($3 + 20)) at most"
}

lines 50 --max-conns=1
$P relay -v -j 2 --config=c.conf 2>r.log &
r0=$!; pids="$pids $r0"
wait_count r.log "listening on" 50 || fail $LINENO "the relay did not start: $(tail -3 r.log)"
for k in 1 25 50; do
	timeout 30 python3 peers.py one "$d/s$k" 100000 || fail $LINENO "line $k does not serve"
done
bounded $r0 $LINENO 50
# A line at its --max-conns pauses its own listener, not the others': with
# line 1's slot held and a client of line 1 waiting, line 2 serves; the
# client waiting is served once the slot is free.
timeout 60 python3 peers.py hold "$d/s1" &
pids="$pids $!"
wait_for held . || fail $LINENO "cannot hold a connection to line 1"
timeout 60 python3 peers.py one "$d/s1" 1000 &
q=$!
timeout 30 python3 peers.py one "$d/s2" 100000 || fail $LINENO "line 2 does not serve while line 1 is full"
kill -0 $q 2>/dev/null || fail $LINENO "line 1 served a client over its --max-conns"
touch release
wait $q || fail $LINENO "the client waiting for line 1 was not served"

lines 60
kill -USR2 $r0
wait_for r.log "serves in place" || fail $LINENO "the reload did not take over: $(tail -3 r.log)"
r1=$(served_by r.log 1); pids="$pids $r1"
gone $r0 || fail $LINENO "the old relay did not end"
for k in 1 50 55 60; do
	timeout 30 python3 peers.py one "$d/s$k" 100000 || fail $LINENO "line $k does not serve after the reload"
done
bounded $r1 $LINENO 60
# One checker probes every line's targets: the 4 lines that found
# unix:late down find it up once it listens.
timeout 60 python3 peers.py listen "$d/late" &
pids="$pids $!"
wait_count r.log "target .*late.* is up again" 4 ||
	fail $LINENO "want 4 lines to find unix:late up: $(grep late r.log | tail -5)"
bounded $r1 $LINENO 60
kill $r1
gone $r1 || fail $LINENO "the relay did not end"
exit 0
