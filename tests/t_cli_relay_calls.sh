#!/bin/sh
# psplice relay asks the kernel nothing about the sockets of a connection:
# it accepted the client's and made the target's, and prepares the
# connection's two pairs from what it knows (psplice_pair_new_known). Over
# 100 short connections (a request, an answer, both closed), strace counts
# no fstat, no fcntl, no sigaction and no getsockopt but connect's
# SO_ERROR, at most one a connection; every answer arrives whole. TCP and
# a unix target. Loopback only; every wait is bounded.
[ -z "${BASH_VERSION:-}" ] && command -v bash >/dev/null && exec bash "$0" "$@"
name=t_cli_relay_calls; . "$(dirname "$0")/cli-lib.sh"
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 missing (tests/deps.sh check)"; exit 77; }
command -v strace >/dev/null 2>&1 || { echo "SKIP: strace missing (tests/deps.sh check)"; exit 77; }
t=$d
pids=
cli_cleanup() { for p in $pids; do kill "$p" 2>/dev/null; done; }
N=100

cat > "$t/peers.py" <<'EOF'
import os, socket, sys
from relay_peers import ready

# The target: answers each connection's request with 1000 bytes and closes.
def server(where, readyfile):
    if where.startswith("unix:"):
        s = socket.socket(socket.AF_UNIX)
        s.bind(where[5:])
        text = where
    else:
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        text = "127.0.0.1:%d" % s.getsockname()[1]
    s.listen(128)
    s.settimeout(60)
    ready(readyfile, text)
    while True:
        c, _ = s.accept()
        c.recv(100)
        c.sendall(b"a" * 1000)
        c.close()

# The client: n connections, each a request and the whole answer.
def client(port, n):
    for i in range(n):
        c = socket.create_connection(("127.0.0.1", port), timeout=10)
        c.sendall(b"GET\n")
        got = b""
        while True:
            b = c.recv(4096)
            if not b:
                break
            got += b
        if got != b"a" * 1000:
            sys.exit("connection %d: %d bytes" % (i, len(got)))
        c.close()

# Another process holding copies of the relay's sockets, as a relay that
# takes over (--replace) does while it looks at each, or ss -p for a
# moment: every 10 ms, a copy of each (pidfd_getfd), dropped 10 ms later.
# A socket the relay closes meanwhile stays registered in its epoll set.
def holder(pid, until):
    import ctypes, time
    libc = ctypes.CDLL(None, use_errno=True)
    pfd = os.pidfd_open(pid)
    taken = 0
    while not os.path.exists(until):
        held = []
        try:
            names = os.listdir("/proc/%d/fd" % pid)
        except FileNotFoundError:
            break  # the relay is gone: the test says why
        for name in names:
            try:
                if not os.readlink("/proc/%d/fd/%s" % (pid, name)).startswith("socket:"):
                    continue
            except OSError:
                continue
            fd = libc.syscall(438, pfd, int(name), 0)  # pidfd_getfd
            if fd < 0 and ctypes.get_errno() == 1:
                sys.exit("pidfd_getfd: EPERM")
            if fd >= 0:
                held.append(fd)
        taken += len(held)
        if held and not os.path.exists(until + ".held"):
            open(until + ".held", "w").write("held\n")
        time.sleep(0.01)
        for fd in held:
            os.close(fd)
        time.sleep(0.01)
    print(taken)

if sys.argv[1] == "server":
    server(sys.argv[2], sys.argv[3])
elif sys.argv[1] == "holder":
    holder(int(sys.argv[2]), sys.argv[3])
else:
    client(int(sys.argv[2]), int(sys.argv[3]))
EOF

