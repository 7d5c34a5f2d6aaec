#!/bin/sh
# psplice relay on loopback: curl through it to python3 -m http.server, iperf3, bulk
# echo both ways at once with checksums, half-close, client and target resets, target down,
# IPv6 and unix addresses, 500 concurrent connections, idle timeout,
# SIGUSR1 stats, the SIGTERM drain and --copy=readwrite. Every wait is bounded.
dir=$1
bin=${PSPLICE_BIN:?}
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 missing"; exit 77; }
command -v curl >/dev/null 2>&1 || { echo "SKIP: curl missing (tests/deps.sh check)"; exit 77; }
t=$(mktemp -d "$dir/cli-relay-XXXXXX") || exit 1
pids=
cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null; done
	rm -rf "$t"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*" >&2
	for f in "$t"/*.log; do [ -f "$f" ] && sed "s|^|  $(basename "$f"): |" "$f" | tail -8 >&2; done
	# Again after the logs: the runner shows an output's last lines.
	echo "FAIL: $*" >&2
	exit 1
}

# 500 connections through the relay: the client, the relay and the echo
# server each hold 1,000 fds or more.
ulimit -n 8192 2>/dev/null || ulimit -n 4096 2>/dev/null

# The peers: an echo server that, at the client's EOF, adds "DONE <sha256 of
# what it got>" and closes; clients that check every byte came back.
cat > "$t/peer.py" <<'EOF'
import hashlib, os, socket, struct, sys, threading, time

def addr_of(s):
    if s.startswith("unix:"):
        return socket.AF_UNIX, s[5:]
    host, port = s.rsplit(":", 1)
    if host.startswith("["):
        return socket.AF_INET6, (host[1:-1], int(port))
    return socket.AF_INET, (host, int(port))

def serve(addr, ready, backlog=512, delay=0.0):
    fam, a = addr_of(addr)
    s = socket.socket(fam, socket.SOCK_STREAM)
    if fam != socket.AF_UNIX:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(a)
    s.listen(backlog)
    port = s.getsockname()[1] if fam != socket.AF_UNIX else 0
    with open(ready + ".tmp", "w") as f:
        f.write("%d\n" % port)
    os.rename(ready + ".tmp", ready)
    while True:
        time.sleep(delay)
        c, _ = s.accept()
        threading.Thread(target=echo, args=(c,), daemon=True).start()

def echo(c):
    h = hashlib.sha256()
    try:
        while True:
            b = c.recv(65536)
            if not b:
                break
            h.update(b)
            c.sendall(b)
        c.sendall(b"DONE " + h.hexdigest().encode())
    except OSError:
        pass
    c.close()

def one(addr, n, pause, slow, errs):
    try:
        fam, a = addr_of(addr)
        c = socket.create_connection(a, timeout=30) if fam != socket.AF_UNIX else socket.socket(fam)
        if fam == socket.AF_UNIX:
            c.settimeout(30)
            c.connect(a)
        data = os.urandom(n)
        def send():
            step = 65536
            for i in range(0, n, step):
                c.sendall(data[i:i + step])
                if slow:
                    time.sleep(slow)
            # Half-close: the reply must still come back.
            c.shutdown(socket.SHUT_WR)
        th = threading.Thread(target=send)
        th.start()
        if pause:
            th.join()
            time.sleep(pause)
        got = []
        while True:
            b = c.recv(1 << 20)
            if not b:
                break
            got.append(b)
        th.join()
        c.close()
        got = b"".join(got)
        want = data + b"DONE " + hashlib.sha256(data).hexdigest().encode()
        if got != want:
            errs.append("got %d bytes, want %d (%s)" % (len(got), len(want),
                        "prefix ok" if want.startswith(got) else "corrupt"))
    except Exception as e:
        errs.append(repr(e))

def client(addr, conns, n, pause=0.0, slow=0.0):
    errs = []
    ths = [threading.Thread(target=one, args=(addr, n, pause, slow, errs)) for _ in range(conns)]
    for th in ths:
        th.start()
    for th in ths:
        th.join()
    if errs:
        print("%d of %d failed: %s" % (len(errs), conns, errs[:3]))
        sys.exit(1)

def closed(addr):
    # Target down: the relay closes us cleanly (EOF, no reset) within 5 s.
    fam, a = addr_of(addr)
    c = socket.create_connection(a, timeout=5)
    c.sendall(b"hello")
    b = c.recv(100)
    sys.exit(0 if b == b"" else 1)

def reset(addr):
    fam, a = addr_of(addr)
    c = socket.create_connection(a, timeout=5)
    c.sendall(os.urandom(100000))
    c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    c.close()

def serve_reset(addr, ready):
    # A target that takes some bytes, then resets the connection.
    fam, a = addr_of(addr)
    s = socket.socket(fam)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(a)
    s.listen(16)
    with open(ready + ".tmp", "w") as f:
        f.write("%d\n" % s.getsockname()[1])
    os.rename(ready + ".tmp", ready)
    s.settimeout(30)
    while True:
        c, _ = s.accept()
        c.recv(1000)
        c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        c.close()

def dropped(addr):
    # The target reset: the relay must end our connection too, within 10 s,
    # by EOF or by a reset of its own.
    fam, a = addr_of(addr)
    c = socket.create_connection(a, timeout=10)
    c.sendall(os.urandom(5000))
    try:
        while c.recv(65536):
            pass
    except ConnectionResetError:
        pass
    sys.exit(0)

def blackhole(addr, ready):
    # A listener whose queue is full: connects to it hang, SYNs dropped.
    fam, a = addr_of(addr)
    s = socket.socket(fam)
    s.bind(a)
    s.listen(0)
    fill = []
    for _ in range(3):
        f = socket.socket(fam)
        f.setblocking(False)
        f.connect_ex(s.getsockname())
        fill.append(f)
    time.sleep(0.3)
    with open(ready + ".tmp", "w") as f:
        f.write("%d\n" % s.getsockname()[1])
    os.rename(ready + ".tmp", ready)
    time.sleep(60)

def idle(addr):
    # Send nothing: the relay's idle timeout must end the connection.
    fam, a = addr_of(addr)
    c = socket.create_connection(a, timeout=5)
    sys.exit(0 if c.recv(100) == b"" else 1)

m = sys.argv[1]
if m == "serve":
    serve(sys.argv[2], sys.argv[3], int(sys.argv[4]) if len(sys.argv) > 4 else 512,
          float(sys.argv[5]) if len(sys.argv) > 5 else 0.0)
elif m == "serve_reset":
    serve_reset(sys.argv[2], sys.argv[3])
elif m == "blackhole":
    blackhole(sys.argv[2], sys.argv[3])
elif m == "client":
    client(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]),
           float(sys.argv[5]) if len(sys.argv) > 5 else 0.0,
           float(sys.argv[6]) if len(sys.argv) > 6 else 0.0)
else:
    globals()[m](sys.argv[2])
EOF

# wait_for FILE PATTERN: up to 5 s.
wait_for() {
	i=0
	while ! grep -q "$2" "$1" 2>/dev/null; do
		i=$((i + 1))
		[ $i -le 50 ] || return 1
		sleep 0.1
	done
}

# serve NAME ADDR [BACKLOG DELAY]: an echo server; its port lands in $port.
serve() {
	python3 "$t/peer.py" serve "$2" "$t/$1.port" $3 $4 >"$t/$1-server.log" 2>&1 &
	pids="$pids $!"
	wait_for "$t/$1.port" . || fail "$1 echo server did not start"
	port=$(cat "$t/$1.port")
}

# relay NAME OPTIONS... LISTEN TARGET: its pid in $rpid, its port in $rport.
relay() {
	name=$1
	shift
	"$bin" relay -v "$@" 2>"$t/$name.log" &
	rpid=$!
	pids="$pids $rpid"
	wait_for "$t/$name.log" "listening on" || fail "relay $name did not start"
	rport=$(sed -n 's/.*listening on .*:\([0-9]*\), forwarding.*/\1/p' "$t/$name.log")
}

