#!/bin/sh
# psplice relay --metrics: Debian's Prometheus scrapes the relay (its
# target said up) and its queries give what the test sent: the bytes each
# way, the connections, a target down (up 0) and its one failed connect;
# promtool finds the exposition clean; clients that send nothing, send
# part of a request, send it a byte at a time or do not read delay
# neither a relayed transfer nor another client's scrape, and are dropped
# at their 5 s; a flood of idle clients delays a scrape, never for long;
# bad requests get 400, 404, 405 or 431; bytes through user memory, waits
# for --rate's tokens and a connect error are counted; a bad or busy
# --metrics address
# is an error before anything serves; a relay reloaded by SIGUSR2 binds
# the same address and the old one leaves it to the new one while it
# drains. Loopback only; every wait is bounded.
[ -z "${BASH_VERSION:-}" ] && command -v bash >/dev/null && exec bash "$0" "$@"
# The echo server and the clients' connections are tests/relay_peers.py's.
name=t_cli_relay_metrics; . "$(dirname "$0")/cli-lib.sh"
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 missing"; exit 77; }
pids=
cli_cleanup() {
	for p in $pids $(sed -n 's/.*relay: process \([0-9]*\) serves in place.*/\1/p' \
			 "$d/re.log" 2>/dev/null); do
		kill "$p" 2>/dev/null
	done
	# Prometheus writes its database in $d until it has ended.
	[ -z "${prom:-}" ] || gone $prom 10
}

cat >peer.py <<'EOF'
import asyncio, json, socket, sys, time, urllib.request
from relay_peers import echo, one

def get(port, path="/metrics"):
    with urllib.request.urlopen("http://127.0.0.1:%s%s" % (port, path), timeout=10) as r:
        return r.headers.get("Content-Type"), r.read().decode()

# N connections through the relay, SIZE bytes each way, one at a time.
def send(port, n, size):
    errors = []
    for i in range(int(n)):
        asyncio.run(one("127.0.0.1:%s" % port, int(size), errors))
    print("\n".join(errors) if errors else "ok")

# A request as raw bytes (\r\n written as such): the status line answered.
def raw(port, req):
    c = socket.create_connection(("127.0.0.1", int(port)), timeout=10)
    c.sendall(req.encode().decode("unicode_escape").encode("latin-1"))
    got = b""
    while True:
        b = c.recv(65536)
        if not b:
            break
        got += b
    head, _, body = got.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    print(lines[0])
    for l in lines[1:]:
        if l.startswith(("Allow:", "Content-Type:")):
            print(l)
    print("body %d" % len(body))

# Prometheus's API: the value of an instant query's first result, "none".
def query(pport, expr):
    url = "http://127.0.0.1:%s/api/v1/query?query=%s" % (
        pport, urllib.parse.quote(expr))
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            res = json.load(r)["data"]["result"]
        print(res[0]["value"][1] if res else "none")
    except (OSError, ValueError, KeyError):
        print("none")

def health(pport):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%s/api/v1/targets" % pport,
                                    timeout=5) as r:
            t = json.load(r)["data"]["activeTargets"]
        print(t[0]["health"] if t else "none")
    except (OSError, ValueError, KeyError):
        print("none")

def idle(port, n):
    cs = [socket.create_connection(("127.0.0.1", int(port)), timeout=10)
          for _ in range(int(n))]
    return cs

# The clients of no good (idle ones, a partial request, one that never
# reads, one that sends a byte every 0.3 s) held open while a transfer
# through the relay and a scrape by another client are timed; then how
# long each bad one was kept. Prints "ok", or what went wrong.
def hostile(mport, rport, nidle):
    bad = idle(mport, nidle)
    part = socket.create_connection(("127.0.0.1", int(mport)), timeout=10)
    part.sendall(b"GET /metr")
    deaf = socket.create_connection(("127.0.0.1", int(mport)), timeout=10)
    deaf.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
    deaf.sendall(b"GET /metrics HTTP/1.1\r\n\r\n")
    slow = socket.create_connection(("127.0.0.1", int(mport)), timeout=10)
    time.sleep(0.3)
    t0 = time.time()
    errors = []
    asyncio.run(one("127.0.0.1:%s" % rport, 1 << 20, errors))
    t1 = time.time()
    ctype, text = get(mport)
    t2 = time.time()
    if errors or t1 - t0 > 2 or t2 - t1 > 2 or "psplice_relay_connections_total" not in text:
        print("FAIL transfer %.2f s %s, scrape %.2f s" % (t1 - t0, errors, t2 - t1))
        return
    req = b"GET /metrics HTTP/1.1\r\n\r\n"
    slow.settimeout(0.3)
    for i in range(len(req)):
        try:
            slow.send(req[i:i + 1])
            if slow.recv(100) == b"":
                break
        except socket.timeout:
            continue
        except OSError:
            break
    t3 = time.time()
    for s in bad + [part]:
        s.settimeout(max(0.1, t0 + 8 - time.time()))
        try:
            if s.recv(100) != b"":
                print("FAIL a client without a request was answered")
                return
        except socket.timeout:
            print("FAIL a client without a request still held after 8 s")
            return
        except OSError:
            pass
    if t3 - t0 > 7:
        print("FAIL the byte-by-byte client was held %.2f s" % (t3 - t0))
        return
    print("ok")

