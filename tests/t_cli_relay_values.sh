#!/bin/sh
# psplice relay's SEC and count options, and its long deadlines. Every
# value is a usage error or has a documented meaning: seconds are decimal
# digits to the millisecond, from 0.001 to 1000000000; nothing rounds to 0
# (--idle-timeout=0.0004 was "never"); hexadecimal and exponents ("0x10",
# "1e9", which strtod takes) and signs are refused; 0 is what each option
# says, and --connect-timeout refuses it (every connect "timed out"). A
# count takes digits alone ("--max-conns= -1" wrapped to no limit), a
# mode octal digits alone.
# Deadlines past the 24.8 days of milliseconds an int holds
# (--idle-timeout, --stats-interval, --drain-timeout of 3000000) are
# waited for in bounded parts: strace sees no negative timeout (one waits
# for ever) in the worker's epoll_wait and the main thread's poll; the
# connection stays open, and the relay answers SIGUSR1 and stops. Every
# wait is bounded.
[ -z "${BASH_VERSION:-}" ] && command -v bash >/dev/null && exec bash "$0" "$@"
name=t_cli_relay_values; . "$(dirname "$0")/cli-lib.sh"
pids=
cli_cleanup() { for p in $pids; do kill "$p" 2>/dev/null; done; }

# refused LINE OPTION VALUE [ZERO]: a usage error naming the range, and
# what 0 means when it means something.
refused() {
	"$P" relay --check "$2=$3" 127.0.0.1:0 127.0.0.1:9 2>err; rc=$?
	rc_is "$1" 1
	is "$1" "psplice: invalid $2 '$3' (want seconds from 0.001 to 1000000000, to the millisecond${4:+, or 0: $4})" \
		"$(head -1 err)"
}
# accepted LINE OPTION...
accepted() {
	l=$1; shift
	"$P" relay --check "$@" 127.0.0.1:0 127.0.0.1:9 2>err; rc=$?
	rc_is "$l" 0
	err_is "$l"
}

for v in 0x10 1e9 1E3 0.0004 0.0001 1.0000 -1 +1 ' 5' '5 ' 5. . '' inf nan 1,5 \
	1000000001 99999999999999999999; do
	refused $LINENO --idle-timeout "$v" never
	refused $LINENO --drain-timeout "$v" "cut at once"
	refused $LINENO --stats-interval "$v" never
	refused $LINENO --check-interval "$v" "no probes"
	refused $LINENO --connect-timeout "$v"
done
for v in 0 0.000 0.0001; do
	refused $LINENO --connect-timeout "$v"
done
for v in 0 0.000 0.001 .5 1.250 30 1000000000 000000000001; do
	accepted $LINENO --idle-timeout="$v" --drain-timeout="$v" --stats-interval="$v" \
		--check-interval="$v"
done
for v in 0.001 .5 10 1000000000; do
	accepted $LINENO --connect-timeout="$v"
done
# A config line's, with its place.
echo "127.0.0.1:0 127.0.0.1:9 --idle-timeout=0.0004" >bad.conf
"$P" relay --check --config=bad.conf 2>err; rc=$?
rc_is $LINENO 1
is $LINENO "psplice: bad.conf:1: invalid --idle-timeout '0.0004' (want seconds from 0.001 to 1000000000, to the millisecond, or 0: never)" \
	"$(head -1 err)"

# Counts: digits alone.
for v in ' -1' -1 +1 ' 5' 0x10 1e3 '' 18446744073709551616; do
	"$P" relay --check --max-conns="$v" 127.0.0.1:0 127.0.0.1:9 2>err; rc=$?
	rc_is $LINENO 1
	is $LINENO "psplice: invalid --max-conns '$v' (want a count in decimal digits)" "$(head -1 err)"
done
for v in 0 5 18446744073709551615; do
	accepted $LINENO --max-conns="$v"
done
# A mode: octal digits alone.
for v in ' 660' +660 -0 8 '' 0x1ff 77777777777777777777777; do
	"$P" relay --check --unix-mode="$v" unix:s 127.0.0.1:9 2>err; rc=$?
	rc_is $LINENO 1
	is $LINENO "psplice: invalid --unix-mode '$v' (want an octal mode, e.g. 660)" "$(head -1 err)"