alive() { kill -0 "$1" 2>/dev/null || fail "relay $2 died"; }

# curl through the relay to python3 -m http.server.
mkdir "$t/www"
head -c 20971520 /dev/urandom > "$t/www/big" || exit 1
(cd "$t/www" && exec python3 -u -m http.server --bind 127.0.0.1 0 >"$t/http.log" 2>&1) &
pids="$pids $!"
wait_for "$t/http.log" "port" || fail "http.server did not start"
hport=$(sed -n 's/.* port \([0-9]*\) .*/\1/p' "$t/http.log" | head -1)
relay http 127.0.0.1:0 "127.0.0.1:$hport"
timeout 20 curl -sS -o "$t/got" "http://127.0.0.1:$rport/big" || fail "curl through the relay"
cmp -s "$t/www/big" "$t/got" || fail "curl got a different file"
rm -f "$t/got" "$t/www/big"

# iperf3 through the relay, both ways at once and reversed (tests/deps.sh
# check installs it; without it, this part alone is left out).
if command -v iperf3 >/dev/null 2>&1; then
	python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])" \
		> "$t/iperf.port"
	iperf3 -s --forceflush -B 127.0.0.1 -p "$(cat "$t/iperf.port")" >"$t/iperf-server.log" 2>&1 &
	pids="$pids $!"
	wait_for "$t/iperf-server.log" "listening" || fail "iperf3 server did not start"
	relay iperf 127.0.0.1:0 "127.0.0.1:$(cat "$t/iperf.port")"
	timeout 20 iperf3 -c 127.0.0.1 -p "$rport" -t 1 --bidir >"$t/iperf-bidir.log" 2>&1 ||
		fail "iperf3 --bidir through the relay"
	timeout 20 iperf3 -c 127.0.0.1 -p "$rport" -t 1 -R >"$t/iperf-r.log" 2>&1 ||
		fail "iperf3 -R through the relay"
	alive "$rpid" iperf
	kill -TERM "$rpid"; wait "$rpid" || fail "iperf relay: exit $?"
