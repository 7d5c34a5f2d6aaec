#!/bin/sh
# psplice relay --config=FILE: one listener a line (LISTEN TARGET...
# [OPTION]...), comments and blank lines skipped. A file of three lines,
# 127.0.0.1:PORT, [::1]:PORT and unix:PATH, each to a target of its own
# that names itself, is served by one process holding the three listening
# sockets (/proc); the -j workers of the command line serve every line, a
# line's --send-proxy reaches its target alone (the others get no PROXY
# header), a line's --unix-mode sets its socket file's mode, and options on
# the command line are each line's default, which a line overrides, and
# each JSON record names its line's LISTEN. SIGUSR1 gives a stats line per listener, --metrics a series per
# listener (listener="LISTEN"), each with its connections counted;
# SIGTERM drains them all and removes the unix socket file. Each error in
# a file (a bad address, no TARGET, an unknown option or a bad value, a
# process-wide option on a line, a LISTEN twice, LISTEN '-') is named
# FILE:N: with its line, exits 1 and starts nothing: no bind or listen
# (strace), no socket file, a good line's busy port untouched; so is a
# file of comments alone, one that does not exist, and operands with
# --config. --check reads the file and starts nothing: 0 for a good file
# (the example the package ships too), 1 and the FILE:N: message for a
# bad one. SIGUSR2 rereads the file: under a storm of 600 connections on a
# line kept, each echoed and checked, none fails; the new relay serves
# the kept line on the same socket, the line added on its own, and once
# the old relay has ended a line removed refuses (a unix one's file gone).
# A bad file on reload: its FILE:N: error said, the reload failed, the old
# relay serves on, as it does for --replace=PID with a bad file.
# --replace=PID with --config takes the listener a line names (no
# connection of a storm refused) and binds the new one; PID drains and
# exits, its listener no line names gone with it. A line that cannot
# listen stops the relay, the socket files made removed; a line with port
# 0 keeps its port across a reload; a --replace whose file drops a unix
# listener removes its file. Loopback only; every wait and every peer is
# bounded.
[ -z "${BASH_VERSION:-}" ] && command -v bash >/dev/null && exec bash "$0" "$@"
# The echo server, the storm's connections and their checks are
# tests/relay_peers.py's; the example config is the source tree's.
top=$(cd "$(dirname "$0")/.." && pwd)
name=t_cli_relay_config; . "$(dirname "$0")/cli-lib.sh"
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 missing"; exit 77; }
pids=
# The relays a reload started are named in the logs, also when the test
# fails before it has read them.
cli_cleanup() {
	for p in $pids $(sed -n 's/.*relay: process \([0-9]*\) serves in place.*/\1/p' \
			 "$d"/*.log 2>/dev/null); do
		kill "$p" 2>/dev/null
	done
}

cat >peers.py <<'EOF'
import asyncio, os, re, signal, socket, struct, sys, time
from relay_peers import echo, gated, handover, one, ready, recv_all, serve_threads

SIG2 = b"\r\n\r\n\x00\r\nQUIT\n"

# A target named NAME on 127.0.0.1: each connection read to its end of
# stream, then "NAME KIND\n" and the bytes after the PROXY header that
# began them, KIND the header: v1:TCP4, v1:TCP6, v1:UNKNOWN, v2 or none.
# It serves 170 s.
def marker(name, portfile):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(128)
    s.settimeout(1)
    ready(portfile, str(s.getsockname()[1]))
    def serve(c):
        c.settimeout(30)
        try:
            got = recv_all(c)
            kind = "none"
            if got.startswith(b"PROXY "):
                line, _, got = got.partition(b"\r\n")
                kind = "v1:" + line.split()[1].decode()
            elif got.startswith(SIG2) and len(got) >= 16:
                got = got[16 + struct.unpack(">H", got[14:16])[0]:]
                kind = "v2"
            c.sendall(("%s %s\n" % (name, kind)).encode() + got)
        except OSError:
            pass
        c.close()
    serve_threads(s, serve, 170)

# "127.0.0.1:PORT", "[::1]:PORT" or a unix socket's path.
def connect(where, timeout=20):
    if where.startswith("/"):
        c = socket.socket(socket.AF_UNIX)
        c.settimeout(timeout)
        c.connect(where)
    elif where.startswith("["):
        host, port = where[1:].split("]:")
        c = socket.socket(socket.AF_INET6)
        c.settimeout(timeout)
        c.connect((host, int(port)))
    else:
        host, port = where.rsplit(":", 1)
        c = socket.create_connection((host, int(port)), timeout=timeout)
    return c

# N connections one after the other, each with bytes of its own: prints
# "NAME KIND" of the target that answered each, or "FAIL why" and exits 1.
def ask(where, n):
    for i in range(int(n)):
        data = os.urandom(1000 + 3000 * i)
        try:
            c = connect(where)
            c.sendall(data)
            c.shutdown(socket.SHUT_WR)
            got = recv_all(c)
            c.close()
        except OSError as e:
            print("FAIL connection %d to %s: %s" % (i, where, e))
            sys.exit(1)
        head, _, back = got.partition(b"\n")
        if back != data:
            print("FAIL connection %d to %s: %d bytes back of %d (%r)" %
                  (i, where, len(back), len(data), head[:40]))
            sys.exit(1)
        print(head.decode())

# What a connect meets: "refused", "gone" (no socket file), "connected".
def refused(where):
    try:
        c = connect(where, 5)
        c.close()
        print("connected")
    except ConnectionRefusedError:
        print("refused")
    except FileNotFoundError:
        print("gone")
    except OSError as e:
        print("error: %s" % e)

# For each address, the inode of the listening socket there that process
# PID holds, "-" when it holds none (/proc/net/{tcp,tcp6,unix}).
def holds(pid, *addrs):
    mine = set()
    for fd in os.listdir("/proc/%s/fd" % pid):
        try:
            l = os.readlink("/proc/%s/fd/%s" % (pid, fd))
        except OSError:
            continue
        m = re.match(r"socket:\[(\d+)\]$", l)
        if m:
            mine.add(m.group(1))
    out = []
    for a in addrs:
        found = set()
        if a.startswith("/"):
            for l in open("/proc/net/unix").read().splitlines()[1:]:
                f = l.split()
                if len(f) >= 8 and f[7] == a and int(f[3], 16) & 0x10000:
                    found.add(f[6])
        else:
            if a.startswith("["):
                table, local = "tcp6", "00000000000000000000000001000000"
            else:
                table, local = "tcp", "0100007F"
            port = int(a.rsplit(":", 1)[1])
            for l in open("/proc/net/" + table).read().splitlines()[1:]:
                f = l.split()
                if f[1] == "%s:%04X" % (local, port) and f[3] == "0A":
                    found.add(f[9])
        held = sorted(found & mine)
        out.append(",".join(held) if held else "-")
    print(" ".join(out))

def free6():
    s = socket.socket(socket.AF_INET6)
    s.bind(("::1", 0))
    print(s.getsockname()[1])

# A port held listening (no SO_REUSEADDR, no SO_REUSEPORT) for 150 s.
def busy(portfile):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    ready(portfile, str(s.getsockname()[1]))
    time.sleep(150)

def scrape(port):
    import urllib.request
    with urllib.request.urlopen("http://127.0.0.1:%s/metrics" % port, timeout=10) as r:
        sys.stdout.write(r.read().decode())

def served_by(log):
    try:
        m = re.search(r"relay: process (\d+) serves in place of this one", open(log).read())
    except OSError:
        return None
    return int(m.group(1)) if m else None

# TOTAL connections of SIZE bytes, 64 at a time. Once 3/10 have ended the
# relay PID gets SIGUSR2; those from TOTAL / 2 on wait until its log names
# the new relay.
async def reload_storm(where, total, size, pid, log):
    errors = []
    state = dict(done=0, gate=total // 2)
    async def reload():
        while state["done"] < total * 3 // 10:
            await asyncio.sleep(0.005)
        os.kill(pid, signal.SIGUSR2)
        for _ in range(2000):
            if served_by(log):
                break
            await asyncio.sleep(0.01)
        else:
            errors.append("no new relay within 20 s")
        state["at"] = state["done"]
        state["gate"] = 10**9
    r = asyncio.ensure_future(reload())
    bad = await gated(where, total, size, state, errors)
    await r
    print("%d connections, %d failed; reload done after %d" %
          (total, len(errors) + len(bad), state["at"]))
    sys.exit(1 if errors or bad else 0)

m, a = sys.argv[1], sys.argv[2:]
if m == "echo":
    asyncio.run(echo(a[0], a[1], secs=170))
elif m == "marker":
    marker(*a)
elif m == "ask":
    ask(*a)
elif m == "refused":
    refused(*a)
elif m == "holds":
    holds(*a)
elif m == "free6":
    free6()
elif m == "busy":
    busy(*a)
elif m == "scrape":
    scrape(*a)
elif m == "reload_storm":
    asyncio.run(reload_storm(a[0], int(a[1]), int(a[2]), int(a[3]), a[4]))
elif m == "handover":
    asyncio.run(handover(a[0], int(a[1]), int(a[2]), int(a[3])))
EOF
peer() { timeout 60 python3 peers.py "$@"; }
# ask LINE WHERE N WANT: N connections to WHERE, each answered "WANT"
ask() {
	peer ask "$2" "$3" >ask.out || fail "$1" "$(tail -1 ask.out)"
	is "$1" "$(yes "$4" | head -n "$3" | tr '\n' '|')" "$(tr '\n' '|' <ask.out)"
}
# ere TEXT: TEXT as an extended regular expression matching it alone
ere() { printf '%s' "$1" | sed 's/[][\.*^$+?(){}|]/\\&/g'; }
sanitizer_free() { # LINE LOG...
	l=$1; shift
	! grep -q -E "ThreadSanitizer|AddressSanitizer|LeakSanitizer|runtime error" "$@" ||
		fail "$l" "sanitizer report: $(grep -h -A20 -E 'Sanitizer|runtime error' "$@" | head -40)"
}

# The targets: markers A to F, and an echo server for the storms.
for t in A B C D E F; do
	python3 peers.py marker $t port.$t &
	pids="$pids $!"
done
python3 peers.py echo port.echo seen.echo &
pids="$pids $!"
for t in A B C D E F echo; do
	wait_for port.$t . || fail $LINENO "target $t did not start"
done
mA=127.0.0.1:$(cat port.A) mB=127.0.0.1:$(cat port.B) mC=127.0.0.1:$(cat port.C)
mD=127.0.0.1:$(cat port.D) mE=127.0.0.1:$(cat port.E) mF=127.0.0.1:$(cat port.F)
echo=127.0.0.1:$(cat port.echo)

# The IPv6 listener, on ::1 when there is one.
if p6=$(python3 peers.py free6 2>/dev/null); then
	l6="[::1]:$p6" want6="B v1:TCP6"
else
	skip "an IPv6 listener: no ::1 here (an IPv4 one in its place)"
	l6="127.0.0.1:$(port)" want6="B v1:TCP4"
fi
p4=$(port)
# Comments, blank lines, tabs, options before or between the operands,
# --opt=value and --opt value.
cat >one.conf <<EOF
# psplice relay --config: three listeners, one process

   # an indented comment, then a blank line with a tab
	
127.0.0.1:$p4 $mA   # IPv4, no PROXY header
$l6 --send-proxy $mB
EOF
printf 'unix:%s/u.sock\t%s --connect-timeout 5 --unix-mode=660 #unix\n' "$d" "$mC" >>one.conf

# $(traced FILE) before a command: its bind and listen calls to FILE
# (LeakSanitizer, which cannot run under ptrace, left to an untraced run).
if command -v strace >/dev/null 2>&1; then
	traced() {
		echo "env ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
			"strace -f -qq -e trace=bind,listen -o $1"
	}
	no_bind() { # LINE TRACE
		! grep -q -E '^[0-9]+ +(bind|listen)\(' "$2" ||
			fail "$1" "a socket was bound: $(grep -E 'bind|listen' "$2" | head -3)"
	}
else
	skip "no strace: nothing bound is checked by its effects alone"
	traced() { :; }
	no_bind() { :; }
fi
# --check: the options and the file read, nothing started.
timeout 20 "$P" relay -v -j 2 --check --config=one.conf >out 2>err; rc=$?
rc_is $LINENO 0
timeout 20 $(traced check.trace) "$P" relay -v -j 2 --check --config=one.conf >/dev/null 2>err; rc=$?
rc_is $LINENO 0
no_bind $LINENO check.trace
[ -e u.sock ] && fail $LINENO "--check made the socket file"
grep -q "listening on" err out && fail $LINENO "--check started the relay: $(cat err)"
# A bad option of the command line, operands beside --config: refused.
timeout 20 "$P" relay --check --jobs=0 --config=one.conf 2>err; rc=$?
rc_is $LINENO 1
timeout 20 "$P" relay --check --config one.conf 127.0.0.1:$p4 $mA 2>err; rc=$?
rc_is $LINENO 1

# The three lines served by one process, -j 2 each.
"$P" relay -v -j 2 --metrics=127.0.0.1:0 --config one.conf 2>one.log &
r=$!; pids="$pids $r"
wait_count one.log "listening on" 3 ||
	fail $LINENO "want 3 listeners: $(cat one.log)"
for w in "127.0.0.1:$p4, forwarding to $mA" "$l6, forwarding to $mB" \
	"unix:$d/u.sock, forwarding to $mC"; do
	is $LINENO 1 "$(grep -c -F -x "psplice: relay: listening on $w, 2 workers" one.log)"
done
set -- $(peer holds $r 127.0.0.1:$p4 "$l6" "$d/u.sock")
[ $# -eq 3 ] && [ "$1" != - ] && [ "$2" != - ] && [ "$3" != - ] ||
	fail $LINENO "relay $r does not hold the three listeners: '$*' $(ss -lnp 2>&1 | grep -F -e ":$p4" -e "${l6##*:}" -e u.sock)"
is $LINENO "" "$(cat /proc/$r/task/*/children 2>/dev/null | tr -d ' \n')"
# The two workers serve the three lines: with the main thread, the log's
# writer and --metrics's, five threads, six under TSan, which has one of
# its own (a set of workers a line made nine).
n=$(ls /proc/$r/task | wc -l)
[ "$n" -ge 5 ] && [ "$n" -le 6 ] || fail $LINENO "relay $r has $n threads, want 5"
is $LINENO 660 "$(stat -c %a u.sock)"
ask $LINENO 127.0.0.1:$p4 2 "A none"
ask $LINENO "$l6" 3 "$want6"
ask $LINENO "$d/u.sock" 4 "C none"
# A stats line each, after its LISTEN.
kill -USR1 $r
wait_count one.log "relay: [^ ]+: connections [0-9]+ open" 3 || fail $LINENO "$(cat one.log)"
for w in "127.0.0.1:$p4 2" "$l6 3" "unix:$d/u.sock 4"; do
	is $LINENO 1 "$(grep -c -E "relay: $(ere "${w% *}"): connections [0-9]+ open, ${w##* } total;" one.log)"
done
# The metrics, a series per listener.
mport=$(sed -n 's|.*metrics on http://127\.0\.0\.1:\([0-9]*\)/metrics$|\1|p' one.log)
[ -n "$mport" ] || fail $LINENO "no metrics line: $(cat one.log)"
peer scrape $mport >scrape || fail $LINENO "scrape failed"
for w in "127.0.0.1:$p4 2" "$l6 3" "unix:$d/u.sock 4"; do
	is $LINENO "psplice_relay_connections_total{listener=\"${w% *}\"} ${w##* }" \
		"$(grep -F "psplice_relay_connections_total{listener=\"${w% *}\"}" scrape)"
done
is $LINENO 3 "$(grep -c '^psplice_relay_connections_total{' scrape)"
grep -q '^psplice_relay_connections_total ' scrape &&
	fail $LINENO "a connections_total with no listener: $(grep connections_total scrape)"
grep -q '^psplice_relay_draining 0$' scrape || fail $LINENO "$(grep draining scrape)"
grep -E '^psplice_relay_(target_|bytes_total|errors_total|connections_open)' scrape |
	grep -v 'listener="' >nolabel
grep -q . nolabel && fail $LINENO "series without a listener: $(head -3 nolabel)"
is $LINENO 3 "$(grep -c '^psplice_relay_target_up{' scrape)"
grep -F "target_connections_open{" scrape | grep -q -F "$mC" ||
	fail $LINENO "no target series for $mC: $(grep target_connections_open scrape)"
# SIGTERM drains all, the socket file removed.
kill -TERM $r
wait $r; rc=$?
rc_is $LINENO 0
[ -e u.sock ] && fail $LINENO "the socket file is left behind"
for a in 127.0.0.1:$p4 "$l6"; do
	is $LINENO refused "$(peer refused "$a")"
done
sanitizer_free $LINENO one.log

# The command line's options are each line's default; a line overrides.
q1=$(port) q2=$(port)
cat >def.conf <<EOF
127.0.0.1:$q1 $mA
--send-proxy 127.0.0.1:$q2 $mB
EOF
"$P" relay -v -j 1 --send-proxy-v2 --log-format=json --log=def.json --config=def.conf \
	2>def.log &
r=$!; pids="$pids $r"
wait_count def.log "listening on" 2 || fail $LINENO "$(cat def.log)"
is $LINENO 2 "$(grep -c -F ", 1 worker" def.log)"
ask $LINENO 127.0.0.1:$q1 1 "A v2"
ask $LINENO 127.0.0.1:$q2 1 "B v1:TCP4"
kill -TERM $r
wait $r; rc=$?
rc_is $LINENO 0
# Each JSON record names the line that took it; ids are the process's.
is $LINENO "1 127.0.0.1:$q1 $mA|2 127.0.0.1:$q2 $mB|" "$(python3 -c '
import json, sys
for l in open(sys.argv[1]):
    j = json.loads(l)
    print(j["id"], j["listener"], j["target"])' def.json | sort | tr '\n' '|')"

# Errors: FILE:N: named, exit 1, nothing started. Each bad file has good
# lines first: a TCP one on a port held busy here (a relay that bound it
# would say so, not the file's error) and a unix one (its file would be
# made).
python3 peers.py busy port.busy &
pids="$pids $!"
wait_for port.busy . || fail $LINENO "no busy port"
g=$(cat port.busy) x=$(port)
# bad FILE K WORDS...: the good lines, K comments more, then WORDS, on
# line K + 5
bad() {
	f=$1 k=$2; shift 2
	{
		echo "# good lines first"
		echo "127.0.0.1:$g $mA"
		echo
		printf 'unix:%s/good.sock\t%s   # a tab before the target\n' "$d" "$mB"
		i=0
		while [ $i -lt "$k" ]; do echo "  # comment $i"; i=$((i + 1)); done
		echo "$*"
	} >"$f"
}
# refuse LINE FILE WANT [exact]: the relay on FILE ends with 1 at once and
# nothing bound, its first line of stderr WANT, or beginning with it.
refuse() {
	timeout 20 $(traced "$2.trace") "$P" relay -v -j 2 --config="$2" 2>err; rc=$?
	rc_is "$1" 1
	no_bind "$1" "$2.trace"
	timeout 20 "$P" relay -v -j 2 --config="$2" 2>err; rc=$?
	rc_is "$1" 1
	first=$(head -1 err)
	case ${4:-prefix} in
	exact) [ "$first" = "$3" ] || fail "$1" "want '$3', got '$(cat err)'" ;;
	*) case $first in "$3"*) ;; *) fail "$1" "want '$3...', got '$(cat err)'" ;; esac ;;
	esac
	! grep -q -e "listening on" -e "Address already in use" err ||
		fail "$1" "something started: $(cat err)"
	[ -e good.sock ] && fail "$1" "the good unix line was bound"
	# --check says the same.
	timeout 20 "$P" relay --check --config="$2" 2>err; rc=$?
	rc_is "$1" 1
	case $(head -1 err) in "$3"*) ;; *) fail "$1" "--check: want '$3...', got '$(cat err)'" ;; esac
}
bad e1.conf 0 127.0.0.1:notaport $mA
refuse $LINENO e1.conf "psplice: e1.conf:5: invalid address '127.0.0.1:notaport'"
bad e2.conf 1 127.0.0.1:$x
refuse $LINENO e2.conf "psplice: e2.conf:6: missing TARGET operand" exact
bad e3.conf 2 127.0.0.1:$x $mA --bogus
refuse $LINENO e3.conf "psplice: e3.conf:7: unrecognized option '--bogus'" exact
bad e4.conf 0 127.0.0.1:$x $mA --jobs=4
refuse $LINENO e4.conf \
	"psplice: e4.conf:5: --jobs applies to the whole relay: give it on the command line" exact
