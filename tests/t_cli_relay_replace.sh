#!/bin/sh
# psplice relay --replace=PID: a relay started with options of its own
# takes the listening sockets of the running relay PID (pidfd_getfd), serves
# them, and PID drains and exits 0. A storm of 1,000 connections, each
# 64 KiB echoed and checked, goes through a replacement that changes -j,
# the target and the log format, with no connection refused, reset or cut;
# the connections after it reach the new target, each in the new relay's
# JSON log. Then: a reload of the new relay (its --replace ignored); each
# refusal, which leaves the relay serving, untouched (a process that has
# exited, one that is no relay, a LISTEN it does not listen on, a user
# without ptrace access to it); a relay whose workers share the listeners,
# replaced by one that gives each worker its --reuseport socket again; a
# socket-activated relay with two listeners, one taken, then LISTEN '-'
# taking all; a unix listener named by a relative path. Every wait and
# every peer is bounded.
[ -z "${BASH_VERSION:-}" ] && command -v bash >/dev/null && exec bash "$0" "$@"
# The echo server and the clients' connection are tests/relay_peers.py's.
name=t_cli_relay_replace; . "$(dirname "$0")/cli-lib.sh"
pids= pd=
cli_cleanup() {
	for p in $pids; do
		kill "$p" 2>/dev/null
	done
	[ -n "$pd" ] && rm -rf "$pd"
}
count() { # FILE: its lines, 0 when it does not exist
	if [ -e "$1" ]; then wc -l <"$1"; else echo 0; fi
}

cat >peers.py <<'EOF'
import asyncio, os, sys
from relay_peers import echo, handover, one

async def some(where, n, size):
    errors = []
    for _ in range(n):
        await asyncio.wait_for(one(where, size, errors), 30)
    for e in errors:
        print(e, file=sys.stderr)
    sys.exit(1 if errors else 0)

# One connection held open secs seconds before its bytes go.
async def slow(where, size, secs):
    host, port = where.rsplit(":", 1)
    r, w = await asyncio.open_connection(host, int(port))
    await asyncio.sleep(secs)
    data = os.urandom(size)
    w.write(data)
    await w.drain()
    w.write_eof()
    back = await asyncio.wait_for(r.read(), 30)
    w.close()
    print("sent %d bytes, %d came back" % (size, len(back)), file=sys.stderr)
    sys.exit(0 if back == data else 1)

if sys.argv[1] == "echo":
    asyncio.run(echo(sys.argv[2], sys.argv[3]))
elif sys.argv[1] == "slow":
    asyncio.run(slow(sys.argv[2], int(sys.argv[3]), float(sys.argv[4])))
elif sys.argv[1] == "storm":
    asyncio.run(handover(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])))
