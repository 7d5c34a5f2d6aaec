#!/bin/sh
# psplice relay's messages: workers that report at once (-j 4, every
# connect to the target refused) write whole lines, one "psplice:" each, and
# under TSan (make check-tsan) share no formatting buffer; out of fds
# (ulimit -n), accept's error is said once and then counted, while the open
# connections still carry data; the first SIGINT says how many connections
# it drains and lets them finish, a second stops the relay at once, killed
# by SIGINT as an interrupted program is. Every wait is bounded.
[ -z "${BASH_VERSION:-}" ] && command -v bash >/dev/null && exec bash "$0" "$@"
name=t_cli_relay_msg; . "$(dirname "$0")/cli-lib.sh"
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 missing"; exit 77; }
pids=
cli_cleanup() { for p in $pids; do kill "$p" 2>/dev/null; done; }
# Ended with the given status (a wait of a pid already reaped says 127).
ended() { wait "$2"; rc=$?; rc_is "$1" "$3"; }

cat > peer.py <<'EOF'
import os, socket, sys, threading, time
from relay_peers import echo_back, ready

def connect(addr, timeout=10):
    if addr.startswith("unix:"):
        c = socket.socket(socket.AF_UNIX)
        c.settimeout(timeout)
        c.connect(addr[5:])
        return c
    host, port = addr.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=timeout)


echo_one = echo_back

def echo(portfile):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(512)
    ready(portfile, str(s.getsockname()[1]))
    while True:
        c, _ = s.accept()
        threading.Thread(target=echo_one, args=(c,), daemon=True).start()

def ping(c, data):
    c.sendall(data)
    got = b""
    while len(got) < len(data):
        b = c.recv(len(data) - len(got))
        if not b:
            break
        got += b
    return got == data

# n connections, 50 at a time, each until the relay closes it.
def storm(addr, n):
    def one():
        try:
            c = connect(addr)
            c.recv(10)
            c.close()
        except OSError:
            pass
    for _ in range(n // 50):
        ths = [threading.Thread(target=one) for _ in range(50)]
        for t in ths:
            t.start()
        for t in ths:
            t.join()

# Three connections that echo, then n that the relay has no fds for; after
# secs the three still echo.
def emfile(addr, n, secs):
    live = [connect(addr) for _ in range(3)]
    if not all(ping(c, b"before %d" % i) for i, c in enumerate(live)):
        sys.exit("the first connections did not echo")
    idle = [connect(addr) for _ in range(n)]
    time.sleep(secs)
    for i, c in enumerate(live):
        if not ping(c, b"after %d" % i):
            sys.exit("connection %d stopped relaying" % i)

# One transfer of n bytes in 64 KiB steps, slowly, every byte echoed.
def slow(addr, n, readyfile):
    c = connect(addr, 30)
    if not ping(c, b"hello"):
        sys.exit("no echo")
    ready(readyfile, "1")
    data = os.urandom(n)
    for i in range(0, n, 65536):
        if not ping(c, data[i:i + 65536]):
            sys.exit("cut after %d bytes" % i)
        time.sleep(0.05)
    c.close()

# A connection that stays open until the relay closes it (30 s at most).
def hold(addr, readyfile):
    c = connect(addr, 30)
    if not ping(c, b"hello"):
        sys.exit("no echo")
    ready(readyfile, "1")
    try:
        while c.recv(100):
            pass
        print("fin")
    except ConnectionResetError:
        print("rst")

m = sys.argv[1]
if m == "echo":
    echo(sys.argv[2])
elif m == "storm":
    storm(sys.argv[2], int(sys.argv[3]))
elif m == "emfile":
    emfile(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
elif m == "slow":
    slow(sys.argv[2], int(sys.argv[3]), sys.argv[4])
elif m == "hold":
    hold(sys.argv[2], sys.argv[3])
EOF

python3 peer.py echo echo.port >echo.log 2>&1 &
pids="$pids $!"
wait_for echo.port . || fail $LINENO "the echo server did not start"
eport=$(cat echo.port)

# relay LOG OPTIONS...: a relay with -v whose SIGINT is not ignored (a shell
# starts a background job with SIGINT ignored); its pid in $rpid, its port
# in $rport.
relay() {
	log=$1; shift
	: >"$log"  # no earlier relay's lines for wait_for to find
	python3 -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execvp(sys.argv[1], sys.argv[1:])' "$P" relay "$@" 2>"$log" &
	rpid=$!; pids="$pids $rpid"
}
relay_v() {
	log=$1
	relay "$@"
	wait_for "$log" "listening on" || fail $LINENO "the relay did not start: $(cat "$log")"
	rport=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\),.*/\1/p' "$log")
}
# What a sanitizer reported, said in full.
clean_log() {
	! grep -q -E "ThreadSanitizer|AddressSanitizer|runtime error" "$2" ||
		fail "$1" "sanitizer report: $(grep -A20 -E 'Sanitizer|runtime error' "$2" | head -40)"
}

# Four workers, each connect refused: every line whole, one prefix each.
dead=$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])")
n=2000
relay_v race.log -v -j 4 --reuseport 127.0.0.1:0 127.0.0.1:$dead
timeout 120 python3 peer.py storm 127.0.0.1:$rport $n || fail $LINENO "the clients did not finish"
i=0
while [ "$(grep -c 'cannot connect' race.log)" -lt $n ] && kill -0 $rpid 2>/dev/null; do
	i=$((i + 1)); [ $i -le 100 ] || break; sleep 0.1
