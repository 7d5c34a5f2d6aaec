#!/bin/sh
# psplice relay and the PROXY protocol (HAProxy's proxy-protocol.txt).
# --send-proxy and --send-proxy-v2: the exact header before the client's
# first byte, from TCP and unix listeners; HAProxy with accept-proxy behind
# the relay takes it and logs the client's address, and refuses a stream
# without one. --accept-proxy: headers of both versions, whole or in pieces,
# are taken off exactly (the payload arrives byte for byte) and name the
# client in the log; garbage, a truncated header and a silent client are
# dropped without a byte forwarded; HAProxy's send-proxy-v2 in front names
# the real client. Every wait is bounded.
[ -z "${BASH_VERSION:-}" ] && command -v bash >/dev/null && exec bash "$0" "$@"
name=t_cli_relay_proxy; . "$(dirname "$0")/cli-lib.sh"
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 missing"; exit 77; }
pids=
cli_cleanup() { for p in $pids; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; }

cat >pp.py <<'EOF'
import errno, json, os, socket, struct, sys, threading, time

SIG = b"\r\n\r\n\x00\r\nQUIT\n"

def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port

# Each connection's bytes to PREFIX.N (N from 1), then the same bytes back.
def serve(portfile, prefix):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(64)
    with open(portfile + ".tmp", "w") as f:
        f.write(str(s.getsockname()[1]))
    os.rename(portfile + ".tmp", portfile)
    n = 0
    while True:
        c, _ = s.accept()
        n += 1
        threading.Thread(target=echo, args=(c, "%s.%d" % (prefix, n)), daemon=True).start()

def echo(c, path):
    c.settimeout(20)
    got = b""
    while True:
        b = c.recv(65536)
        if not b:
            break
        got += b
    with open(path + ".tmp", "wb") as f:
        f.write(got)
    os.rename(path + ".tmp", path)
    c.sendall(got)
    c.close()

def connect(where, src):
    if where.startswith("unix:"):
        c = socket.socket(socket.AF_UNIX)
        c.settimeout(20)
        c.connect(where[5:])
    else:
        c = socket.socket()
        c.settimeout(20)
        c.bind((src, 0))
        c.connect(("127.0.0.1", int(where)))
    return c

def readall(c):
    got = b""
    try:
        while True:
            b = c.recv(65536)
            if not b:
                break
            got += b
    except ConnectionResetError:
        got += b"<reset>"
    return got

# Send the pieces (hex, "-" for a pause of 0.3 s), end the stream (unless
# the last is "hold": then only wait), and print what came back as hex
# ("-" for nothing), the client's port, and the milliseconds from the last
# piece sent to the end of what came back.
def client(where, src, *pieces):
    c = connect(where, src)
    port = c.getsockname()[1] if not where.startswith("unix:") else 0
    # A peer that refuses the stream may reset it while it is sent: then
    # what came back (nothing, or the reset) is all there is to print.
    try:
        for p in pieces:
            if p == "-":
                time.sleep(0.3)
            elif p != "hold":
                c.sendall(bytes.fromhex(p))
        if pieces[-1] != "hold":
            c.shutdown(socket.SHUT_WR)
    except OSError as e:
        if e.errno not in (errno.EPIPE, errno.ECONNRESET, errno.ENOTCONN):
            raise
    t0 = time.monotonic()
    got = readall(c)
    print(got.hex() or "-", port, int((time.monotonic() - t0) * 1000))

# The payload each case sends: every byte value, so a header byte taken
# too many or too few shows.
PAYLOAD = bytes(range(256))

def v2(cmd, fam, body):
    return SIG + bytes([0x20 | cmd, fam]) + struct.pack(">H", len(body)) + body

def v2_tcp4(src, sport, dst, dport, tlv=b""):
    return v2(1, 0x11, socket.inet_aton(src) + socket.inet_aton(dst) +
              struct.pack(">HH", sport, dport) + tlv)

def main():
    what = sys.argv[1]
    a = sys.argv[2:]
    if what == "serve":
        serve(*a)
    elif what == "client":
        client(*a)
    elif what == "port":
        print(free_port())
    elif what == "payload":
        print(PAYLOAD.hex())
    elif what == "v1":      # SRC SPORT DST DPORT: the line version 1 names them with
        fam = "TCP6" if ":" in a[0] else "TCP4"
        print(("PROXY %s %s %s %s %s\r\n" % (fam, a[0], a[2], a[1], a[3])).encode().hex())
    elif what == "v2":      # SRC SPORT DST DPORT [TLV-HEX]
        print(v2_tcp4(a[0], int(a[1]), a[2], int(a[3]),
                      bytes.fromhex(a[4]) if len(a) > 4 else b"").hex())
    elif what == "v2unix":  # SRC-PATH DST-PATH
        print(v2(1, 0x31, a[0].encode().ljust(108, b"\0") +
                 a[1].encode().ljust(108, b"\0")).hex())
    elif what == "v2local":
        print(v2(0, 0x00, b"").hex())
    elif what == "json":    # FILE ID FIELD: one field of connection ID's record
        for line in open(a[0]):
            r = json.loads(line)
            if r["id"] == int(a[1]):
                print(r[a[2]])

