#!/bin/sh
# psplice cat --to: files into a TCP or Unix stream socket, and the errors of
# an address that is malformed or refuses.
dir=$1
bin=${PSPLICE_BIN:?}
command -v python3 >/dev/null || { echo "SKIP: python3 is needed for the receiving end"; exit 77; }
t=$(mktemp -d "$dir/cli-catto-XXXXXX") || exit 1
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$t"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

head -c 5000001 /dev/urandom > "$t/f" || exit 1
# A one-connection receiver: saves what arrives until EOF; prints its address.
receive() { # family address output
	python3 - "$1" "$2" "$3" "$t/addr" <<'PY' &
import os, socket, sys
fam, where, out, addrfile = sys.argv[1:5]
if fam == "unix":
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.bind(where)
    name = "unix:" + where
else:
    s = socket.socket(socket.AF_INET6 if fam == "6" else socket.AF_INET)
    s.bind((where, 0))
    port = s.getsockname()[1]
    name = ("[%s]:%d" if fam == "6" else "%s:%d") % (where, port)
s.listen(1); s.settimeout(30)
open(addrfile + ".tmp", "w").write(name); os.rename(addrfile + ".tmp", addrfile)
c, _ = s.accept(); c.settimeout(30)
with open(out, "wb") as f:
    while True:
        b = c.recv(1 << 16)
        if not b:
            break
        f.write(b)
PY
	pid=$!
	i=0
	while [ ! -s "$t/addr" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	[ -s "$t/addr" ] || fail "receiver did not start"
}
send_and_check() { # family where, then psplice cat arguments
	fam=$1 where=$2; shift 2
	rm -f "$t/addr" "$t/got"
	receive "$fam" "$where" "$t/got"
	addr=$(cat "$t/addr")
	"$bin" cat --verbose --to "$addr" "$@" 2> "$t/err" || fail "cat --to $addr: exit $? ($(cat "$t/err"))"
	wait $pid; pid=
	grep -qF -e "-> '$addr': " "$t/err" && grep -q ' by ' "$t/err" || fail "-v: $(cat "$t/err")"
}
send_and_check 4 127.0.0.1 "$t/f"
cmp -s "$t/got" "$t/f" || fail "tcp: wrong bytes"
send_and_check unix "$t/sock" "$t/f" - < "$t/f"
cat "$t/f" "$t/f" | cmp -s "$t/got" - || fail "unix: wrong bytes"
rm -f "$t/sock"
if python3 -c 'import socket; socket.socket(socket.AF_INET6).bind(("::1", 0))' 2>/dev/null; then
	send_and_check 6 ::1 --offset 100 --length 1000 "$t/f"
	tail -c +101 "$t/f" | head -c 1000 | cmp -s "$t/got" - || fail "ipv6 range: wrong bytes"
fi
# A peer that takes a little and resets (or closes): an error, exit 1, not
# death by SIGPIPE (141) with nothing said.
for how in reset close; do
	rm -f "$t/addr"
	python3 - "$t/addr" "$how" <<'PY' &
import os, socket, struct, sys
addrfile, how = sys.argv[1:3]
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1); s.settimeout(30)
open(addrfile + ".tmp", "w").write("127.0.0.1:%d" % s.getsockname()[1])
os.rename(addrfile + ".tmp", addrfile)
c, _ = s.accept(); c.settimeout(30)
c.recv(1000)
if how == "reset":
    c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
c.close()
PY
	pid=$!
	i=0
	while [ ! -s "$t/addr" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	addr=$(cat "$t/addr")
	"$bin" cat --to "$addr" "$t/f" "$t/f" "$t/f" 2> "$t/err"; rc=$?
	wait $pid; pid=
	[ $rc -eq 1 ] || fail "peer $how: exit $rc, want 1 ($(cat "$t/err"))"
	[ "$(cat "$t/err")" = "psplice: error writing '$addr': the peer closed or reset the connection" ] ||
		fail "peer $how: '$(cat "$t/err")'"
done

# Refused, malformed: messages and exit 1, nothing written anywhere.
out=$("$bin" cat --to "unix:$t/none" "$t/f" 2>&1) && fail "refused address accepted"
[ "$out" = "psplice: cannot connect to 'unix:$t/none': No such file or directory" ] ||
	fail "refused: '$out'"
for bad in nocolon 127.0.0.1: '[::1' unix:; do
	"$bin" cat --to "$bad" "$t/f" > /dev/null 2>&1 && fail "address '$bad' accepted"
	out=$("$bin" cat --to "$bad" "$t/f" 2>&1 >/dev/null)
	echo "$out" | grep -q "^Try 'psplice cat --help'" || fail "'$bad' is no usage error: '$out'"
done
# A name that does not resolve is well formed: an error of the run (the
# resolver's word), exit 1, not a usage error (issue 40); nothing read.
out=$("$bin" cat --to nosuchhost.invalid:9001 "$t/f" 2>&1 >/dev/null); rc=$?
[ $rc -eq 1 ] || fail "unresolved name: exit $rc"
case $out in
"psplice: cannot connect to 'nosuchhost.invalid:9001': "*) ;;
*) fail "unresolved name: '$out'" ;;
esac
echo "$out" | grep -q -e "--help" -e "invalid address" && fail "unresolved name: '$out'"
[ "$(echo "$out" | wc -l)" = 1 ] || fail "unresolved name: '$out'"
# tee --to takes it as an output it could not open: the others get the bytes.
out=$(echo hi | "$bin" tee --to nosuchhost.invalid:9001 2>&1 >"$t/teeout"); rc=$?
[ $rc -eq 1 ] || fail "tee, unresolved name: exit $rc"
[ "$(cat "$t/teeout")" = hi ] || fail "tee, unresolved name: output '$(cat "$t/teeout")'"
case $out in
"psplice: cannot connect to 'nosuchhost.invalid:9001': "*) ;;
*) fail "tee, unresolved name: '$out'" ;;
esac
exit 0
