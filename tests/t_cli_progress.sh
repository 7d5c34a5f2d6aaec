#!/bin/sh
# The progress line: on a terminal for a large cp, with --progress when asked,
# never otherwise. Shown unasked, it is cleared at the end; asked for, it ends
# with a line of the totals: 100 % when the copy is complete, else where it
# stopped.
dir=$1
bin=${PSPLICE_BIN:?}
command -v python3 >/dev/null || { echo "SKIP: python3 is needed to run under a pty"; exit 77; }
t=$(mktemp -d "$dir/cli-progress-XXXXXX") || exit 1
trap 'rm -rf "$t"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

head -c $((80 << 20)) /dev/urandom > "$t/big" || exit 1
head -c 1000 /dev/urandom > "$t/small" || exit 1
# Run a command with standard error (and output) on a pty; its bytes to $2.
on_pty() { # output-file command...
	out=$1; shift
	python3 - "$out" "$@" <<'PY'
import os, pty, sys
out = sys.argv[1]
pid, fd = pty.fork()
if pid == 0:
    cols = int(os.environ.get("PTY_COLS", "0"))
    if cols:
        import fcntl, struct, termios
        fcntl.ioctl(1, termios.TIOCSWINSZ, struct.pack("HHHH", 24, cols, 0, 0))
    os.execv(sys.argv[2], sys.argv[2:])
data = b""
while True:
    try:
        b = os.read(fd, 65536)
    except OSError:
        break
    if not b:
        break
    data += b
_, st = os.waitpid(pid, 0)
open(out, "wb").write(data)
sys.exit(os.waitstatus_to_exitcode(st))
PY
}
esc=$(printf '\033')
# The last line drawn with the file's name, from what a terminal received.
last_drawn() { tr '\r' '\n' < "$1" | sed "s/$esc\[K//g" | grep '/big: ' | tail -n 1; }
done_re=': 80\.0 MiB / 80\.0 MiB (100%)  [0-9.]* [KMGT]*i*B/s  in [0-9]*:[0-9][0-9]$'
on_pty "$t/tty1" "$bin" cp "$t/big" "$t/c1" || fail "cp on a pty: exit $?"
cmp -s "$t/big" "$t/c1" || fail "cp on a pty: wrong bytes"
grep -q 'big: .* / 80.0 MiB (.*%) .*/s  ETA ' "$t/tty1" || fail "no progress line on a pty: $(od -c "$t/tty1" | head)"
tail -c 4 "$t/tty1" | od -c | grep -q '\\r 033   \[   K' || fail "progress line not cleared"
on_pty "$t/tty2" "$bin" cp "$t/small" "$t/c2" || fail "small cp on a pty: exit $?"
[ ! -s "$t/tty2" ] || fail "progress for a small file: $(cat "$t/tty2")"
# Not a terminal: nothing, unless asked.
"$bin" cp "$t/big" "$t/c3" 2> "$t/err3" || fail "cp: exit $?"
[ ! -s "$t/err3" ] || fail "progress without a terminal: $(cat "$t/err3")"
"$bin" cp --progress "$t/big" "$t/c4" 2> "$t/err4" || fail "cp --progress: exit $?"
grep -q "ETA" "$t/err4" || fail "cp --progress printed nothing"
cmp -s "$t/big" "$t/c4" || fail "cp --progress: wrong bytes"
"$bin" cat "$t/big" 2> "$t/err5" | cat > /dev/null || fail "cat: exit $?"
[ ! -s "$t/err5" ] || fail "cat without --progress: $(cat "$t/err5")"
"$bin" cat --progress "$t/big" 2> "$t/err6" | cmp -s - "$t/big" || fail "cat --progress: wrong bytes"
grep -q "big: .*ETA" "$t/err6" || fail "cat --progress printed no line"
# not a terminal: whole lines, no escape codes, no carriage returns
grep -q "$esc" "$t/err6" && fail "cat --progress wrote escape codes into a file"
tr -d '\n' < "$t/err6" | grep -q "$(printf '\r')" && fail "cat --progress wrote carriage returns into a file"
grep -qx ".*/big: .*ETA [0-9]*:[0-9][0-9]" "$t/err6" || fail "cat --progress lines: $(head -2 "$t/err6")"
# Asked for, the line ends with the totals, as a line of its own.
tail -n 1 "$t/err6" | grep -q "/big$done_re" || fail "cat --progress last line: $(tail -n 1 "$t/err6")"
tail -n 1 "$t/err4" | grep -q "/big$done_re" || fail "cp --progress last line: $(tail -n 1 "$t/err4")"
on_pty "$t/tty5" "$bin" cp --progress "$t/big" "$t/c5" || fail "cp --progress on a pty: exit $?"
last_drawn "$t/tty5" | grep -q "/big$done_re" || fail "cp --progress on a pty ends: $(last_drawn "$t/tty5")"
# ... and leaves the cursor on a line of its own (the pty writes \r\n).
[ "$(tail -c 2 "$t/tty5" | od -An -c | tr -d ' ')" = '\r\n' ] ||
	fail "cp --progress on a pty: no newline after the last line: $(tail -c 8 "$t/tty5" | od -c)"
# A copy cut short says where it stopped: a reader that leaves after 20 MiB.
"$bin" cat --progress "$t/big" 2> "$t/err10" | head -c $((20 << 20)) > /dev/null
tail -n 1 "$t/err10" | grep -q "/big: [0-9.]* MiB / 80\.0 MiB ( *[0-9]%\| *[1-9][0-9]%)  .*  in " ||
	fail "cat --progress cut short, last line: $(tail -n 1 "$t/err10")"
