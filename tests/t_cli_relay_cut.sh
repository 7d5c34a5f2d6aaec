#!/bin/sh
# psplice relay: a stream the relay cuts short looks cut, and each closed
# connection has its record. The client checks whether its read ended with
# an end of stream (FIN) or a reset (ECONNRESET): a clean end both ways
# stays a FIN; a target that resets mid-stream, a target that closes with
# the client's bytes unread (said "closed", not an error), the drain timeout
# after SIGTERM with a connection still streaming, and an idle timeout with
# bytes held all reset the client. --log-format=json writes one object per closed
# connection whose byte counts are what the peers counted, whose every
# line json.loads takes, and whose unix addresses keep every byte of the
# path, and whose counts are iperf3's and curl's own. Loopback only;
# every wait is bounded.
[ -z "${BASH_VERSION:-}" ] && command -v bash >/dev/null && exec bash "$0" "$@"
name=t_cli_relay_cut; . "$(dirname "$0")/cli-lib.sh"
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 missing"; exit 77; }
pids=
cli_cleanup() { for p in $pids; do kill "$p" 2>/dev/null; done; }

cat > peer.py <<'EOF'
import json, os, socket, struct, sys, threading, time
from relay_peers import ready

def listener(where, portfile):
    if where.startswith("unix:"):
        s = socket.socket(socket.AF_UNIX)
        s.bind(os.fsencode(where[5:]))
        text = "ok"
    else:
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        text = str(s.getsockname()[1])
    s.listen(16)
    s.settimeout(30)
    ready(portfile, text)
    return s

def reset(c):
    c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    c.close()

# The target, one connection in a given way; what it read goes to countfile.
def target(mode, where, portfile, countfile, n):
    s = listener(where, portfile)
    c, _ = s.accept()
    c.settimeout(30)
    got = 0
    try:
        if mode == "clean":      # all the client sends, then n bytes back
            while True:
                b = c.recv(65536)
                if not b:
                    break
                got += len(b)
            c.sendall(b"r" * n)
            c.close()
        elif mode == "reset":    # n bytes, then a reset mid-stream
            got = len(c.recv(65536))
            c.sendall(b"r" * n)
            time.sleep(0.3)
            reset(c)
        elif mode == "stream":   # sends until the relay goes (20 s at most)
            end = time.time() + 20
            while time.time() < end:
                c.sendall(b"s" * 65536)
        elif mode == "flood":    # n bytes at once, more than the path holds
            c.sendall(b"f" * n)
            time.sleep(20)
        elif mode == "close":    # reads n bytes, then closes, the rest unread
            while got < n:
                b = c.recv(min(65536, n - got))
                if not b:
                    break
                got += len(b)
            c.close()
    except OSError:
        pass
    ready(countfile, str(got))

# The client: sends n bytes (and its end of stream, with "shut"), waits
# `wait` seconds, then reads until the end. Says "fin BYTES" or "rst BYTES";
# its port goes to c.port.
def client(port, n, shut, wait, startedfile):
    for i in range(100):
        try:
            c = socket.create_connection(("127.0.0.1", int(port)), timeout=30)
            break
        except ConnectionRefusedError:
            time.sleep(0.1)
    ready("c.port", str(c.getsockname()[1]))
    if n:
        try:
            c.sendall(b"c" * n)
        except (ConnectionResetError, BrokenPipeError):
            print("rst", 0)
            return
    if shut == "shut":
        c.shutdown(socket.SHUT_WR)
    time.sleep(float(wait))
    got, said = 0, False
    try:
        while True:
            b = c.recv(65536)
            if not b:
                print("fin", got)
                return
            got += len(b)
            if got >= 1 << 20 and not said and startedfile != "-":
                ready(startedfile, "1")
                said = True
    except ConnectionResetError:
        print("rst", got)
    except socket.timeout:
        print("timeout", got)

# Every line of the file a JSON object; prints field=value of the last
# one for the fields asked.
def record(path, *fields):
    lines = [l for l in open(path, "rb").read().split(b"\n") if l.startswith(b"{")]
    if not lines:
        sys.exit("no record in " + path)
    for l in lines:
        o = json.loads(l.decode("utf-8", "surrogateescape"))
    out = []
    for f in fields:
        v = o[f]
        if isinstance(v, list):
            v = ",".join(v)
        elif isinstance(v, bool):
            v = str(v).lower()
        out.append("%s=%s" % (f, v))
    print(" ".join(out))

