#!/bin/sh
# psplice relay and clients that stop reading: a connection whose client
# reads nothing costs the relay a bounded amount, its input left unread
# while its output takes no more (the kernel's socket buffers push back
# on the target, as HAProxy's buffer of 16 KiB a direction does), not the
# megabyte a move used to take and hold (in a kept pipe or in memory).
# 200 clients with a receive buffer of 4 KiB connect and read nothing; the
# target sends 2 MiB to each. In a network namespace of its own, whose
# socket buffers make the case plain whatever the host's memory: an
# accepted socket starts with a receive buffer of 4 MiB, so that the
# target's bytes wait at the relay's input, and no send buffer grows past
# 64 KiB, so that the relay's output to a client that does not read is
# full at once. The target's bytes come while the relay is stopped (as on
# a busy machine), so that each connection's first move finds them all.
# Then the relay's bytes pending, from its stats line, and
# the growth of its resident memory, are under 64 KiB a connection (the
# bound is about the mechanism: taking what the input has, the relay held
# about 1 MiB a connection); the same with PSPLICE_MAX_PIPES=0, where
# every pending byte is in the relay's memory. Once the clients read,
# every byte arrives (sha256 of each connection's). As root (a network
# namespace and its sysctls), else skipped.
[ -z "${BASH_VERSION:-}" ] && command -v bash >/dev/null && exec bash "$0" "$@"
name=t_cli_relay_stalled; . "$(dirname "$0")/cli-lib.sh"
command -v python3 >/dev/null 2>&1 || { skip "python3 missing (tests/deps.sh check)"; exit 77; }
command -v ip >/dev/null 2>&1 || { skip "ip missing (tests/deps.sh check)"; exit 77; }
if [ "$(id -u)" -ne 0 ] || ! unshare -n true 2>/dev/null; then
	skip "needs root for a network namespace of its own"
	exit 77
fi
CONNS=200
SIZE=$((2 << 20))
BOUND_KIB=64

cat > peers.py <<'PY'
"""The peers of t_cli_relay_stalled.sh, run in a network namespace of its
own: a target that sends SIZE bytes to each connection it accepts, and
CONNS clients that connect through the relay and read nothing until the
relay has taken all it will. Then the relay's memory and its pending
bytes are measured, the clients read, and every byte must be there.

usage: relay_stalled.py PSPLICE LOG CONNS SIZE
Prints one line, "rss_kib BEFORE AFTER pending BYTES sent BYTES bad N";
exits 1 when it could not measure.

The namespace's socket buffers make the case plain, whatever the host's
memory: an accepted socket starts with a receive buffer of 4 MiB
(tcp_rmem), so that the target's bytes wait at the relay's input, and no
send buffer grows past 64 KiB (tcp_wmem), so that the relay's output to a
client that does not read is full at once."""
import hashlib, os, re, selectors, signal, socket, subprocess, sys, threading, time

RCVBUF = 4096        # the stalled clients' own receive buffers
SETTLE = 1.5         # no byte sent for this long: the relay takes no more
LIMIT = 60           # every phase ends within this many seconds


def sysctl(name, value):
    with open("/proc/sys/net/ipv4/" + name, "w") as f:
        f.write(value)


def vm_rss(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


class Target:
    """Sends blob to each connection, then its end of stream."""

    def __init__(self, blob):
        self.blob, self.sent, self.done = blob, 0, []
        self.go, self.accepted = True, 0
        self.ls = socket.socket()
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(4096)
        self.ls.setblocking(False)
        self.port = self.ls.getsockname()[1]
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.ls, selectors.EVENT_READ, None)
        threading.Thread(target=self.run, daemon=True).start()

    def accept(self):
        try:
            c, _ = self.ls.accept()
        except BlockingIOError:
            return
        c.setblocking(False)
        self.accepted += 1
        self.sel.register(c, selectors.EVENT_WRITE, [c, 0])

    def push(self, st):
        try:
            n = st[0].send(memoryview(self.blob)[st[1]:st[1] + (1 << 18)])
        except BlockingIOError:
            return
        except OSError:
            n, st[1] = 0, len(self.blob)
        st[1] += n
        self.sent += n
        if st[1] >= len(self.blob):
            # Kept open: a socket closed with bytes unsent is an orphan,
            # which the kernel may reset under memory pressure.
            self.done.append(st[0])
            self.sel.unregister(st[0])
            try:
                st[0].shutdown(socket.SHUT_WR)
            except OSError:
                pass

    def run(self):
        while True:
            for k, _ in self.sel.select(1):
                if k.data is None:
                    self.accept()
                elif self.go:
                    self.push(k.data)
            if not self.go:
                time.sleep(0.01)


