#!/bin/sh
# psplice relay: who may connect. --max-conns-per-source: with
# --max-conns=4, one client (127.0.0.2) holding every slot kept any other
# (127.0.0.3) out. Now it holds 3 at most: its 4th is refused at once, reset,
# its bytes never reaching TARGET (the target sees no connection), counted
# in --metrics and said once; 127.0.0.3 is served, and 127.0.0.2's slot
# comes back when one of its connections closes; 300 sources at once. On an
# IPv6 listener IPv4 clients come as ::ffff:a.b.c.d and are still one source
# each; IPv6 is counted per /64. --allow and --deny (a --deny entry wins)
# from several 127.x sources and ::1, per --config line, and on a unix
# listener by the uid and groups of clients of other users (setpriv).
# --proxy-from: an untrusted sender's header is refused unread; a trusted
# one's names the client judged, whatever way it writes it. Every wait is
# bounded.
[ -z "${BASH_VERSION:-}" ] && command -v bash >/dev/null && exec bash "$0" "$@"
name=t_cli_relay_gate; . "$(dirname "$0")/cli-lib.sh"
command -v python3 >/dev/null 2>&1 || { echo "$name: SKIP python3 missing"; exit 77; }
pids=
cli_cleanup() { for p in $pids; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; }

cat >g.py <<'EOF'
import asyncio, errno, os, re, socket, sys, time, urllib.request, relay_peers

# A connection to a port of 127.0.0.1 (of ::1 from an IPv6 source) from
# src, or to "unix:PATH" (src "-").
def conn(port, src):
    if str(port).startswith("unix:"):
        c = socket.socket(socket.AF_UNIX)
        c.settimeout(10)
        c.connect(port[5:])
        return c
    fam = socket.AF_INET6 if ":" in src else socket.AF_INET
    c = socket.socket(fam)
    c.settimeout(10)
    c.bind((src, 0))
    c.connect(("::1" if fam == socket.AF_INET6 else "127.0.0.1", int(port)))
    return c

# A connection that is relayed: its bytes come back from the echo target.
def served(port, src, hdr=b""):
    c = conn(port, src)
    c.sendall(hdr + b"ping")
    got = b""
    while len(got) < 4:
        b = c.recv(4)
        if not b:
            sys.exit("%s: closed before the echo came back" % src)
        got += b
    return c

# A connection the relay refuses: its bytes sent, then nothing comes back
# but the end or a reset, within 5 s.
def refused(port, src, hdr=b""):
    # The reset may come as soon as the connect, or after the bytes.
    try:
        c = conn(port, src)
        c.settimeout(5)
        c.sendall(hdr + b"secret")
        got = c.recv(100)
        c.close()
    except (ConnectionResetError, BrokenPipeError):
        got = b""
    except socket.timeout:
        sys.exit("%s: neither served nor refused in 5 s" % src)
    if got:
        sys.exit("%s: refused, yet %r came back" % (src, got))

def metric(mport, name):
    text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % mport, timeout=10).read().decode()
    m = re.search("^psplice_relay_" + re.escape(name) + r" (\d+)$", text, re.M)
    if not m:
        sys.exit("no metric %s in:\n%s" % (name, text))
    return int(m.group(1))

def until(mport, name, want):
    for _ in range(100):
        if metric(mport, name) == want:
            return
        time.sleep(0.1)
    sys.exit("%s is %d, want %d" % (name, metric(mport, name), want))

def per_source(port, mport):
    held = [served(port, "127.0.0.2") for _ in range(3)]
    refused(port, "127.0.0.2")
    other = served(port, "127.0.0.3")
    until(mport, 'refused_total{reason="per_source"}', 1)
    held.pop().close()
    until(mport, "connections_open", 3)
    held.append(served(port, "127.0.0.2"))
    until(mport, 'refused_total{reason="per_source"}', 1)
    other.close()

# A PROXY header naming client (version 1; "LOCAL": version 2's LOCAL).
def header(client):
    if client == "LOCAL":
        return b"\r\n\r\n\x00\r\nQUIT\n\x20\x00\x00\x00"
    fam = "TCP6 %s ::1" if ":" in client else "TCP4 %s 127.0.0.1"
    return ("PROXY " + fam + " 4321 80\r\n").replace("%s", client).encode()

