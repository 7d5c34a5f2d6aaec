#!/bin/sh
# psplice relay and the open-file limit. Started with the soft limit most
# logins give (1,024), the relay stopped at about 500 connections, two
# sockets each ("accept: Too many open files"). It raises its soft limit to
# what --max-conns needs, up to the hard limit, as HAProxy raises it at
# start: with --max-conns=1500, 1,200 idle connections are all relayed and
# the last one carries bytes. Below that need, a hard limit is said at start
# with the connections it carries; without --max-conns the soft limit is
# raised to the hard one. A reload's new relay raises its own too.
[ -z "${BASH_VERSION:-}" ] && command -v bash >/dev/null && exec bash "$0" "$@"
name=t_cli_relay_nofile; . "$(dirname "$0")/cli-lib.sh"
command -v python3 >/dev/null 2>&1 || { echo "$name: SKIP python3 missing"; exit 77; }
hard=$(ulimit -Hn)
[ "$hard" = unlimited ] || [ "$hard" -ge 8192 ] ||
	{ echo "$name: SKIP the hard limit of open files is $hard, under 8192"; exit 77; }
pids=
cli_cleanup() { for p in $pids; do kill "$p" 2>/dev/null; done; }
# The peers raise their own soft limit: they hold as many sockets.
cat >peers.py <<'EOF'
import asyncio, resource, socket, sys, relay_peers
_, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
if sys.argv[1] == "echo":
    asyncio.run(relay_peers.echo("tport", seen="seen", secs=110))
    sys.exit(0)
port, n = int(sys.argv[2]), int(sys.argv[3])
held = [socket.create_connection(("127.0.0.1", port), 10) for _ in range(n)]
last = held[-1]
last.settimeout(20)
data = bytes(range(256)) * 256
last.sendall(data)
last.shutdown(socket.SHUT_WR)
try:
    back = relay_peers.recv_all(last)
except socket.timeout:
    sys.exit("connection %d: nothing came back in 20 s" % n)
sys.exit(0 if back == data else "connection %d: %d bytes back of %d" % (n, len(back), len(data)))
EOF
timeout 120 python3 peers.py echo &
pids="$pids $!"
wait_for tport . || fail $LINENO "the echo target did not start"
tport=$(cat tport)
# soft PID: the process's soft limit of open files
soft() { awk '/^Max open files/ { print $4 }' "/proc/$1/limits"; }

# 1,200 connections at a soft limit of 1,024.
lport=$(port)
(ulimit -Sn 1024 && exec "$P" relay -j 2 --max-conns=1500 127.0.0.1:$lport 127.0.0.1:$tport) 2>r.log &
relay=$!; pids="$pids $relay"
for _ in $(seq 100); do python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1)' $lport 2>/dev/null && break; sleep 0.1; done
timeout 60 python3 peers.py hold $lport 1200 2>err; rc=$?
rc_is $LINENO 0
# The probe above and the 1,200.
wait_count seen . 1201 || fail $LINENO "$(grep -c . seen) of 1201 connections reached the target"
[ "$(soft $relay)" -ge 3750 ] || fail $LINENO "soft limit $(soft $relay), want 3750 or more"
grep -q . r.log && fail $LINENO "unexpected messages: $(head -5 r.log)"
# A reload: the new relay starts from 1,024 and raises it for itself.
kill -USR2 $relay
gone $relay || fail $LINENO "the relay did not hand over: $(cat r.log)"
new=$(pgrep -f "relay -j 2 --max-conns=1500 127.0.0.1:$lport ")
[ -n "$new" ] || fail $LINENO "no new relay: $(cat r.log)"
pids="$pids $new"
[ "$(soft $new)" -ge 3750 ] || fail $LINENO "soft limit $(soft $new) after a reload"
kill $new; gone $new || fail $LINENO "relay $new did not stop"

# A hard limit below the need: said, with what it carries; raised to it.
lport=$(port)
(ulimit -Sn 500 && ulimit -Hn 600 && exec "$P" relay -j 2 --max-conns=1500 127.0.0.1:$lport 127.0.0.1:$tport) 2>w.log &
relay=$!; pids="$pids $relay"
wait_for w.log . 10 || fail $LINENO "nothing said"
grep -q -E "^psplice: relay: warning: the hard limit of open files \(600\) carries about [1-9][0-9]* connections, not the 1500 --max-conns allows; raise it \(ulimit -Hn, systemd's LimitNOFILE=\)$" w.log ||
	fail $LINENO "$(cat w.log)"
is $LINENO 600 "$(soft $relay)"
timeout 60 python3 peers.py hold $lport 1 2>err; rc=$?
rc_is $LINENO 0
kill $relay; gone $relay || fail $LINENO "the relay did not stop"

# No --max-conns: the hard limit.
lport=$(port)
(ulimit -Sn 1024 && exec "$P" relay -j 2 127.0.0.1:$lport 127.0.0.1:$tport) 2>n.log &
relay=$!; pids="$pids $relay"
timeout 60 python3 peers.py hold $lport 1 2>err; rc=$?
rc_is $LINENO 0
is $LINENO "$hard" "$(soft $relay)"
grep -q . n.log && fail $LINENO "unexpected messages: $(cat n.log)"
kill $relay; gone $relay || fail $LINENO "the relay did not stop"
echo "$name: ok"