# The record's start is RFC 3339 UTC with milliseconds, within the last
# minute, and its duration a number of seconds no longer than that.
def times(path):
    import datetime
    o = json.loads(open(path, "rb").read().split(b"\n")[-2])
    t = datetime.datetime.strptime(o["start"], "%Y-%m-%dT%H:%M:%S.%fZ")
    t = t.replace(tzinfo=datetime.timezone.utc)
    age = time.time() - t.timestamp()
    assert len(o["start"]) == 24, o["start"]
    assert 0 <= age < 60, age
    assert 0 <= o["duration"] <= age + 0.01, (o["duration"], age)
    print("ok")

# The target address of the last record, as the path's bytes.
def target_path(path):
    o = json.loads(open(path, "rb").read().split(b"\n")[-2])
    sys.stdout.buffer.write(o["target"].encode("utf-8", "surrogateescape") + b"\n")

m = sys.argv[1]
if m == "target":
    target(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6]))
elif m == "client":
    client(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6])
elif m == "record":
    record(*sys.argv[2:])
elif m == "times":
    times(sys.argv[2])
elif m == "target_path":
    target_path(sys.argv[2])
EOF

# relay LOG OPTIONS...: a relay with -v whose port is in $rport, its pid in
# $rpid; it stops at SIGTERM.
relay() {
	log=$1; shift
	# Emptied first: the background job's own redirection may come after
	# wait_for has read an earlier relay's "listening on" in the same log.
	: >"$log"
	"$P" relay -v -j 1 "$@" 2>"$log" &
	rpid=$!; pids="$pids $rpid"
	wait_for "$log" "listening on" || fail $LINENO "the relay did not start: $(cat "$log")"
	rport=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\),.*/\1/p' "$log")
}
# target MODE WHERE N: the target peer, its port in $tport.
target() {
	rm -f t.port t.count
	python3 peer.py target "$1" "$2" t.port t.count "$3" &
	pids="$pids $!"
	wait_for t.port . || fail $LINENO "the target did not start"
	tport=$(cat t.port)
}
# stop_relay LINE: SIGTERM, and the relay ends 0 with no sanitizer report.
stop_relay() {
	kill -TERM $rpid 2>/dev/null
	gone $rpid 20 || fail "$1" "the relay did not end after SIGTERM"
	wait $rpid; rc=$?
	clean_log "$1" "$log"
	rc_is "$1" 0
}
clean_log() {
	! grep -q -E "ThreadSanitizer|AddressSanitizer|LeakSanitizer|runtime error" "$2" ||
		fail "$1" "sanitizer report: $(grep -A20 -E 'Sanitizer|runtime error' "$2" | head -40)"
}
# fields LINE NAME=WANT...: the last record in log.json says these.
fields() {
	l=$1; shift
	got=$(python3 peer.py record log.json $(printf '%s\n' "$@" | sed 's/=.*//')) ||
		fail "$l" "not JSON: $(cat log.json)"
	is "$l" "$*" "$got"
}

# Clean both ways: the client sends 1 MB and its end, the target reads it
# all and answers 3 MB; the client reads to a FIN. The record's counts are
# the peers' own.
target clean 127.0.0.1:0 3000000
relay r1.log --log-format=json --log=log.json 127.0.0.1:0 127.0.0.1:$tport
got=$(timeout 60 python3 peer.py client $rport 1000000 shut 0 -)
is $LINENO "fin 3000000" "$got"
wait_for t.count . || fail $LINENO "the target did not end"
is $LINENO 1000000 "$(cat t.count)"
wait_for log.json . || fail $LINENO "no record: $(cat r1.log)"
fields $LINENO bytes_to_target=1000000 bytes_to_client=3000000 end=fin side=client reset=false errno=None client=127.0.0.1:$(cat c.port) target="127.0.0.1:$tport" method=splice_pipe
is $LINENO ok "$(python3 peer.py times log.json)"
stop_relay $LINENO
# JSON mode: no text line for the connection on standard error.
! grep -q '#1' r1.log || fail $LINENO "a text record besides the JSON: $(cat r1.log)"

# The target resets mid-stream while the client still has its stream open:
# the client gets a reset, not an end; said once in text (no -v needed).
target reset 127.0.0.1:0 100000
# Without -v the relay does not say its port: it is given one that was
# free a moment ago, and the client tries until it listens.
rport=$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])")
log=r2.log
"$P" relay -j 1 127.0.0.1:$rport 127.0.0.1:$tport 2>r2.log &
rpid=$!; pids="$pids $rpid"
got=$(timeout 60 python3 peer.py client $rport 1000 open 0 -)
is $LINENO rst "${got% *}"
wait_for r2.log "error reading from target: Connection reset by peer: .*; reset$" ||
	fail $LINENO "no line for the reset: $(cat r2.log)"
