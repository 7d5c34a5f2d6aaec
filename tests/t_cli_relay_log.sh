#!/bin/sh
# psplice relay's log, against those who write into it and those who read
# it. A log reader that stalls (standard error a pipe the test holds open
# and never reads, as a stuck journald or a suspended `| less` would) while
# 4,000 connections reset one after another, each leaving its lines: a
# fresh client is relayed all the same, byte for byte; once the pipe is
# read again the log says how many lines it dropped, --metrics counts the
# same number, and every line is either written or counted. A PROXY v2
# header naming a unix path with an ESC sequence, a line feed and a forged
# log line, a backslash and a byte that is not UTF-8: the text log keeps one
# line per record, holds no control byte, and shows the path escaped. Under
# --config, each connection's text lines begin with the listener's LISTEN,
# as the stats lines do. Every wait is bounded.
[ -z "${BASH_VERSION:-}" ] && command -v bash >/dev/null && exec bash "$0" "$@"
name=t_cli_relay_log; . "$(dirname "$0")/cli-lib.sh"
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 missing"; exit 77; }
pids=
cli_cleanup() { for p in $pids; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; }

cat >peer.py <<'EOF'
import fcntl, os, re, signal, socket, struct, subprocess, sys, threading, time
from relay_peers import echo_back, ready, recv_all, serve_threads

echo_one = echo_back

def echo(portfile):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1024)
    s.settimeout(0.5)
    ready(portfile, str(s.getsockname()[1]))
    serve_threads(s, echo_one, 300)

def fail(msg):
    print("stalled: " + msg, file=sys.stderr)
    sys.exit(1)

# Lines from the pipe until every pattern was seen (within 20 s).
def read_until(fd, patterns):
    got, end = b"", time.time() + 20
    while time.time() < end:
        if all(re.search(p, got) for p in patterns):
            return got
        try:
            b = os.read(fd, 65536)
        except BlockingIOError:
            time.sleep(0.05)
            continue
        if not b:
            break
        got += b
    fail("the relay did not start: %r" % got[-2000:])

# Connections that reset at once, one after another; a connect that does
# not complete within 2 s ends the flood (the relay stopped accepting).
def flood(port, n):
    for i in range(n):
        c = socket.socket()
        c.settimeout(2)
        try:
            c.connect(("127.0.0.1", port))
        except OSError as e:
            c.close()
            return "connect %d of %d: %s" % (i + 1, n, e)
        c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        c.close()
    return None

# One client's bytes through the relay and back, the whole exchange within
# 30 s: a hang guard, not a measure.
def fresh(port):
    data = os.urandom(256 << 10)
    c = socket.create_connection(("127.0.0.1", port), timeout=30)
    end = time.time() + 30
    c.sendall(data)
    c.shutdown(socket.SHUT_WR)
    back = b""
    while len(back) <= len(data) and time.time() < end:
        try:
            b = c.recv(65536)
        except socket.timeout:
            break
        if not b:
            break
        back += b
    c.close()
    if back != data:
        fail("a fresh client got %d of its %d bytes back within 30 s" % (len(back), len(data)))

def scrape(port):
    c = socket.create_connection(("127.0.0.1", port), timeout=10)
    c.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
    text = recv_all(c).decode()
    c.close()
    return text

def metric(text, name):
    m = re.search(r"^psplice_relay_%s (\d+)$" % name, text, re.M)
    if not m:
        fail("no %s in the metrics" % name)
    return int(m.group(1))

def stalled(psplice, tport, n):
    r, w = os.pipe()
    p = subprocess.Popen([psplice, "relay", "-v", "-j", "2", "--metrics=127.0.0.1:0",
                          "127.0.0.1:0", "127.0.0.1:" + tport], stderr=w)
    os.close(w)
    fcntl.fcntl(r, fcntl.F_SETFL, os.O_NONBLOCK)
    try:
        head = read_until(r, [rb"listening on 127\.0\.0\.1:\d+", rb"metrics on http://"])
        port = int(re.search(rb"listening on 127\.0\.0\.1:(\d+)", head).group(1))
        mport = int(re.search(rb"metrics on http://127\.0\.0\.1:(\d+)/", head).group(1))
        # From here on nobody reads the pipe until the fresh client is
        # through.
        err = flood(port, n)
        if err:
            fail("the flood stalled: " + err)
        fresh(port)
        log, end = b"", time.time() + 30
        while time.time() < end and not re.search(rb"log lines? dropped", log):
            try:
                b = os.read(r, 65536)
            except BlockingIOError:
                time.sleep(0.05)
                continue
            log += b
        text = scrape(mport)
        p.send_signal(signal.SIGTERM)
        fcntl.fcntl(r, fcntl.F_SETFL, 0)
        while True:
            b = os.read(r, 65536)
            if not b:
                break
            log += b
        if p.wait(20) != 0:
            fail("the relay exited with %d" % p.returncode)
    finally:
        if p.poll() is None:
            p.kill()
    said = [int(x) for x in re.findall(rb"^psplice: (\d+) log lines? dropped", log, re.M)]
    if not said:
        fail("no 'log lines dropped' line once the pipe was read: %r" % log[-1000:])
    dropped = metric(text, "log_lines_dropped_total")
    total = metric(text, "connections_total")
    records = len(re.findall(rb"^psplice: relay: #\d+ ", log, re.M))
    # -v: an open and a close line each connection; none lost unsaid.
    if sum(said) != dropped or records + dropped != 2 * total:
        fail("%d lines said dropped, %d counted; %d records written of %d connections"
             % (sum(said), dropped, records, total))
    print("%d connections, %d records written, %d dropped" % (total, records, dropped))

SIG = b"\r\n\r\n\x00\r\nQUIT\n"

