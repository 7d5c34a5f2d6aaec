#!/bin/sh
# psplice relay out of epoll watches (fs.epoll.max_user_watches, counted per
# user): the relay runs as a user of its own, and a helper of that user holds
# every watch the limit allows but a few. A connection whose socket cannot
# be watched is closed at once (reset, its slot free, "cannot relay" and the
# errno said) rather than left holding its fds and slot with the client's
# bytes unread and a stop waiting the whole drain timeout; a target the
# relay could not watch while connecting is not marked down (the fault is
# the relay's); a listener that cannot be watched again after --max-conns
# paused it is said and retried until it can, rather than never accepting
# again. Needs root (setpriv, the sysctl); the sysctl is lowered for a few
# seconds at a time, to 100,000 above every watch the machine holds, so
# that no other user is short, and always put back.
[ -z "${BASH_VERSION:-}" ] && command -v bash >/dev/null && exec bash "$0" "$@"
name=t_cli_relay_watch; . "$(dirname "$0")/cli-lib.sh"
sysctl=/proc/sys/fs/epoll/max_user_watches
[ "$(id -u)" -eq 0 ] || { echo "$name: SKIP needs root: runs the relay as another user and lowers $sysctl"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "$name: SKIP python3 missing"; exit 77; }
command -v setpriv >/dev/null 2>&1 || { echo "$name: SKIP setpriv (util-linux) missing"; exit 77; }
orig=$(cat $sysctl 2>/dev/null) && [ -w $sysctl ] ||
	{ echo "$name: SKIP $sysctl cannot be changed here"; exit 77; }
pids=
restore() { [ "$(cat $sysctl)" = "$orig" ] || echo "$orig" >$sysctl; }
cli_cleanup() { for p in $pids; do kill "$p" 2>/dev/null; done; restore; }

# A uid no process has: its count of watches is the relay's and the helper's.
U=$((3000000000 + $$ % 1000000))
while ps -eo uid= | grep -qx " *$U"; do U=$((U + 1)); done
setpriv --reuid=$U --regid=$U --clear-groups "$P" --version >/dev/null 2>&1 ||
	{ echo "$name: SKIP $P cannot run as uid $U (its directories' modes)"; exit 77; }

cat > peer.py <<'EOF'
import errno, os, resource, select, socket, sys, threading, time
from relay_peers import echo_back, ready, serve_threads

# An echo server, its port in portfile; a line in seen for each connection.
def echo(portfile, seen):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(64)
    s.settimeout(1)
    ready(portfile, str(s.getsockname()[1]))
    def serve(c):
        with open(seen, "a") as f:
            f.write("c\n")
        c.settimeout(60)
        echo_back(c)
    serve_threads(s, serve, 120)

# "ping" to the relay, delay seconds after connecting, and what came of
# it within secs: served (it came back), end, reset, or hung. With until,
# the connection stays open until that file exists.
# A reset may come before connect(2) returns: the relay resets the
# connection as soon as it finds it cannot watch it.
def client(port, secs, delay=0, until=None):
    try:
        s = socket.create_connection(("127.0.0.1", int(port)), 10)
    except ConnectionResetError:
        print("reset", flush=True)
        return
    time.sleep(float(delay))
    s.settimeout(float(secs))
    try:
        s.sendall(b"ping")
        b = s.recv(4)
        print("served" if b == b"ping" else "end" if not b else "got %r" % b, flush=True)
    except socket.timeout:
        print("hung", flush=True)
    except (ConnectionResetError, BrokenPipeError):
        print("reset", flush=True)
    for _ in range(600 if until else 0):
        if os.path.exists(until):
            break
        time.sleep(0.1)
    s.close()

# Watches as uid: commands on standard input, each answered on a line
# "N: ..." (N counts them): fill (every watch the limit allows), free K,
# take (one more, as soon as there is one, 10 s at most), release (all).
def hold(uid):
    resource.setrlimit(resource.RLIMIT_NOFILE, (4096, 4096))
    os.setgroups([])
    os.setresgid(int(uid), int(uid), int(uid))
    os.setresuid(int(uid), int(uid), int(uid))
    fds = [os.eventfd(0) for _ in range(1000)]
    eps, held, free = [], [], []
    def pairs():
        while True:
            eps.append(select.epoll())
            for f in fds:
                yield eps[-1], f
    new = pairs()
    def add():
        p = free.pop() if free else next(new)
        try:
            p[0].register(p[1], select.EPOLLIN)
        except OSError as e:
            if e.errno != errno.ENOSPC:
                raise
            free.append(p)
            return False
        held.append(p)
        return True
    for n, line in enumerate(sys.stdin, 1):
        cmd = line.split()
        if cmd[0] == "fill":
            while add():
                pass
            text = "full %d" % len(held)
        elif cmd[0] == "free":
            for _ in range(int(cmd[1])):
                p = held.pop()
                p[0].unregister(p[1])
                free.append(p)
            text = "freed"
        elif cmd[0] == "take":
            end = time.time() + 10
            while not add() and time.time() < end:
                time.sleep(0.001)
            text = "took" if held and time.time() < end else "none"
        elif cmd[0] == "release":
            for e in eps:
                e.close()
            eps, held, free = [], [], []
            text = "released"
        print("%d: %s" % (n, text), flush=True)