bad e5.conf 3 -j 4 127.0.0.1:$x $mA
refuse $LINENO e5.conf "psplice: e5.conf:8: "
grep -q "applies to the whole relay" err || fail $LINENO "$(cat err)"
bad e6.conf 1 127.0.0.1:$x $mA --metrics 127.0.0.1:0
refuse $LINENO e6.conf \
	"psplice: e6.conf:6: --metrics applies to the whole relay: give it on the command line" exact
bad e7.conf 0 127.0.0.1:$x --drain-timeout=3 $mA
refuse $LINENO e7.conf \
	"psplice: e7.conf:5: --drain-timeout applies to the whole relay: give it on the command line" exact
bad e8.conf 4 127.0.0.1:$g $mB
refuse $LINENO e8.conf "psplice: e8.conf:9: LISTEN '127.0.0.1:$g' is also on line 2" exact
bad e9.conf 1 "unix:$d/good.sock $mA"
refuse $LINENO e9.conf "psplice: e9.conf:6: LISTEN 'unix:$d/good.sock' is also on line 4" exact
bad e10.conf 0 - $mA
refuse $LINENO e10.conf "psplice: e10.conf:5: "
bad e11.conf 2 127.0.0.1:$x $mA --balance=most
refuse $LINENO e11.conf "psplice: e11.conf:7: invalid --balance 'most'"
printf '# nothing but comments\n\n   # and blanks\n\t\n' >empty.conf
refuse $LINENO empty.conf \
	"psplice: empty.conf: no listeners (want lines of LISTEN TARGET... [OPTION]...)" exact
