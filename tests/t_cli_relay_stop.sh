#!/bin/sh
# psplice relay: a stop and a client that come in one batch of a worker's
# events. The worker reads the stop first and closes its listener (one of
# its own, --reuseport) or shuts it down (shared by the workers); the
# client's event after it in the same batch is stale and accepts nothing:
# no accept(2) on a closed fd ("accept: Bad file descriptor", once seen in
# a --replace storm under ASan), none on a shut down one. strace holds the
# worker 4 s before each epoll_wait, so the stop and the client are both
# waiting when it looks: the batch is checked to hold the two. The client
# is refused with a reset, the relay says nothing but its stop and ends 0.
[ -z "${BASH_VERSION:-}" ] && command -v bash >/dev/null && exec bash "$0" "$@"
name=t_cli_relay_stop; . "$(dirname "$0")/cli-lib.sh"
command -v python3 >/dev/null 2>&1 || { echo "$name: SKIP python3 missing"; exit 77; }
command -v strace >/dev/null 2>&1 || { echo "$name: SKIP strace missing (tests/deps.sh check)"; exit 77; }
strace -f -o /dev/null true 2>/dev/null || { echo "$name: SKIP strace cannot trace here"; exit 77; }
pids=
cli_cleanup() { for p in $pids; do kill "$p" 2>/dev/null; done; }
# LeakSanitizer cannot run under a tracer.
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
export ASAN_OPTIONS

# stop_with_client HOW OPTION...: a relay started with the options, stopped
# while a client waits in its listener's queue, the two in one batch.
stop_with_client() {
	how=$1; shift
	lport=$(port) tport=$(port)
	strace -f -qq -o "trace.$how" -e trace=epoll_wait,accept4 \
		-e inject=epoll_wait:delay_enter=4000000 \
		"$P" relay -v -j 1 "$@" 127.0.0.1:$lport 127.0.0.1:$tport 2>"log.$how" &
	tracer=$!; pids="$pids $tracer"
	wait_for "log.$how" "listening on" || fail $LINENO "$how: no start: $(cat "log.$how")"
	relay=$(pgrep -P $tracer -x psplice)
	[ -n "$relay" ] || fail $LINENO "$how: no relay under strace"
	kill -TERM "$relay"
	wait_for "log.$how" "stopping: no connections to drain" ||
		fail $LINENO "$how: the stop not taken: $(cat "log.$how")"
	# The worker is held before its epoll_wait: the client queues behind
	# the stop.
	timeout 20 python3 -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), 10)
s.settimeout(15)
try:
    got = s.recv(1)
    print("end of stream" if got == b"" else "served")
except ConnectionResetError:
    print("reset")
' $lport >"client.$how" 2>&1
	wait $tracer; rc=$?
	rc_is $LINENO 0
	is $LINENO reset "$(cat "client.$how")"
	# The batch held the stop and the client.
	grep -q 'epoll_wait.* = 2 (DELAYED)$' "trace.$how" ||
		fail $LINENO "$how: the stop and the client did not come in one batch: $(cat "trace.$how")"
	grep 'accept4(' "trace.$how" >bad
	grep -q . bad && fail $LINENO "$how: accept after the stop: $(cat bad)"
	grep -v -e 'listening on' -e 'stopping: no connections to drain' \
		-e 'connections 0 open, 0 total' "log.$how" >bad
	grep -q . bad && fail $LINENO "$how: unexpected messages: $(cat bad)"
	return 0
}

stop_with_client own --reuseport
stop_with_client shared
echo "$name: ok"
