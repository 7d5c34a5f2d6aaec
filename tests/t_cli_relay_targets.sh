#!/bin/sh
# psplice relay with several targets: --balance=roundrobin spreads
# connections evenly, first keeps to the first target up, leastconn goes to
# the idle one; a target killed mid-run is skipped with no client failing
# (each connection's bytes checked), said down once, and after it comes
# back the checker says it up once and connections reach it again; with
# every target down a client is closed and the relay stays up; a target
# whose connect times out (a listener whose accept queue is full drops the
# SYN) is skipped too, and the JSON record names the target used.
# Loopback only; every wait is bounded.
[ -z "${BASH_VERSION:-}" ] && command -v bash >/dev/null && exec bash "$0" "$@"
name=t_cli_relay_targets; . "$(dirname "$0")/cli-lib.sh"
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 missing"; exit 77; }
pids=
cli_cleanup() { for p in $pids; do kill "$p" 2>/dev/null; done; }

cat > peer.py <<'EOF'
import os, random, socket, sys, time
from relay_peers import ready, serve_threads

# A target named NAME: each connection's bytes come back after "NAME:",
# once the client ended its stream; "hold" gets "NAME:" at once and the
# connection stays open until the client closes it. 60 s at most.
def server(name, portfile, port):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", int(port)))
    s.listen(64)
    s.settimeout(1)
    ready(portfile, str(s.getsockname()[1]))
    def serve(c):
        c.settimeout(30)
        got = b""
        try:
            while True:
                b = c.recv(65536)
                if not b:
                    break
                got += b
                if got == b"hold":
                    c.sendall(name.encode() + b":")
            if got != b"hold":
                c.sendall(name.encode() + b":" + got)
        except OSError:
            pass
        c.close()
    serve_threads(s, serve, 60)

# N connections one after the other, each with its own bytes: prints the
# name of the target that answered each, or "FAIL why" and exits 1. A
# pause between two lets the relay close the last before the next comes
# (the client reads its end of stream before the relay is done with it).
def client(port, n, pause="0"):
    for i in range(int(n)):
        data = ("%d:" % i).encode() + os.urandom(random.randint(1, 70000))
        c = socket.create_connection(("127.0.0.1", int(port)), timeout=20)
        c.sendall(data)
        c.shutdown(socket.SHUT_WR)
        got = b""
        while True:
            b = c.recv(65536)
            if not b:
                break
            got += b
        c.close()
        name, _, back = got.partition(b":")
        if back != data:
            print("FAIL connection %d: %d bytes back of %d" % (i, len(back), len(data)))
            sys.exit(1)
        print(name.decode())
        sys.stdout.flush()
        time.sleep(float(pause))

# K connections held open: prints each one's target, then waits for the
# file "release" (30 s at most).
def hold(port, k):
    cs = []
    for i in range(int(k)):
        c = socket.create_connection(("127.0.0.1", int(port)), timeout=20)
        c.sendall(b"hold")
        got = b""
        while not got.endswith(b":"):
            b = c.recv(100)
            if not b:
                break
            got += b
        print(got.decode().rstrip(":"))
        sys.stdout.flush()
        cs.append(c)
    end = time.time() + 30
    while not os.path.exists("release") and time.time() < end:
        time.sleep(0.1)

# A client whose stream the relay closes unanswered: prints "closed".
def refused(port):
    c = socket.create_connection(("127.0.0.1", int(port)), timeout=20)
    c.sendall(b"x")
    try:
        print("closed" if c.recv(100) == b"" else "answered")
    except ConnectionResetError:
        print("closed")

# A port nobody listens on.
def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    print(s.getsockname()[1])

# A listener whose accept queue is full: a connect to it is not answered
# (the kernel drops the SYN). Prints its port, or "none" when a connect
# is answered all the same.
def blackhole(portfile):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(0)
    port = s.getsockname()[1]
    full = []
    for i in range(4):
        c = socket.socket()
        c.setblocking(False)
        c.connect_ex(("127.0.0.1", port))
        full.append(c)
    time.sleep(0.2)
    t = socket.socket()
    t.settimeout(1)
    try:
        t.connect(("127.0.0.1", port))
        ready(portfile, "none")
        return
    except socket.timeout:
        pass
    ready(portfile, str(port))
    time.sleep(60)

m = sys.argv[1]
if m == "server":
    server(*sys.argv[2:])
elif m == "client":
    client(*sys.argv[2:])
elif m == "hold":
    hold(*sys.argv[2:])
elif m == "refused":
    refused(*sys.argv[2:])
elif m == "free_port":
    free_port()
elif m == "blackhole":
    blackhole(*sys.argv[2:])
EOF