# run KIND TARGET: N connections through a relay traced once it listens.
run() {
	kind=$1
	rm -f "$t/ready"
	timeout 120 python3 "$t/peers.py" server "$2" "$t/ready" > "$t/$kind-server.log" 2>&1 &
	pids="$pids $!"
	wait_for "$t/ready" . || fail $LINENO "$kind: the target did not start"
	target=$(cat "$t/ready")
	"$P" relay -v -j 1 127.0.0.1:0 "$target" > "$t/$kind.log" 2>&1 &
	relay=$!
	pids="$pids $relay"
	wait_for "$t/$kind.log" "listening on" || fail $LINENO "$kind: the relay did not start"
	rport=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\),.*/\1/p' "$t/$kind.log")
	# One connection first: the worker's pipe and buffers are made then.
	timeout 60 python3 "$t/peers.py" client "$rport" 1 || fail $LINENO "$kind: the first connection failed"
	timeout 120 strace -f -qq -p "$relay" -o "$t/$kind.trace" &
	tracer=$!
	pids="$pids $tracer"
	i=0
	until grep -q . "$t/$kind.trace" 2>/dev/null || [ $i -ge 50 ]; do
		# strace writes nothing until a traced call: a connection makes one.
		timeout 60 python3 "$t/peers.py" client "$rport" 1 || fail $LINENO "$kind: a connection failed"
		i=$((i + 1))
	done
	timeout 120 python3 "$t/peers.py" client "$rport" $N > "$t/$kind-client.log" 2>&1 ||
		fail $LINENO "$kind: the client failed: $(cat "$t/$kind-client.log")"
	sleep 0.3
	kill "$tracer"
	wait "$tracer" 2>/dev/null
	kill "$relay"
	wait "$relay" 2>/dev/null
	# A call another thread's interrupts (the log's writer) is two lines,
	# "<unfinished ...>" and "<... accept4 resumed>".
	conns=$(grep -c -E 'accept4(\(| resumed>).*\) = [0-9]' "$t/$kind.trace")
	[ "$conns" -ge "$N" ] || fail $LINENO "$kind: $conns connections traced, want $N or more"
	for call in fstat newfstatat statx fcntl rt_sigaction; do
		n=$(grep -c "^[0-9]* *$call(" "$t/$kind.trace")
		[ "$n" -eq 0 ] || fail $LINENO "$kind: $n $call calls for $conns connections: $(grep "$call(" "$t/$kind.trace" | head -3)"
	done
	n=$(grep -c 'getsockopt(' "$t/$kind.trace")
	other=$(grep 'getsockopt(' "$t/$kind.trace" | grep -vc 'SO_ERROR')
	[ "$other" -eq 0 ] || fail $LINENO "$kind: getsockopt other than SO_ERROR: $(grep 'getsockopt(' "$t/$kind.trace" | grep -v SO_ERROR | head -3)"
	# Connected is said by a writable socket without an error: SO_ERROR
	# is asked only of a connect that failed, and none does here.
	[ "$n" -eq 0 ] || fail $LINENO "$kind: $n getsockopt calls for $conns connections, all connected"
	# One accept a wakeup: clients one at a time meet no EAGAIN.
	n=$(grep -c -E 'accept4(\(| resumed>).*EAGAIN' "$t/$kind.trace")
	[ "$n" -eq 0 ] || fail $LINENO "$kind: $n accept4 calls said EAGAIN for $conns connections"
	# The client's socket inherits TCP_NODELAY from the listener; the
	# target's TCP socket gets it, a unix one nothing.
	n=$(grep -c 'setsockopt(' "$t/$kind.trace")
	want=$conns; [ "$kind" = unix ] && want=0
	[ "$n" -le "$want" ] || fail $LINENO "$kind: $n setsockopt calls for $conns connections, want $want"
	# A close takes the fds out of the epoll set: no EPOLL_CTL_DEL before
	# it (there is one when a direction ends before the other and its
	# socket waits for nothing: here the target's, when it ends).
	n=$(grep -c 'epoll_ctl(' "$t/$kind.trace")
	[ "$n" -le $((conns * 4)) ] || fail $LINENO "$kind: $n epoll_ctl calls for $conns connections, want 4 each at most"
	all=$(grep -c '^[0-9]* *[a-z_0-9]*(' "$t/$kind.trace")
	echo "$kind: $all system calls for $conns connections:" \
		$(sed -n 's/^[0-9]* *\([a-z_0-9]*\)(.*/\1/p' "$t/$kind.trace" | sort | uniq -c | sort -rn |
		  awk '{ printf "%s %.1f, ", $2, $1 / '"$conns"' }')
}

