#!/bin/sh
# psplice bench: the machinery, not the figures. A short run of the groups
# that need no peers must give each measured item its baseline, flag nothing
# it cannot back, and write a CSV and an SVG that parse; bad options are
# usage errors.
dir=$1
bin=${PSPLICE_BIN:?}
t=$(mktemp -d "$dir/cli-bench-XXXXXX") || exit 1
trap 'rm -rf "$t"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# --out is checked before the run
"$bin" bench --quick --only per-call --out /proc/psplice-nope 2> "$t/err.out"; rc=$?
[ $rc -eq 1 ] || fail "--out into /proc: exit $rc"
grep -q "cannot create directory '/proc/psplice-nope'" "$t/err.out" || fail "--out: $(cat "$t/err.out")"
[ "$(wc -l < "$t/err.out")" -eq 1 ] || fail "--out: the run started: $(cat "$t/err.out")"

# A run stopped half-way (SIGTERM; Ctrl-C's SIGINT goes the same way) leaves
# no scratch directory behind and ends by the same signal.
ls -d /var/tmp/psplice-bench.* > "$t/before" 2>/dev/null
"$bin" bench --quick --only cp > /dev/null 2> "$t/err.stop" &
pid=$!
i=0
while [ "$(ls -d /var/tmp/psplice-bench.* 2>/dev/null | grep -vxFf "$t/before" | wc -l)" -eq 0 ]; do
	i=$((i + 1)); [ $i -le 100 ] || fail "no scratch directory appeared"
	sleep 0.1
done
sleep 1
kill -TERM $pid
wait $pid; rc=$?
[ $rc -eq 143 ] || fail "stopped bench: exit $rc, want 143 (SIGTERM)"
left=$(ls -d /var/tmp/psplice-bench.* 2>/dev/null | grep -vxFf "$t/before")
[ -z "$left" ] || fail "scratch left behind: $left"

"$bin" bench --quick --only mechanism,per-call --secs 0.2 --dir "$t" --out "$t/out" \
	> "$t/table" 2> "$t/err" || fail "bench: exit $? ($(tail -3 "$t/err"))"
for f in latest.csv latest.svg latest.txt; do
	[ -s "$t/out/$f" ] || fail "no $f"
done
grep -q '^\[mechanism\]' "$t/table" || fail "no mechanism block in the table"
grep -q '^\[per-call\]' "$t/table" || fail "no per-call block in the table"
grep -q 'psplice() per call over raw, 4 KiB file -> /dev/null' "$t/table" ||
	fail "the per-call target is not reported"

# Every measured row of an item has the item's baseline, a positive value
# and a ratio; the planner's row names a method.
python3 - "$t/out/latest.csv" "$t/out/latest.svg" <<'PY' || fail "CSV or SVG check"
import csv, sys, xml.etree.ElementTree as ET
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["kind"] == "row"]
base = {(r["group"], r["item"]) for r in rows if r["baseline"] == "1" and r["value"]}
items = {(r["group"], r["item"]) for r in rows}
assert items <= base, "items without a baseline: %s" % (items - base)
for r in rows:
    if r["unit"]:
        assert float(r["value"]) > 0, r
        assert float(r["ratio"]) > 0, r
    if r["variant"] == "planner (no flags)":
        assert "planner" in r["note"].lower(), r
mech = {r["item"] for r in rows if r["group"] == "mechanism"}
assert {"file -> pipe", "pipe -> file", "tcp -> tcp", "file -> file"} <= mech, mech
assert len(rows) >= 20, len(rows)
picks = {r["item"]: r["note"] for r in rows if r["variant"] == "planner (no flags)"}
assert "splice" in picks["file -> pipe"], picks
assert "copy_file_range" in picks["file -> file"], picks
assert "splice_pipe" in picks["tcp -> tcp"], picks
ET.parse(sys.argv[2])
PY

# tee: a goal is the median of the ratios of rounds in which psplice tee
# and GNU tee ran back to back, with the smallest and the largest, not one
# best run of each (GNU tee's CPU per GiB alone moves the ratio by 0.05).
"$bin" bench --quick --only tee --dir "$t" > "$t/tee" 2> "$t/tee.err" ||
	fail "tee: exit $? ($(tail -3 "$t/tee.err"))"