# Each case SRC[>CLIENT]=served, =held (served, kept open to the end) or
# =refused, in turn; >CLIENT: a PROXY header naming CLIENT first.
def check(where, *cases):
    held = []
    for case in cases:
        src, want = case.split("=")
        src, _, client = src.partition(">")
        hdr = header(client) if client else b""
        if want == "refused":
            refused(where, src, hdr)
        else:
            c = served(where, src, hdr)
            held.append(c) if want == "held" else c.close()

# n sources (127.0.1.1 on) each holding its one slot: the count table
# grows past its first size; every other one closed, its slot comes back,
# the others stay full (an entry moved back as another leaves is found).
def many(port, n):
    srcs = ["127.0.%d.%d" % (1 + i // 200, 1 + i % 200) for i in range(n)]
    held = [served(port, s) for s in srcs]
    for s in srcs[::7]:
        refused(port, s)
    for c in held[::2]:
        c.close()
    time.sleep(0.5)
    for i, s in enumerate(srcs):
        if i % 2:
            refused(port, s) if i % 5 == 1 else None
        else:
            for _ in range(50):
                try:
                    held[i] = served(port, s)
                    break
                except (SystemExit, OSError):
                    time.sleep(0.1)
            else:
                sys.exit("%s: its slot did not come back" % s)

what = sys.argv[1]
if what == "echo":
    asyncio.run(relay_peers.echo("tport", seen="seen", secs=110))
elif what == "per_source":
    per_source(int(sys.argv[2]), int(sys.argv[3]))
elif what == "many":
    many(int(sys.argv[2]), int(sys.argv[3]))
elif what == "check":
    check(*sys.argv[2:])
EOF
g() { timeout 60 python3 g.py "$@"; }
timeout 120 python3 g.py echo &
pids="$pids $!"
wait_for tport . || fail $LINENO "the echo target did not start"
tport=$(cat tport)
# start_relay LOG ARGS...: the relay, its port in $rport, its metrics' in $mport
start_relay() {
	log=$1; shift
	: >"$log"  # no earlier relay's lines for wait_for to find
	"$P" relay -v -j 2 "$@" 2>"$log" &
	rpid=$!; pids="$pids $rpid"
	wait_for "$log" "listening on" || fail $LINENO "the relay did not start: $(cat "$log")"
	rport=$(sed -n 's/.*listening on [^,]*:\([0-9]*\),.*/\1/p' "$log")
	mport=$(sed -n 's/.*metrics on http:.*:\([0-9]*\)\/metrics/\1/p' "$log")
}
stop_relay() { kill "$rpid"; wait "$rpid"; }
seen() { grep -c . seen 2>/dev/null || echo 0; }

# One source cannot take every slot.
start_relay r.log --max-conns=4 --max-conns-per-source=3 --metrics=127.0.0.1:0 \
	127.0.0.1:0 127.0.0.1:$tport
g per_source $rport $mport || fail $LINENO "$(cat r.log)"
# 3 held, 127.0.0.3, the slot come back: the refused one never reached TARGET.
is $LINENO 5 "$(seen)"
is $LINENO 1 "$(grep -c -E '^psplice: relay: refused 127\.0\.0\.2:[0-9]+: over --max-conns-per-source$' r.log)"
stop_relay

# Many sources at once, and half of them leaving.
start_relay m.log --max-conns-per-source=1 127.0.0.1:0 127.0.0.1:$tport
g many $rport 300 || fail $LINENO "$(tail -5 m.log)"
stop_relay

# IPv4 clients of an IPv6 listener come as ::ffff:a.b.c.d: still one
# source each, not one IPv6 /64 for all of them. IPv6 is counted by /64.
v6=0
python3 -c 'import socket; s = socket.socket(socket.AF_INET6); s.bind(("::1", 0))' 2>/dev/null && v6=1
if [ $v6 = 1 ]; then
	start_relay d.log --max-conns-per-source=1 '[::ffff:127.0.0.1]:0' 127.0.0.1:$tport
	g check $rport 127.0.0.2=held 127.0.0.3=held 127.0.0.2=refused || fail $LINENO "$(cat d.log)"
	stop_relay
	start_relay d6.log --max-conns-per-source=1 '[::1]:0' 127.0.0.1:$tport
	g check $rport ::1=held ::1=refused || fail $LINENO "$(cat d6.log)"
	stop_relay
else
	skip "no IPv6 on this machine: IPv4-mapped and IPv6 clients"
fi

# --allow and --deny: a --deny entry refuses whatever --allow says; with
# --allow, a client must match one of its entries. The refused never reach
# TARGET; the first refusal is said, the next one within the second only
# counted, and said as the relay ends.
: >seen
start_relay a.log --allow=127.0.0.0/30,::1 --deny=127.0.0.2 --metrics=127.0.0.1:0 \
	127.0.0.1:0 127.0.0.1:$tport
g check $rport 127.0.0.1=served 127.0.0.2=refused 127.0.0.3=served 127.0.0.5=refused ||
	fail $LINENO "$(cat a.log)"
is $LINENO 2 "$(seen)"
text=$(python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1]).read().decode())' "http://127.0.0.1:$mport/metrics")
for want in 'denied"} 1' 'not_allowed"} 1' 'per_source"} 0' 'proxy_from"} 0'; do
	echo "$text" | grep -q -F "psplice_relay_refused_total{reason=\"$want" ||
		fail $LINENO "no refused_total $want in: $(echo "$text" | grep refused)"