# server NAME [PORT]: a target named NAME, its port in port_NAME, its pid
# in pid_NAME.
server() {
	rm -f "$1.port"
	python3 peer.py server "$1" "$1.port" "${2:-0}" &
	eval "pid_$1=$!"; pids="$pids $!"
	wait_for "$1.port" . || fail $LINENO "target $1 did not start"
	eval "port_$1=$(cat "$1.port")"
}
# relay LOG OPTIONS... TARGETS: a relay with -v whose port is in $rport.
relay() {
	log=$1; shift
	: >"$log"  # no earlier relay's lines for wait_for to find
	"$P" relay -v -j 2 127.0.0.1:0 "$@" 2>"$log" &
	rpid=$!; pids="$pids $rpid"
	wait_for "$log" "listening on" || fail $LINENO "the relay did not start: $(cat "$log")"
	rport=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\),.*/\1/p' "$log")
}
stop_relay() {
	kill -TERM $rpid 2>/dev/null
	wait $rpid; rc=$?
	! grep -q -E "ThreadSanitizer|AddressSanitizer|LeakSanitizer|runtime error" "$log" ||
		fail "$1" "sanitizer report: $(grep -A20 -E 'Sanitizer|runtime error' "$log" | head -40)"
	rc_is "$1" 0
}
# spread LINE FILE WANT: how many connections each target took, "A B C".
spread() {
	got="$(grep -c '^A$' "$2") $(grep -c '^B$' "$2") $(grep -c '^C$' "$2")"
	is "$1" "$3" "$got"
}
client() { # PORT N OUT [PAUSE]
	python3 peer.py client "$1" "$2" "${4:-0}" >"$3" || fail $LINENO "client: $(tail -1 "$3")"
}

server A; server B; server C
T="127.0.0.1:$port_A 127.0.0.1:$port_B 127.0.0.1:$port_C"

# roundrobin, the default: 30 connections, 10 each.
relay rr.log $T
client $rport 30 rr.out
spread $LINENO rr.out "10 10 10"
stop_relay $LINENO

# first: all to A while it is up.
relay first.log --balance=first $T
client $rport 10 first.out
spread $LINENO first.out "10 0 0"
stop_relay $LINENO

# leastconn: one connection held on A, one on B; the next go to C.
relay lc.log --balance=leastconn $T
rm -f release
python3 peer.py hold $rport 2 >held.out &
hpid=$!; pids="$pids $hpid"
wait_for held.out '^B$' || fail $LINENO "held: $(cat held.out)"
is $LINENO "A B" "$(tr '\n' ' ' <held.out | sed 's/ $//')"
client $rport 6 lc.out 0.2
spread $LINENO lc.out "0 0 6"
touch release; wait $hpid
stop_relay $LINENO

# B killed between two runs of connections: none fails, B is said down
# once; back on its port, it is said up once and takes connections again.
relay fo.log --check-interval=1 $T
client $rport 9 fo1.out
spread $LINENO fo1.out "3 3 3"
kill $pid_B; wait $pid_B 2>/dev/null
client $rport 30 fo2.out
spread $LINENO fo2.out "$(grep -c '^A$' fo2.out) 0 $(grep -c '^C$' fo2.out)"
is $LINENO 30 "$(wc -l <fo2.out | tr -d ' ')"
# B's turns are shared by A and C, not all handed to C, the one after it:
# 15 each, give or take the connection that found B gone.
a=$(grep -c '^A$' fo2.out); c=$(grep -c '^C$' fo2.out)
[ "$a" -ge 14 ] && [ "$a" -le 16 ] && [ "$c" -ge 14 ] && [ "$c" -le 16 ] ||
	fail $LINENO "roundrobin with B down: A took $a, C took $c of 30"
down="relay: target '127.0.0.1:$port_B' is down (Connection refused)"
is $LINENO 1 "$(grep -c -F "$down" fo.log)"
server B $port_B
wait_for fo.log "target '127.0.0.1:$port_B' is up again" ||
	fail $LINENO "B not said up: $(cat fo.log)"
client $rport 9 fo3.out
[ "$(grep -c '^B$' fo3.out)" -ge 2 ] || fail $LINENO "B takes no connection: $(cat fo3.out)"
is $LINENO 1 "$(grep -c "is up again" fo.log)"
is $LINENO 1 "$(grep -c -F "$down" fo.log)"
! grep -q "cannot connect" fo.log || fail $LINENO "a client saw a failure: $(cat fo.log)"

# Every target down: the client is closed, the relay goes on, and serves
# again when one is back.
kill $pid_A $pid_B $pid_C; wait $pid_A $pid_B $pid_C 2>/dev/null
is $LINENO closed "$(python3 peer.py refused $rport)"
grep -q "cannot connect to" fo.log || fail $LINENO "no failure said: $(cat fo.log)"
kill -0 $rpid || fail $LINENO "the relay ended"
server A $port_A
client $rport 3 fo4.out
spread $LINENO fo4.out "3 0 0"
stop_relay $LINENO

# A target that does not answer: skipped after --connect-timeout, said
# down with ETIMEDOUT; the record names the target connected to.
python3 peer.py blackhole bh.port &
pids="$pids $!"
wait_for bh.port . || fail $LINENO "no blackhole listener"
if [ "$(cat bh.port)" = none ]; then
	skip "a listener with a full accept queue answers connects here"
else
	bh=$(cat bh.port)
	relay to.log --balance=first --connect-timeout=0.5 --check-interval=0 \
		--log-format=json --log=rec.json 127.0.0.1:$bh 127.0.0.1:$port_A
	client $rport 3 to.out
	spread $LINENO to.out "3 0 0"
	is $LINENO 1 "$(grep -c -F "relay: target '127.0.0.1:$bh' is down (Connection timed out)" to.log)"
	is $LINENO 3 "$(grep -c -F "\"target\":\"127.0.0.1:$port_A\"" rec.json)"
	stop_relay $LINENO
fi

# A bad --balance is refused before anything starts.
"$P" relay --balance=most 127.0.0.1:0 127.0.0.1:1 2>err; rc=$?
rc_is $LINENO 1
exit 0