else
	echo "note: no iperf3, not tested through the relay"
fi

# Bulk both ways at once, then half-close with a late reader.
serve tcp 127.0.0.1:0
relay tcp -j 2 127.0.0.1:0 "127.0.0.1:$port"
timeout 20 python3 "$t/peer.py" client "127.0.0.1:$rport" 2 16777216 ||
	fail "bulk echo both ways"
timeout 10 python3 "$t/peer.py" client "127.0.0.1:$rport" 1 1048576 0.5 ||
	fail "half-close: the reply after the client's shutdown did not come"
# A client that resets: the relay goes on.
timeout 10 python3 "$t/peer.py" reset "127.0.0.1:$rport" || fail "reset client"
alive "$rpid" tcp
# 500 concurrent connections, 2 MiB each way each (about 14 s here).
timeout 120 python3 "$t/peer.py" client "127.0.0.1:$rport" 500 2097152 ||
	fail "500 concurrent connections"
alive "$rpid" tcp
# SIGUSR1: the counters, all connections closed by now (bounded wait).
i=0
while :; do
	kill -USR1 "$rpid"
	sleep 0.1
	grep -q "connections 0 open, 504 total; bytes [0-9]* client->target, [0-9]* target->client" \
		"$t/tcp.log" && break
	i=$((i + 1))
	[ $i -le 30 ] || fail "SIGUSR1: no stats line with 0 open, 504 total"
done
# Met reading (the reset), or writing the echo back to it, which the engine
# says as EPIPE whether the peer closed or reset: either way, said.
grep -q -E "error [a-z]* [a-z]* client|client closed before taking all" "$t/tcp.log" ||
	fail "the reset was not reported"

