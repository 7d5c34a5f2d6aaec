#!/bin/sh
# psplice cat --listen ADDR: the receiving side of cat --to (nc -l,
# socat -u TCP-LISTEN:PORT -): one connection accepted on a TCP or unix
# address, its bytes to standard output by splice, not through the
# process; the errors of an address malformed, in use, or given with FILEs.
[ -z "${BASH_VERSION:-}" ] && command -v bash >/dev/null && exec bash "$0" "$@"
name=t_cli_catlisten; . "$(dirname "$0")/cli-lib.sh"
command -v python3 >/dev/null || { echo "SKIP: python3 is needed for the sending end"; exit 77; }
pid=
cli_cleanup() { [ -z "$pid" ] || kill "$pid" 2>/dev/null; }

head -c 5000001 /dev/urandom >f
# send ADDR FILE: connect to ADDR (host:port or unix:path) as soon as it
# listens, within 20 s, and send FILE.
send() {
	python3 - "$1" "$2" <<'PY'
import socket, sys, time
addr, path = sys.argv[1:3]
for _ in range(200):
    try:
        if addr.startswith("unix:"):
            s = socket.socket(socket.AF_UNIX); s.connect(addr[5:])
        else:
            host, port = addr.rsplit(":", 1)
            s = socket.create_connection((host.strip("[]"), int(port)))
        break
    except OSError:
        time.sleep(0.1)
else:
    sys.exit("cannot connect to " + addr)
s.sendall(open(path, "rb").read())
s.close()
PY
}

# TCP: every byte, the command exits 0 when the peer is done, spliced.
p=$(port)
"$P" cat --verbose --listen 127.0.0.1:$p >got 2>err & pid=$!
send 127.0.0.1:$p f || fail $LINENO "send"
wait $pid; rc=$?; pid=
rc_is $LINENO 0; same $LINENO f got
grep -q "^psplice: '127.0.0.1:$p' -> 'standard output': 5,000,001 bytes by splice" err ||
	fail $LINENO "$(cat err)"
# Unix, into a pipe, with the options that show the bytes: as cat -n.
"$P" cat -n --listen unix:"$d/sock" 2>err | cat >got & pid=$!
send unix:"$d/sock" f || fail $LINENO "send"
wait $pid; rc=$?; pid=
rc_is $LINENO 0
cat -n f | cmp -s - got || fail $LINENO "cat -n --listen: wrong bytes"
[ ! -e "$d/sock" ] || fail $LINENO "the unix socket is left behind"
# ":PORT" listens on every IPv4 address; --length takes the first bytes.
p=$(port)
"$P" cat --length 1000 --listen :$p >got 2>err & pid=$!
head -c 3000 f >small
send 127.0.0.1:$p small || fail $LINENO "send"
wait $pid; rc=$?; pid=
rc_is $LINENO 0
head -c 1000 f | cmp -s - got || fail $LINENO "--length: wrong bytes"

# Errors: FILEs with --listen, a malformed address (usage, exit 1); an
# address in use (exit 1, said).
"$P" cat --listen 127.0.0.1:1 f >got 2>err; rc=$?
rc_is $LINENO 1; [ ! -s got ] || fail $LINENO "output written"
is $LINENO "psplice: --listen takes no FILE" "$(head -1 err)"
"$P" cat --listen nocolon >got 2>err; rc=$?
rc_is $LINENO 1
grep -q "^Try 'psplice cat --help'" err || fail $LINENO "$(cat err)"
: >busy
"$P" cat --listen unix:"$d/busy" >got 2>err; rc=$?
rc_is $LINENO 1
err_is $LINENO "psplice: cannot listen on 'unix:$d/busy': Address already in use"
[ -f busy ] || fail $LINENO "a file in the way was removed"
exit 0
