#!/bin/sh
# psplice relay --rate and --rate-total: a transfer of N bytes at RATE takes
# at least (N - burst) / RATE, never sooner (being slower is no failure; 5
# times longer is), and every byte arrives intact, by splice alone (the
# stats line's "copied 0"). --rate limits each direction on its own: both
# at once take the time of one, not of two. --rate-total is shared by
# simultaneous connections, whichever worker and target they have. It works
# with --copy=readwrite, --send-proxy, a drain after SIGTERM, and an idle
# timeout shorter than a connection's wait for tokens. Bad values are
# usage errors. Loopback only; every wait is bounded.
[ -z "${BASH_VERSION:-}" ] && command -v bash >/dev/null && exec bash "$0" "$@"
name=t_cli_relay_rate; . "$(dirname "$0")/cli-lib.sh"
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 missing"; exit 77; }
pids=
cli_cleanup() { for p in $pids; do kill "$p" 2>/dev/null; done; }

cat > peer.py <<'EOF'
import hashlib, os, socket, sys, threading, time
from relay_peers import ready, serve_threads

def send_random(c, n, h):
    while n > 0:
        b = os.urandom(min(n, 65536))
        h.update(b)
        c.sendall(b)
        n -= len(b)

# The target: for each connection, sends `back` random bytes while it reads
# all the client sends; then closes, and appends to `log` "GOT_LEN GOT_SHA
# SENT_SHA PROXY SECS" (and makes `log`.open at the accept): a PROXY line at the start is cut off and said, the
# seconds are from the accept to the client's end of stream. 60 s at most.
def target(portfile, log, back):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(64)
    s.settimeout(1)
    ready(portfile, str(s.getsockname()[1]))
    lock = threading.Lock()
    def serve(c):
        with open(log + ".open", "w") as f:
            f.write("1\n")
        c.settimeout(30)
        start = time.monotonic()
        got, sent = hashlib.sha256(), hashlib.sha256()
        t = threading.Thread(target=send_random, args=(c, int(back), sent))
        t.start()
        n, head, proxy = 0, b"", "-"
        try:
            while True:
                b = c.recv(65536)
                if not b:
                    break
                if proxy == "-":
                    head += b
                    if len(head) < 6 or (head.startswith(b"PROXY ") and b"\r\n" not in head):
                        continue
                    if head.startswith(b"PROXY "):
                        line, b = head.split(b"\r\n", 1)
                        proxy = line.split()[1].decode()
                    else:
                        b, proxy = head, "none"
                n += len(b)
                got.update(b)
            secs = time.monotonic() - start
            t.join()
        except OSError as e:
            secs = -1
        c.close()
        with lock, open(log, "a") as f:
            f.write("%d %s %s %s %.3f\n" % (n, got.hexdigest()[:16],
                    sent.hexdigest()[:16], proxy, secs))
    serve_threads(s, serve, 60)

# What c receives to its end: its length, and its digest in h.
def read_all(c, h):
    k = 0
    while True:
        b = c.recv(65536)
        if not b:
            return k
        k += len(b)
        h.update(b)

# The client: sends n random bytes and its end of stream while it reads to
# the end; prints "SENT_SHA GOT_LEN GOT_SHA START END" (time.monotonic()).
def client(port, n):
    start = time.monotonic()
    c = socket.create_connection(("127.0.0.1", int(port)), timeout=30)
    sent, got = hashlib.sha256(), hashlib.sha256()
    def push():
        send_random(c, int(n), sent)
        c.shutdown(socket.SHUT_WR)
    t = threading.Thread(target=push)
    t.start()
    k = read_all(c, got)
    t.join()
    print(sent.hexdigest()[:16], k, got.hexdigest()[:16], "%.3f" % start,
          "%.3f" % time.monotonic())

# count clients at once from one thread, each sending n random bytes and
# its end of stream as soon as all are connected (no pause an idle timeout
# could take for idleness), then reading to the end; prints "SENT_SHA
# GOT_LEN" for each.
def many(port, count, n):
    cs = [socket.create_connection(("127.0.0.1", int(port)), timeout=30)
          for i in range(int(count))]
    sums = []
    for c in cs:
        b = os.urandom(int(n))
        sums.append(hashlib.sha256(b).hexdigest()[:16])
        c.sendall(b)
        c.shutdown(socket.SHUT_WR)
    for c, h in zip(cs, sums):
        print(h, read_all(c, hashlib.sha256()))

if sys.argv[1] == "target":
    target(*sys.argv[2:])
elif sys.argv[1] == "many":
    many(*sys.argv[2:])