refuse $LINENO nofile.conf "psplice: nofile.conf: No such file or directory" exact
# A line that cannot listen (the busy port) stops the relay before it
# serves, and the socket file an earlier line made goes.
printf 'unix:%s/good.sock %s\n127.0.0.1:%s %s\n' "$d" "$mB" $g "$mA" >busy.conf
timeout 20 "$P" relay -j 1 --config=busy.conf 2>err; rc=$?
rc_is $LINENO 1
is $LINENO "psplice: busy.conf:2: cannot listen on '127.0.0.1:$g': Address already in use" \
	"$(head -1 err)"
[ -e good.sock ] && fail $LINENO "the socket file of line 1 is left"
# Operands with --config: a usage error, nothing started.
bad ok.conf 0 "# and nothing wrong"
timeout 20 $(traced ops.trace) "$P" relay -v --config=ok.conf 127.0.0.1:$x $mA 2>err; rc=$?
rc_is $LINENO 1
no_bind $LINENO ops.trace
timeout 20 "$P" relay -v --config=ok.conf 127.0.0.1:$x $mA 2>err; rc=$?
rc_is $LINENO 1
grep -q "^psplice: " err && ! grep -q "listening on" err || fail $LINENO "$(cat err)"
[ -e good.sock ] && fail $LINENO "the good unix line was bound"
# The good file checks good, though its port is busy: nothing is bound.
timeout 20 "$P" relay --check --config=ok.conf >out 2>err; rc=$?
rc_is $LINENO 0
# The example the package ships.
timeout 20 "$P" relay --check --config="$top/contrib/relay.conf" >out 2>err; rc=$?
rc_is $LINENO 0