# The listener is given TCP_NODELAY (and --notsent-lowat's bound) before
# listen(2), so that every connection inherits them, the first included;
# with --nagle, nothing.
opts() {
	strace -f -qq -o "$t/start.trace" -e trace=setsockopt,listen \
		timeout 2 "$P" relay $1 127.0.0.1:0 127.0.0.1:9 >/dev/null 2>&1
	lfd=$(sed -n 's/^[0-9]* *listen(\([0-9]*\),.*/\1/p' "$t/start.trace" | head -1)
	sed -n "/^[0-9]* *listen($lfd,/q;s/^[0-9]* *setsockopt($lfd, SOL_TCP, \([A-Z_]*\), \[\([0-9]*\)\].*/\1=\2/p" \
		"$t/start.trace" | sort | paste -sd' ' > "$t/start.opts"
	[ "$(cat "$t/start.opts")" = "$2" ] ||
		fail $LINENO "relay $1: the listener (fd $lfd) had '$(cat "$t/start.opts")' before listen(), want '$2': $(cat "$t/start.trace")"
}
# A close takes a socket out of the epoll set only when the process holds
# its last copy: with another process holding copies, the events of closed
# sockets keep coming, and must not be taken for those of the connections
# that came after (each handle's gen; under check-asan, a use after free
# if they named freed memory). 300 connections, each answer whole.
holders() {
	rm -f "$t/ready" "$t/stop" "$t/stop.held"
	timeout 120 python3 "$t/peers.py" server 127.0.0.1 "$t/ready" > "$t/h-server.log" 2>&1 &
	pids="$pids $!"
	wait_for "$t/ready" . || fail $LINENO "holders: the target did not start"
	"$P" relay -v -j 1 127.0.0.1:0 "$(cat "$t/ready")" > "$t/h.log" 2>&1 &
	relay=$!
	pids="$pids $relay"
	wait_for "$t/h.log" "listening on" || fail $LINENO "holders: the relay did not start"
	rport=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\),.*/\1/p' "$t/h.log")
	timeout 120 python3 "$t/peers.py" holder "$relay" "$t/stop" > "$t/holder.log" 2>&1 &
	holder=$!
	# The clients start once the holder holds copies, not before it runs.
	wait_for "$t/stop.held" . || fail $LINENO "holders: the holder took no socket: $(cat "$t/holder.log")"
	timeout 120 python3 "$t/peers.py" client "$rport" 300 > "$t/h-client.log" 2>&1
	rc=$?
	touch "$t/stop"
	wait "$holder"
	hrc=$?
	grep -q EPERM "$t/holder.log" && { echo "SKIP: pidfd_getfd refused (ptrace permission)"; exit 77; }
	kill -0 "$relay" 2>/dev/null ||
		fail $LINENO "holders: the relay died: $(grep -v '^psplice: relay: #' "$t/h.log" | head -30)"
	[ "$hrc" -eq 0 ] || fail $LINENO "holders: the holder failed: $(cat "$t/holder.log")"
	[ "$rc" -eq 0 ] || fail $LINENO "holders: the client failed: $(cat "$t/h-client.log"; tail -5 "$t/h.log")"
	kill "$relay"
	wait "$relay" 2>/dev/null
	[ "$(cat "$t/holder.log")" -gt 0 ] || fail $LINENO "holders: no socket was ever held"
	! grep -q "AddressSanitizer\|runtime error" "$t/h.log" || fail $LINENO "holders: $(grep -A5 Sanitizer "$t/h.log")"
}
holders

opts "" "TCP_NODELAY=1"
opts "--notsent-lowat=128K" "TCP_NODELAY=1 TCP_NOTSENT_LOWAT=131072"
opts --nagle ""

run tcp 127.0.0.1:0
run unix "unix:$t/target.sock"
echo "PASS: $N short connections, TCP and unix targets: no fstat, fcntl, sigaction, SO_ERROR, EAGAIN accept or setsockopt on the client; at most 4 epoll_ctl a connection; 300 more whole with another process holding the relay's sockets"