# SIGTERM drain: a slow transfer under way completes, then exit 0, and no
# new connection is accepted meanwhile.
timeout 20 python3 "$t/peer.py" client "127.0.0.1:$rport" 1 2097152 0 0.05 &
cpid=$!
wait_for "$t/tcp.log" "#505 .* open" || fail "drain: the slow client did not connect"
kill -TERM "$rpid"
wait_for "$t/tcp.log" "draining" || fail "drain: SIGTERM not seen"
# The workers close their listeners as they see the signal: soon, not at once.
python3 -c "
import socket, sys, time
for _ in range(30):
    try:
        socket.create_connection(('127.0.0.1', $rport), timeout=2).close()
    except ConnectionRefusedError:
        sys.exit(0)
    time.sleep(0.1)
sys.exit(1)" || fail "drain: new connections still accepted"
wait "$cpid" || fail "drain: the open transfer did not complete"
wait "$rpid"
rc=$?
[ $rc -eq 0 ] || fail "drain: relay exit $rc, want 0"

# Target down: the client is closed cleanly and the relay keeps running.
python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])" \
	> "$t/deadport"
relay down 127.0.0.1:0 "127.0.0.1:$(cat "$t/deadport")"
timeout 10 python3 "$t/peer.py" closed "127.0.0.1:$rport" || fail "target down: not closed cleanly"
timeout 10 python3 "$t/peer.py" closed "127.0.0.1:$rport" || fail "target down, twice"
alive "$rpid" down
grep -q "cannot connect to '127.0.0.1:[0-9]*': Connection refused" "$t/down.log" ||
	fail "target down: no cp-style message"
kill -TERM "$rpid"; wait "$rpid" || fail "target down relay: exit $?"

# Connect timeout: a target that never answers; the client is closed.
python3 "$t/peer.py" blackhole 127.0.0.1:0 "$t/hole.port" >"$t/hole.log" 2>&1 &
pids="$pids $!"
wait_for "$t/hole.port" . || fail "blackhole did not start"
relay hole --connect-timeout 0.5 127.0.0.1:0 "127.0.0.1:$(cat "$t/hole.port")"
timeout 5 python3 "$t/peer.py" closed "127.0.0.1:$rport" || fail "connect timeout: not closed"
grep -q "cannot connect to .*: Connection timed out" "$t/hole.log" ||
	fail "connect timeout: no message"
kill -TERM "$rpid"; wait "$rpid" || fail "connect-timeout relay: exit $?"

# Idle timeout, and the stats interval.
relay idle --idle-timeout 0.3 --stats-interval 0.2 127.0.0.1:0 "127.0.0.1:$port"
timeout 5 python3 "$t/peer.py" idle "127.0.0.1:$rport" || fail "idle timeout did not close"
grep -q "#1 .* idle timeout: 0 bytes" "$t/idle.log" || fail "idle timeout not reported"
wait_for "$t/idle.log" "connections 0 open, 1 total" || fail "--stats-interval printed nothing"
kill -TERM "$rpid"; wait "$rpid" || fail "idle relay: exit $?"

# --max-conns 1: a second client waits until the first is gone.
relay max --max-conns 1 -j 2 127.0.0.1:0 "127.0.0.1:$port"
timeout 10 python3 "$t/peer.py" client "127.0.0.1:$rport" 1 1048576 1 &
first=$!
wait_for "$t/max.log" "#1 .* open" || fail "max-conns: first client"
timeout 10 python3 "$t/peer.py" client "127.0.0.1:$rport" 1 1048576 || fail "max-conns: second client"
grep -q "#1 .* closed" "$t/max.log" || fail "max-conns: second client served while the first was open"
wait "$first" || fail "max-conns: first client"
kill -TERM "$rpid"; wait "$rpid" || fail "max-conns relay: exit $?"

# --copy=readwrite: every byte through the relay's memory, both ways at
# once, still byte-exact (the client compares all and the server's sha256).
relay rw --copy=readwrite -j 2 127.0.0.1:0 "127.0.0.1:$port"
timeout 20 python3 "$t/peer.py" client "127.0.0.1:$rport" 4 4194304 || fail "--copy=readwrite echo"
timeout 10 python3 "$t/peer.py" client "127.0.0.1:$rport" 1 1048576 0.5 ||
	fail "--copy=readwrite: half-close"