# A PROXY v2 header naming unix addresses (AF_UNIX, STREAM: 0x31), each
# path in its 108 bytes, then a payload that must come back.
def unix_client(port, src, dst):
    body = src.ljust(108, b"\0") + dst.ljust(108, b"\0")
    hdr = SIG + bytes([0x21, 0x31]) + struct.pack(">H", len(body)) + body
    c = socket.create_connection(("127.0.0.1", int(port)), timeout=20)
    c.sendall(hdr + b"payload")
    c.shutdown(socket.SHUT_WR)
    got = recv_all(c)
    c.close()
    if got != b"payload":
        print("unix client: got %r" % got, file=sys.stderr)
        sys.exit(1)

if __name__ == "__main__":
    what = sys.argv[1]
    if what == "echo":
        echo(sys.argv[2])
    elif what == "stalled":
        stalled(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif what == "unix":
        unix_client(sys.argv[2], bytes.fromhex(sys.argv[3]), bytes.fromhex(sys.argv[4]))
    elif what == "one":
        try:
            c = socket.create_connection(("127.0.0.1", int(sys.argv[2])), timeout=20)
            c.sendall(b"x")
            c.shutdown(socket.SHUT_WR)
            sys.exit(0 if recv_all(c) == b"x" else 1)
        except OSError:
            sys.exit(1)
EOF

python3 peer.py echo tport & pids="$pids $!"
wait_for tport . || fail $LINENO "no echo server"
tport=$(cat tport)

# A stalled reader: the relay serves on, and says what it dropped.
python3 peer.py stalled "$P" "$tport" 4000 >stalled.out 2>err; rc=$?
rc_is $LINENO 0

# Start a relay, its standard error to $1, with the options that follow:
# its port in $port once it listens.
relay() {
	log=$1; shift
	: >"$log"  # no earlier relay's lines for wait_for to find
	"$P" relay -v -j 2 "$@" 2>"$log" & rpid=$!; pids="$pids $rpid"
	wait_for "$log" 'listening on' || fail $LINENO "relay did not start: $(cat "$log")"
	port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\),.*/\1/p' "$log" | head -n 1)
}
stop() {
	kill -TERM "$rpid"
	gone "$rpid" || fail $LINENO "relay did not stop"
	wait "$rpid"; rc=$?
	rc_is $LINENO 0
}

# A path from a PROXY v2 header: an ESC sequence, a line feed and a forged
# record, a backslash, a byte that is not UTF-8, and an e with an acute
# accent, which is.
src=$(printf '/tmp/a\033[31mred\npsplice: relay: #9999 6.6.6.6:6666 FORGED LINE\\z\377\303\251' |
	od -An -tx1 | tr -d ' \n')
relay esc.log --accept-proxy 127.0.0.1:0 "127.0.0.1:$tport"
python3 peer.py unix "$port" "$src" "$(printf /tmp/dst | od -An -tx1 | tr -d ' \n')" ||
	fail $LINENO "the PROXY client was not relayed"
wait_count esc.log 'relay: #1 ' 2 || fail $LINENO "no close line: $(cat -v esc.log)"
stop
want='unix:/tmp/a\x1b[31mred\x0apsplice: relay: #9999 6.6.6.6:6666 FORGED LINE\\z\xff'$(printf '\303\251')
is $LINENO 1 "$(grep -c -F "psplice: relay: #1 $want open" esc.log)"
is $LINENO 1 "$(grep -c -F "psplice: relay: #1 $want closed: 7 bytes" esc.log)"
is $LINENO 0 "$(grep -c '^psplice: relay: #9999' esc.log)"
is $LINENO 0 "$(LC_ALL=C tr -d '\n -~\200-\377' <esc.log | wc -c)"
is $LINENO 2 "$(grep -c 'relay: #' esc.log)"
# listening, open, closed, the stop, the counters.
is $LINENO 5 "$(wc -l <esc.log)"

# --config: each connection's lines name its listener first; a target's
# name from the file is escaped as a peer's is.
lport=$(port) lport2=$(port)
printf '127.0.0.1:%s 127.0.0.1:%s\n' "$lport" "$tport" >one.conf
printf '127.0.0.1:%s unix:%s/no\033such\377\n' "$lport2" "$d" >>one.conf
"$P" relay -v --config=one.conf 2>conf.log & rpid=$!; pids="$pids $rpid"
wait_count conf.log 'listening on' 2 || fail $LINENO "relay did not start: $(cat conf.log)"
python3 peer.py one "$lport" || fail $LINENO "the client was not relayed"
wait_count conf.log 'relay: .*#[0-9]+ ' 2 || fail $LINENO "no close line: $(cat conf.log)"
python3 peer.py one "$lport2" && fail $LINENO "a client relayed to no target"
wait_for conf.log 'cannot connect' || fail $LINENO "no connect error: $(cat -v conf.log)"
stop
l="127\.0\.0\.1:$lport: #[0-9]+ 127\.0\.0\.1:[0-9]+"
is $LINENO 1 "$(grep -c -E "^psplice: relay: $l open$" conf.log)"
is $LINENO 1 "$(grep -c -E "^psplice: relay: $l closed: 1 bytes" conf.log)"
l="127\.0\.0\.1:$lport2: #[0-9]+ 127\.0\.0\.1:[0-9]+"
is $LINENO 1 "$(grep -c -E "^psplice: relay: $l open$" conf.log)"
is $LINENO 1 "$(grep -c -E "^psplice: relay: $l closed: 0 bytes" conf.log)"
is $LINENO 1 "$(grep -E "^psplice: relay: $l: cannot connect to " conf.log |
	grep -c -F "'unix:$d/no\x1bsuch\xff': No such file or directory")"
is $LINENO 0 "$(LC_ALL=C tr -d '\n -~' <conf.log | wc -c)"
exit 0
