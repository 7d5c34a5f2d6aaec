#!/bin/sh
# psplice relay: who may connect. --max-conns-per-source: with
# --max-conns=4, one client (127.0.0.2) holding every slot kept any other
# (127.0.0.3) out. Now it holds 3 at most: its 4th is refused at once, reset,
# its bytes never reaching TARGET (the target sees no connection), counted
# in --metrics and said once; 127.0.0.3 is served, and 127.0.0.2's slot
# comes back when one of its connections closes. On a dual-stack listener
# IPv4 clients come as ::ffff:a.b.c.d and are still one source each; IPv6
# is counted per /64. Every wait is bounded.
[ -z "${BASH_VERSION:-}" ] && command -v bash >/dev/null && exec bash "$0" "$@"
name=t_cli_relay_gate; . "$(dirname "$0")/cli-lib.sh"
command -v python3 >/dev/null 2>&1 || { echo "$name: SKIP python3 missing"; exit 77; }
pids=
cli_cleanup() { for p in $pids; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; }

cat >g.py <<'EOF'
import asyncio, errno, os, re, socket, sys, time, urllib.request, relay_peers

def conn(port, src):
    fam = socket.AF_INET6 if ":" in src else socket.AF_INET
    c = socket.socket(fam)
    c.settimeout(10)
    c.bind((src, 0))
    c.connect(("::1" if fam == socket.AF_INET6 else "127.0.0.1", port))
    return c

# A connection that is relayed: its bytes come back from the echo target.
def served(port, src):
    c = conn(port, src)
    c.sendall(b"ping")
    got = b""
    while len(got) < 4:
        b = c.recv(4)
        if not b:
            sys.exit("%s: closed before the echo came back" % src)
        got += b
    return c

# A connection the relay refuses: its bytes sent, then nothing comes back
# but the end or a reset, within 5 s.
def refused(port, src):
    # The reset may come as soon as the connect, or after the bytes.
    try:
        c = conn(port, src)
        c.settimeout(5)
        c.sendall(b"secret")
        got = c.recv(100)
        c.close()
    except (ConnectionResetError, BrokenPipeError):
        got = b""
    except socket.timeout:
        sys.exit("%s: neither served nor refused in 5 s" % src)
    if got:
        sys.exit("%s: refused, yet %r came back" % (src, got))

def metric(mport, name):
    text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % mport, timeout=10).read().decode()
    m = re.search("^psplice_relay_" + re.escape(name) + r" (\d+)$", text, re.M)
    if not m:
        sys.exit("no metric %s in:\n%s" % (name, text))
    return int(m.group(1))

def until(mport, name, want):
    for _ in range(100):
        if metric(mport, name) == want:
            return
        time.sleep(0.1)
    sys.exit("%s is %d, want %d" % (name, metric(mport, name), want))

def per_source(port, mport):
    held = [served(port, "127.0.0.2") for _ in range(3)]
    refused(port, "127.0.0.2")
    other = served(port, "127.0.0.3")
    until(mport, 'refused_total{reason="per_source"}', 1)
    held.pop().close()
    until(mport, "connections_open", 3)
    held.append(served(port, "127.0.0.2"))
    until(mport, 'refused_total{reason="per_source"}', 1)
    other.close()

def dual(port):
    a = served(port, "127.0.0.2")
    b = served(port, "127.0.0.3")
    refused(port, "127.0.0.2")
    if os.environ.get("V6") == "1":
        c = served(port, "::1")
        refused(port, "::1")

what = sys.argv[1]
if what == "echo":
    asyncio.run(relay_peers.echo("tport", seen="seen", secs=110))
elif what == "per_source":
    per_source(int(sys.argv[2]), int(sys.argv[3]))
elif what == "dual":
    dual(int(sys.argv[2]))
EOF
g() { timeout 60 python3 g.py "$@"; }
timeout 120 python3 g.py echo &
pids="$pids $!"
wait_for tport . || fail $LINENO "the echo target did not start"
tport=$(cat tport)
# start_relay LOG ARGS...: the relay, its port in $rport, its metrics' in $mport
start_relay() {
	log=$1; shift
	"$P" relay -v -j 2 "$@" 2>"$log" &
	rpid=$!; pids="$pids $rpid"
	wait_for "$log" "listening on" || fail $LINENO "the relay did not start: $(cat "$log")"
	rport=$(sed -n 's/.*listening on [^,]*:\([0-9]*\),.*/\1/p' "$log")
	mport=$(sed -n 's/.*metrics on http:.*:\([0-9]*\)\/metrics/\1/p' "$log")
}
stop_relay() { kill "$rpid"; wait "$rpid"; }
seen() { grep -c . seen 2>/dev/null || echo 0; }

# One source cannot take every slot.
start_relay r.log --max-conns=4 --max-conns-per-source=3 --metrics=127.0.0.1:0 \
	127.0.0.1:0 127.0.0.1:$tport
g per_source $rport $mport || fail $LINENO "$(cat r.log)"
# 3 held, 127.0.0.3, the slot come back: the refused one never reached TARGET.
is $LINENO 5 "$(seen)"
is $LINENO 1 "$(grep -c -E '^psplice: relay: refused 127\.0\.0\.2:[0-9]+: over --max-conns-per-source$' r.log)"
stop_relay

# A dual-stack listener: IPv4 clients, mapped, are still one source each.
v6=0
python3 -c 'import socket; s = socket.socket(socket.AF_INET6); s.bind(("::1", 0))' 2>/dev/null && v6=1
if [ $v6 = 1 ]; then
	start_relay d.log --max-conns-per-source=1 '[::]:0' 127.0.0.1:$tport
	V6=1 g dual $rport || fail $LINENO "$(cat d.log)"
	stop_relay
else
	skip "no IPv6 on this machine: the dual-stack listener"
fi
echo "$name: ok"