on_pty "$t/tty10" /bin/sh -c '"$0" cat --progress "$1" | head -c $((20 << 20)) > /dev/null' \
	"$bin" "$t/big"
last_drawn "$t/tty10" | grep -q "/big: [0-9.]* MiB / 80\.0 MiB ( *[0-9]%\| *[1-9][0-9]%)  .*  in " ||
	fail "cat --progress cut short on a pty: $(last_drawn "$t/tty10")"
# A file with holes counts its blocks as the total, and space allocated but
# never written is a block the copy skips: complete, it is still 100 %.
truncate -s 100M "$t/sparse" && dd if="$t/big" of="$t/sparse" bs=1M count=10 seek=20 \
	conv=notrunc status=none || fail "making a sparse file"
if command -v fallocate >/dev/null && fallocate -n -o 50MiB -l 20MiB "$t/sparse" 2>/dev/null; then
	"$bin" cp --progress "$t/sparse" "$t/c11" 2> "$t/err11" || fail "sparse cp --progress: exit $?"
	cmp -s "$t/sparse" "$t/c11" || fail "sparse cp --progress: wrong bytes"
	tail -n 1 "$t/err11" | grep -q "/sparse: [0-9.]* MiB / [0-9.]* MiB (100%)  .*  in " ||
		fail "sparse cp --progress, last line: $(tail -n 1 "$t/err11")"
else
	echo "fallocate -n is not available here: the unwritten-space case is not checked"
fi
# On a narrow terminal the line fits: the name gives way.
long=$t/a-file-name-long-enough-to-push-the-progress-line-past-forty-columns
ln -s "$t/big" "$long"
PTY_COLS=60 on_pty "$t/tty9" "$bin" cp --progress "$long" "$t/c9" || fail "narrow cp: exit $?"
tr '\r' '\n' < "$t/tty9" | sed "s/$esc\[K//g" | awk -v f="$t/tty9" '
	length($0) > 59 { print "line of " length($0) " columns on a 60-column terminal: " $0; bad = 1 }
	/ETA/ { seen = 1 }
	END { if (!seen) print "no progress line in " f; exit bad || !seen }' ||
	fail "progress line not fitted to the terminal"
# A stream of unknown length: bytes and rate, no percentage.
"$bin" cat --progress < "$t/big" 2> "$t/err7" > /dev/null || fail "cat --progress stdin: exit $?"
cat "$t/big" | "$bin" cat --progress 2> "$t/err8" > /dev/null || fail "cat --progress pipe: exit $?"
grep -q "standard input: .*/s" "$t/err8" || fail "pipe progress: $(cat "$t/err8")"
grep -q "%" "$t/err8" && fail "pipe progress shows a percentage"
tail -n 1 "$t/err8" | grep -q "^standard input: 80\.0 MiB  .*/s  in [0-9]*:[0-9][0-9]$" ||
	fail "pipe progress last line: $(tail -n 1 "$t/err8")"
tail -n 1 "$t/err7" | grep -q "^standard input$done_re" ||
	fail "file on standard input, last line: $(tail -n 1 "$t/err7")"
# A file that grows while it is read passes its size by any factor: a
# 1-byte file that has 64 MiB by the time cat reads it (cat waits on a full
# pipe, its total taken, while the file grows), cut short after 32 MiB.
# The percentage is 3,355,443,200 there, past any int: no wrapped value.
python3 - "$bin" "$t/grow" "$t/err12" <<'PY'
import fcntl, os, subprocess, sys, time
prog, f, err = sys.argv[1:4]
with open(f, "wb") as o:
    o.write(b"x")
r, w = os.pipe()
try:
    fcntl.fcntl(w, 1031, 1 << 20)  # F_SETPIPE_SZ: as large as cat makes it
except OSError:
    pass                           # then cat cannot grow it either
os.set_blocking(w, False)
filled = 0
try:
    while True:
        filled += os.write(w, b"\0" * 65536)
except BlockingIOError:
    pass
os.set_blocking(w, True)
with open(err, "wb") as e:
    p = subprocess.Popen([prog, "cat", "--progress", f], stdout=w, stderr=e)
os.close(w)
def waiting():
    try:
        fds = [os.readlink("/proc/%d/fd/%s" % (p.pid, n)) for n in os.listdir("/proc/%d/fd" % p.pid)]
        with open("/proc/%d/stat" % p.pid) as s:
            state = s.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return f in fds and state == "S"
deadline = time.monotonic() + 10
while not waiting():
    if time.monotonic() > deadline:
        sys.exit("cat never waited on the full pipe")
    time.sleep(0.01)
with open(f, "ab") as a:
    a.write(b"y" * (64 << 20))
want, got = filled + (32 << 20), 0
while got < want:
    b = os.read(r, min(1 << 20, want - got))
    if not b:
        break
    got += len(b)
os.close(r)
p.wait(timeout=30)
PY
[ $? -eq 0 ] || fail "growing file: the run did not go as set up"
tail -n 1 "$t/err12" | grep -q "/grow: [0-9.]* MiB / 1 B ( *[0-9]*%)  .*  in " ||
	fail "cat --progress of a grown file, last line: $(tail -n 1 "$t/err12")"
exit 0
