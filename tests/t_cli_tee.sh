#!/bin/sh
# psplice tee against GNU tee on the same cases (issue 11): the bytes of
# every output, the exit status and how many diagnostics, for sizes 0 to
# 16 MiB + 3 from a pipe and a file, -a, -p and each --output-error mode
# with a reader that leaves, a full tmpfs (ENOSPC) and /dev/full, a FILE
# that cannot be opened, '-', --to sockets; and, under strace, that from a
# pipe no byte passes through the process.
[ -z "${BASH_VERSION:-}" ] && command -v bash >/dev/null && exec bash "$0" "$@"
name=t_cli_tee; . "$(dirname "$0")/cli-lib.sh"
command -v tee >/dev/null || { echo "SKIP: GNU tee is not installed"; exit 77; }
export P

# run WHO CMD...: "$WHO" is tee or "$P tee"; status in $rc, stderr in err.$WHO
run() {
	who=$1; shift
	rc=0
	"$@" 2>"err.$who" || rc=$?
}
# both LINE INPUT ARGS...: each tee on INPUT (a file, read through cat into
# a pipe) with ARGS, outputs g.* and p.*; same exit status, same number of
# diagnostics, same bytes in each output.
both() {
	l=$1 in=$2; shift 2
	rm -f g.* p.*
	run gnu sh -c 'f=$1; shift; cat "$f" | tee "$@" > g.out' sh "$in" "${@/#@/g.}"
	grc=$rc
	run ps sh -c 'f=$1; shift; cat "$f" | "$P" tee "$@" > p.out' sh "$in" "${@/#@/p.}"
	is "$l" "$grc" "$rc"
	is "$l" "$(wc -l < err.gnu)" "$(wc -l < err.ps)"
	for f in g.*; do
		[ "$f" = g.out ] && continue
		case $f in g.*) same "$l" "$f" "p.${f#g.}" ;; esac
	done
	same "$l" g.out p.out
}

for size in 0 1 4095 65537 1048583 16777219; do
	head -c "$size" /dev/urandom > in.$size
	both $LINENO in.$size @1 @2 @3
	cmp -s in.$size p.1 || fail $LINENO "size $size: wrong bytes"
	# From a file on standard input, not a pipe.
	rm -f p.*
	"$P" tee p.1 p.2 < in.$size > p.out; rc=$?
	rc_is $LINENO 0
	same $LINENO in.$size p.1; same $LINENO in.$size p.2; same $LINENO in.$size p.out
done

# -a appends (write(2): splice refuses O_APPEND); the default truncates.
printf 'old\n' > g.keep; cp g.keep p.keep
tee -a g.keep < in.65537 > /dev/null; "$P" tee -a p.keep < in.65537 > /dev/null
same $LINENO g.keep p.keep
tee g.keep < in.1 > /dev/null; "$P" tee p.keep < in.1 > /dev/null
same $LINENO g.keep p.keep

# A file that cannot be opened: said, exit 1, the others get every byte.
both $LINENO in.65537 @1 nodir/x @2
is $LINENO 1 "$rc"
same $LINENO in.65537 p.1
# With an exit mode, a FILE that cannot be opened ends the command there,
# before a byte is read, as tee(1): the outputs opened before it stay
# empty and the ones after it are not made.
for opts in --output-error=exit --output-error=exit-nopipe; do
	both $LINENO in.65537 $opts @1 nodir/x @2
	is $LINENO 1 "$rc"
	is $LINENO "0 0" "$(wc -c < p.out) $(wc -c < p.1)"
	[ -e p.2 ] && fail $LINENO "$opts: an output after the failed one was made"
	is $LINENO 1 "$(wc -l < err.ps)"
done
# '-' is a file named '-', as in tee(1).
rm -f -- -; "$P" tee - < in.1 > p.out; rc=$?
rc_is $LINENO 0; same $LINENO in.1 ./-; same $LINENO in.1 p.out
# A MODE that is not one: exit 1.
run ps "$P" tee --output-error=bogus < in.1; rc_is $LINENO 1
grep -q "invalid argument 'bogus'" err.ps || fail $LINENO "$(cat err.ps)"