main()
EOF
pp() { timeout 30 python3 pp.py "$@"; }
payload=$(pp payload)
hex() { od -An -v -tx1 "$1" | tr -d ' \n'; }
# start_relay LOG ARGS...: the relay, its port in $rport
start_relay() {
	log=$1; shift
	: >"$log"  # no earlier relay's lines for wait_for to find
	"$P" relay -v -j 2 "$@" 2>"$log" &
	rpid=$!; pids="$pids $rpid"
	wait_for "$log" "listening on" || fail $LINENO "the relay did not start: $(cat "$log")"
	rport=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\),.*/\1/p' "$log")
}
stop_relay() { kill "$rpid"; wait "$rpid"; }

timeout 600 python3 pp.py serve s.port got &
pids="$pids $!"
wait_for s.port . || fail $LINENO "the echo server did not start"
sport=$(cat s.port)
n=0   # connections the echo server has had
# got_is LINE HEX [ECHOED]: the echo server's next connection received
# exactly HEX, and the client got it back (ECHOED, when given)
got_is() {
	n=$((n + 1))
	i=0
	while [ ! -e got.$n ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	[ -e got.$n ] || fail "$1" "the server had no connection $n"
	is "$1" "$2" "$(hex got.$n)"
	[ $# -lt 3 ] || is "$1" "$2" "$3"
}

# --send-proxy, --send-proxy-v2: the header, then the client's bytes as sent
# (which the echo server sends back, header and all).
start_relay r1.log --send-proxy 127.0.0.1:0 127.0.0.1:$sport
set -- $(pp client $rport 127.0.0.5 "$payload")
got_is $LINENO "$(pp v1 127.0.0.5 $2 127.0.0.1 $rport)$payload" "$1"
stop_relay
start_relay r2.log --send-proxy-v2 127.0.0.1:0 127.0.0.1:$sport
set -- $(pp client $rport 127.0.0.6 "$payload")
got_is $LINENO "$(pp v2 127.0.0.6 $2 127.0.0.1 $rport)$payload" "$1"
stop_relay
# A unix listener: version 1 has no unix family and says UNKNOWN; version
# 2 names the unix addresses (an unnamed client's is empty).
for v in 1 2; do
	flag=--send-proxy; [ $v = 1 ] || flag=--send-proxy-v2
	"$P" relay -v $flag unix:"$d/u$v" 127.0.0.1:$sport 2>u$v.log &
	rpid=$!; pids="$pids $rpid"
	wait_for u$v.log "listening on" || fail $LINENO "the unix relay did not start"
	set -- $(pp client unix:"$d/u$v" - "$payload")
	if [ $v = 1 ]; then
		got_is $LINENO "$(printf 'PROXY UNKNOWN\r\n' | od -An -v -tx1 | tr -d ' \n')$payload" "$1"
	else
		got_is $LINENO "$(pp v2unix "" "$d/u$v")$payload" "$1"
	fi
	stop_relay
done

# --accept-proxy: the header is taken off, the rest relayed byte for byte,
# the client named as the header says (the JSON record, the -v line).
start_relay a.log --accept-proxy --log-format=json --log=a.json 127.0.0.1:0 127.0.0.1:$sport
h1=$(pp v1 192.0.2.1 1111 198.51.100.2 2222)
set -- $(pp client $rport 127.0.0.1 "$h1$payload")
is $LINENO "$payload" "$1"
got_is $LINENO "$payload"
# version 2 with a TLV after the addresses, in pieces, the first inside
# the signature: the relay waits for the whole header.
h2=$(pp v2 203.0.113.9 4444 198.51.100.2 2222 0400036162)
set -- $(pp client $rport 127.0.0.1 "${h2:0:10}" - "${h2:10:30}" - "${h2:40}$payload")
is $LINENO "$payload" "$1"
got_is $LINENO "$payload"
# LOCAL: no address in it; the connection's own stands.
set -- $(pp client $rport 127.0.0.7 "$(pp v2local)$payload")
is $LINENO "$payload" "$1"
got_is $LINENO "$payload"
lport=$2
# Bad headers: nothing reaches TARGET, the client is closed.
bad() { # LINE PIECES...: dropped at once, not at the time limit
	set -- "$1" $(shift; pp client $rport 127.0.0.1 "$@")
	is "$1" - "$2"
	[ "$4" -lt 2000 ] || fail "$1" "dropped only after $4 ms"
}
bad $LINENO "$(printf 'GET / HTTP/1.0\r\n\r\n' | od -An -v -tx1 | tr -d ' \n')"
bad $LINENO "${h1:0:30}"                          # truncated, then the end
bad $LINENO "$(pp v1 192.0.2.1 70000 198.51.100.2 1)"   # a port out of range
bad $LINENO "${h2:0:20}ff${h2:22}$payload"         # version 15 of the binary header
# A client that says nothing more: dropped at the header's time limit (3 s).
set -- $(pp client $rport 127.0.0.1 "${h1:0:20}" hold)
is $LINENO - "$1"
[ "$3" -ge 2900 ] && [ "$3" -le 6000 ] || fail $LINENO "a silent client dropped after $3 ms, want 3000"
stop_relay
[ ! -e got.$((n + 1)) ] || fail $LINENO "a bad header reached TARGET: $(hex got.$((n + 1)))"
is $LINENO "192.0.2.1:1111" "$(pp json a.json 1 client)"
is $LINENO "203.0.113.9:4444" "$(pp json a.json 2 client)"
is $LINENO "127.0.0.7:$lport" "$(pp json a.json 3 client)"
for id in 4 5 6 7 8; do
	is $LINENO proxy_header "$(pp json a.json $id end)"
	is $LINENO 0 "$(pp json a.json $id bytes_to_target)"
done
is $LINENO ETIMEDOUT "$(pp json a.json 8 errno)"

# HAProxy, the protocol's reference peer, when installed.
if ! command -v haproxy >/dev/null 2>&1; then
	skip "haproxy missing: the tests against HAProxy"
	exit 0
fi
hport=$(pp port); fport=$(pp port)
start_relay b.log --accept-proxy --log-format=json --log=b.json 127.0.0.1:0 127.0.0.1:$sport
# Behind: HAProxy's frontend on hport takes a header (accept-proxy), logs
# the client it names. In front: fport sends one (send-proxy-v2) to the
# relay, which takes it (--accept-proxy) and logs the client.
cat >h.cfg <<EOF
global
	log stdout format raw local0
defaults
	mode tcp
	log global
	timeout connect 10s
	timeout client 20s
	timeout server 20s
frontend behind
	bind 127.0.0.1:$hport accept-proxy
	log-format "client %ci:%cp bytes %B"
	default_backend echo
backend echo
	server echo 127.0.0.1:$sport
frontend front
	bind 127.0.0.1:$fport
	default_backend relay
backend relay
	server relay 127.0.0.1:$rport send-proxy-v2
EOF
haproxy -f h.cfg -db >h.log 2>&1 &
hpid=$!; pids="$pids $hpid"
i=0
while ! pp client $fport 127.0.0.1 00 >/dev/null 2>&1; do
	i=$((i + 1))
	[ $i -le 20 ] || fail $LINENO "haproxy did not start: $(cat h.log)"
	sleep 0.5
done
n=$((n + 1))    # that connection reached the echo server
hb=$(pp json b.json 1 bytes_to_target)
is $LINENO 1 "$hb"

# In front: the relay's record names the client HAProxy saw.
set -- $(pp client $fport 127.0.0.8 "$payload")
got_is $LINENO "$payload" "$1"
is $LINENO "127.0.0.8:$2" "$(pp json b.json 2 client)"
stop_relay

# Behind, for each version: HAProxy takes the header and logs the client.
for flag in --send-proxy --send-proxy-v2; do
	start_relay c.log $flag 127.0.0.1:0 127.0.0.1:$hport
	set -- $(pp client $rport 127.0.0.9 "$payload")
	got_is $LINENO "$payload" "$1"
	wait_for h.log "client 127.0.0.9:$2 bytes" ||
		fail $LINENO "$flag: HAProxy did not log client 127.0.0.9:$2: $(cat h.log)"
	stop_relay
done
# Without a header, HAProxy refuses the stream: nothing reaches the echo
# server, nothing comes back but an end or a reset.
start_relay d.log 127.0.0.1:0 127.0.0.1:$hport
set -- $(pp client $rport 127.0.0.1 "$payload")
case $1 in
-|3c72657365743e) ;;    # "<reset>"
*) fail $LINENO "HAProxy answered a stream without a header: $1" ;;
esac
stop_relay
[ ! -e got.$((n + 1)) ] || fail $LINENO "HAProxy passed a stream without a header"