else:
    client(*sys.argv[2:])
EOF

# target NAME BACK: a target sending BACK bytes on each connection, its
# port in $tport, its log NAME.log.
target() {
	rm -f "$1.port" "$1.log" "$1.log.open"
	python3 peer.py target "$1.port" "$1.log" "$2" &
	pids="$pids $!"
	wait_for "$1.port" . || fail $LINENO "the target did not start"
	tport=$(cat "$1.port")
}
# relay LOG OPTIONS...: a relay with -v whose port is in $rport, its pid
# in $rpid.
relay() {
	log=$1; shift
	: >"$log"  # no earlier relay's lines for wait_for to find
	"$P" relay -v "$@" 2>"$log" &
	rpid=$!; pids="$pids $rpid"
	wait_for "$log" "listening on" || fail $LINENO "the relay did not start: $(cat "$log")"
	rport=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\),.*/\1/p' "$log")
}
# stop_relay LINE: SIGTERM; the relay ends 0 with no sanitizer report, and
# its last stats line says no byte went through user memory.
stop_relay() {
	kill -TERM $rpid 2>/dev/null
	gone $rpid 20 || fail "$1" "the relay did not end after SIGTERM"
	wait $rpid; rc=$?
	! grep -q -E "ThreadSanitizer|AddressSanitizer|LeakSanitizer|runtime error" "$log" ||
		fail "$1" "sanitizer report: $(grep -A20 -E 'Sanitizer|runtime error' "$log" | head -40)"
	rc_is "$1" 0
}
copied() { # LINE WANT: the last stats line's "copied" count
	is "$1" "$2" "$(sed -n 's/.*; copied \([0-9]*\)$/\1/p' "$log" | tail -1)"
}
# paced LINE SECS N RATE BURST: SECS is no less than (N - BURST) / RATE
# (less 2 % for the clocks' grain) and no more than 5 N / RATE + 2.
paced() {
	python3 -c "
import sys
secs, n, rate, burst = float('$2'), $3, $4, $5
low, high = 0.98 * (n - burst) / rate, 5 * n / rate + 2
sys.exit(0 if low <= secs <= high else 1)" ||
		fail "$1" "$3 bytes at $4 B/s (burst $5) took $2 s"
}
M=1048576

# Bad values: a usage error, status 1 as the CLI's others, and a message
# naming the option.
for v in 0 -1 abc 10X 1M/s/s '' 1.5M 2T 0/s /s; do
	"$P" relay --rate="$v" 127.0.0.1:0 127.0.0.1:1 2>err; rc=$?
	rc_is $LINENO 1
	grep -q "invalid --rate '*$v'*" err || fail $LINENO "--rate='$v': $(cat err)"
done
"$P" relay --rate-total=0 127.0.0.1:0 127.0.0.1:1 2>err; rc=$?
rc_is $LINENO 1
grep -q "invalid --rate-total '0' (want bytes a second" err || fail $LINENO "$(cat err)"

# One direction, --rate=1M: 3 MiB take at least 2.9 s (burst: a tenth of
# a second's worth); a SIGTERM midway lets the connection finish; every
# byte arrives, none through user memory.
target one 0
relay one.r.log -j 2 --rate=1M/s 127.0.0.1:0 127.0.0.1:$tport
timeout 60 python3 peer.py client $rport $((3 * M)) >one.out &
cpid=$!
wait_for one.log.open . || fail $LINENO "no connection reached the target"
sleep 0.5
kill -USR1 $rpid; kill -TERM $rpid
wait $cpid || fail $LINENO "client: $(cat one.out)"
wait_for one.log . || fail $LINENO "the target did not end"
read -r sent k g start end <one.out
read -r n got back proxy secs <one.log
is $LINENO "$((3 * M)) $sent" "$n $got"
paced $LINENO "$secs" $((3 * M)) $M $((M / 10))
gone $rpid 20 || fail $LINENO "the relay did not end after draining"
wait $rpid; rc=$?; rc_is $LINENO 0
grep -q "draining 1 connection" "$log" || fail $LINENO "no drain: $(cat "$log")"
copied $LINENO 0
# Half a second in, the stats said less than the whole had gone through.
mid=$(sed -n 's/.*bytes \([0-9]*\) client->target.*/\1/p' "$log" | head -1)
[ "$mid" -lt $((3 * M)) ] || fail $LINENO "all $mid bytes through within 1 s"

