#!/bin/sh
# psplice cp: when write-behind paces a copy. By default only past the
# kernel's dirty background threshold (a 16 MiB copy is left to the kernel),
# lowered in a memory cgroup with a small limit (there the same copy is
# paced); --write-behind[=SIZE] forces it, --no-write-behind forbids it,
# --sync starts it past one chunk. --debug says which and why, and strace agrees:
# sync_file_range(2) is called exactly when --debug says "on". Every copy is
# byte-identical. $1 is the scratch directory, the CLI is $PSPLICE_BIN.
# Silent on pass, but for checks it cannot make, which say why.
[ -z "${BASH_VERSION:-}" ] && command -v bash >/dev/null && exec bash "$0" "$@"
name=t_cli_cpwb; . "$(dirname "$0")/cli-lib.sh"

command -v strace >/dev/null || { echo "$name: SKIP strace not found"; exit 77; }
head -c 16777216 /dev/urandom >a
head -c 4096 /dev/urandom >small

# cpwb LINE ON|OFF WANT ARGS...: psplice cp --debug --reflink=never ARGS a o
# (reflink=never: a reflink writes nothing, and so is never paced); the
# write-behind line of --debug is WANT (a regular expression, whole line),
# sync_file_range ran exactly when ON, and the copy is a's bytes.
cpwb() {
	l=$1 on=$2 want=$3; shift 3
	rm -f o trace
	ASAN_OPTIONS=detect_leaks=0 strace -f -qq -o trace -e trace=/sync_file_range \
		"$P" cp --debug --reflink=never "$@" o 2>err >/dev/null; rc=$?
	rc_is "$l" 0
	same "$l" "${src:-a}" o
	grep -Eqx "psplice: 'o': write-behind: $want" err ||
		fail "$l" "--debug: want '$want', got '$(cat err)'"
	if [ "$on" = ON ]; then
		grep -q sync_file_range trace || fail "$l" "on, but no sync_file_range"
	else
		! grep -q sync_file_range trace || fail "$l" "off, but: $(grep sync_file_range trace | head -n 2)"
	fi
}

size='[0-9]+(\.[0-9])? (B|KiB|MiB|GiB|TiB)'

# --- the default: the dirty background threshold ---------------------------
"$P" cp --debug --reflink=never a o 2>err >/dev/null; rc=$?
rc_is $LINENO 0; same $LINENO a o
# "within 2.3 GiB": the kernel starts no writeback for it either; only a
# machine with less than ~160 MiB of dirtyable memory (or a cgroup that
# small) puts a 16 MiB copy past it.
if grep -q ' write-behind: on ' err; then
	skip "default: the dirty background threshold here is below 16 MiB: $(cat err)"
	cpwb $LINENO ON "on \(16.0 MiB, past the .*\)" a
else
	cpwb $LINENO OFF "off \(16.0 MiB, within the (memory cgroup's )?dirty background threshold $size\)" a
fi

# --- the options ------------------------------------------------------------
cpwb $LINENO ON "on \(--write-behind\)" --write-behind a
cpwb $LINENO ON "on \(16.0 MiB, past the --write-behind threshold 1.0 MiB\)" --write-behind=1M a
cpwb $LINENO ON "on \(16.0 MiB, past the --write-behind threshold 16.0 MiB\)" --write-behind=16M a
cpwb $LINENO OFF "off \(16.0 MiB, within the --write-behind threshold 1.0 GiB\)" --write-behind=1G a
cpwb $LINENO OFF "off \(--no-write-behind\)" --no-write-behind a
# the last one given wins
cpwb $LINENO ON "on \(--write-behind\)" --no-write-behind --write-behind a
cpwb $LINENO OFF "off \(--no-write-behind\)" --write-behind --no-write-behind a
# --sync: the whole copy goes to the disk anyway; past one chunk it is
# written behind, and the final sync is write-behind's
cpwb $LINENO ON "on \(16.0 MiB, past the --sync threshold 8.0 MiB\)" --sync=data a
is $LINENO "psplice: 'o': data-durable" "$(tail -n 1 err)"
cpwb $LINENO OFF "off \(--no-write-behind\)" --sync=data --no-write-behind a

# a small file, forced: written behind all the same; unforced, --debug keeps
# quiet about a file of less than a chunk, which nothing could pace
src=small cpwb $LINENO ON "on \(--write-behind\)" --write-behind small
"$P" cp --debug small o2 2>err >/dev/null; rc=$?
rc_is $LINENO 0; same $LINENO small o2
! grep -q write-behind err || fail $LINENO "--debug on a small file: $(cat err)"
[ "$(wc -l <err)" -eq 1 ] || fail $LINENO "--debug: $(cat err)"

