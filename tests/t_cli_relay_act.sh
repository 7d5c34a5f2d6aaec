#!/bin/sh
# psplice relay started by a service manager: LISTEN '-' serves the
# listening sockets passed as sd_listen_fds(3) describes (fds from 3,
# LISTEN_FDS, LISTEN_PID, LISTEN_FDNAMES). systemd-socket-activate passes
# them here as systemd would: TCP on IPv4 and IPv6 and a unix socket, served
# by several workers, bytes checked through each, the fds made close-on-exec
# and non-blocking, and nothing said on the relay's output. Refused clearly:
# '-' with no sockets, sockets meant for another process, an fd that is not
# a listening stream socket, --reuseport and --unix-mode. A relay that
# stops leaves the sockets listening for the next one, and a client queued
# between the two is served; the example units load. Every wait and every
# peer is bounded in time.
[ -z "${BASH_VERSION:-}" ] && command -v bash >/dev/null && exec bash "$0" "$@"
name=t_cli_relay_act; . "$(dirname "$0")/cli-lib.sh"
pids=
cli_cleanup() { for p in $pids; do kill "$p" 2>/dev/null; done; }
# The relay as started with PID known: it execs in place of this shell, so
# its pid is the shell's, written to FILE first.
as_pid() { # FILE COMMAND...
	f=$1; shift
	sh -c 'echo $$ >"$0"; exec "$@"' "$f" "$@"
}

# Without a service manager.
"$P" relay - 127.0.0.1:9 2>err; rc=$?
rc_is $LINENO 1
err_is $LINENO "psplice: relay: LISTEN is '-' but no listening sockets were passed (LISTEN_FDS is not set): start the relay from a systemd socket unit or systemd-socket-activate"
# Variables inherited from an activated parent name that parent (pid 1).
LISTEN_FDS=1 LISTEN_PID=1 as_pid pid "$P" relay - 127.0.0.1:9 2>err; rc=$?
rc_is $LINENO 1
err_is $LINENO "psplice: relay: the listening sockets were passed to process '1', not to this one ($(cat pid)): LISTEN_PID does not match"
LISTEN_FDS=1 "$P" relay - 127.0.0.1:9 2>err; rc=$?
rc_is $LINENO 1
err_is $LINENO "psplice: relay: LISTEN_FDS is set but LISTEN_PID is not: the sockets may be meant for another process"
LISTEN_FDS=0 LISTEN_PID=1 "$P" relay - 127.0.0.1:9 2>err; rc=$?
rc_is $LINENO 1
err_is $LINENO "psplice: relay: invalid LISTEN_FDS '0' (want a count of sockets, 1 to 4096)"
# For this very process, but fd 3 is a file.
: >file
sh -c 'export LISTEN_FDS=1 LISTEN_PID=$$; exec "$@"' sh "$P" relay - 127.0.0.1:9 3<file 2>err
rc=$?
rc_is $LINENO 1
err_is $LINENO "psplice: relay: fd 3 passed in LISTEN_FDS: Socket operation on non-socket"
"$P" relay --reuseport - 127.0.0.1:9 2>err; rc=$?
rc_is $LINENO 1
is $LINENO "psplice: --reuseport does not apply to LISTEN '-': the workers share the sockets passed (set ReusePort= in the socket unit)" "$(head -1 err)"
"$P" relay --unix-mode=600 - 127.0.0.1:9 2>err; rc=$?
rc_is $LINENO 1
is $LINENO "psplice: --unix-mode does not apply to LISTEN '-' (set SocketMode= in the socket unit)" "$(head -1 err)"

if ! command -v systemd-socket-activate >/dev/null 2>&1; then
	skip "systemd-socket-activate not installed (Debian's systemd package)"
	exit 0
fi

# The target echoes each connection; each client sends random bytes,
# half-closes and checks that the same bytes come back. A free port is
# one the kernel gave and took back: the activator binds it again.
cat >peers.py <<'EOF'
import os, socket, sys, threading
from relay_peers import ready, serve_threads

def addr(s):
    if s.startswith("/"):
        return socket.AF_UNIX, s
    host, port = s.rsplit(":", 1)
    return (socket.AF_INET6 if host.startswith("[") else socket.AF_INET), \
        (host.strip("[]"), int(port))

def free_port(host):
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(fam) as s:
        s.bind((host, 0))
        print(s.getsockname()[1])

