#!/bin/sh
# psplice relay: a signal that comes while a reload's new relay is starting,
# after its exec and before it serves. The new relay is held in that window
# by strace (execve's return delayed 3 s, its image already the new one:
# /proc/PID/environ shows the variables the reload passed, and the process
# is in a tracing stop before and after the signals), and signalled there.
# - SIGUSR1 and SIGUSR2 do not end it: it serves, the old relay drains and
#   exits 0, the counters are said and the reload asked for is made once it
#   serves (a third relay), bytes go through. They used to kill it ("killed
#   by signal 12"), the old relay serving on, the reload lost.
# - SIGTERM stops it before it serves, not killed by the signal: it exits 0,
#   and the old relay says the reload did not happen and serves on.
[ -z "${BASH_VERSION:-}" ] && command -v bash >/dev/null && exec bash "$0" "$@"
name=t_cli_relay_resig; . "$(dirname "$0")/cli-lib.sh"
command -v python3 >/dev/null 2>&1 || { echo "$name: SKIP python3 missing"; exit 77; }
command -v strace >/dev/null 2>&1 || { echo "$name: SKIP strace missing (tests/deps.sh check)"; exit 77; }
strace -f -o /dev/null true 2>/dev/null || { echo "$name: SKIP strace cannot trace here"; exit 77; }
pids=
cli_cleanup() { for p in $pids; do kill "$p" 2>/dev/null; done; }
# LeakSanitizer cannot run under a tracer.
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
export ASAN_OPTIONS

timeout 120 python3 -c 'import asyncio, relay_peers; asyncio.run(relay_peers.echo("tport", secs=110))' &
pids="$pids $!"
wait_for tport . || fail $LINENO "the echo target did not start"
tport=$(cat tport)
relayed() {
	timeout 30 python3 -c '
import asyncio, sys, relay_peers
errors = []
asyncio.run(relay_peers.one(sys.argv[1], 65536, errors))
sys.exit("\n".join(errors) if errors else 0)' "$1"
}

# held HOW: a relay started under strace, every exec after its own held
# 3 s on its return; reloaded, its new relay's pid in $new once it is in
# the window.
held() {
	lport=$(port)
	strace -f -q -o "trace.$1" -e trace=execve -e inject=execve:delay_exit=3000000 \
		"$P" relay -v -j 1 127.0.0.1:$lport 127.0.0.1:$tport 2>"log.$1" &
	tracer=$!; pids="$pids $tracer"
	wait_for "log.$1" "listening on" || fail $LINENO "$1: no start: $(cat "log.$1")"
	old=$(pgrep -P $tracer -x psplice)
	[ -n "$old" ] || fail $LINENO "$1: no relay under strace"
	kill -USR2 $old
	new=
	for _ in $(seq 100); do
		new=$(pgrep -P $old -x psplice)
		[ -n "$new" ] && tr '\0' '\n' <"/proc/$new/environ" 2>/dev/null |
			grep -q '^PSPLICE_RELAY_READY_FD=' && [ "$(state $new)" = t ] && break
		new=
		sleep 0.05
	done
	[ -n "$new" ] || fail $LINENO "$1: no new relay past its exec: $(cat "log.$1")"
	pids="$pids $new"
}
# exited_0 PID HOW: whether the process, gone, exited 0 (its end is in the
# trace once strace has reaped it)
exited_0() {
	wait_for "trace.$2" "^$1 +\+\+\+ " && grep -q -E "^$1 +\+\+\+ exited with 0 \+\+\+" "trace.$2"
}
# state PID: the process's state letter (t: held by its tracer)
state() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1; }
# in_window LINE HOW: the signals came while the exec was held.
in_window() {
	[ "$(state $new)" = t ] ||
		fail $1 "$2: the exec returned before the signal (a loaded machine? run again)"
}

held usr
kill -USR1 $new; kill -USR2 $new
in_window $LINENO usr
wait_for log.usr "process $new serves in place of this one" ||
	fail $LINENO "the new relay did not take over: $(cat log.usr)"
gone $old || fail $LINENO "relay $old did not end"
exited_0 $old usr ||
	fail $LINENO "relay $old did not exit 0: $(grep "^$old " trace.usr)"
# The reload asked of the new relay while it started is made.
wait_count log.usr "serves in place" 2 ||
	fail $LINENO "the SIGUSR2 to the starting relay was lost: $(cat log.usr)"
third=$(served_by log.usr 2); pids="$pids $third"
gone $new || fail $LINENO "relay $new did not end after its reload"
exited_0 $new usr ||
	fail $LINENO "relay $new did not exit 0: $(grep "^$new " trace.usr)"
grep -q 'relay: connections 0 open' log.usr || fail $LINENO "SIGUSR1 said nothing: $(cat log.usr)"
relayed 127.0.0.1:$lport || fail $LINENO "relay $third does not serve"
grep -v -e 'listening on' -e 'serves in place' -e 'stopping: no connections to drain' \
	-e 'connections 0 open' -e 'open$' -e 'closed: [0-9]* bytes' log.usr >bad
grep -q . bad && fail $LINENO "unexpected messages: $(cat bad)"
kill $third; gone $third || fail $LINENO "relay $third did not stop"

held term
kill -TERM $new
in_window $LINENO term
wait_for log.term "still serving" || fail $LINENO "no word of the reload: $(cat log.term)"
exited_0 $new term ||
	fail $LINENO "relay $new did not stop as asked: $(grep "^$new " trace.term)"
is $LINENO "psplice: relay: reload failed: the new relay (process $new) stopped before it served" \
	"$(grep failed log.term)"
relayed 127.0.0.1:$lport || fail $LINENO "relay $old stopped serving"
kill $old; gone $old || fail $LINENO "relay $old did not stop"
exited_0 $old term || fail $LINENO "relay $old did not exit 0"
echo "$name: ok"