# SIGUSR2 rereads the file: line A kept, B and U removed, C added, under
# a storm of connections on A; none fails.
pA=$(port) pB=$(port) pC=$(port) pE=$(port)
cat >r.conf <<EOF
127.0.0.1:$pA $echo   # the storm's
127.0.0.1:$pB $mB
unix:$d/r.sock $mD
EOF
"$P" relay -v -j 2 --config r.conf 2>>r.log &
r0=$!; pids="$pids $r0"
wait_count r.log "listening on" 3 || fail $LINENO "$(cat r.log)"
ask $LINENO 127.0.0.1:$pB 1 "B none"
ask $LINENO "$d/r.sock" 1 "D none"
inoA=$(peer holds $r0 127.0.0.1:$pA)
[ "$inoA" != - ] || fail $LINENO "relay $r0 does not hold 127.0.0.1:$pA"
cat >r.conf.new <<EOF
# B and the unix line gone, C new
127.0.0.1:$pC $mC
127.0.0.1:$pA $echo
EOF
mv r.conf.new r.conf
timeout 120 python3 peers.py reload_storm 127.0.0.1:$pA 600 8192 $r0 r.log \
	>storm.out 2>storm.err || fail $LINENO "$(cat storm.out storm.err; tail -5 r.log)"
r1=$(served_by r.log 1)
[ -n "$r1" ] && [ "$r1" != "$r0" ] || fail $LINENO "no new relay: $(tail -5 r.log)"
pids="$pids $r1"
# The old relay drained and ended well, with nothing wrong said.
wait $r0; rc=$?
rc_is $LINENO 0
is $LINENO 600 "$(wc -l <seen.echo | tr -d ' ')"
grep -v -e 'open$' -e 'closed: [0-9]* bytes' -e 'listening on' -e 'serves in place' \
	-e 'draining [0-9]* connections* (again' -e 'stopping: no connections to drain' \
	-e 'connections 0 open' -e 'is not in r\.conf any more: not served$' r.log >bad