def echo_one(c):
    with c:
        c.settimeout(20)
        while True:
            b = c.recv(65536)
            if not b:
                break
            c.sendall(b)

def echo(portfile):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(64)
    s.settimeout(1)
    ready(portfile, str(s.getsockname()[1]))
    serve_threads(s, echo_one, 60)

def client(where, size, errors):
    try:
        fam, a = addr(where)
        data = os.urandom(size)
        with socket.socket(fam) as s:
            s.settimeout(20)
            s.connect(a)
            got = []
            def reader():
                try:
                    while True:
                        b = s.recv(65536)
                        if not b:
                            break
                        got.append(b)
                except OSError as e:
                    errors.append("%s: read: %s" % (where, e))
            t = threading.Thread(target=reader)
            t.start()
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
            t.join(25)
            back = b"".join(got)
            if back != data:
                errors.append("%s: sent %d bytes, %d came back%s" % (
                    where, len(data), len(back), "" if len(back) != len(data) else " different"))
    except OSError as e:
        errors.append("%s: %s" % (where, e))

def clients(n, size, wheres):
    errors = []
    ts = [threading.Thread(target=client, args=(w, size, errors))
          for w in wheres for _ in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(30)
    for e in errors:
        print(e, file=sys.stderr)
    sys.exit(1 if errors or any(t.is_alive() for t in ts) else 0)

if sys.argv[1] == "port":
    free_port(sys.argv[2])
elif sys.argv[1] == "echo":
    echo(sys.argv[2])
else:
    clients(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:])
EOF
timeout 70 python3 peers.py echo tport &
pids="$pids $!"
wait_for tport . || fail $LINENO "the echo target did not start"
tport=$(cat tport)

p4=$(python3 peers.py port 127.0.0.1)
set -- -l 127.0.0.1:$p4
wheres="127.0.0.1:$p4"
if p6=$(python3 peers.py port ::1 2>/dev/null); then
	set -- "$@" -l "[::1]:$p6"
	wheres="$wheres [::1]:$p6"
else
	skip "no IPv6 loopback: the IPv6 listener is left out"
fi
set -- "$@" -l "$d/r.sock"
wheres="$wheres $d/r.sock"
nfds=$(echo $wheres | wc -w)

# The activator execs the relay on the first connection, which waits in
# the queue meanwhile and is served then.
systemd-socket-activate "$@" "$P" relay -j 2 - 127.0.0.1:$tport >act.out 2>act.err &
act=$!; pids="$pids $act"
wait_for act.err "Listening on $d/r.sock" || fail $LINENO "systemd-socket-activate did not listen: $(cat act.err)"
timeout 40 python3 peers.py clients 1 65536 127.0.0.1:$p4 2>cl.err ||
	fail $LINENO "the first connection was not served: $(cat cl.err) $(cat act.err)"
is $LINENO psplice "$(cat /proc/$act/comm)"
# Made close-on-exec (O_CLOEXEC, 02000000 in fdinfo's octal flags) and
# non-blocking (O_NONBLOCK, 04000); systemd-socket-activate set neither.
fd=3
while [ $fd -lt $((3 + nfds)) ]; do
	flags=$(sed -n 's/^flags:[[:space:]]*//p' /proc/$act/fdinfo/$fd)
	[ $((0$flags & 02004000)) -eq $((02004000)) ] ||
		fail $LINENO "fd $fd: flags $flags, not close-on-exec and non-blocking"
	fd=$((fd + 1))
done
# Several connections at once on each listener, spread over the workers.
timeout 60 python3 peers.py clients 8 262144 $wheres 2>cl.err ||
	fail $LINENO "bytes lost through the passed listeners: $(cat cl.err)"
kill -TERM $act
gone $act || fail $LINENO "SIGTERM did not end the relay"
wait $act; rc=$?
rc_is $LINENO 0
# The relay said nothing (without -v it speaks only of what went wrong);
# the activator's own lines do not start with "psplice:".
is $LINENO "" "$(grep '^psplice:' act.err; cat act.out)"

# Named sockets (LISTEN_FDNAMES) name the listeners in -v's first line.
p4=$(python3 peers.py port 127.0.0.1)
systemd-socket-activate -l 127.0.0.1:$p4 -l "$d/n.sock" --fdname=web:local \
	"$P" relay -v -j 3 - 127.0.0.1:$tport 2>named.err &