done
stop_relay
grep -q -E '^psplice: relay: refused 127\.0\.0\.2:[0-9]+: matches --deny$' a.log ||
	fail $LINENO "$(cat a.log)"
# Said within the second (on a loaded machine, a second line instead).
grep -q -E '^psplice: relay: (1 more refused in the last [0-9]+ s|refused 127\.0\.0\.5:[0-9]+: not in --allow)$' a.log ||
	fail $LINENO "$(cat a.log)"
is $LINENO 1 "$(grep -c 'matches --deny' a.log)"

# IPv6: ::/0 is every IPv6 client, not the IPv4 ones an IPv6 listener
# sees as ::ffff:a.b.c.d, which IPv4 entries judge.
if [ $v6 = 1 ]; then
	start_relay s.log --deny=::/0,127.0.0.3 '[::ffff:127.0.0.1]:0' 127.0.0.1:$tport
	g check $rport 127.0.0.2=served 127.0.0.3=refused || fail $LINENO "$(cat s.log)"
	stop_relay
	start_relay s6.log --deny=::/0,127.0.0.3 '[::1]:0' 127.0.0.1:$tport
	g check $rport ::1=refused || fail $LINENO "$(cat s6.log)"
	stop_relay
fi

# Under --config, a line's --deny is its own; a line without one has the
# command line's.
p1=$(port); p2=$(port)
printf '%s\n' "127.0.0.1:$p1 127.0.0.1:$tport --deny=127.0.0.2" "127.0.0.1:$p2 127.0.0.1:$tport" >c.conf
"$P" relay -v -j 2 --deny=127.0.0.3 --config=c.conf 2>c.log &
rpid=$!; pids="$pids $rpid"
wait_count c.log "listening on" 2 || fail $LINENO "the relay did not start: $(cat c.log)"
g check $p1 127.0.0.2=refused 127.0.0.3=served || fail $LINENO "$(cat c.log)"
g check $p2 127.0.0.2=served 127.0.0.3=refused || fail $LINENO "$(cat c.log)"
stop_relay
grep -q -E "^psplice: relay: 127\.0\.0\.1:$p1: refused 127\.0\.0\.2:[0-9]+: matches --deny$" c.log ||
	fail $LINENO "$(cat c.log)"

# A unix listener judges its clients by uid and gid (SO_PEERCRED), a
# supplementary group included; --deny wins there too.
if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null 2>&1; then
	skip "not root, or no setpriv: clients of other users on a unix listener"
else
	chmod 755 "$d"
	start_relay u.log --unix-mode=666 --allow=uid:0,gid:4242 --deny=uid:65533 \
		unix:"$d/u.sock" 127.0.0.1:$tport
	# as UID GID GROUPS WANT: a client of that user, served or refused
	as() {
		setpriv --reuid=$1 --regid=$2 $3 timeout 60 python3 g.py check unix:"$d/u.sock" -=$4
	}
	g check unix:"$d/u.sock" -=served || fail $LINENO "$(cat u.log)"
	as 65534 65534 --clear-groups refused || fail $LINENO "$(cat u.log)"
	as 65534 65534 --groups=4242 served || fail $LINENO "$(cat u.log)"
	as 65533 4242 --clear-groups refused || fail $LINENO "$(cat u.log)"
	stop_relay
	grep -q -E '^psplice: relay: refused uid 65534 \(pid [0-9]+\): not in --allow$' u.log ||
		fail $LINENO "$(cat u.log)"