grep -q . bad && fail $LINENO "unexpected messages: $(head -5 bad)"
is $LINENO 1 "$(grep -c -F "listening on 127.0.0.1:$pC, forwarding to $mC, 2 workers" r.log)"
is $LINENO 2 "$(grep -c -F "listening on 127.0.0.1:$pA, forwarding to $echo, 2 workers" r.log)"
# A on the socket passed, C bound; B refuses, the unix one is gone.
is $LINENO "$inoA" "$(peer holds $r1 127.0.0.1:$pA)"
ask $LINENO 127.0.0.1:$pC 2 "C none"
timeout 30 python3 -c 'import asyncio, sys; from relay_peers import one
e = []; asyncio.run(one(sys.argv[1], 65536, e)); sys.exit(1 if e else 0)' 127.0.0.1:$pA ||
	fail $LINENO "relay $r1 does not serve 127.0.0.1:$pA"
is $LINENO refused "$(peer refused 127.0.0.1:$pB)"
[ -e r.sock ] && fail $LINENO "the removed unix line's socket file is left"
is $LINENO gone "$(peer refused "$d/r.sock")"
is $LINENO "- -" "$(peer holds $r1 127.0.0.1:$pB "$d/r.sock")"
sanitizer_free $LINENO r.log

# A bad file on reload: its error said, the old relay serves on.
cat >r.conf <<EOF
127.0.0.1:$pA $echo
127.0.0.1:$pE $mE
127.0.0.1:$pC $mC --bogus
EOF
: >r.log
kill -USR2 $r1
wait_for r.log "still serving" || fail $LINENO "no word of the failed reload: $(cat r.log)"
grep -q -x -F "psplice: r.conf:3: unrecognized option '--bogus'" r.log ||
	fail $LINENO "the file's error not said: $(cat r.log)"
