#!/bin/sh
# psplice relay's addresses and listeners, as a user meets them: ports out
# of range, port 0 as a target and a target given twice refused; UDP said
# to be UDP; ":PORT" to listen on every IPv4 address (in a network
# namespace of its own); a second relay on the same address refused
# unless --reuseport; a unix listener's mode, a stale socket
# file replaced and a live one kept; SIGHUP ends the relay like SIGTERM and
# removes its socket file. Every wait is bounded.
[ -z "${BASH_VERSION:-}" ] && command -v bash >/dev/null && exec bash "$0" "$@"
name=t_cli_relay_opts; . "$(dirname "$0")/cli-lib.sh"
pids=
cli_cleanup() { for p in $pids; do kill "$p" 2>/dev/null; done; }

"$P" relay 127.0.0.1:99999 127.0.0.1:80 2>err; rc=$?
rc_is $LINENO 1
is $LINENO "psplice: invalid address '127.0.0.1:99999': port out of range (0 to 65535)" "$(head -1 err)"
"$P" relay 127.0.0.1:0 127.0.0.1:0 2>err; rc=$?
rc_is $LINENO 1
is $LINENO "psplice: invalid address '127.0.0.1:0': port 0 is not a port to connect to" "$(head -1 err)"

# A target given twice (its --metrics series twice: a scrape Prometheus
# rejects) is refused, by its text or by its address.
"$P" relay 127.0.0.1:0 127.0.0.1:80 unix:t.sock 127.0.0.1:80 2>err; rc=$?
rc_is $LINENO 1
is $LINENO "psplice: TARGET '127.0.0.1:80' is given twice: give each target once" "$(head -1 err)"
"$P" relay 127.0.0.1:0 127.0.0.1:80 [::1]:80 127.000.0.1:80 2>err; rc=$?
rc_is $LINENO 1
is $LINENO "psplice: TARGET '127.000.0.1:80' is '127.0.0.1:80' again: give each target once" \
	"$(head -1 err)"

# UDP is said to be what it is, not a name that does not resolve.
for a in udp:127.0.0.1:53 UDP6:[::1]:53; do
	"$P" relay 127.0.0.1:0 "$a" 2>err; rc=$?
	rc_is $LINENO 1
	is $LINENO "psplice: invalid address '$a': UDP is not relayed: stream sockets only (TCP, unix)" \
		"$(head -1 err)"
done
"$P" relay udp:127.0.0.1:0 127.0.0.1:80 2>err; rc=$?
rc_is $LINENO 1
is $LINENO "psplice: invalid address 'udp:127.0.0.1:0': UDP is not relayed: stream sockets only (TCP, unix)" \
	"$(head -1 err)"
# ":PORT" listens on every IPv4 address, as HAProxy's "bind :PORT"; a
# TARGET needs its host.
"$P" relay 127.0.0.1:0 :80 2>err; rc=$?
rc_is $LINENO 1
is $LINENO "psplice: invalid address ':80': want HOST:PORT: a connection needs its HOST" \
	"$(head -1 err)"
# Every address is bound only in a network namespace of the test's own,
# where there is only loopback; a client on 127.0.0.1 gets through.
if [ "$(id -u)" -ne 0 ] || ! unshare -n true 2>/dev/null || ! command -v ip >/dev/null; then
	skip "LISTEN :PORT: needs root, unshare -n and ip(8) to bind in a namespace of its own"