fi

# --accept-proxy with --proxy-from: a header from a sender not named is not
# believed, the connection refused before it is read; from one named, the
# client it names is what --deny and --max-conns-per-source judge (the
# sender's own address, for a LOCAL header), an IPv4 one in IPv6's words
# too. None refused reaches TARGET.
: >seen
start_relay p.log --accept-proxy --proxy-from=127.0.0.1 --deny=192.0.2.66 \
	--max-conns-per-source=1 --metrics=127.0.0.1:0 127.0.0.1:0 127.0.0.1:$tport
g check $rport '127.0.0.2>192.0.2.1=refused' '127.0.0.2=refused' \
	'127.0.0.1>192.0.2.66=refused' '127.0.0.1>::ffff:192.0.2.66=refused' \
	'127.0.0.1>192.0.2.1=held' '127.0.0.1>192.0.2.1=refused' '127.0.0.1>192.0.2.2=held' \
	'127.0.0.1>LOCAL=held' '127.0.0.1>2001:db8::1=held' '127.0.0.1>2001:db8::2=refused' \
	'127.0.0.1>2001:db8:0:1::1=served' || fail $LINENO "$(cat p.log)"
is $LINENO 5 "$(seen)"
text=$(python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1]).read().decode())' "http://127.0.0.1:$mport/metrics")
for want in 'denied"} 2' 'not_allowed"} 0' 'per_source"} 2' 'proxy_from"} 2'; do
	echo "$text" | grep -q -F "psplice_relay_refused_total{reason=\"$want" ||
		fail $LINENO "no refused_total $want in: $(echo "$text" | grep refused)"
done
stop_relay
grep -q -E '^psplice: relay: refused 127\.0\.0\.2:[0-9]+: not in --proxy-from: no PROXY header believed from it$' p.log ||
	fail $LINENO "$(cat p.log)"

# Usage errors: each names what is wrong.
usage() { # LINE MESSAGE ARGS...
	l=$1 m=$2; shift 2
	"$P" relay "$@" 2>err; rc=$?
	rc_is $l 1
	is $l "psplice: $m" "$(head -1 err)"
}
usage $LINENO "invalid --allow '10.1.2.3/8': 10.1.2.3/8: bits set past the prefix length (a network's first address, or an address alone)" \
	--allow=10.1.2.3/8 127.0.0.1:0 127.0.0.1:1
usage $LINENO "invalid --deny '10.0.0.0/33': 10.0.0.0/33: the prefix length is not 0 to 32" \
	--deny=10.0.0.0/33 127.0.0.1:0 127.0.0.1:1
usage $LINENO "invalid --deny '::1,,10.0.0.1': : an empty entry" \
	--deny=::1,,10.0.0.1 127.0.0.1:0 127.0.0.1:1
usage $LINENO "invalid --allow 'uid:-1': uid:-1: not a numeric id (id -u NAME, getent group NAME give one)" \
	--allow=uid:-1 unix:x.sock 127.0.0.1:1
usage $LINENO "invalid --allow 'example.com': example.com: not an address (want IPv4 or IPv6, e.g. 10.0.0.0/8 or 2001:db8::/32)" \
	--allow=example.com 127.0.0.1:0 127.0.0.1:1
usage $LINENO "uid: and gid: judge the clients of a unix LISTEN, and '127.0.0.1:0' is not one" \
	--allow=uid:0 127.0.0.1:0 127.0.0.1:1
usage $LINENO "the clients of a unix LISTEN have no IP address: judge them by uid: or gid:" \
	--deny=10.0.0.0/8 unix:x.sock 127.0.0.1:1
usage $LINENO "--proxy-from applies with --accept-proxy" \
	--proxy-from=127.0.0.1 127.0.0.1:0 127.0.0.1:1
usage $LINENO "--allow, --deny and --max-conns-per-source with --accept-proxy judge the client a PROXY header names: give --proxy-from, the senders whose headers are believed" \
	--accept-proxy --max-conns-per-source=2 127.0.0.1:0 127.0.0.1:1
echo "$name: ok"
