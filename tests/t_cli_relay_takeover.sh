#!/bin/sh
# psplice relay --replace=PID while PID's own reload (SIGUSR2) is starting:
# the relay the reload started has not been handed the service, so PID
# stops it as it drains, and only the relay started with --replace serves.
# The reload's new relay is held between its start and its word that it
# serves: the program at the relay's path becomes a script that runs the
# real one with its "ready" pipe kept aside (the word goes to a FIFO), so
# the old relay waits on it as long as the test needs. Then exactly one
# process holds the listening socket, connections go through it to its
# target, and a unix socket's file stays. Every wait and every peer is
# bounded.
[ -z "${BASH_VERSION:-}" ] && command -v bash >/dev/null && exec bash "$0" "$@"
# The echo server and the clients' connection are tests/relay_peers.py's.
name=t_cli_relay_takeover; . "$(dirname "$0")/cli-lib.sh"
pids=
cli_cleanup() {
	for p in $pids; do
		kill "$p" 2>/dev/null
	done
}

cat >peers.py <<'EOF2'
import asyncio, os, sys
from relay_peers import echo, one

# The processes with an fd on the listening socket at a TCP port or a unix
# socket's path, one a line.
def holders(where):
    inodes = set()
    if where.startswith("/"):
        for line in open("/proc/net/unix").readlines()[1:]:
            f = line.split()
            if len(f) >= 8 and f[7] == where and int(f[3], 16) & 0x10000:
                inodes.add(f[6])
    else:
        port = int(where.rsplit(":", 1)[1])
        for line in open("/proc/net/tcp").readlines()[1:]:
            f = line.split()
            if f[3] == "0A" and int(f[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(f[9])
    want = set("socket:[%s]" % i for i in inodes)
    pids = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fds = os.listdir("/proc/%s/fd" % pid)
            if any(os.readlink("/proc/%s/fd/%s" % (pid, fd)) in want for fd in fds):
                pids.add(int(pid))
        except OSError:
            pass
    print("\n".join(str(p) for p in sorted(pids)))

if sys.argv[1] == "echo":
    asyncio.run(echo(sys.argv[2], sys.argv[3], secs=100))
elif sys.argv[1] == "holders":
    holders(sys.argv[2])
else:
    errors = []
    asyncio.run(one(sys.argv[2], int(sys.argv[3]), errors))
    print("\n".join(errors), file=sys.stderr)
    sys.exit(1 if errors else 0)
EOF2
# Two echo targets: A, the old relay's, and B, the new one's.
for t in a b; do
	timeout 100 python3 peers.py echo port.$t seen.$t &
	pids="$pids $!"
done
wait_for port.a . && wait_for port.b . || fail $LINENO "the echo targets did not start"
ta=127.0.0.1:$(cat port.a) tb=127.0.0.1:$(cat port.b)

# The relay runs from a copy in the scratch directory, which the test
# replaces with the script once the relay has started. With one listener
# (fd 3), the ready pipe is fd 4; fd 9 keeps it open, so the old relay
# hears neither "ready" nor an end.
cp "$P" psplice.real || fail $LINENO "cannot copy $P"
mkfifo ready.fifo || fail $LINENO "cannot make a FIFO"
printf '#!/bin/sh\nexec 9>&4 4<>"%s/ready.fifo"\nexec "%s/psplice.real" "$@"\n' "$d" "$d" \
	>held.sh && chmod +x held.sh || fail $LINENO "cannot write the script"


# takeover TAG LISTEN WHERE: the case on LISTEN, which clients reach at
# WHERE (HOST:PORT or a unix socket's path).
takeover() {
	tag=$1 listen=$2 where=$3
	cp psplice.real psplice || fail $LINENO "cannot copy the relay"
	./psplice relay -v -j 2 "$listen" $ta 2>$tag.log &
	r0=$!; pids="$pids $r0"
	wait_for $tag.log "listening on" || fail $LINENO "the relay did not start: $(cat $tag.log)"
	cp held.sh psplice.tmp && mv psplice.tmp psplice || fail $LINENO "cannot put the script"
	kill -USR2 $r0
	# The reload's relay serves the listeners too, but has not said so.
	wait_count $tag.log "listening on" 2 ||
		fail $LINENO "the reload's relay did not start: $(cat $tag.log)"
	c=$(pgrep -P $r0); pids="$pids $c"
	[ -n "$c" ] || fail $LINENO "no reload child of $r0"
	grep -q "serves in place" $tag.log && fail $LINENO "the reload was handed over: $(cat $tag.log)"
	"$P" relay -v -j 1 --replace=$r0 "$listen" $tb 2>$tag.new.log &
	r1=$!; pids="$pids $r1"
	wait_for $tag.new.log "took over" || fail $LINENO "no takeover: $(cat $tag.new.log)"
	gone $r0 30 || fail $LINENO "relay $r0 did not end: $(cat $tag.log)"
	wait $r0; rc=$?
	rc_is $LINENO 0
	gone $c || fail $LINENO "the reload's relay $c still runs: $(cat $tag.log)"
	grep -q "^psplice: relay: stopping process $c, which was starting to replace this one$" \
		$tag.log || fail $LINENO "relay $r0 did not stop its reload: $(cat $tag.log)"
	# It was told which relay serves, as the old one was, and drained
	# rather than being killed: each says so.
	is $LINENO 2 "$(grep -c "relay: process $r1 serves in place of this one" $tag.log)"
	is $LINENO "$r1" "$(python3 peers.py holders "$where")"
	kill -0 $r1 || fail $LINENO "relay $r1 has gone: $(cat $tag.new.log)"
	before=$(wc -l <seen.b)
	timeout 30 python3 peers.py one "$where" 65536 || fail $LINENO "relay $r1 does not serve"
	is $LINENO $((before + 1)) "$(wc -l <seen.b)"
	kill $r1; gone $r1 || fail $LINENO "relay $r1 did not stop"
}

: >seen.b
lport=$(port)
takeover tcp 127.0.0.1:$lport 127.0.0.1:$lport
takeover unix "unix:$d/r.sock" "$d/r.sock"
exit 0