done
"$P" relay --check --unix-mode=0660 unix:s 127.0.0.1:9 2>err; rc=$?
rc_is $LINENO 0

# Deadlines 34.7 days away, under strace.
command -v python3 >/dev/null 2>&1 || { echo "$name: SKIP deadlines: python3 missing"; exit 77; }
command -v strace >/dev/null 2>&1 || { echo "$name: SKIP deadlines: strace missing (tests/deps.sh check)"; exit 77; }
strace -f -o /dev/null true 2>/dev/null || { echo "$name: SKIP deadlines: strace cannot trace here"; exit 77; }
# LeakSanitizer cannot run under a tracer.
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
export ASAN_OPTIONS
python3 -c 'import asyncio, relay_peers; asyncio.run(relay_peers.echo("tport", secs=60))' &
pids="$pids $!"
wait_for tport . || fail $LINENO "the target did not start"
# The worker's first sweep after the connect (at its timeout, 0.5 s) finds
# the idle deadline next.
strace -f -qq -o trace -e trace=epoll_wait,poll "$P" relay -v -j 1 --idle-timeout=3000000 \
	--stats-interval=3000000 --drain-timeout=3000000 --connect-timeout=0.5 127.0.0.1:0 127.0.0.1:$(cat tport) 2>big.log &
tracer=$!; pids="$pids $tracer"
wait_for big.log "listening on" || fail $LINENO "no start: $(cat big.log)"
relay=$(pgrep -P $tracer -x psplice)
[ -n "$relay" ] || fail $LINENO "no relay under strace"
rport=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\),.*/\1/p' big.log)
# A client served, then idle: open 2 s later, until the file "go".
timeout 60 python3 -c '
import os, socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), 10)
s.sendall(b"ping")
s.settimeout(10)
print("served" if s.recv(4) == b"ping" else "not served", flush=True)
s.settimeout(2)
try:
    print("closed" if s.recv(1) == b"" else "data", flush=True)
except socket.timeout:
    print("open", flush=True)
except OSError as e:
    print(e, flush=True)
for _ in range(400):
    if os.path.exists("go"):
        break
    time.sleep(0.1)
' $rport >client.out &
client=$!; pids="$pids $client"
wait_count client.out . 2 || fail $LINENO "the client did not finish: $(cat client.out)"
is $LINENO "served open" "$(echo $(cat client.out))"
kill -USR1 $relay
wait_for big.log "connections 1 open" 10 || fail $LINENO "SIGUSR1 not answered: $(cat big.log)"
kill -TERM $relay
wait_for big.log "draining 1 connection" 10 || fail $LINENO "the stop not taken: $(cat big.log)"
touch go
gone $tracer 20 || fail $LINENO "the relay did not end once the connection closed: $(cat big.log)"
wait $tracer; rc=$?
rc_is $LINENO 0
wait $client
# Each wait's timeout: -1 (none due) or from 0 to an int's largest.
sed -n 's/.*epoll_wait.*, 64, \(-\{0,1\}[0-9]*\)) .*/\1/p' trace >epoll.t
sed -n 's/.*poll(\[.*\], 3, \(-\{0,1\}[0-9]*\)[) ].*/\1/p' trace >poll.t
grep -q . epoll.t || fail $LINENO "no epoll_wait traced: $(head trace)"
grep -q . poll.t || fail $LINENO "no poll traced: $(head trace)"
awk '$1 < -1 || $1 > 2147483647' epoll.t poll.t >bad
grep -q . bad && fail $LINENO "timeouts out of range (a negative one waits for ever): $(sort -u bad | head)"
# The far deadlines are waited for: the idle timeout, the drain, the stats.
awk '$1 > 1000000' epoll.t | grep -q . ||
	fail $LINENO "no epoll_wait for the far deadlines: $(sort -u epoll.t | head)"
awk '$1 > 1000000' poll.t | grep -q . ||
	fail $LINENO "no poll for the stats interval: $(sort -u poll.t | head)"
echo "$name: ok"