alive "$rpid" rw
kill -TERM "$rpid"; wait "$rpid" || fail "readwrite relay: exit $?"

# unix: both as the listener and as the target, whose short queue and slow
# accept make connects fail with EAGAIN, tried again until they succeed.
serve unix "unix:$t/echo.sock" 1 0.01
relay unix -j 2 "unix:$t/relay.sock" "unix:$t/echo.sock"
timeout 20 python3 "$t/peer.py" client "unix:$t/relay.sock" 50 1048576 || fail "unix to unix"
kill -TERM "$rpid"; wait "$rpid" || fail "unix relay: exit $?"
[ -e "$t/relay.sock" ] && fail "unix relay left its socket behind"
relay tcpunix 127.0.0.1:0 "unix:$t/echo.sock"
timeout 20 python3 "$t/peer.py" client "127.0.0.1:$rport" 4 4194304 || fail "tcp to unix"
kill -TERM "$rpid"; wait "$rpid" || fail "tcp-to-unix relay: exit $?"

# A target that resets: the client's connection ends too, the relay goes on.
python3 "$t/peer.py" serve_reset 127.0.0.1:0 "$t/rst.port" >"$t/rst-server.log" 2>&1 &
pids="$pids $!"
wait_for "$t/rst.port" . || fail "resetting target did not start"
relay rst 127.0.0.1:0 "127.0.0.1:$(cat "$t/rst.port")"
for n in 1 2; do
	timeout 15 python3 "$t/peer.py" dropped "127.0.0.1:$rport" ||
		fail "target reset: the client was not closed ($n)"
done
alive "$rpid" rst
wait_for "$t/rst.log" "#2 .*error reading from target" || fail "target reset: not logged: $(cat "$t/rst.log")"
kill -TERM "$rpid"; wait "$rpid" || fail "target-reset relay: exit $?"

# IPv6, where loopback has it.
if python3 -c "import socket; socket.socket(socket.AF_INET6).bind(('::1', 0))" 2>/dev/null; then
	serve v6 "[::1]:0"
	relay v6 "[::1]:0" "[::1]:$port"
	timeout 20 python3 "$t/peer.py" client "[::1]:$rport" 4 4194304 || fail "IPv6"
	kill -TERM "$rpid"; wait "$rpid" || fail "IPv6 relay: exit $?"
else
	echo "note: no IPv6 loopback, [::1] not tested"
fi

# Usage errors, and a port already taken (by http.server, without SO_REUSEPORT).
out=$(timeout 5 "$bin" relay "127.0.0.1:$hport" 127.0.0.1:1 2>&1); rc=$?
[ $rc -eq 1 ] || fail "port in use: exit $rc"
[ "$out" = "psplice: cannot listen on '127.0.0.1:$hport': Address already in use" ] ||
	fail "port in use: '$out'"
"$bin" relay 127.0.0.1:0 2>/dev/null && fail "one operand accepted"
"$bin" relay nocolon 127.0.0.1:1 2>/dev/null && fail "address without port accepted"
"$bin" relay --idle-timeout x 127.0.0.1:0 127.0.0.1:1 2>/dev/null && fail "bad seconds accepted"
"$bin" relay -j 0 127.0.0.1:0 127.0.0.1:1 2>/dev/null && fail "-j 0 accepted"
out=$("$bin" relay --copy=bogus 127.0.0.1:0 127.0.0.1:1 2>&1); rc=$?
[ $rc -eq 1 ] && echo "$out" | grep -q "invalid --copy 'bogus'" ||
	fail "--copy=bogus: exit $rc, '$out'"
help=$("$bin" relay --help) || fail "--help"
for o in --jobs --max-conns --idle-timeout --connect-timeout --drain-timeout \
	--stats-interval --copy=HOW readwrite --verbose 127.0.0.1; do
	echo "$help" | grep -q -- "$o" || fail "--help lacks $o"
done
exit 0