stop_relay $LINENO

# The same in JSON: how it ended, by whom, and the reset.
target reset 127.0.0.1:0 100000
relay r3.log --log-format=json --log=log.json 127.0.0.1:0 127.0.0.1:$tport
got=$(timeout 60 python3 peer.py client $rport 1000 open 0 -)
is $LINENO rst "${got% *}"
wait_for log.json '"id":1,.*"end":"rst"' || fail $LINENO "no record: $(cat log.json)"
fields $LINENO end=rst side=target op=read errno=ECONNRESET reset=true bytes_to_target=1000
stop_relay $LINENO

# SIGTERM with a connection streaming: at the drain timeout, a reset.
target stream 127.0.0.1:0 0
relay r4.log --log-format=json --drain-timeout=1 127.0.0.1:0 127.0.0.1:$tport
timeout 60 python3 peer.py client $rport 0 open 0 started >c4.out &
cpid=$!; pids="$pids $cpid"
wait_for started . || fail $LINENO "the stream did not start"
kill -TERM $rpid
gone $rpid 20 || fail $LINENO "the relay did not end at its drain timeout"
wait $rpid; rc=$?
clean_log $LINENO r4.log
rc_is $LINENO 0
wait $cpid
is $LINENO rst "$(cut -d' ' -f1 c4.out)"
grep '^{' r4.log >log.json
fields $LINENO end=drain_timeout side=relay reset=true method=splice_pipe

# An idle timeout while bytes wait for a client that does not read: the
# client, reading at last, gets what arrived and then a reset.
target flood 127.0.0.1:0 64000000
relay r5.log --log-format=json --log=log.json --idle-timeout=1 127.0.0.1:0 127.0.0.1:$tport
got=$(timeout 60 python3 peer.py client $rport 0 open 3 -)
is $LINENO rst "${got% *}"
wait_for log.json '"id":1,.*"end":"idle_timeout"' || fail $LINENO "no record: $(cat log.json)"
fields $LINENO reset=true method=splice_pipe
[ "$(python3 peer.py record log.json lost_to_client)" != lost_to_client=0 ] ||
	fail $LINENO "nothing held at the idle timeout: $(cat log.json)"
stop_relay $LINENO

# The target takes part of the client's stream, then closes with the rest
# unread, as iperf3's server ends a test: the relay cannot deliver what it
# holds. Its kernel resets the connection (unread bytes), which the relay
# meets writing, "closed" (EPIPE: the target closed, no error of the
# relay's), or, first, reading, "rst" (ECONNRESET); either way on the
# target's side, and the client is reset, as its bytes did not all arrive.
target close 127.0.0.1:0 1000000
relay r6.log --log-format=json --log=log.json 127.0.0.1:0 127.0.0.1:$tport
got=$(timeout 60 python3 peer.py client $rport 64000000 open 0 -)
is $LINENO rst "${got% *}"
wait_for log.json '"id":1,.*"end":"(closed|rst)"' || fail $LINENO "no record: $(cat log.json)"
case $(python3 peer.py record log.json end) in
end=closed) fields $LINENO end=closed side=target op=write errno=EPIPE reset=true method=splice_pipe ;;
*) fields $LINENO end=rst side=target op=read errno=ECONNRESET reset=true method=splice_pipe ;;
esac
stop_relay $LINENO

# A unix target whose path holds a quote, a backslash, a newline, a byte
# that is not UTF-8 and one that is: the record says every byte.
tpath=$(printf '%s/t"\\\n\377\303\251x' "$d")
tpath=${tpath%x}
target clean "unix:$tpath" 10
relay r6.log --log-format=json --log=log.json 127.0.0.1:0 "unix:$tpath"
got=$(timeout 60 python3 peer.py client $rport 5 shut 0 -)
is $LINENO "fin 10" "$got"
wait_for log.json '"id":1' || fail $LINENO "no record: $(cat r6.log)"
printf 'unix:%s\n' "$tpath" >want
python3 peer.py target_path log.json >got
same $LINENO want got
stop_relay $LINENO