else
	# The whole namespace is bounded by timeout; the relay inside is
	# stopped by its own SIGTERM, so its exit status is the relay's.
	timeout 30 unshare -n sh -c '
		ip link set lo up || exit 2
		"$1" relay -v -j 1 :0 127.0.0.1:9 2>any.log & rp=$!
		i=0
		while ! grep -q "listening on" any.log && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
		port=$(sed -n "s/.*listening on 0\.0\.0\.0:\([0-9]*\),.*/\1/p" any.log)
		[ -n "$port" ] || { kill $rp; exit 3; }
		python3 -c "import socket, sys; s = socket.create_connection((\"127.0.0.1\", int(sys.argv[1])), 5); s.settimeout(5); s.recv(1)" "$port"
		i=0
		while ! grep -q "cannot connect" any.log && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
		kill $rp; wait $rp' - "$P"
	rc=$?
	rc_is $LINENO 0
	grep -q -E "listening on 0\.0\.0\.0:[0-9]+, forwarding to 127\.0\.0\.1:9" any.log ||
		fail $LINENO "LISTEN :0 did not listen on every IPv4 address: $(cat any.log)"
	grep -q -E "#1 127\.0\.0\.1:[0-9]+ open" any.log ||
		fail $LINENO "a client on 127.0.0.1 was not accepted on :PORT: $(cat any.log)"
fi

# A relay on a port, then another on the same one.
"$P" relay -v -j 2 127.0.0.1:0 127.0.0.1:9 2>first.log &
first=$!; pids="$pids $first"
wait_for first.log "listening on" || fail $LINENO "the first relay did not start"
port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\),.*/\1/p' first.log)
timeout 10 "$P" relay 127.0.0.1:$port 127.0.0.1:9 2>err; rc=$?
rc_is $LINENO 1
err_is $LINENO "psplice: cannot listen on '127.0.0.1:$port': Address already in use"
# unless both ask for sharing; the first did not, so still refused
timeout 10 "$P" relay --reuseport 127.0.0.1:$port 127.0.0.1:9 2>err; rc=$?
rc_is $LINENO 1
kill "$first"; wait "$first"
"$P" relay -v --reuseport 127.0.0.1:0 127.0.0.1:9 2>one.log &
one=$!; pids="$pids $one"
wait_for one.log "listening on" || fail $LINENO "the sharing relay did not start"
port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\),.*/\1/p' one.log)
"$P" relay -v --reuseport 127.0.0.1:$port 127.0.0.1:9 2>two.log &
two=$!; pids="$pids $two"
wait_for two.log "listening on" || fail $LINENO "--reuseport: the second relay did not share the port"
kill "$one" "$two"; wait "$one" "$two"

# Unix: the mode asked for; SIGHUP ends it cleanly and removes the file.
"$P" relay -v --unix-mode=600 unix:"$d/s" 127.0.0.1:9 2>u.log &
u=$!; pids="$pids $u"
wait_for u.log "listening on" || fail $LINENO "the unix relay did not start"
is $LINENO 600 "$(stat -c %a "$d/s")"
# a live socket file is not taken over
timeout 10 "$P" relay unix:"$d/s" 127.0.0.1:9 2>err; rc=$?
rc_is $LINENO 1
err_is $LINENO "psplice: cannot listen on 'unix:$d/s': Address already in use"
kill -HUP "$u"
gone "$u" || fail $LINENO "SIGHUP did not end the relay"
wait "$u"; rc=$?
rc_is $LINENO 0
[ ! -e "$d/s" ] || fail $LINENO "the socket file is still there after SIGHUP"

# A stale socket file (its relay was killed) is replaced.
"$P" relay -v unix:"$d/s" 127.0.0.1:9 2>k.log &
k=$!; pids="$pids $k"
wait_for k.log "listening on" || fail $LINENO "the unix relay did not start"
kill -KILL "$k"; wait "$k" 2>/dev/null
[ -S "$d/s" ] || fail $LINENO "no stale socket file to test with"
"$P" relay -v unix:"$d/s" 127.0.0.1:9 2>k2.log &
k2=$!; pids="$pids $k2"
wait_for k2.log "listening on" || fail $LINENO "a stale socket file blocked the relay: $(cat k2.log)"
kill "$k2"; wait "$k2"
# and a path that is not a socket is never removed
: >"$d/file"
timeout 10 "$P" relay unix:"$d/file" 127.0.0.1:9 2>err; rc=$?
rc_is $LINENO 1
[ -f "$d/file" ] || fail $LINENO "a regular file was removed"
exit 0