grep -q "relay: reload failed: the new relay (process [0-9]*) exited with status 1$" r.log ||
	fail $LINENO "$(cat r.log)"
is $LINENO "psplice: relay: still serving (process $r1)" "$(grep still r.log)"
kill -0 $r1 || fail $LINENO "relay $r1 has gone"
ask $LINENO 127.0.0.1:$pC 1 "C none"
is $LINENO refused "$(peer refused 127.0.0.1:$pE)"
is $LINENO "$inoA" "$(peer holds $r1 127.0.0.1:$pA)"

# --replace=PID with a bad file: nothing taken, r1 serves on.
pD=$(port)
printf '127.0.0.1:%s %s\n127.0.0.1:%s %s --rate=fast\n' $pD "$mF" $pA "$echo" >bad.conf
timeout 20 "$P" relay -v --replace=$r1 --config=bad.conf 2>err; rc=$?
rc_is $LINENO 1
is $LINENO "psplice: bad.conf:2: invalid --rate 'fast'" "$(head -1 err | cut -d'(' -f1 | sed 's/ $//')"
kill -0 $r1 || fail $LINENO "relay $r1 has gone"
ask $LINENO 127.0.0.1:$pC 1 "C none"
is $LINENO "$inoA" "$(peer holds $r1 127.0.0.1:$pA)"
is $LINENO refused "$(peer refused 127.0.0.1:$pD)"