# A reader that leaves: standard output into head -c 1, 64 MiB in. By
# default tee dies of SIGPIPE; -p and the -nopipe modes go on silently
# and complete the file; warn says so and completes it; exit says so and
# stops. The file's bytes are compared only where both complete it.
head -c 67108864 /dev/urandom > big
for opts in "" -p --output-error --output-error=warn --output-error=warn-nopipe \
	--output-error=exit --output-error=exit-nopipe; do
	for who in gnu ps; do
		[ $who = gnu ] && t=tee || t="$P tee"
		rm -f o.$who
		bash -c 'set -o pipefail; cat big | '"$t $opts"' o.'$who' | head -c 1 > /dev/null; echo "${PIPESTATUS[1]}"' \
			> st.$who 2> err.$who
	done
	is $LINENO "$(cat st.gnu) $(wc -l < err.gnu)" "$(cat st.ps) $(wc -l < err.ps)"
	case $opts in
	"" | --output-error=exit) ;;
	*) same $LINENO big o.ps ;;
	esac
done

# ENOSPC: one output on a full tmpfs; the others complete (default and
# warn), or the command stops (exit). As tee(1) in each.
if [ "$(id -u)" = 0 ] && mkdir full && mount -t tmpfs -o size=1m tmpfs full 2>/dev/null; then
	cli_cleanup() { umount full 2>/dev/null; }
	head -c 4194307 /dev/urandom > in.4m
	for opts in "" -p --output-error=warn --output-error=exit; do
		rm -f g.* p.* full/*
		run gnu sh -c 'cat in.4m | tee '"$opts"' g.1 full/g g.2 > g.out'
		grc=$rc
		rm -f full/*
		run ps sh -c 'cat in.4m | "$P" tee '"$opts"' p.1 full/p p.2 > p.out'
		is $LINENO "$grc" "$rc"
		is $LINENO 1 "$rc"
		is $LINENO "$(wc -l < err.gnu)" "$(wc -l < err.ps)"
		grep -q 'No space left on device' err.ps || fail $LINENO "$(cat err.ps)"
		if [ "$opts" != --output-error=exit ]; then
			same $LINENO in.4m p.1; same $LINENO in.4m p.2; same $LINENO in.4m p.out
		fi
	done
else
	skip "ENOSPC: needs root to mount a small tmpfs"
fi
# /dev/full, the same.
for opts in "" --output-error=exit; do
	run gnu sh -c 'tee '"$opts"' /dev/full g.1 < in.65537 > /dev/null'; grc=$rc
	run ps sh -c '"$P" tee '"$opts"' /dev/full p.1 < in.65537 > /dev/null'
	is $LINENO "$grc" "$rc"
	is $LINENO "$(wc -l < err.gnu)" "$(wc -l < err.ps)"
done

# --to: two unix sockets and a file, every byte in each.
if command -v socat >/dev/null; then
	for s in 1 2; do
		timeout 30 socat -u UNIX-LISTEN:"$d/s$s" OPEN:"$d/got$s",creat,trunc &
		eval pid$s=$!
	done
	cli_cleanup() { umount full 2>/dev/null; kill "$pid1" "$pid2" 2>/dev/null; }
	for i in $(seq 50); do [ -S s1 ] && [ -S s2 ] && break; sleep 0.1; done
	run ps sh -c 'cat in.1048583 | "$P" tee --to unix:'"$d"'/s1 --to=unix:'"$d"'/s2 p.1 > p.out'
	rc_is $LINENO 0
	wait "$pid1" "$pid2"
	same $LINENO in.1048583 got1; same $LINENO in.1048583 got2; same $LINENO in.1048583 p.1
	run ps "$P" tee --to unix:"$d"/nobody < in.1 > p.out
	rc_is $LINENO 1; same $LINENO in.1 p.out
	# An exit mode ends the command at a --to it cannot connect, as at a
	# FILE it cannot open: nothing written.
	run ps "$P" tee --output-error=exit --to unix:"$d"/nobody < in.1 > p.out
	rc_is $LINENO 1; is $LINENO 0 "$(wc -c < p.out)"
else
	skip "--to: socat is not installed"
fi

# From a pipe into files and a pipe, no byte is read or written by the
# process: tee(2) and splice(2) only.
if command -v strace >/dev/null; then
	# LeakSanitizer cannot run under ptrace (an ASan build).
	cat in.16777219 | ASAN_OPTIONS=detect_leaks=0 strace -f -o trace -e trace=read,write,readv,writev,tee,splice \
		"$P" tee p.1 p.2 | cat > p.out
	same $LINENO in.16777219 p.1; same $LINENO in.16777219 p.out
	grep -q '^[0-9]* *tee(' trace || fail $LINENO "no tee(2) in the trace"
	big_rw=$(grep -E '^[0-9]+ +(read|write|readv|writev)\(' trace |
		awk -F'= ' '$NF + 0 >= 4096' | wc -l)
	is $LINENO 0 "$big_rw"
else
	skip "strace is not installed"
fi
exit 0
