#!/bin/sh
# psplice relay replaced in place: SIGUSR2 runs the relay's command line
# again from the path its program was started from, the new process takes
# the listening sockets (LISTEN_FDS), and the old one drains and exits 0
# once the new one serves. A storm of 1,000 connections, each 64 KiB
# echoed and checked, goes through two reloads with no connection refused,
# reset or cut. A new program that cannot run, or that exits, leaves the old
# relay serving and says why; a new file at the path is the one run. A unix
# listener keeps its socket file; a relay started by name is found in PATH
# again. Every wait and every peer is bounded.
[ -z "${BASH_VERSION:-}" ] && command -v bash >/dev/null && exec bash "$0" "$@"
# The echo server and the clients' connection are tests/relay_peers.py's.
name=t_cli_relay_reload; . "$(dirname "$0")/cli-lib.sh"
pids=
# The relays a reload started are named in the logs, also when the test
# fails before it has read them.
cli_cleanup() {
	for p in $pids $(sed -n 's/.*relay: process \([0-9]*\) serves in place.*/\1/p' \
			 "$d/r.log" "$d/u.log" 2>/dev/null); do
		kill "$p" 2>/dev/null
	done
}

cat >peers.py <<'EOF'
import asyncio, os, re, signal, sys
from relay_peers import echo, gated, one

def served_by(log, nth):
    try:
        pids = re.findall(r"relay: process (\d+) serves in place of this one",
                          open(log).read())
    except OSError:
        return None
    return int(pids[nth]) if len(pids) > nth else None

# Reload n: once `at` connections have ended, signal the relay now
# serving; no connection past `gate` starts until the new one serves.
async def reload(n, state, at, log):
    while state["done"] < at:
        await asyncio.sleep(0.005)
    try:
        os.kill(state["pid"], signal.SIGUSR2)
    except OSError as e:
        state["errors"].append("reload %d: %s" % (n + 1, e))
        state["gate"] = 10**9
        return
    for _ in range(1000):
        pid = served_by(log, n)
        if pid:
            state["pid"] = pid
            state["gate"] = 10**9 if n else state["gate2"]
            state["at"].append(state["done"])
            return
        await asyncio.sleep(0.01)
    state["errors"].append("reload %d: no new relay within 10 s" % (n + 1))
    state["gate"] = 10**9