# Both directions at once, each limited on its own: 8 MiB each way at
# --rate=2M take about 4 s, not the 8 s one budget for both would need;
# each direction takes no less than (8 MiB - burst) / 2 MiB. With
# --send-proxy: the header is not held back, nor counted.
target both $((8 * M))
relay both.r.log -j 1 --rate=2M --send-proxy 127.0.0.1:0 127.0.0.1:$tport
timeout 60 python3 peer.py client $rport $((8 * M)) >both.out || fail $LINENO "client: $(cat both.out)"
wait_for both.log . || fail $LINENO "the target did not end"
read -r sent k got start end <both.out
read -r n tgot back proxy secs <both.log
is $LINENO "$((8 * M)) $sent TCP4" "$n $tgot $proxy"
is $LINENO "$((8 * M)) $back" "$k $got"
paced $LINENO "$secs" $((8 * M)) $((2 * M)) $((2 * M / 10))
took=$(python3 -c "print('%.3f' % ($end - $start))")
paced $LINENO "$took" $((8 * M)) $((2 * M)) $((2 * M / 10))
python3 -c "import sys; sys.exit(0 if $took < 7 else 1)" ||
	fail $LINENO "both directions took $took s: one budget for the two?"
stop_relay $LINENO
copied $LINENO 0

# --rate-total=1M shared by two connections at once, on two workers and
# two targets: 2 MiB each, 4 MiB together, take no less than (4 MiB - 3
# bursts) / 1 MiB (a burst, and what each worker may take at the moment
# the other does).
target t1 0; p1=$tport
target t2 0; p2=$tport
relay total.r.log -j 2 --rate-total=1M 127.0.0.1:0 127.0.0.1:$p1 127.0.0.1:$p2
timeout 60 python3 peer.py client $rport $((2 * M)) >total1.out &
c1=$!
timeout 60 python3 peer.py client $rport $((2 * M)) >total2.out &
c2=$!
wait $c1 || fail $LINENO "client 1: $(cat total1.out)"
wait $c2 || fail $LINENO "client 2: $(cat total2.out)"
wait_for t1.log . && wait_for t2.log . || fail $LINENO "a target did not end"
is $LINENO "$((2 * M)) $((2 * M))" "$(cut -d' ' -f1 t1.log) $(cut -d' ' -f1 t2.log)"
sums=$(cut -d' ' -f1 total1.out total2.out | sort | tr '\n' ' ')
is $LINENO "$sums" "$(cut -d' ' -f2 t1.log t2.log | sort | tr '\n' ' ')"
took=$(cat total1.out total2.out | python3 -c "
import sys
t = [l.split() for l in sys.stdin]
print('%.3f' % (max(float(x[4]) for x in t) - min(float(x[3]) for x in t)))")
paced $LINENO "$took" $((4 * M)) $M $((3 * M / 10))
stop_relay $LINENO
copied $LINENO 0

# --copy=readwrite: the rate sizes each read. 1 MiB at 512K: 1.875 s.
target rw 0
relay rw.r.log -j 1 --copy=readwrite --rate=512K 127.0.0.1:0 127.0.0.1:$tport
timeout 60 python3 peer.py client $rport $M >rw.out || fail $LINENO "client: $(cat rw.out)"
wait_for rw.log . || fail $LINENO "the target did not end"
read -r sent k got start end <rw.out
read -r n tgot back proxy secs <rw.log
is $LINENO "$M $sent" "$n $tgot"
paced $LINENO "$secs" $M $((M / 2)) $((64 * 1024))
stop_relay $LINENO

# A connection waiting for tokens is not idle: 32 connections share
# --rate-total=64K on one worker, each waiting about 32 turns of 20 ms for
# its next, longer than --idle-timeout=0.3; none is closed before its 4 KiB
# are through.
target idle 0
relay idle.r.log -j 1 --rate-total=64K --idle-timeout=0.3 127.0.0.1:0 127.0.0.1:$tport
timeout 60 python3 peer.py many $rport 32 4096 >idle.out || fail $LINENO "clients: $(cat idle.out)"
i=0
while [ "$(wc -l <idle.log)" -lt 32 ] && [ $i -lt 200 ]; do i=$((i + 1)); sleep 0.1; done
is $LINENO "32 4096" "$(wc -l <idle.log) $(cut -d' ' -f1 idle.log | sort -u | tr '\n' ' ' | sed 's/ $//')"
is $LINENO "$(cut -d' ' -f1 idle.out | sort | tr '\n' ' ')" "$(cut -d' ' -f2 idle.log | sort | tr '\n' ' ')"
! grep -q "idle" "$log" || fail $LINENO "closed as idle: $(grep idle "$log" | head -3)"
stop_relay $LINENO
copied $LINENO 0