# Every watch the machine holds now, by any user (an epoll fd shared
# by processes counted for each: more, never less).
def count():
    n = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            for fd in os.listdir("/proc/%s/fdinfo" % pid):
                with open("/proc/%s/fdinfo/%s" % (pid, fd)) as f:
                    n += sum(1 for l in f if l.startswith("tfd:"))
        except OSError:
            pass
    print(n)

m = sys.argv[1]
if m == "echo":
    echo(*sys.argv[2:])
elif m == "client":
    client(*sys.argv[2:])
elif m == "hold":
    hold(*sys.argv[2:])
elif m == "count":
    count()
EOF

# target NAME: an echo server, its port in $port_NAME.
target() {
	python3 peer.py echo "$1.port" "$1.seen" &
	pids="$pids $!"
	wait_for "$1.port" . || fail $LINENO "target $1 did not start"
	eval "port_$1=$(cat "$1.port")"
}
# relay LOG OPTIONS... TARGETS: a relay as uid $U, -v -j 1, its port in
# $rport, its pid in $rpid.
relay() {
	log=$1; shift
	: >"$log"  # no earlier relay's lines for wait_for to find
	setpriv --reuid=$U --regid=$U --clear-groups "$P" relay -v -j 1 127.0.0.1:0 "$@" 2>"$log" &
	rpid=$!; pids="$pids $rpid"
	wait_for "$log" "listening on" || fail $LINENO "the relay did not start: $(cat "$log")"
	rport=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\),.*/\1/p' "$log")
}
stop_relay() {
	kill -TERM $rpid
	gone $rpid 10 || fail "$1" "the stop took more than 10 s: $(cat "$log")"
	wait $rpid; rc=$?
	! grep -q -E "Sanitizer|runtime error" "$log" ||
		fail "$1" "sanitizer report: $(grep -A20 -E 'Sanitizer|runtime error' "$log" | head -40)"
	rc_is "$1" 0
}
# holder: a helper as uid $U; the limit lowered; hold CMD: a command to it,
# its answer in $held.
holder() {
	rm -f hold.cmd hold.out; mkfifo hold.cmd
	python3 peer.py hold $U <hold.cmd >hold.out 2>&1 &
	pids="$pids $!"
	exec 3>hold.cmd
	nhold=0
	echo $(($(python3 peer.py count) + 100000)) >$sysctl
}
hold() {
	echo "$*" >&3
	nhold=$((nhold + 1))
	wait_for hold.out "^$nhold: " || fail $LINENO "the helper did not answer '$*': $(cat hold.out)"
	held=$(sed -n "s/^$nhold: //p" hold.out)
}
unhold() {
	hold release
	exec 3>&-
	restore
}

target A; target B

# One watch left: the target's socket is watched, the client's cannot be.
relay one.log --max-conns=1 --drain-timeout=60 127.0.0.1:$port_A
holder
hold fill
hold free 1
# The client's bytes come once the relay has connected to the target.
is $LINENO reset "$(timeout 30 python3 peer.py client $rport 10 0.5)"
grep -q -E "#1 127\.0\.0\.1:[0-9]+ cannot relay: No space left on device" one.log ||
	fail $LINENO "the connection's failed watch was not said: $(cat one.log)"
unhold
# Its slot was given back (--max-conns=1), and nothing is left to drain.
is $LINENO served "$(timeout 30 python3 peer.py client $rport 10)"
stop_relay $LINENO

# None left: connecting to either target cannot be watched. Neither is
# marked down: both accepted.
relay none.log --connect-timeout=2 127.0.0.1:$port_A 127.0.0.1:$port_B
holder
hold fill
got=$(timeout 30 python3 peer.py client $rport 10)
[ "$got" = end ] || [ "$got" = reset ] || fail $LINENO "want end or reset, got '$got'"
unhold
grep -q -E "#1 127\.0\.0\.1:[0-9]+ cannot relay: No space left on device" none.log ||
	fail $LINENO "the connection's failed watch was not said: $(cat none.log)"
! grep -q -e "is down" -e "cannot connect" none.log ||
	fail $LINENO "a target was blamed for the relay's own fault: $(cat none.log)"
is $LINENO served "$(timeout 30 python3 peer.py client $rport 10)"
stop_relay $LINENO

# The listener, paused by --max-conns, cannot be watched again: client A
# holds the one slot, B waits in the queue, and the helper takes the watch
# the paused listener gave back.
rm -f closeA
relay pause.log --max-conns=1 127.0.0.1:$port_A
holder
hold fill
hold free 2
timeout 90 python3 peer.py client $rport 10 0 closeA >A.out &
pids="$pids $!"
wait_for A.out . || fail $LINENO "client A had no answer"
is $LINENO served "$(cat A.out)"
timeout 90 python3 peer.py client $rport 30 >B.out &
pids="$pids $!"
hold take
is $LINENO took "$held"
said=yes
wait_for pause.log "relay: cannot watch the listener: No space left on device" 10 || said=no
unhold
touch closeA
wait_for B.out . 40 || fail $LINENO "client B had no answer"
is $LINENO served "$(cat B.out)"
[ $said = yes ] || fail $LINENO "the listener's failed watch was not said: $(cat pause.log)"
stop_relay $LINENO
echo "$name: ok"
