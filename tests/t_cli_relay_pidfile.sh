#!/bin/sh
# psplice relay --pid-file=FILE names the relay that serves: written once
# it serves; after a SIGUSR2 reload, the new relay's pid, which the old one
# leaves when it drains and exits; after --replace, the replacing relay's;
# removed when the relay serving stops, and not by a relay whose pid it no
# longer holds. Always whole (a rename): no temporary file is left beside
# it.
[ -z "${BASH_VERSION:-}" ] && command -v bash >/dev/null && exec bash "$0" "$@"
name=t_cli_relay_pidfile; . "$(dirname "$0")/cli-lib.sh"
command -v python3 >/dev/null 2>&1 || { echo "$name: SKIP python3 missing"; exit 77; }
pids=
cli_cleanup() { for p in $pids; do kill "$p" 2>/dev/null; done; }

timeout 120 python3 -c 'import asyncio, relay_peers; asyncio.run(relay_peers.echo("tport", secs=110))' &
pids="$pids $!"
wait_for tport . || fail $LINENO "the echo target did not start"
tport=$(cat tport)
relayed() {
	timeout 30 python3 -c '
import asyncio, sys, relay_peers
errors = []
asyncio.run(relay_peers.one(sys.argv[1], 4096, errors))
sys.exit("\n".join(errors) if errors else 0)' "$1"
}
# holds LINE PID: the pid file names PID (within 20 s)
holds() {
	wait_for run/r.pid "^$2\$" || fail $1 "the pid file holds '$(cat run/r.pid 2>&1)', want $2"
}
mkdir run
lport=$(port)

"$P" relay -v -j 1 --pid-file=run/r.pid 127.0.0.1:$lport 127.0.0.1:$tport 2>r.log &
r0=$!; pids="$pids $r0"
wait_for r.log "listening on" || fail $LINENO "the relay did not start: $(cat r.log)"
holds $LINENO $r0
is $LINENO "$r0" "$(cat run/r.pid)"

# A reload: the new relay's pid, kept when the old one exits.
kill -USR2 $r0
wait_for r.log "serves in place" || fail $LINENO "no reload: $(cat r.log)"
r1=$(served_by r.log 1); pids="$pids $r1"
holds $LINENO $r1
wait $r0; rc=$?
rc_is $LINENO 0
is $LINENO "$r1" "$(cat run/r.pid)"
relayed 127.0.0.1:$lport || fail $LINENO "relay $r1 does not serve"

# --replace: the replacing relay's, kept when the one replaced exits.
"$P" relay -v -j 1 --replace=$r1 --pid-file=run/r.pid 127.0.0.1:$lport 127.0.0.1:$tport 2>p.log &
r2=$!; pids="$pids $r2"
wait_for r.log "process $r2 serves in place" || fail $LINENO "no takeover: $(cat r.log p.log)"
holds $LINENO $r2
gone $r1 || fail $LINENO "relay $r1 did not end"
is $LINENO "$r2" "$(cat run/r.pid)"
relayed 127.0.0.1:$lport || fail $LINENO "relay $r2 does not serve"

# A file that names another process is left as it is.
echo 1 >run/r.pid
kill $r2; wait $r2; rc=$?
rc_is $LINENO 0
is $LINENO 1 "$(cat run/r.pid)"

# The relay serving stops: the file goes, also when cut by a second stop.
"$P" relay -j 1 --pid-file=run/r.pid 127.0.0.1:$lport 127.0.0.1:$tport 2>s.log &
r3=$!; pids="$pids $r3"
holds $LINENO $r3
kill $r3; wait $r3; rc=$?
rc_is $LINENO 0
[ -e run/r.pid ] && fail $LINENO "the pid file is left: $(cat run/r.pid)"
"$P" relay -v -j 1 --pid-file=run/r.pid 127.0.0.1:$lport 127.0.0.1:$tport 2>c.log &
r4=$!; pids="$pids $r4"
holds $LINENO $r4
timeout 30 python3 -c '
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), 10)
time.sleep(25)' $lport &
client=$!; pids="$pids $client"
wait_for c.log ' open$' || fail $LINENO "no connection: $(cat c.log)"
kill -TERM $r4
wait_for c.log 'draining 1 connection' || fail $LINENO "no drain: $(cat c.log)"
kill -TERM $r4; wait $r4
grep -q 'stopping now: 1 connection cut' c.log || fail $LINENO "no cut: $(cat c.log)"
[ -e run/r.pid ] && fail $LINENO "the pid file is left after a cut: $(cat run/r.pid)"
kill $client 2>/dev/null
is $LINENO "" "$(ls run)"
grep -h -i -e 'pid file' r.log p.log s.log c.log && fail $LINENO "said something of the pid file"
echo "$name: ok"