for goal in speed "CPU per GiB"; do
	line=$(grep "psplice tee vs tee, 4 files, $goal " "$t/tee") ||
		fail "tee: no $goal target: $(cat "$t/tee")"
	case $line in
	*"not measured: "*) echo "t_cli_bench: SKIP tee $goal: $line" ;;
	*" median of 3 rounds' "*"(min "*", max "*) ;;
	*) fail "tee $goal: not a median of rounds: $line" ;;
	esac
done

out=$("$bin" bench --only nosuch 2>&1); rc=$?
[ $rc -eq 1 ] || fail "--only nosuch: exit $rc"
case $out in *"unknown group 'nosuch'"*) ;; *) fail "--only nosuch: '$out'" ;; esac
# A list longer than any buffer: its last name is checked too.
long=$(printf 'per-call,%.0s' $(seq 40))
out=$("$bin" bench --only "${long}nosuch" --dir "$t/missing" 2>&1); rc=$?
[ $rc -eq 1 ] || fail "--only LONG,nosuch: exit $rc"
case $out in *"unknown group 'nosuch'"*) ;; *) fail "--only LONG,nosuch: '$out'" ;; esac
"$bin" bench --secs 0 >/dev/null 2>&1 && fail "--secs 0 accepted"
"$bin" bench extra >/dev/null 2>&1 && fail "an operand accepted"
"$bin" bench --dir "$t/missing" --only per-call >/dev/null 2>&1 &&
	fail "a missing --dir accepted"

# relay-failover: one of the relay's two targets killed during 8 streams.
# The time to the next connection that reached a target is measured, and
# every connection begun after the kill reached one.
"$bin" bench --only relay-failover --secs 0.5 --out "$t/fo" > "$t/fo.table" 2> "$t/fo.err" ||
	fail "relay-failover: exit $? ($(tail -3 "$t/fo.err"))"
python3 - "$t/fo/latest.csv" <<'PY' || fail "relay-failover: $(cat "$t/fo.table")"
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["group"] == "relay-failover"]
got = {r["variant"]: r for r in rows if r["kind"] == "row"}
assert 0 < float(got["time from the kill to the next connect"]["value"]) < 5000, got
assert float(got["connections failed after the kill"]["value"]) == 0, got
assert got["connections cut by the kill"]["value"] != "", got
assert float(got["connect to greeting, before the kill (median)"]["value"]) > 0, got
PY

# The relay group's veth items (as root, with ip and iperf3): a run killed
# with SIGKILL during a veth item leaves none of its network namespaces, no
# veth and nothing running in them. (Killed during a loopback item instead,
# the run would leave that item's iperf3 server behind, which no namespace
# holds.)
if [ "$(id -u)" -eq 0 ] && command -v ip >/dev/null 2>&1 && command -v iperf3 >/dev/null 2>&1; then
	"$bin" bench --quick --only relay > /dev/null 2> "$t/veth.err" &
	pid=$!
	run=
	i=0
	while [ -z "$run" ]; do
		i=$((i + 1)); [ $i -le 600 ] || fail "no namespace appeared: $(tail -3 "$t/veth.err")"
		sleep 0.1
		run=$(ip netns list 2>/dev/null | sed -n 's/^psplice-bench-\([0-9]*\)-r.*/\1/p' |
			while read -r p; do [ "$(ps -o ppid= -p "$p" | tr -d ' ')" = "$pid" ] && echo "$p"; done)
	done
	# The veth item's iperf3 server, on the server namespace's address.
	i=0
	while ! pgrep -P "$run" -f "iperf3 -s -B 198[.]18[.]2[.]2" >/dev/null; do
		i=$((i + 1)); [ $i -le 600 ] || fail "the veth item did not start: $(tail -3 "$t/veth.err")"
		sleep 0.1
	done
	kill -KILL "$run"
	wait $pid
	i=0
	while ip netns list 2>/dev/null | grep -q "^psplice-bench-$run-"; do
		i=$((i + 1)); [ $i -le 100 ] || fail "namespaces left: $(ip netns list)"
		sleep 0.1
	done
	! ip -o link 2>/dev/null | grep -q "psb${run}[ac]" || fail "veth left: $(ip -o link | grep psb)"
else
	echo "t_cli_bench: SKIP the veth items' removal: not root, or no ip or iperf3"
fi
exit 0
