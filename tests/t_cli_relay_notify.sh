#!/bin/sh
# psplice relay under a service manager's Type=notify: the datagrams it
# sends to NOTIFY_SOCKET, read here by a unix datagram socket bound in its
# place, each with the sender's pid as the kernel gives it (SO_PASSCRED), as
# systemd reads them (sd_notify(3), "the notification protocol"). READY=1
# once the relay serves; on SIGUSR2, RELOADING=1 with MONOTONIC_USEC, then
# MAINPID= of the new relay and READY=1, from the old relay (the main
# process the manager listens to), the new one saying nothing at its start;
# a reload that fails, READY=1 again; STOPPING=1 at a stop, from the relay
# that serves only. The abstract namespace ("@name") too, and the example
# unit of contrib/.
[ -z "${BASH_VERSION:-}" ] && command -v bash >/dev/null && exec bash "$0" "$@"
name=t_cli_relay_notify; . "$(dirname "$0")/cli-lib.sh"
command -v python3 >/dev/null 2>&1 || { echo "$name: SKIP python3 missing"; exit 77; }
pids=
cli_cleanup() { for p in $pids; do kill "$p" 2>/dev/null; done; }

# collect ADDR OUT: each datagram to ADDR as "PID TEXT" on a line of OUT,
# TEXT's newlines as "|".
collect() {
	timeout 100 python3 -c '
import os, socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
addr = sys.argv[1]
s.bind("\0" + addr[1:] if addr.startswith("@") else addr)
open(sys.argv[2] + ".up", "w").close()
while True:
    data, anc, _, _ = s.recvmsg(4096, socket.CMSG_SPACE(12))
    pid = [struct.unpack("iII", d[:12])[0] for l, t, d in anc
           if l == socket.SOL_SOCKET and t == socket.SCM_CREDENTIALS]
    with open(sys.argv[2], "a") as f:
        f.write("%s %s\n" % (pid[0] if pid else "?", data.decode().replace("\n", "|")))
' "$1" "$2" &
	pids="$pids $!"
	for _ in $(seq 100); do [ -e "$2.up" ] && return; sleep 0.1; done
	fail $LINENO "the notify socket was not bound"
}
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

collect "$d/notify.sock" got
cp "$P" ./psplice || fail $LINENO "cannot copy $P"
lport=$(port)
NOTIFY_SOCKET="$d/notify.sock" ./psplice relay -v -j 1 127.0.0.1:$lport 127.0.0.1:$tport 2>r.log &
r0=$!; pids="$pids $r0"
wait_for got "^$r0 READY=1\|MAINPID=$r0\|\$" || fail $LINENO "no READY=1: $(cat got r.log)"

# A reload.
kill -USR2 $r0
wait_for r.log "serves in place" || fail $LINENO "no reload: $(cat r.log)"
r1=$(served_by r.log 1); pids="$pids $r1"
wait_for got "^$r0 MAINPID=$r1\|READY=1\|\$" || fail $LINENO "no MAINPID of the new relay: $(cat got)"
wait $r0; rc=$?
rc_is $LINENO 0
relayed 127.0.0.1:$lport || fail $LINENO "relay $r1 does not serve"
sed -n 2p got | grep -q -E "^$r0 RELOADING=1\|MONOTONIC_USEC=[1-9][0-9]*\|\$" ||
	fail $LINENO "no RELOADING=1 first: $(cat got)"
usec=$(sed -n 2p got | sed 's/.*MONOTONIC_USEC=\([0-9]*\).*/\1/')
now=$(cut -d. -f1 /proc/uptime)
# CLOCK_MONOTONIC and /proc/uptime count from boot alike (suspended time
# apart): the value is a time of this boot, not of the epoch.
[ "$((usec / 1000000))" -le "$((now + 1))" ] ||
	fail $LINENO "MONOTONIC_USEC $usec is not a monotonic time (up $now s)"
is $LINENO 3 "$(grep -c . got)"

# A reload that fails: READY=1 again, from the relay serving on.
chmod a-x psplice
kill -USR2 $r1
wait_for r.log "still serving" || fail $LINENO "no failed reload: $(cat r.log)"
wait_count got . 5 || fail $LINENO "$(cat got)"
sed -n 4p got | grep -q -E "^$r1 RELOADING=1\|MONOTONIC_USEC=[1-9][0-9]*\|\$" || fail $LINENO "$(cat got)"
sed -n 5p got | grep -q -E "^$r1 READY=1\|STATUS=reload failed: process $r1 serves on\|\$" ||
	fail $LINENO "$(cat got)"

# A stop.
kill $r1; gone $r1 || fail $LINENO "relay $r1 did not stop"
wait_count got . 6 || fail $LINENO "$(cat got)"
is $LINENO "$r1 STOPPING=1|" "$(sed -n 6p got)"

# The abstract namespace.
chmod a+x psplice
collect "@psplice-notify-$$" abs
NOTIFY_SOCKET="@psplice-notify-$$" ./psplice relay -j 1 127.0.0.1:$lport 127.0.0.1:$tport 2>a.log &
a0=$!; pids="$pids $a0"
wait_for abs "^$a0 READY=1\|MAINPID=$a0\|\$" || fail $LINENO "no READY=1: $(cat abs a.log)"
kill $a0; gone $a0 || fail $LINENO "relay $a0 did not stop"
# Without a manager listening: said once, served all the same.
NOTIFY_SOCKET="$d/none.sock" ./psplice relay -j 1 127.0.0.1:$lport 127.0.0.1:$tport 2>n.log &
n0=$!; pids="$pids $n0"
wait_for n.log "cannot notify" || fail $LINENO "nothing said: $(cat n.log)"
relayed 127.0.0.1:$lport || fail $LINENO "relay $n0 does not serve"
kill $n0; gone $n0 || fail $LINENO "relay $n0 did not stop"
is $LINENO "psplice: relay: cannot notify the service manager at '$d/none.sock': No such file or directory" \
	"$(cat n.log)"
grep -v -e 'listening on' -e 'serves in place' -e 'stopping: no connections to drain' \
	-e 'connections 0 open' -e 'open$' -e 'closed: [0-9]* bytes' -e 'reload failed: cannot run' \
	-e 'still serving' -e 'connections 0 open' -e 'connections 1 open' -e 'connections [0-9]* open, [0-9]* total' r.log a.log >bad
grep -q . bad && fail $LINENO "unexpected messages: $(cat bad)"

# The example unit (contrib/systemd/psplice-relay.service) loads as systemd
# reads it, with the relay it starts here.
if command -v systemd-analyze >/dev/null 2>&1; then
	mkdir units
	sed "s#/usr/bin/psplice #$P #" "$(dirname "$0")/../contrib/systemd/psplice-relay.service" \
		>units/psplice-relay.service
	grep -q "^Type=notify$" units/psplice-relay.service || fail $LINENO "not Type=notify"
	grep -q '^ExecReload=/bin/kill -USR2 $MAINPID$' units/psplice-relay.service ||
		fail $LINENO "no reload by SIGUSR2"
	timeout 60 systemd-analyze verify --man=no "$d/units/psplice-relay.service" >verify.out 2>&1; rc=$?
	rc_is $LINENO 0
	is $LINENO "" "$(cat verify.out)"
else
	skip "systemd-analyze not installed: the example unit is not checked"
fi
echo "$name: ok"