act=$!; pids="$pids $act"
wait_for named.err "Listening on $d/n.sock" || fail $LINENO "systemd-socket-activate did not listen"
timeout 40 python3 peers.py clients 2 4096 127.0.0.1:$p4 "$d/n.sock" 2>cl.err ||
	fail $LINENO "bytes lost through the named listeners: $(cat cl.err)"
is $LINENO "psplice: relay: listening on 127.0.0.1:$p4 (web), unix:$d/n.sock (local), forwarding to 127.0.0.1:$tport, 3 workers" \
	"$(grep '^psplice: relay: listening' named.err)"
kill -TERM $act
gone $act || fail $LINENO "SIGTERM did not end the relay"
wait $act
[ -S "$d/n.sock" ] || fail $LINENO "the relay removed a socket file that is not its own"

# A connection passed where a listener was expected (Accept=yes).
p4=$(python3 peers.py port 127.0.0.1)
systemd-socket-activate --accept -l 127.0.0.1:$p4 "$P" relay - 127.0.0.1:$tport 2>acc.err &
act=$!; pids="$pids $act"
wait_for acc.err "Listening on" || fail $LINENO "systemd-socket-activate did not listen"
python3 -c 'import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.settimeout(10)
s.recv(1)' $p4 2>/dev/null
wait_for acc.err "^psplice:" || fail $LINENO "the relay said nothing"
is $LINENO "psplice: relay: fd 3 passed in LISTEN_FDS is not listening (a socket unit with Accept=yes passes connections)" \
	"$(grep '^psplice:' acc.err)"
kill $act; wait $act 2>/dev/null

# A service manager keeps its sockets across a restart of the relay: the
# relay that stops leaves them listening, not shut down, and a client that
# comes between the two relays waits in the queue for the second.
cat >manager.py <<'EOF'
import os, signal, socket, subprocess, sys
from relay_peers import recv_all
P, target, log = sys.argv[1:4]
l = socket.socket()
l.bind(("127.0.0.1", 0))
l.listen(16)
os.dup2(l.fileno(), 3)
err = open(log, "w")

def relay():
    return subprocess.Popen(["sh", "-c", 'export LISTEN_FDS=1 LISTEN_PID=$$; exec "$@"',
                             "sh", P, "relay", "-j", "2", "-", target],
                            pass_fds=(3,), stderr=err)

def stop(r):
    r.send_signal(signal.SIGTERM)
    rc = r.wait(10)
    if rc:
        sys.exit("the relay exited %d" % rc)

def send(c, data):
    c.sendall(data)
    c.shutdown(socket.SHUT_WR)
    return recv_all(c)

first = relay()
data = os.urandom(100000)
c = socket.create_connection(l.getsockname(), timeout=10)
if send(c, data) != data:
    sys.exit("bytes lost through the first relay")
stop(first)
# Between the two: connected by the kernel, queued.
c = socket.create_connection(l.getsockname(), timeout=10)
c.sendall(data[:1000])
second = relay()
if send(c, data[1000:]) != data:
    sys.exit("the client queued between two relays lost bytes")
stop(second)
EOF
timeout 60 python3 manager.py "$P" 127.0.0.1:$tport restart.err 2>mgr.err ||
	fail $LINENO "restart: $(tail -1 mgr.err) $(cat restart.err)"
# The stop may come while the relay still closes the connection its client
# saw end: it then says it drains it, which is no error.
is $LINENO "" "$(grep -v -E '^psplice: relay: draining 1 connections? \(again to stop now\)$' restart.err)"

# The example units (contrib/systemd) load as systemd reads them, with the
# relay they start here, for an instance named web.
if command -v systemd-analyze >/dev/null 2>&1; then
	mkdir units
	for u in socket service; do
		sed "s#^ExecStart=/usr/bin/psplice #ExecStart=$P #" \
			"$(dirname "$0")/../contrib/systemd/psplice-relay@.$u" >"units/psplice-relay@.$u"
		ln -s "psplice-relay@.$u" "units/psplice-relay@web.$u"
	done
	grep -q "^ExecStart=$P relay .* - " units/psplice-relay@.service ||
		fail $LINENO "the service does not start psplice relay - TARGET"
	timeout 60 systemd-analyze verify --man=no "$d/units/psplice-relay@web.socket" \
		"$d/units/psplice-relay@web.service" >verify.out 2>&1; rc=$?
	rc_is $LINENO 0
	is $LINENO "" "$(cat verify.out)"
else
	skip "systemd-analyze not installed: the example units are not checked"
fi
exit 0