async def storm(where, total, size, pid, log):
    errors = []
    state = dict(done=0, pid=pid, gate=total // 2, gate2=total * 9 // 10,
                 errors=errors, at=[])
    r1 = asyncio.ensure_future(reload(0, state, total * 3 // 10, log))
    async def second():
        await r1
        await reload(1, state, total * 6 // 10, log)
    r2 = asyncio.ensure_future(second())
    bad = await gated(where, total, size, state, errors)
    await asyncio.gather(r1, r2)
    print("%d connections, %d failed; reloads done after %s" %
          (total, len(errors) + len(bad), state["at"]))
    sys.exit(1 if errors or bad or len(state["at"]) != 2 else 0)

if sys.argv[1] == "echo":
    asyncio.run(echo(sys.argv[2], secs=120))
elif sys.argv[1] == "storm":
    asyncio.run(storm(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]),
                      int(sys.argv[5]), sys.argv[6]))
else:
    errors = []
    asyncio.run(one(sys.argv[2], int(sys.argv[3]), errors))
    print("\n".join(errors), file=sys.stderr)
    sys.exit(1 if errors else 0)
EOF
timeout 150 python3 peers.py echo tport &
pids="$pids $!"
wait_for tport . || fail $LINENO "the echo target did not start"
tport=$(cat tport)

# The relay's program is a copy in the scratch directory, so that the test
# may put another file at its path.
cp "$P" ./psplice || fail $LINENO "cannot copy $P"
lport=$(port)
./psplice relay -v -j 2 127.0.0.1:$lport 127.0.0.1:$tport 2>>r.log &
r0=$!; pids="$pids $r0"
wait_for r.log "listening on" || fail $LINENO "the relay did not start: $(cat r.log)"

timeout 120 python3 peers.py storm 127.0.0.1:$lport 1000 65536 $r0 r.log >storm.out 2>storm.err ||
	fail $LINENO "$(cat storm.out storm.err; tail -5 r.log)"
r1=$(served_by r.log 1); r2=$(served_by r.log 2)
pids="$pids $r1 $r2"
[ -n "$r1" ] && [ -n "$r2" ] && [ "$r1" != "$r0" ] && [ "$r2" != "$r1" ] ||
	fail $LINENO "want two new relays, got '$r1' and '$r2'"
# The first relay drained and ended well; the second has gone too.
wait $r0; rc=$?
rc_is $LINENO 0
gone $r1 || fail $LINENO "relay $r1 did not end after the second reload"
# Nothing went wrong in any of the three.
grep -v -e 'open$' -e 'closed: [0-9]* bytes' -e 'listening on' -e 'serves in place' \
	-e 'draining [0-9]* connections* (again' -e 'stopping: no connections to drain' \
	-e 'connections 0 open' r.log >bad
grep -q . bad && fail $LINENO "unexpected messages: $(head -5 bad)"
is $LINENO 3 "$(grep -c 'listening on 127.0.0.1:' r.log)"
# The last one serves, with the same options.
timeout 30 python3 peers.py one 127.0.0.1:$lport 4096 || fail $LINENO "relay $r2 does not serve"
is $LINENO "./psplice relay -v -j 2 127.0.0.1:$lport 127.0.0.1:$tport" "$(tr '\0' ' ' </proc/$r2/cmdline | sed 's/ $//')"

# A program that cannot run: the relay says why and serves on.
chmod a-x psplice
: >r.log
kill -USR2 $r2
wait_for r.log "still serving" || fail $LINENO "no word of the failed reload: $(cat r.log)"
is $LINENO "psplice: relay: reload failed: cannot run '$d/psplice': Permission denied" "$(grep failed r.log)"
is $LINENO "psplice: relay: still serving (process $r2)" "$(grep still r.log)"
chmod a+x psplice
timeout 30 python3 peers.py one 127.0.0.1:$lport 4096 || fail $LINENO "relay $r2 stopped serving"
# A program that runs but exits: the same, with its status.
mv psplice psplice.real
printf '#!/bin/sh\nexit 3\n' >psplice.tmp && chmod +x psplice.tmp && mv psplice.tmp psplice
: >r.log
kill -USR2 $r2
wait_for r.log "still serving" || fail $LINENO "no word of the failed reload: $(cat r.log)"
grep -q "psplice: relay: reload failed: the new relay (process [0-9]*) exited with status 3" r.log ||
	fail $LINENO "$(cat r.log)"
timeout 30 python3 peers.py one 127.0.0.1:$lport 4096 || fail $LINENO "relay $r2 stopped serving"
kill -0 $r2 || fail $LINENO "relay $r2 has gone"
# A new file at the path is the program run: here a script that says so
# and runs the real one, as an upgrade's new binary would be.
printf '#!/bin/sh\necho new >>"%s/ran"\nexec "%s/psplice.real" "$@"\n' "$d" "$d" >psplice.tmp &&
	chmod +x psplice.tmp && mv psplice.tmp psplice
: >r.log
kill -USR2 $r2
wait_for r.log "serves in place" || fail $LINENO "the new program did not take over: $(cat r.log)"
is $LINENO new "$(cat ran)"
r3=$(served_by r.log 1); pids="$pids $r3"
gone $r2 || fail $LINENO "relay $r2 did not end"
timeout 30 python3 peers.py one 127.0.0.1:$lport 4096 || fail $LINENO "relay $r3 does not serve"
kill $r3; gone $r3 || fail $LINENO "relay $r3 did not stop"
mv psplice.real psplice

# A unix listener: its socket file stays for the new relay, which removes
# it when it stops for good. Started by name, the program is found in PATH.
PATH="$d:$PATH" psplice relay -v -j 2 "unix:$d/r.sock" 127.0.0.1:$tport 2>>u.log &
u0=$!; pids="$pids $u0"
wait_for u.log "listening on" || fail $LINENO "the relay did not start: $(cat u.log)"
kill -USR2 $u0
wait $u0; rc=$?
rc_is $LINENO 0
u1=$(served_by u.log 1); pids="$pids $u1"
[ -S r.sock ] || fail $LINENO "the socket file has gone"
timeout 30 python3 peers.py one "$d/r.sock" 65536 || fail $LINENO "relay $u1 does not serve"
kill $u1; gone $u1 || fail $LINENO "relay $u1 did not stop"
[ -e r.sock ] && fail $LINENO "the socket file is left behind"
# A stop signal while the new relay is starting stops it too: none is left
# serving after the operator stopped the relay (the new one went on alone,
# on a unix socket whose file the old one removed).
PATH="$d:$PATH" psplice relay -v -j 2 "unix:$d/s.sock" 127.0.0.1:$tport 2>s.log &
s0=$!; pids="$pids $s0"
wait_for s.log "listening on" || fail $LINENO "the relay did not start: $(cat s.log)"
kill -USR2 $s0; kill -TERM $s0
wait $s0
left=
for i in $(seq 100); do
	left=$(pgrep -f "relay -v -j 2 unix:$d/s.sock")
	[ -z "$left" ] && break; sleep 0.2
done
[ -z "$left" ] || fail $LINENO "a relay is left serving after the stop: $left $(cat s.log)"
exit 0
