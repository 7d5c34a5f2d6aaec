#!/bin/sh
# The programs of examples/ on real data: ps-cp on a sparse, a regular and
# an empty file (the copies byte for byte, the holes kept, -v naming a
# mechanism, a write past RLIMIT_FSIZE named as the destination's error,
# a copy onto itself refused with the file intact); ps-tee from a pipe to
# standard output and three files, with -a, and with a sink that fails
# (/dev/full) while the others get every byte; ps-writer's 256 MiB, checked
# word by word, its sync level, and its peak of Dirty memory, each level it
# can be asked, and a write past RLIMIT_FSIZE; ps-relay on
# loopback with three connections: a slow reader that makes the relay hold
# bytes pending, then a half-close answered after the end, both ways at
# once, and a target that resets, after which the relay goes on and exits.
[ -z "${BASH_VERSION:-}" ] && command -v bash >/dev/null && exec bash "$0" "$@"
name=t_examples; . "$(dirname "$0")/cli-lib.sh"
ex=$(dirname "$P")/examples
for x in ps-cp ps-tee ps-writer ps-relay; do
	[ -x "$ex/$x" ] || fail $LINENO "$ex/$x is not built (make examples)"
done
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 missing (tests/deps.sh check)"; exit 77; }

# ps-cp
truncate -s 64M sparse && printf 'middle' | dd of=sparse bs=1 seek=32M conv=notrunc 2>/dev/null
printf 'tail' >>sparse
head -c $((5 << 20)) /dev/urandom >regular && printf 'odd' >>regular
: >empty
for f in sparse regular empty; do
	"$ex/ps-cp" -v $f $f.copy 2>err; rc=$?; rc_is $LINENO 0
	same $LINENO $f $f.copy
	[ ! -s $f ] || grep -Eq "^ps-cp: '$f' -> '$f.copy': [0-9]+ bytes by $methods\$" err ||
		fail $LINENO "-v said: $(cat err)"
done
[ "$(stat -c %b sparse.copy)" -le "$(stat -c %b sparse)" ] ||
	fail $LINENO "the copy of sparse takes $(stat -c %b sparse.copy) blocks, the file $(stat -c %b sparse)"
# RLIMIT_FSIZE: the kernel's EFBIG, on the output, with SIGXFSZ ignored.
(trap '' XFSZ; ulimit -f 1024; exec "$ex/ps-cp" regular big) 2>err; rc=$?
rc_is $LINENO 1
err_is $LINENO "ps-cp: writing 'big': File too large"
"$ex/ps-cp" regular regular 2>err; rc=$?; rc_is $LINENO 1
err_is $LINENO "ps-cp: 'regular' and 'regular' are the same file"
same $LINENO regular regular.copy
"$ex/ps-cp" nothing x 2>err; rc=$?; rc_is $LINENO 1
err_is $LINENO "ps-cp: reading 'nothing': No such file or directory"

# ps-tee
head -c $((16 << 20)) /dev/urandom >in && printf 'odd' >>in
cat in | "$ex/ps-tee" -v t1 t2 t3 >t4 2>err; rc=$?; rc_is $LINENO 0
for f in t1 t2 t3 t4; do same $LINENO in $f; done
is $LINENO 4 "$(grep -Ec "^ps-tee: (t[123]|standard output): $(stat -c %s in) bytes by $methods\$" err)"
cat in | "$ex/ps-tee" -a t1 >/dev/null 2>err; rc=$?; rc_is $LINENO 0
cat in in >in2; same $LINENO in2 t1
cat in | "$ex/ps-tee" t1 /dev/full t3 >t4 2>err; rc=$?; rc_is $LINENO 1
err_is $LINENO "ps-tee: /dev/full: No space left on device (after 0 bytes)"
for f in t1 t3 t4; do same $LINENO in $f; done
"$ex/ps-tee" t1 </ >/dev/null 2>err; rc=$?; rc_is $LINENO 1
err_is $LINENO "ps-tee: standard input: Is a directory"

# ps-writer: every 8-byte word holds its offset.
"$ex/ps-writer" -s data w 256 >out 2>err; rc=$?; rc_is $LINENO 0
is $LINENO $((256 << 20)) "$(stat -c %s w)"
python3 - w <<'EOF' || fail $LINENO "ps-writer's data is not its offsets"
import array, sys
with open(sys.argv[1], "rb") as f:
    off = 0
    while True:
        b = f.read(1 << 20)
        if not b:
            break
        if array.array("Q", range(off, off + len(b), 8)).tobytes() != b:
            sys.exit("wrong data in the MiB at %d" % off)
        off += len(b)