def relay_port(log, proc):
    end = time.time() + LIMIT
    while time.time() < end and proc.poll() is None:
        with open(log) as f:
            m = re.search(r"listening on 127\.0\.0\.1:(\d+)", f.read())
        if m:
            return int(m.group(1))
        time.sleep(0.05)
    sys.exit("the relay did not start")


def last_pending(log):
    """The bytes pending target->client in the relay's last stats line."""
    got = None
    with open(log) as f:
        for line in f:
            m = re.search(r"pending (-?\d+) client->target, (-?\d+) target->client", line)
            if m:
                got = int(m.group(2))
    return got


def read_all(clients, want, size):
    """Each client's bytes to their end: how many were not the blob."""
    sel = selectors.DefaultSelector()
    state = {}
    for s in clients:
        s.setblocking(False)
        state[s] = [hashlib.sha256(), 0]
        sel.register(s, selectors.EVENT_READ)
    bad, end = 0, time.time() + LIMIT
    while state and time.time() < end:
        for k, _ in sel.select(1):
            s = k.fileobj
            try:
                b = s.recv(1 << 18)
            except BlockingIOError:
                continue
            except OSError:
                b = b""
            if b:
                state[s][0].update(b)
                state[s][1] += len(b)
                continue
            sel.unregister(s)
            h, n = state.pop(s)
            bad += n != size or h.hexdigest() != want
    return bad + len(state)


def settle(target):
    last, still, end = -1, time.time(), time.time() + LIMIT
    while time.time() - still < SETTLE and time.time() < end:
        time.sleep(0.25)
        if target.sent != last:
            last, still = target.sent, time.time()


def connect(port):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF)
    s.connect(("127.0.0.1", port))
    return s


def main():
    bin_, log, conns, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    sysctl("tcp_rmem", "4096 4194304 8388608")
    sysctl("tcp_wmem", "4096 16384 65536")
    blob = os.urandom(size)
    want = hashlib.sha256(blob).hexdigest()
    target = Target(blob)
    proc = subprocess.Popen([bin_, "relay", "-v", "-j", "1", "--stats-interval=0.1",
                             "127.0.0.1:0", "127.0.0.1:%d" % target.port],
                            stdout=subprocess.DEVNULL, stderr=open(log, "w"))
    try:
        port = relay_port(log, proc)
        # One connection read whole first: the worker's pipe and buffers
        # are made before the measure begins.
        bad = read_all([connect(port)], want, size)
        before = vm_rss(proc.pid)
        # The target's bytes arrive while the relay is stopped, as on a
        # busy machine: each connection's first move finds them all.
        target.go = False
        clients = [connect(port) for _ in range(conns)]
        end = time.time() + LIMIT
        while target.accepted < conns + 1 and time.time() < end:
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGSTOP)
        target.go = True
        settle(target)
        os.kill(proc.pid, signal.SIGCONT)
        settle(target)
        time.sleep(0.3)  # a stats line after the last move
        after, pending, sent = vm_rss(proc.pid), last_pending(log), target.sent
        bad += read_all(clients, want, size)
        print("rss_kib %d %d pending %d sent %d bad %d" % (before, after, pending, sent, bad))
    finally:
        proc.terminate()
        proc.wait()


main()
PY

# run NAME [ENV...]: the peers and the relay in a namespace; their line in NAME.out
run() {
	n=$1; shift
	env "$@" timeout 300 unshare -n sh -c 'ip link set lo up && exec python3 "$@"' sh \
		peers.py "$P" "$n.log" $CONNS $SIZE >"$n.out" 2>"$n.err" ||
		fail $LINENO "$n: the peers failed: $(tail -3 "$n.err") $(tail -3 "$n.log")"
	set -- $(cat "$n.out")
	[ "$1" = rss_kib ] && [ $# -eq 9 ] || fail $LINENO "$n: no measure: $(cat "$n.out")"
	rss=$(( ($3 - $2) / CONNS )) pend=$(( $5 / 1024 / CONNS ))
	echo "$n: $CONNS stalled: rss +$rss KiB, pending $pend KiB a connection; target sent $(( $7 >> 20 )) MiB"
	[ "$9" -eq 0 ] || fail $LINENO "$n: $9 connections did not get every byte"
	[ $pend -lt $BOUND_KIB ] ||
		fail $LINENO "$n: $pend KiB pending a stalled connection (bound $BOUND_KIB KiB)"
	[ $rss -lt $BOUND_KIB ] ||
		fail $LINENO "$n: the relay grew $rss KiB a stalled connection (bound $BOUND_KIB KiB)"
}

run memory PSPLICE_MAX_PIPES=0
run pipes
exit 0