else:
    asyncio.run(some(sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
EOF
# Two echo targets: A, the old relay's, and B, the new one's.
for t in a b; do
	timeout 170 python3 peers.py echo port.$t seen.$t &
	pids="$pids $!"
done
wait_for port.a . && wait_for port.b . || fail $LINENO "the echo targets did not start"
ta=127.0.0.1:$(cat port.a) tb=127.0.0.1:$(cat port.b)

# The old relay: two workers with a socket each (--reuseport), target A.
lport=$(port)
"$P" relay -v -j 2 --reuseport 127.0.0.1:$lport $ta 2>old.log &
r0=$!; pids="$pids $r0"
wait_for old.log "listening on" || fail $LINENO "the relay did not start: $(cat old.log)"

# The storm, and in its middle the new relay: three workers, target B, a
# JSON record per connection.
timeout 120 python3 peers.py storm 127.0.0.1:$lport 1000 65536 300 >storm.out 2>storm.err &
storm=$!
wait_for half . 60 || fail $LINENO "the storm did not get going: $(cat storm.err)"
"$P" relay -j 3 --replace=$r0 --log-format=json --log=new.json 127.0.0.1:$lport $tb 2>new.log &
r1=$!; pids="$pids $r1"
wait_for new.log "took over" || fail $LINENO "no takeover: $(cat new.log)"
: >go
wait $storm || fail $LINENO "$(cat storm.out storm.err; tail -5 old.log new.log)"
is $LINENO "psplice: relay: took over the listeners of process $r0" "$(cat new.log)"
# The old relay drained and ended well, with nothing wrong on the way.
wait $r0; rc=$?
rc_is $LINENO 0
grep -q "relay: process $r1 serves in place of this one" old.log || fail $LINENO "$(cat old.log)"
grep -v -e 'open$' -e 'closed: [0-9]* bytes' -e 'listening on' -e 'serves in place' \
	-e 'draining [0-9]* connections* (again' -e 'stopping: no connections to drain' \
	-e 'connections 0 open' old.log >bad
grep -q . bad && fail $LINENO "unexpected messages: $(head -5 bad)"
# Each connection reached one target; the new relay's, B, had some, each
# with its JSON record, and those after the switch go there alone.
a=$(count seen.a) b=$(count seen.b)
is $LINENO 1000 $((a + b))
[ "$b" -gt 0 ] && [ "$a" -gt 0 ] || fail $LINENO "A had $a connections, B $b"
is $LINENO "$b" "$(grep -c '^{.*}$' new.json)"
timeout 30 python3 peers.py some 127.0.0.1:$lport 20 4096 || fail $LINENO "relay $r1 does not serve"
is $LINENO "$a $((b + 20))" "$(count seen.a) $(count seen.b)"
is $LINENO "$((b + 20))" "$(grep -c '^{.*}$' new.json)"

# A reload of the new relay runs its command line again, --replace=PID
# and all; the pid it names is not asked for again.
kill -USR2 $r1
wait $r1; rc=$?
rc_is $LINENO 0
r2=$(pgrep -f "^$P relay -j 3 --replace=$r0 ")
[ -n "$r2" ] || fail $LINENO "no relay after the reload: $(cat new.log)"
pids="$pids $r2"
timeout 30 python3 peers.py some 127.0.0.1:$lport 5 4096 || fail $LINENO "relay $r2 does not serve"
is $LINENO "$((b + 25))" "$(count seen.b)"
is $LINENO "psplice: relay: took over the listeners of process $r0" "$(cat new.log)"

# What is refused leaves relay r2 as it was: serving, nothing said.
unchanged() { # LINE
	timeout 30 python3 peers.py some 127.0.0.1:$lport 1 4096 || fail $1 "relay $r2 stopped serving"
	kill -0 $r2 || fail $1 "relay $r2 has gone"
	is $1 "psplice: relay: took over the listeners of process $r0" "$(cat new.log)"
}
# A process that has exited.
sleep 0 & p=$!
wait $p
"$P" relay --replace=$p 127.0.0.1:$lport $ta 2>err; rc=$?
rc_is $LINENO 1
err_is $LINENO "psplice: relay: cannot replace process $p: there is no such process"
# A process that is not a relay.
sleep 60 & p=$!; pids="$pids $p"
# Its command line is the shell's until it runs sleep, and reads empty
# during the exec.
wait_for /proc/$p/cmdline sleep || fail $LINENO "sleep did not start"
"$P" relay --replace=$p 127.0.0.1:$lport $ta 2>err; rc=$?
rc_is $LINENO 1
err_is $LINENO "psplice: relay: cannot replace process $p: it is not a psplice relay (its command line is 'sleep 60')"
kill $p
# A LISTEN the relay does not listen on.
other=$(port)
"$P" relay --replace=$r2 127.0.0.1:$other $ta 2>err; rc=$?
rc_is $LINENO 1
err_is $LINENO "psplice: relay: cannot replace process $r2: it does not listen on '127.0.0.1:$other' (it listens on 127.0.0.1:$lport)"
unchanged $LINENO
# Options that would make the listeners otherwise.
"$P" relay --replace=$r2 --reuseport 127.0.0.1:$lport $ta 2>err; rc=$?
rc_is $LINENO 1
grep -q "^psplice: --reuseport does not apply with --replace" err || fail $LINENO "$(cat err)"
# No ptrace access: the relay runs as root, the new one as nobody.
if [ "$(id -u)" != 0 ]; then
	skip "a relay of another user: the test is not run as root"
elif ! command -v setpriv >/dev/null; then
	skip "a relay of another user: no setpriv"
else
	pd=$(mktemp -d /tmp/$name.XXXXXX) && chmod 755 "$pd" && cp "$P" "$pd/psplice" ||
		fail $LINENO "cannot copy $P"
	setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$pd/psplice" relay --replace=$r2 127.0.0.1:$lport $ta 2>err; rc=$?
	rc_is $LINENO 1
	err_is $LINENO "psplice: relay: cannot take the listeners of process $r2 (pidfd_getfd needs ptrace permission over it: the same user and no Yama restriction, or CAP_SYS_PTRACE): Operation not permitted"
fi
unchanged $LINENO
# Relay r2 shares one set of listeners among its workers, which a stop
# signal would shut down: replaced, it leaves them listening. (It is
# relay r1's child: its exit status is not this shell's to see.) They are
# the two sockets of r0's --reuseport: with two workers, r3 gives each
# worker one, and the kernel spreads the connections over both, none of
# which may wait for a worker that does not watch its socket.
a=$(count seen.a)
"$P" relay -j 2 --replace=$r2 127.0.0.1:$lport $ta 2>r3.log &
r3=$!; pids="$pids $r3"
gone $r2 || fail $LINENO "relay $r2 did not end: $(cat r3.log)"
timeout 60 python3 peers.py some 127.0.0.1:$lport 20 4096 || fail $LINENO "relay $r3 does not serve"
is $LINENO "$((a + 20))" "$(count seen.a)"
is $LINENO "psplice: relay: took over the listeners of process $r2" "$(cat r3.log)"
kill $r3; gone $r3 || fail $LINENO "relay $r3 did not stop"

# A relay with two listeners, socket-activated: the new one takes the one
# LISTEN names and says which it leaves; then LISTEN "-" takes them all.
if command -v systemd-socket-activate >/dev/null; then
	p1=$(port) p2=$(port)
	systemd-socket-activate -l 127.0.0.1:$p1 -l 127.0.0.1:$p2 \
		"$P" relay -j 2 - $ta >act.out 2>act.err &
	act=$!; pids="$pids $act"
	wait_for act.err "Listening on 127.0.0.1:$p2" ||
		fail $LINENO "systemd-socket-activate did not listen: $(cat act.err)"
	# The activator execs the relay on the first connection.
	timeout 30 python3 peers.py some 127.0.0.1:$p1 1 4096 || fail $LINENO "$(cat act.err)"
	"$P" relay -j 2 --replace=$act 127.0.0.1:$p1 $tb 2>s1.log &
	s1=$!; pids="$pids $s1"
	wait $act; rc=$?
	rc_is $LINENO 0
	# The line comes after the signal that ends the relay replaced, from
	# the new relay's log thread: waited for, not raced.
	wait_for s1.log 'took over' || fail $LINENO "no takeover line: $(cat s1.log)"
	printf '%s\n' "psplice: relay: process $act listens on 127.0.0.1:$p2 too: not taken" \
		"psplice: relay: took over the listeners of process $act" >want
	cmp -s want s1.log || fail $LINENO "want '$(cat want)', got '$(cat s1.log)'"
	"$P" relay -j 1 --replace=$s1 - $tb 2>s2.log &
	s2=$!; pids="$pids $s2"
	wait $s1; rc=$?
	rc_is $LINENO 0
	wait_for s2.log 'took over' || fail $LINENO "no takeover line: $(cat s2.log)"
	is $LINENO "psplice: relay: took over the listeners of process $s1" "$(cat s2.log)"
	b=$(count seen.b)
	timeout 30 python3 peers.py some 127.0.0.1:$p1 3 4096 || fail $LINENO "relay $s2 does not serve"
	is $LINENO $((b + 3)) "$(count seen.b)"
	kill $s2; gone $s2 || fail $LINENO "relay $s2 did not stop"
	# A relay draining already, its connection open: the service
	# manager's sockets still listen, unwatched, and are taken; the
	# relay goes on draining rather than dying of a second SIGTERM.
	systemd-socket-activate -l 127.0.0.1:$p1 "$P" relay -v -j 1 - $ta >act.out 2>act.err &
	act=$!; pids="$pids $act"
	wait_for act.err "Listening on 127.0.0.1:$p1" ||
		fail $LINENO "systemd-socket-activate did not listen: $(cat act.err)"
	timeout 40 python3 peers.py slow 127.0.0.1:$p1 65536 3 2>slow.err &
	slow=$!
	wait_for act.err "open$" || fail $LINENO "the relay did not start: $(cat act.err)"
	kill $act
	wait_for act.err "draining 1 connection" || fail $LINENO "$(cat act.err)"
	"$P" relay -j 1 --replace=$act - $tb 2>s3.log &
	s3=$!; pids="$pids $s3"
	wait_for s3.log "took over" || fail $LINENO "$(cat s3.log)"
	wait $slow || fail $LINENO "the open connection was cut: $(cat slow.err)"
	wait $act; rc=$?
	rc_is $LINENO 0
	grep -q "serves in place of this one" act.err || fail $LINENO "$(cat act.err)"
	b=$(count seen.b)
	timeout 30 python3 peers.py some 127.0.0.1:$p1 3 4096 || fail $LINENO "relay $s3 does not serve"
	is $LINENO $((b + 3)) "$(count seen.b)"
	kill $s3; gone $s3 || fail $LINENO "relay $s3 did not stop"
else
	skip "LISTEN '-' and a listener left: systemd-socket-activate not installed"
fi

# A unix listener, named by the new relay as a path relative to its
# directory: the socket file stays for it when the old one drains.
"$P" relay -v -j 2 "unix:$d/r.sock" $ta 2>u.log &
u0=$!; pids="$pids $u0"
wait_for u.log "listening on" || fail $LINENO "the relay did not start: $(cat u.log)"
"$P" relay -j 1 --replace=$u0 unix:r.sock $tb 2>u1.log &
u1=$!; pids="$pids $u1"
wait $u0; rc=$?
rc_is $LINENO 0
wait_for u1.log 'took over' || fail $LINENO "no takeover line: $(cat u1.log)"
is $LINENO "psplice: relay: took over the listeners of process $u0" "$(cat u1.log)"
[ -S r.sock ] || fail $LINENO "the socket file has gone"
b=$(count seen.b)
timeout 30 python3 peers.py some "$d/r.sock" 3 65536 || fail $LINENO "relay $u1 does not serve"
is $LINENO $((b + 3)) "$(count seen.b)"
kill $u1; gone $u1 || fail $LINENO "relay $u1 did not stop"
[ -e r.sock ] && fail $LINENO "the socket file is left behind"
# A stop signal that reached the old relay as it was taken over: pending
# when the takeover's signal comes (the old relay is stopped with SIGSTOP
# meanwhile), which must not swallow the takeover's. The stop may shut the
# shared listener down; the new relay then says so and ends with 1, rather
# than listen on a dead socket for ever (it did, accept failing with
# EINVAL every 100 ms).
"$P" relay -v -j 2 127.0.0.1:0 $ta 2>w0.log &
w0=$!; pids="$pids $w0"
wait_for w0.log "listening on" || fail $LINENO "the relay did not start: $(cat w0.log)"
wport=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\),.*/\1/p' w0.log)
kill -STOP $w0; kill -TERM $w0
"$P" relay -j 1 --replace=$w0 127.0.0.1:$wport $tb 2>w1.log &
w1=$!; pids="$pids $w1"
wait_for w1.log "took over" || fail $LINENO "no takeover: $(cat w1.log)"
kill -CONT $w0
# Which the old relay sees first decides whether it shuts the listener
# down; either way the new relay must not be left listening on nothing:
# it serves, or it has said why it stopped and ended with 1.
gone $w0 20 || fail $LINENO "relay $w0 did not stop"
# The new relay finds a listener shut down at its next accept, so being
# alive a moment after the old one ended says nothing yet: a client that
# is served says it serves; one that is not, that it must stop.
if kill -0 $w1 2>/dev/null && ! grep -q "shut down by another process" w1.log &&
	timeout 30 python3 peers.py some 127.0.0.1:$wport 1 4096 2>peer.err; then
	kill $w1; gone $w1 || fail $LINENO "relay $w1 did not stop"
else
	gone $w1 20 || fail $LINENO "the new relay neither serves nor stops: $(cat w1.log)"
	wait $w1; rc=$?
	rc_is $LINENO 1
	grep -q "the listening socket was shut down by another process; stopping" w1.log ||
		fail $LINENO "the new relay did not say why it stops: $(cat w1.log)"
fi

# A unix relay that began to drain has removed its socket file: its
# listener, still open, can be reached by no client, and is not taken.
"$P" relay -j 1 "unix:$d/v.sock" $ta 2>v0.log &
v0=$!; pids="$pids $v0"
wait_for v0.log . 2 || [ -S v.sock ] || sleep 1
[ -S v.sock ] || fail $LINENO "the unix relay did not listen: $(cat v0.log)"
python3 -c '
import socket, sys, time
c = socket.socket(socket.AF_UNIX); c.connect(sys.argv[1])
open("held", "w").write("1\n"); time.sleep(8)' "$d/v.sock" &
pids="$pids $!"
wait_for held . || fail $LINENO "the held connection did not start"
kill -TERM $v0
wait_for v0.log "draining 1 connection" || fail $LINENO "relay $v0 did not drain: $(cat v0.log)"
[ -e v.sock ] && fail $LINENO "the draining relay left its socket file"
"$P" relay -j 1 --replace=$v0 - $tb 2>v1.log; rc=$?
rc_is $LINENO 1
grep -q "took over" v1.log && fail $LINENO "a listener no client can reach was taken: $(cat v1.log)"
"$P" relay -j 1 --replace=$v0 "unix:$d/v.sock" $tb 2>v2.log; rc=$?
rc_is $LINENO 1
kill -0 $v0 2>/dev/null || fail $LINENO "relay $v0 did not go on draining"
exit 0
