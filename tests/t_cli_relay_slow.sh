#!/bin/sh
# psplice relay under backpressure (issue 14): a client that reads slowly
# through a small receive buffer, while both directions carry a file and
# the target half-closes right after its last byte. Every byte arrives
# (sha256 at both ends), the half-close comes after the bytes held in the
# connection's pipe, the stats show bytes pending and none copied, and the
# relay itself never reads or writes a relayed byte (strace: no read, write,
# recv or send call on its sockets moves more than a few hundred bytes). With
# PSPLICE_MAX_PIPES=0 the same run holds its bytes in memory instead: still
# whole, and the stats say what went through memory.
dir=$1
bin=${PSPLICE_BIN:?}
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 missing (tests/deps.sh check)"; exit 77; }
command -v strace >/dev/null 2>&1 || { echo "SKIP: strace missing (tests/deps.sh check)"; exit 77; }
t=$(mktemp -d "$dir/cli-relay-slow-XXXXXX") || exit 1
pids=
cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null; done
	rm -rf "$t"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*" >&2
	for f in "$t"/*.log; do [ -f "$f" ] && sed "s|^|  $(basename "$f"): |" "$f" | tail -8 >&2; done
	exit 1
}
wait_for() { # FILE PATTERN: up to 10 s
	i=0
	while ! grep -q "$2" "$1" 2>/dev/null; do
		i=$((i + 1))
		[ $i -le 100 ] || return 1
		sleep 0.1
	done
}

head -c 24M /dev/urandom > "$t/down"
head -c 8M /dev/urandom > "$t/up"

cat > "$t/peers.py" <<'EOF'
import hashlib, os, socket, sys, threading, time

def send_file(s, path):
    with open(path, "rb") as f:
        while True:
            b = f.read(1 << 16)
            if not b:
                break
            s.sendall(b)
    s.shutdown(socket.SHUT_WR)

def recv_sha(s, slow):
    h, n = hashlib.sha256(), 0
    while True:
        b = s.recv(4096 if slow else 1 << 16)
        if not b:
            break
        h.update(b)
        n += len(b)
        # Bursts of 256 KiB, then a pause: a reader slower than the relay.
        if slow and n % (256 << 10) < len(b):
            time.sleep(0.02)
    return h.hexdigest(), n

# Send path on s while reading what comes back; its sha256 and length to out.
def both_ways(s, path, slow, out):
    th = threading.Thread(target=send_file, args=(s, path))
    th.start()
    sha, n = recv_sha(s, slow)
    th.join()
    with open(out, "w") as f:
        f.write("%s %d\n" % (sha, n))
    s.close()

def server(ready, down, out):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    with open(ready + ".tmp", "w") as f:
        f.write("%d\n" % s.getsockname()[1])
    os.rename(ready + ".tmp", ready)
    c, _ = s.accept()
    both_ways(c, down, False, out)

def client(port, up, out):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8192)
    s.connect(("127.0.0.1", port))
    both_ways(s, up, True, out)

if sys.argv[1] == "server":
    server(*sys.argv[2:])
else:
    client(int(sys.argv[2]), *sys.argv[3:])
EOF

want_down="$(sha256sum < "$t/down" | cut -d' ' -f1) $(wc -c < "$t/down")"
want_up="$(sha256sum < "$t/up" | cut -d' ' -f1) $(wc -c < "$t/up")"

# run NAME [ENV...]: one relayed connection; the relay under strace.
run() {
	name=$1
	shift
	rm -f "$t/ready" "$t/$name.server" "$t/$name.client"
	timeout 60 python3 "$t/peers.py" server "$t/ready" "$t/down" "$t/$name.server" \
		> "$t/$name-server.log" 2>&1 &
	pids="$pids $!"
	wait_for "$t/ready" . || fail "$name: the server did not start"
	port=$(cat "$t/ready")
	# LeakSanitizer cannot run under ptrace (the ASan build of check-asan).
	env ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" "$@" \
		timeout 60 strace -f -qq -yy -o "$t/$name.trace" \
		-e trace=read,write,readv,writev,recvfrom,sendto,recvmsg,sendmsg \
		"$bin" relay -v -j 1 --stats-interval=0.05 127.0.0.1:0 "127.0.0.1:$port" \
		> "$t/$name.log" 2>&1 &
	relay=$!
	pids="$pids $relay"
	wait_for "$t/$name.log" "listening on" || fail "$name: the relay did not start"
	rport=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\),.*/\1/p' "$t/$name.log")
	timeout 60 python3 "$t/peers.py" client "$rport" "$t/up" "$t/$name.client" \
		> "$t/$name-client.log" 2>&1 || fail "$name: the client failed"
	wait_for "$t/$name.server" . || fail "$name: the server did not finish"
	wait_for "$t/$name.log" "closed" || fail "$name: the relay did not close the connection"
	kill -TERM "$relay"
	wait "$relay"
	[ "$(cat "$t/$name.client")" = "$want_down" ] ||
		fail "$name: target->client: got $(cat "$t/$name.client"), want $want_down"
	[ "$(cat "$t/$name.server")" = "$want_up" ] ||
		fail "$name: client->target: got $(cat "$t/$name.server"), want $want_up"
}

# The largest count one read/write/recv/send call of the relay returned on
# a TCP socket or a pipe (strace -yy names each fd: "5<TCP:[...]>").
largest_io() {
	sed -n 's/^[0-9]* *\(read\|write\|readv\|writev\|recvfrom\|sendto\|recvmsg\|sendmsg\)([0-9]*<\(TCP\|pipe\).*= \([0-9][0-9]*\)$/\3/p' \
		"$1" | sort -n | tail -1
}

run zerocopy
grep -q "pending [0-9]* client->target, [1-9][0-9]* target->client" "$t/zerocopy.log" ||
	fail "zerocopy: no stats line with bytes pending target->client: no backpressure?"
tail -1 "$t/zerocopy.log" | grep -q "; copied 0$" ||
	fail "zerocopy: bytes went through the relay's memory: $(tail -1 "$t/zerocopy.log")"
big=$(largest_io "$t/zerocopy.trace")
[ "${big:-0}" -le 512 ] || fail "zerocopy: the relay read or wrote $big bytes in one call"
grep -q "splice(" "$t/zerocopy.trace" && fail "zerocopy: the trace filter let splice through"

# The control: without pipes to keep, bytes wait in memory, and it shows.
run memory PSPLICE_MAX_PIPES=0
tail -1 "$t/memory.log" | grep -q "; copied [1-9]" ||
	fail "memory: no bytes copied with PSPLICE_MAX_PIPES=0: $(tail -1 "$t/memory.log")"
big=$(largest_io "$t/memory.trace")
[ "${big:-0}" -gt 512 ] || fail "memory: the strace check sees no relayed bytes even here"
exit 0