# More idle clients than slots: a scrape waits for a slot, bounded.
def flood(mport, nidle):
    bad = idle(mport, nidle)
    t0 = time.time()
    ctype, text = get(mport)
    print("ok" if time.time() - t0 < 8 else "FAIL scrape took %.2f s" % (time.time() - t0))

m = sys.argv[1]
if m == "echo":
    asyncio.run(echo(sys.argv[2]))
elif m == "get":
    ctype, text = get(*sys.argv[2:])
    print("# " + ctype)
    sys.stdout.write(text)
elif m == "send":
    send(*sys.argv[2:])
elif m == "raw":
    raw(*sys.argv[2:])
elif m == "query":
    query(*sys.argv[2:])
elif m == "health":
    health(*sys.argv[2:])
elif m == "hostile":
    hostile(*sys.argv[2:])
elif m == "flood":
    flood(*sys.argv[2:])
EOF

# relay LOG OPTIONS... TARGETS: a relay with -v; $rpid, $rport, $mport.
relay() {
	log=$1; shift
	: >"$log"  # no earlier relay's lines for wait_for to find
	"$P" relay -v -j 2 "$@" 2>"$log" &
	rpid=$!; pids="$pids $rpid"
	wait_for "$log" "listening on" || fail $LINENO "the relay did not start: $(cat "$log")"
	# The lines are written by the log's own thread: the metrics line may
	# come a moment after the listener's.
	wait_for "$log" "metrics on http" || fail $LINENO "no metrics line: $(cat "$log")"
	# Bytes, not characters: a target's path may be no UTF-8.
	rport=$(LC_ALL=C sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\),.*/\1/p' "$log")
	mport=$(sed -n 's|.*metrics on http://127\.0\.0\.1:\([0-9]*\)/metrics$|\1|p' "$log")
	[ -n "$mport" ] || fail $LINENO "no metrics line: $(cat "$log")"
}
stop_relay() {
	kill -TERM $rpid 2>/dev/null
	wait $rpid; rc=$?
	! grep -q -E "ThreadSanitizer|AddressSanitizer|LeakSanitizer|runtime error" "$log" ||
		fail "$1" "sanitizer report: $(grep -A20 -E 'Sanitizer|runtime error' "$log" | head -40)"
	rc_is "$1" 0
}
# metric NAME: its value in a scrape of the relay, "none" when absent.
metric() {
	python3 peer.py get $mport >scrape || fail $LINENO "scrape failed"
	awk -v n="$1" '$1 == n { v = $2 } END { print v == "" ? "none" : v }' scrape
}

python3 peer.py echo echo.port &
pids="$pids $!"
wait_for echo.port . || fail $LINENO "no echo server"
eport=$(cat echo.port)
down=$(port)

# The down target first: the first connection fails there and goes on to
# the echo server; with no checker, it stays down.
# A third target, never tried, has a path that is not UTF-8: its label
# holds U+FFFD for the byte, the exposition being UTF-8 throughout.
relay m.log --metrics=127.0.0.1:0 --balance=first --check-interval=0 \
	127.0.0.1:0 127.0.0.1:$down 127.0.0.1:$eport "unix:$d/t$(printf '\377')x.sock"
python3 peer.py get $mport >first || fail $LINENO "scrape failed"
is $LINENO "# text/plain; version=0.0.4; charset=utf-8" "$(head -1 first)"
grep -q -F "psplice_relay_target_up{target=\"unix:$d/t$(printf '\357\277\275')x.sock\"} 1" first ||
	fail $LINENO "no U+FFFD label: $(grep target_up first)"

# promtool's lint finds nothing to say of the exposition.
if command -v promtool >/dev/null 2>&1; then
	sed 1d first >first.txt
	promtool check metrics <first.txt >lint 2>&1; rc=$?
	rc_is $LINENO 0
	is $LINENO "" "$(cat lint)"
else
	skip "no promtool (Debian's prometheus package): the lint not run"
fi

# Prometheus scrapes the relay every second; once its target is up, the
# traffic sent (3 connections, 100,000 bytes each way each) shows in its
# queries.
if command -v prometheus >/dev/null 2>&1; then
	pport=$(port)
	cat >prom.yml <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: psplice
    static_configs:
      - targets: ['127.0.0.1:$mport']