done
kill -TERM $rpid
gone $rpid 20 || fail $LINENO "the relay did not end after SIGTERM"
clean_log $LINENO race.log
ended $LINENO $rpid 0
bad=$(grep -v -E "^psplice: relay: (#[0-9]+ 127\.0\.0\.1:[0-9]+ (open|closed: 0 bytes client->target, 0 bytes target->client)|#[0-9]+ 127\.0\.0\.1:[0-9]+: cannot connect to '127\.0\.0\.1:$dead': Connection refused|listening on .*|connections 0 open, [0-9]+ total; .*|draining [0-9]+ connections? \(again to stop now\)|stopping: no connections to drain)$" race.log | head -3)
[ -z "$bad" ] || fail $LINENO "torn or mixed lines: $bad"
is $LINENO $n "$(grep -c 'cannot connect' race.log)"
is $LINENO $n "$(grep -c ' open$' race.log)"

# Out of fds: 3 live connections, then 100 more than the fds allow. Which
# of accept(2) and the target's socket(2) meets the limit depends on how
# many fds are left (a sanitizer's runtime holds some of its own), so
# limits are tried one after another until one makes accept fail again and
# again; one of six must. Each runs 7 s: one line, one count at 5 s, the
# rest counted at the end.
hit=0
for lim in 63 64 65 66 67 68; do
	(ulimit -n $lim && exec python3 -c 'import os, sys; os.execvp(sys.argv[1], sys.argv[1:])' \
		"$P" relay -v -j 2 127.0.0.1:0 127.0.0.1:$eport) 2>emfile.log &
	rpid=$!; pids="$pids $rpid"
	wait_for emfile.log "listening on" || fail $LINENO "the relay did not start: $(cat emfile.log)"
	rport=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\),.*/\1/p' emfile.log)
	timeout 30 python3 peer.py emfile 127.0.0.1:$rport 100 7 >emfile.out 2>&1 ||
		fail $LINENO "ulimit -n $lim: $(cat emfile.out)"
	kill -TERM $rpid
	gone $rpid 20 || fail $LINENO "the relay did not end after SIGTERM"
	clean_log $LINENO emfile.log
	ended $LINENO $rpid 0
	accepts=$(grep -c "accept" emfile.log)
	[ "$accepts" -le 4 ] || fail $LINENO "ulimit -n $lim: $accepts lines about accept in 7 s: $(grep accept emfile.log | head -5)"
	[ "$accepts" -eq 0 ] || is $LINENO "psplice: relay: accept: Too many open files" \
		"$(grep accept emfile.log | head -1)"
	! grep -q -E "^psplice: relay: accept: Too many open files \([0-9]+ more in the last [0-9]+ s\)$" \
		emfile.log || hit=1
	[ $hit -eq 0 ] || break
done
[ $hit -eq 1 ] || fail $LINENO "accept never failed again and again, or it was not counted"

# SIGINT with no connection: the relay ends at once, exit 0.
relay_v int0.log -v 127.0.0.1:0 127.0.0.1:$eport
kill -INT $rpid
gone $rpid 5 || fail $LINENO "SIGINT with no connection did not end the relay"
ended $LINENO $rpid 0