# iperf3's own counts: its data connection carries the 37-byte cookie
# that names the test (COOKIE_SIZE in iperf3's src/iperf.h), then the bytes
# it counts; its control connection, a few hundred bytes each way, has
# fewer. Two workers, under TSan too.
if command -v iperf3 >/dev/null 2>&1; then
	iport=$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])")
	timeout 60 iperf3 -s -1 -B 127.0.0.1 -p $iport >iperf3.log 2>&1 &
	pids="$pids $!"
	rm -f log.json
	relay r7.log -j 2 --log-format=json --log=log.json 127.0.0.1:0 127.0.0.1:$iport
	i=0
	until timeout 60 iperf3 -c 127.0.0.1 -p $rport -n 8M -J >iperf3.json 2>&1; do
		i=$((i + 1)); [ $i -le 20 ] || fail $LINENO "iperf3 failed: $(cat iperf3.json)"
		sleep 0.2
	done
	wait_for log.json '"id":2,' || fail $LINENO "no record: $(cat log.json)"
	stop_relay $LINENO
	# iperf3 -n stops reading when the client has sent its bytes: the
	# server may reset the data connection with some unread. What the
	# relay delivered lies between what the server read and what the
	# client sent, and is what the client sent when the stream ended
	# cleanly (a FIN).
	python3 -c '
import json, sys
ip = json.load(open(sys.argv[1]))["end"]
rec = max((json.loads(l) for l in open(sys.argv[2])), key=lambda r: r["bytes_to_target"])
sent, read, got = ip["sum_sent"]["bytes"] + 37, ip["sum_received"]["bytes"] + 37, rec["bytes_to_target"]
if not read <= got <= sent or (rec["end"] == "fin" and got != sent):
    sys.exit("iperf3 sent %d, read %d; the relay delivered %d (%s)" % (sent, read, got, rec["end"]))
' iperf3.json log.json || fail $LINENO "the counts differ"
else
	skip "iperf3 is not installed"
fi

# curl's own counts, a download and an upload (PUT) through the relay to
# an HTTP server of python3's http.server: what the relay says it moved to
# the client is the response curl read, its headers (%{size_header}) and
# body (%{size_download}); to the target, the request curl sent, headers
# (%{size_request}) and body (%{size_upload}). The server speaks HTTP/1.0
# and closes after each response, so each connection is one exchange and
# both ends are a FIN.
if command -v curl >/dev/null 2>&1; then
	cat > httpd.py <<'PYEOF'
import http.server, os, sys

class H(http.server.SimpleHTTPRequestHandler):
    def do_PUT(self):
        n = int(self.headers["Content-Length"])
        got = 0
        while got < n:
            b = self.rfile.read(min(65536, n - got))
            if not b:
                break
            got += len(b)
        body = ("stored %d\n" % got).encode()
        self.send_response(201)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass

s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
with open("h.port.tmp", "w") as f:
    f.write("%d\n" % s.server_address[1])
os.rename("h.port.tmp", "h.port")
s.timeout = 60
s.serve_forever()
PYEOF
	mkdir www
	head -c 3000000 /dev/urandom >www/down
	head -c 2000000 /dev/urandom >up
	(cd www && exec python3 ../httpd.py) &
	pids="$pids $!"
	wait_for www/h.port . || fail $LINENO "the HTTP server did not start"
	hport=$(cat www/h.port)
	rm -f log.json
	relay r8.log --log-format=json --log=log.json 127.0.0.1:0 127.0.0.1:$hport
	# bytes: response headers, body; request headers, body
	fmt='%{size_header} %{size_download} %{size_request} %{size_upload}'
	got=$(timeout 60 curl -sS -o down -w "$fmt" "http://127.0.0.1:$rport/down") ||
		fail $LINENO "curl could not download: $got"
	same $LINENO www/down down
	wait_for log.json '"id":1,' || fail $LINENO "no record: $(cat r8.log)"
	set -- $got
	fields $LINENO bytes_to_client=$(($1 + $2)) bytes_to_target=$(($3 + $4)) end=fin
	[ "$2" -eq 3000000 ] || fail $LINENO "curl counted $2 bytes of body, want 3000000"
	got=$(timeout 60 curl -sS -o put.out -H 'Expect:' -T up -w "$fmt" \
		"http://127.0.0.1:$rport/up") || fail $LINENO "curl could not upload: $got"
	is $LINENO "stored 2000000" "$(cat put.out)"
	wait_for log.json '"id":2,' || fail $LINENO "no record: $(cat r8.log)"
	set -- $got
	fields $LINENO bytes_to_client=$(($1 + $2)) bytes_to_target=$(($3 + $4)) end=fin
	[ "$4" -eq 2000000 ] || fail $LINENO "curl counted $4 bytes uploaded, want 2000000"
	stop_relay $LINENO
else
	skip "curl is not installed"
fi

# Every record, in every file, a JSON object alone on its line.
for f in log.json r4.log; do
	python3 -c '
import json, sys
for l in open(sys.argv[1], "rb"):
    if l.startswith(b"{"):
        json.loads(l)
' "$f" || fail $LINENO "a line of $f is not JSON"
done
exit 0