# --replace=PID --config: line A taken from relay r1 under a storm, D
# bound; r1 drains and exits, and C, which no line names, goes with it.
cat >p.conf <<EOF
127.0.0.1:$pD $mF
127.0.0.1:$pA $echo
EOF
: >seen.echo
timeout 120 python3 peers.py handover 127.0.0.1:$pA 300 8192 100 >pstorm.out 2>pstorm.err &
storm=$!; pids="$pids $storm"
wait_for half . 60 || fail $LINENO "the storm did not get going: $(cat pstorm.err)"
"$P" relay -v -j 2 --replace=$r1 --config=p.conf 2>p.log &
r2=$!; pids="$pids $r2"
wait_for p.log "took over" || fail $LINENO "no takeover: $(cat p.log)"
: >go
wait $storm || fail $LINENO "$(cat pstorm.out pstorm.err; tail -5 p.log)"
grep -q -x "psplice: relay: took over the listeners of process $r1" p.log || fail $LINENO "$(cat p.log)"
gone $r1 30 || fail $LINENO "relay $r1 did not end"
is $LINENO 300 "$(wc -l <seen.echo | tr -d ' ')"
is $LINENO "$inoA -" "$(peer holds $r2 127.0.0.1:$pA 127.0.0.1:$pC)"
[ "$(peer holds $r2 127.0.0.1:$pD)" != - ] || fail $LINENO "relay $r2 did not bind 127.0.0.1:$pD"
ask $LINENO 127.0.0.1:$pD 2 "F none"
is $LINENO refused "$(peer refused 127.0.0.1:$pC)"
kill -TERM $r2
wait $r2; rc=$?
rc_is $LINENO 0