# The first SIGINT, without -v: said, and the open connection's transfer
# completes before the relay exits 0.
relay drain.log -j 2 unix:"$d/r.sock" 127.0.0.1:$eport
i=0
while [ ! -S "$d/r.sock" ]; do
	i=$((i + 1)); [ $i -le 100 ] || fail $LINENO "the relay did not listen: $(cat drain.log)"; sleep 0.1
done
timeout 60 python3 peer.py slow unix:"$d/r.sock" 2097152 slow.ready >slow.out 2>&1 &
client=$!
wait_for slow.ready . || fail $LINENO "the slow client did not connect: $(cat slow.out)"
kill -INT $rpid
wait_for drain.log draining || fail $LINENO "the first SIGINT said nothing"
kill -0 $rpid 2>/dev/null || fail $LINENO "the relay did not wait for its connection"
wait $client || fail $LINENO "the transfer did not complete: $(cat slow.out)"
gone $rpid 20 || fail $LINENO "the relay did not end after its connection"
clean_log $LINENO drain.log
ended $LINENO $rpid 0
cp drain.log err
err_is $LINENO "psplice: relay: draining 1 connection (again to stop now)"

# A second SIGINT while a connection is open stops the relay at once.
relay_v int2.log -v --drain-timeout 30 127.0.0.1:0 127.0.0.1:$eport
timeout 60 python3 peer.py hold 127.0.0.1:$rport hold.ready >hold.out 2>&1 &
client=$!
wait_for hold.ready . || fail $LINENO "the client did not connect: $(cat hold.out)"
kill -INT $rpid
wait_for int2.log "draining 1 connection \(again to stop now\)" ||
	fail $LINENO "the first SIGINT did not say what it drains: $(cat int2.log)"
sleep 0.3
kill -0 $rpid 2>/dev/null || fail $LINENO "the relay ended at the first SIGINT with a connection open"
kill -INT $rpid
gone $rpid 3 || fail $LINENO "a second SIGINT did not stop the relay at once"
clean_log $LINENO int2.log
ended $LINENO $rpid 130
gone $client 3 || fail $LINENO "the client's connection was not closed"
wait $client || fail $LINENO "the held connection: $(cat hold.out)"
# Cut where it stood: the client must not take that for an end.
is $LINENO rst "$(cat hold.out)"
grep -q '^psplice: relay: stopping now: 1 connection cut$' int2.log ||
	fail $LINENO "the second SIGINT did not say what it cut: $(cat int2.log)"
# The connection's own line says how it ended: the worker cut it before
# the relay went, rather than the relay dying under it.
grep -q -E '^psplice: relay: #1 127\.0\.0\.1:[0-9]+ cut by a second stop signal: 5 bytes client->target, 5 bytes target->client; reset$' int2.log ||
	fail $LINENO "no line for the connection cut: $(cat int2.log)"

# The same in the JSON log: a record for the connection cut, its end the
# stop signal, reset.
relay_v term2.log -v --log-format=json --log=term2.json --drain-timeout 30 127.0.0.1:0 127.0.0.1:$eport
timeout 60 python3 peer.py hold 127.0.0.1:$rport hold2.ready >hold2.out 2>&1 &
client=$!
wait_for hold2.ready . || fail $LINENO "the client did not connect: $(cat hold2.out)"
kill -TERM $rpid
wait_for term2.log "draining 1 connection" || fail $LINENO "no drain: $(cat term2.log)"
kill -TERM $rpid
gone $rpid 5 || fail $LINENO "a second SIGTERM did not stop the relay"
clean_log $LINENO term2.log
ended $LINENO $rpid 143
wait $client || fail $LINENO "the held connection: $(cat hold2.out)"
is $LINENO rst "$(cat hold2.out)"
is $LINENO 1 "$(grep -c . term2.json)"
python3 -c '
import json, sys
o = json.loads(open(sys.argv[1]).readline())
want = dict(end="stop_signal", reset=True, bytes_to_target=5, bytes_to_client=5)
got = {k: o.get(k) for k in want}
sys.exit(0 if got == want else "want %s, got %s" % (want, got))' term2.json ||
	fail $LINENO "the record: $(cat term2.json)"
exit 0