# a bad SIZE is a usage error, and nothing is copied
"$P" cp --write-behind=8Q a bad 2>err; rc=$?
rc_is $LINENO 1; [ ! -e bad ] || fail $LINENO "copied anyway"
err_is $LINENO "psplice: invalid --write-behind '8Q' (want a size, e.g. 1G)" \
	"Try 'psplice cp --help' for more information."
"$P" cp --write-behind 1M a bad 2>err; rc=$?
rc_is $LINENO 1; [ ! -e bad ] || fail $LINENO "copied anyway"

# --- a memory cgroup with a 64 MiB limit -------------------------------------
# Its threshold is a tenth (or what vm.dirty_background_* says) of what the
# cgroup may fill, a few MiB: the same 16 MiB copy is now paced.
cg= handed=
cli_cleanup() {
	[ -n "$cg" ] && rmdir "$cg" 2>/dev/null
	# the memory controller, if this test handed it down, is taken back
	[ -n "$handed" ] && echo -memory >"$handed/cgroup.subtree_control" 2>/dev/null
	return 0
}
# make_cg: a child of our memory cgroup limited to 64 MiB, in $cg; else why.
make_cg() {
	p=$(sed -n 's/^0:://p' /proc/self/cgroup)
	for root in /sys/fs/cgroup /sys/fs/cgroup/unified; do
		[ -n "$p" ] && [ -e "$root$p/cgroup.controllers" ] || continue
		grep -qw memory "$root$p/cgroup.controllers" || continue
		# a v2 child gets the memory controller only from a parent that
		# hands it down (and a parent with processes cannot, but the root)
		if ! grep -qw memory "$root$p/cgroup.subtree_control"; then
			echo +memory >"$root$p/cgroup.subtree_control" 2>/dev/null || continue
			handed=$root$p
		fi
		cg=$root${p%/}/psplice-cpwb.$$
		mkdir "$cg" 2>/dev/null && echo 64M >"$cg/memory.max" && return 0
		cli_cleanup; cg= handed=
	done
	p=$(sed -n 's/^[0-9]*:\(.*,\)\{0,1\}memory\(,[^:]*\)\{0,1\}://p' /proc/self/cgroup)
	[ -n "$p" ] && [ -d "/sys/fs/cgroup/memory$p" ] || {
		why="no memory cgroup (v2 with the memory controller handed down, or v1) to make a child in"
		return 1
	}
	cg=/sys/fs/cgroup/memory${p%/}/psplice-cpwb.$$
	mkdir "$cg" 2>/dev/null && echo 64M >"$cg/memory.limit_in_bytes" && return 0
	cli_cleanup; cg= handed=
	why="cannot make a memory cgroup with a limit in /sys/fs/cgroup/memory$p"
	return 1
}
if [ "$(id -u)" -ne 0 ]; then
	skip "memory cgroup: needs root"
elif ! make_cg; then
	skip "memory cgroup: $why"
else
	# in_cg LINE ARGS...: psplice cp --debug --reflink=never ARGS a o in it
	in_cg() {
		l=$1; shift
		rm -f o
		sh -c 'cg=$1; shift; echo $$ >"$cg/cgroup.procs" && exec "$@"' \
			sh "$cg" "$P" cp --debug --reflink=never "$@" a o 2>err >/dev/null; rc=$?
		rc_is "$l" 0; same "$l" a o
	}
	in_cg $LINENO
	grep -Eqx "psplice: 'o': write-behind: on \(16.0 MiB, past the memory cgroup's dirty background threshold $size\)" err ||
		fail $LINENO "in a 64 MiB cgroup: $(cat err)"
	# its threshold is a share of 64 MiB at most
	t=$(sed -n "s/.* threshold \([0-9.]*\) MiB)$/\1/p" err)
	[ -n "$t" ] && awk -v t="$t" 'BEGIN { exit !(t > 0 && t < 64) }' ||
		fail $LINENO "threshold not below 64 MiB: $(cat err)"
	# and --no-write-behind still wins there
	in_cg $LINENO --no-write-behind
	grep -qx "psplice: 'o': write-behind: off (--no-write-behind)" err ||
		fail $LINENO "--no-write-behind in a cgroup: $(cat err)"
fi
exit 0