EOF
	prometheus --config.file=prom.yml --storage.tsdb.path="$d/tsdb" \
		--web.listen-address=127.0.0.1:$pport >prom.log 2>&1 &
	prom=$!; pids="$pids $prom"
	_i=0
	until [ "$(python3 peer.py health $pport)" = up ]; do
		_i=$((_i + 1))
		[ $_i -le 60 ] || fail $LINENO "Prometheus never scraped the relay: $(tail -5 prom.log)"
		sleep 0.5
	done
	is $LINENO ok "$(python3 peer.py send $rport 3 100000)"
	want="300000 300000 3 1 0 1 0 0"
	_i=0
	while :; do
		got=
		for q in 'psplice_relay_bytes_total{direction="to_target"}' \
			'psplice_relay_bytes_total{direction="to_client"}' \
			psplice_relay_connections_total \
			"psplice_relay_target_connect_failures_total{target=\"127.0.0.1:$down\"}" \
			"psplice_relay_target_up{target=\"127.0.0.1:$down\"}" \
			"psplice_relay_target_up{target=\"127.0.0.1:$eport\"}" \
			psplice_relay_connections_open \
			'sum(psplice_relay_errors_total)'; do
			got="$got $(python3 peer.py query $pport "$q")"
		done
		got=${got# }
		[ "$got" = "$want" ] && break
		_i=$((_i + 1))
		[ $_i -le 30 ] || fail $LINENO "Prometheus says '$got', want '$want'"
		sleep 1
	done
else
	skip "no prometheus (Debian's prometheus package): no real scrape"
	is $LINENO ok "$(python3 peer.py send $rport 3 100000)"
fi

# Clients of no good delay neither a transfer nor a scrape, and are
# dropped by 8 s; more idle clients than slots delay a scrape, bounded.
is $LINENO ok "$(python3 peer.py hostile $mport $rport 8)"
is $LINENO ok "$(python3 peer.py flood $mport 20)"
is $LINENO 4 "$(metric psplice_relay_connections_total)"

# Bad requests.
raw() { python3 peer.py raw $mport "$1" | tr '\n' '|'; }
is $LINENO "HTTP/1.1 405 Method Not Allowed|Content-Type: text/plain; charset=utf-8|Allow: GET, HEAD|body 19|" \
	"$(raw 'POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n')"
is $LINENO "HTTP/1.1 405 Method Not Allowed|Content-Type: text/plain; charset=utf-8|Allow: GET, HEAD|body 19|" \
	"$(raw 'get /metrics HTTP/1.1\r\n\r\n')"
is $LINENO "HTTP/1.1 400 Bad Request|Content-Type: text/plain; charset=utf-8|body 12|" \
	"$(raw 'GARBAGE\r\n\r\n')"
is $LINENO "HTTP/1.1 400 Bad Request|Content-Type: text/plain; charset=utf-8|body 12|" \
	"$(raw 'GET /metrics HTTP/2.0\r\n\r\n')"
is $LINENO "HTTP/1.1 400 Bad Request|Content-Type: text/plain; charset=utf-8|body 12|" \
	"$(raw 'GET  /metrics HTTP/1.1\r\n\r\n')"
is $LINENO "HTTP/1.1 404 Not Found|Content-Type: text/plain; charset=utf-8|body 10|" \
	"$(raw 'GET / HTTP/1.1\r\n\r\n')"
is $LINENO "HTTP/1.1 431 Request Header Fields Too Large|Content-Type: text/plain; charset=utf-8|body 32|" \
	"$(raw "GET /metrics HTTP/1.1\\r\\nX: $(printf '%9000s' '' | tr ' ' a)")"
is $LINENO "HTTP/1.1 200 OK|Content-Type: text/plain; version=0.0.4; charset=utf-8|body 0|" \
	"$(raw 'HEAD /metrics HTTP/1.0\r\n\r\n')"
raw 'GET /metrics?x=1 HTTP/1.0\n\n' >q.out
grep -q "^HTTP/1.1 200 OK|" q.out || fail $LINENO "$(cat q.out)"
stop_relay $LINENO

# The other counters: bytes through user memory (--copy=readwrite), the
# waits for --rate's tokens; a single target that refuses: the client
# closed, a connect error, the target up all the same (not marked down
# with nothing to fail over to).
relay c.log --metrics=127.0.0.1:0 --copy=readwrite --rate=512K 127.0.0.1:0 127.0.0.1:$eport
is $LINENO ok "$(python3 peer.py send $rport 1 300000)"
is $LINENO 600000 "$(metric psplice_relay_bytes_copied_total)"
[ "$(metric psplice_relay_rate_waits_total)" -ge 1 ] ||
	fail $LINENO "no rate wait counted: $(grep rate_waits scrape)"
stop_relay $LINENO
relay k.log --metrics=127.0.0.1:0 127.0.0.1:0 127.0.0.1:$down
python3 -c 'import socket, sys
c = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
c.sendall(b"x")
try:
    c.recv(1)
except OSError:
    pass' $rport
_i=0
until [ "$(metric 'psplice_relay_errors_total{kind="connect_error"}')" = 1 ]; do
	_i=$((_i + 1))
	[ $_i -le 50 ] || fail $LINENO "no connect error counted: $(cat scrape)"
	sleep 0.1
done
is $LINENO 1 "$(metric "psplice_relay_target_connect_failures_total{target=\"127.0.0.1:$down\"}")"
is $LINENO 1 "$(metric "psplice_relay_target_up{target=\"127.0.0.1:$down\"}")"
is $LINENO 0 "$(metric psplice_relay_connections_open)"
stop_relay $LINENO

# A bad or busy --metrics address: an error, and nothing serves.
timeout 10 "$P" relay --metrics=nohost 127.0.0.1:0 127.0.0.1:1 2>err; rc=$?
rc_is $LINENO 1
grep -q "^psplice: invalid --metrics 'nohost'" err || fail $LINENO "$(cat err)"
timeout 10 "$P" relay --metrics=unix:/tmp/m 127.0.0.1:0 127.0.0.1:1 2>err; rc=$?
rc_is $LINENO 1
grep -q "^psplice: invalid --metrics 'unix:/tmp/m' (want HOST:PORT" err || fail $LINENO "$(cat err)"
python3 -c 'import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1)
open("busy.port", "w").write("%d\n" % s.getsockname()[1]); time.sleep(30)' &
bpid=$!; pids="$pids $bpid"
wait_for busy.port . || fail $LINENO "no busy listener"
busy=$(cat busy.port)
timeout 10 "$P" relay -v --metrics=127.0.0.1:$busy 127.0.0.1:0 127.0.0.1:1 2>err; rc=$?
rc_is $LINENO 1
err_is $LINENO "psplice: cannot listen on '127.0.0.1:$busy' for --metrics: Address already in use"
kill $bpid

# SIGUSR2: the new relay binds the same address beside the old one, which
# closes its listener once the new one serves, though it still drains a
# connection: every scrape is the new one's (no connection yet).
fixed=$(port)
relay re.log --metrics=127.0.0.1:$fixed 127.0.0.1:0 127.0.0.1:$eport
python3 -c 'import socket, sys, time
c = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
c.sendall(b"x"); c.recv(1); open("held", "w").write("held\n"); time.sleep(30)' $rport &
hpid=$!; pids="$pids $hpid"
wait_for held . || fail $LINENO "no connection held"
is $LINENO 1 "$(metric psplice_relay_connections_total)"
old=$rpid
kill -USR2 $old
wait_for re.log "serves in place of this one" || fail $LINENO "no reload: $(cat re.log)"
for i in 1 2 3 4 5 6; do
	is $LINENO 0 "$(metric psplice_relay_connections_total)"
done
kill -0 $old || fail $LINENO "the old relay did not wait for its connection"
kill $hpid
wait $old; rc=$?
rc_is $LINENO 0
new=$(sed -n 's/.*relay: process \([0-9]*\) serves in place.*/\1/p' re.log)
kill -TERM $new
gone $new || fail $LINENO "the new relay did not stop"
! grep -q -E "AddressSanitizer|LeakSanitizer|runtime error" re.log ||
	fail $LINENO "sanitizer report: $(grep -A20 -E 'Sanitizer|runtime error' re.log | head -40)"

# --replace=PID '-' takes every listener of PID but its --metrics one,
# whichever way the option was written: the new relay's own --metrics
# there answers the scrapes, none goes to TARGET.
for form in "--metrics=127.0.0.1:$fixed" "--metrics 127.0.0.1:$fixed" "--metr=127.0.0.1:$fixed"; do
	relay rp.log $form 127.0.0.1:0 127.0.0.1:$eport
	old=$rpid
	relay rn.log --replace=$old --metrics=127.0.0.1:$fixed - 127.0.0.1:$eport
	! grep -E "listening on|listens on" rn.log | grep -q ":$fixed" ||
		fail $LINENO "$form: the metrics listener was taken: $(cat rn.log)"
	gone $old || fail $LINENO "$form: the relay replaced did not stop: $(cat rp.log)"
	for i in 1 2 3; do
		is $LINENO 0 "$(metric psplice_relay_connections_total)"
	done
	stop_relay $LINENO
done
exit 0