# A line with port 0 keeps across a reload the port it was given; a
# --replace whose file drops a unix listener removes its socket file (a
# relative one, the relay's) once it serves.
printf '127.0.0.1:0 %s\nunix:z.sock %s\n' "$mA" "$mB" >z.conf
"$P" relay -v -j 1 --config z.conf 2>z.log &
z0=$!; pids="$pids $z0"
wait_count z.log "listening on" 2 || fail $LINENO "$(cat z.log)"
zp=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\),.*/\1/p' z.log | head -1)
ino=$(peer holds $z0 127.0.0.1:$zp)
kill -USR2 $z0
wait_for z.log "serves in place" || fail $LINENO "no reload: $(cat z.log)"
z1=$(served_by z.log 1)
pids="$pids $z1"
is $LINENO 2 "$(grep -c -F "listening on 127.0.0.1:$zp, forwarding to $mA" z.log)"
is $LINENO "$ino" "$(peer holds $z1 127.0.0.1:$zp)"
ask $LINENO 127.0.0.1:$zp 1 "A none"
gone $z0 30 || fail $LINENO "relay $z0 did not end"
printf '127.0.0.1:%s %s\n' $zp "$mC" >y.conf
"$P" relay -v -j 1 --replace=$z1 --config y.conf 2>y.log &
z2=$!; pids="$pids $z2"
wait_for y.log "took over" || fail $LINENO "no takeover: $(cat y.log)"
grep -q -x -F "psplice: relay: process $z1 listens on unix:z.sock too: not in y.conf, left to it to drain" y.log ||
	fail $LINENO "$(cat y.log)"
[ -e z.sock ] && fail $LINENO "the dropped unix listener's file is left"
ask $LINENO 127.0.0.1:$zp 1 "C none"
gone $z1 30 || fail $LINENO "relay $z1 did not end"
kill -TERM $z2
wait $z2; rc=$?
rc_is $LINENO 0
sanitizer_free $LINENO r.log p.log def.log z.log y.log
exit 0