EOF
level=$(sed -n 's/^256 MiB written, sync data reached \(.*\)$/\1/p' out)
case $(stat -f -c %T .) in
tmpfs|ramfs) is $LINENO none "$level" ;;
*) is $LINENO data-durable "$level" ;;
esac
set -- $(sed -n 's/^Dirty: \([0-9]*\) MiB at start, \([0-9]*\) MiB at most$/\1 \2/p' out)
[ $# -eq 2 ] || fail $LINENO "no Dirty line: $(cat out)"
echo "$name: ps-writer: Dirty $1 MiB at start, $2 MiB at most, for 256 MiB written"
# Without write-behind the whole 256 MiB would be dirty at the end (below
# the kernel's dirty thresholds); with it, a few 8 MiB chunks. Others on
# the machine write too, so the bound is loose.
[ $(($2 - $1)) -lt 128 ] || fail $LINENO "Dirty rose by $(($2 - $1)) MiB"
for l in file:file-durable none:written; do
	"$ex/ps-writer" -c 1 -s ${l%%:*} w 3 >out 2>err; rc=$?; rc_is $LINENO 0
	case $(stat -f -c %T .) in tmpfs|ramfs) l=${l%%:*}:none ;; esac
	grep -qx "3 MiB written, sync ${l%%:*} reached ${l#*:}" out || fail $LINENO "$(cat out)"
done
(trap '' XFSZ; ulimit -f 1024; exec "$ex/ps-writer" big 2) >out 2>err; rc=$?
rc_is $LINENO 1
err_is $LINENO "ps-writer: big: File too large"
"$ex/ps-writer" -s most w 1 2>err; rc=$?; rc_is $LINENO 2

# ps-relay between two Python peers; each connection's bytes by sha256.
head -c $((32 << 20)) /dev/urandom >up
head -c $((8 << 20)) /dev/urandom >down
cat >peers.py <<'EOF'
import hashlib, os, socket, struct, sys, threading, time

def send(s, path):
    with open(path, "rb") as f:
        s.sendfile(f)
    s.shutdown(socket.SHUT_WR)

def recv(s, out, pause=0):
    time.sleep(pause)
    h, n = hashlib.sha256(), 0
    while True:
        b = s.recv(1 << 16)
        if not b:
            break
        h.update(b)
        n += len(b)
    with open(out, "w") as f:
        f.write("%s %d\n" % (h.hexdigest(), n))

def both(s, path, out):
    t = threading.Thread(target=send, args=(s, path))
    t.start()
    recv(s, out)
    t.join()

def server(mine):
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(4)
    with open("port.tmp", "w") as f:
        f.write("%d\n" % ls.getsockname()[1])
    os.rename("port.tmp", "port")
    for n in (1, 2, 3):
        s, _ = ls.accept()
        s.settimeout(60)
        if n == 1:    # a slow reader, which answers after the end
            recv(s, "s1", pause=1)
            send(s, mine)
        elif n == 2:  # both ways at once
            both(s, mine, "s2")
        else:         # a reset
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()

def client(port, mine):
    for n in (1, 2, 3):
        s = socket.create_connection(("127.0.0.1", port), timeout=60)
        if n == 1:
            send(s, mine)
            recv(s, "c1")
        elif n == 2:
            both(s, mine, "c2")
        else:
            try:
                s.sendall(b"x" * (1 << 20))
                s.recv(1)
            except OSError:
                pass
        s.close()

if sys.argv[1] == "server":
    server(sys.argv[2])
else:
    client(int(sys.argv[2]), sys.argv[3])
EOF
python3 peers.py server down 2>server.log &
server=$!
cli_cleanup() { kill $server $relay 2>/dev/null; }
relay=
i=0
while [ ! -s port ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
[ -s port ] || fail $LINENO "the server did not start: $(cat server.log)"
"$ex/ps-relay" -n 3 127.0.0.1 0 127.0.0.1 "$(cat port)" >relay.out 2>relay.err &
relay=$!
i=0
while ! grep -q '^listening on port [0-9]' relay.out 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
rport=$(sed -n 's/^listening on port \([0-9]*\)$/\1/p' relay.out)
[ -n "$rport" ] || fail $LINENO "the relay did not start: $(cat relay.err)"
timeout 120 python3 peers.py client "$rport" up 2>client.log || fail $LINENO "client: $(cat client.log)"
wait $server || fail $LINENO "server: $(cat server.log)"
# With -n 3 the relay exits once the three are closed: its status, and
# under ASan its leaks, count.
i=0
while kill -0 $relay 2>/dev/null && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
kill -0 $relay 2>/dev/null && fail $LINENO "the relay is still running after its 3 connections"
wait $relay; rc=$?; relay=
rc_is $LINENO 0
want_up="$(sha256sum <up | cut -d' ' -f1) $(stat -c %s up)"
want_down="$(sha256sum <down | cut -d' ' -f1) $(stat -c %s down)"
for n in 1 2; do
	is $LINENO "$want_up" "$(cat s$n)"
	is $LINENO "$want_down" "$(cat c$n)"
done
# The third connection failed on the target's side, and said so; the
# first two said nothing.
grep -Eq '^ps-relay: #3: .*target: (Connection reset by peer|Broken pipe)$' relay.err ||
	fail $LINENO "relay's stderr: $(cat relay.err)"
grep -q '^ps-relay: #[12]:' relay.err && fail $LINENO "relay's stderr: $(cat relay.err)"
exit 0
