#!/bin/sh
# make demo: copy a generated file with psplice cp and stream it through
# psplice cat into a pipe, beside cp(1) and cat(1) measured in the same run,
# and show which kernel path moved the bytes. Usage: demo.sh PATH/TO/psplice
# PSPLICE_DEMO_MIB sets the size of the file (default 256).
set -eu

[ $# -eq 1 ] && [ -x "$1" ] || { echo "usage: $0 PATH/TO/psplice" >&2; exit 2; }
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
mib=${PSPLICE_DEMO_MIB:-256}

# Beside the build, on the work tree's filesystem, not on a tmpfs /tmp:
# a file copy is only interesting where the file lives on a disk.
work=$(mktemp -d "$(dirname "$bin")/demo.XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
cd "$work"
data=data

die() { echo "demo: $*" >&2; exit 1; }

# Best wall time of three runs of "$@", in nanoseconds; the output file is
# removed, untimed, before each run.
best() {
	b=0
	for _ in 1 2 3; do
		rm -f out
		t0=$(date +%s%N)
		"$@" || die "'$*' failed"
		t=$(($(date +%s%N) - t0))
		if [ "$b" -eq 0 ] || [ "$t" -lt "$b" ]; then b=$t; fi
	done
	echo "$b"
}

# The kernel path named by a --debug or --verbose line: "... bytes by splice" -> splice
path_of() { sed -n 's/.* by \([a-z_]*\)$/\1/p' "$1" | tail -n 1; }
bytes_of() { sed -n "s/.*': \([0-9,]*\) bytes.*/\1/p" "$1" | tail -n 1; }

# row LABEL NS [BASE_NS NOTE]
row() {
	awk -v l="$1" -v ns="$2" -v base="${3:-0}" -v note="${4:-}" -v mib="$mib" 'BEGIN {
		s = ns / 1e9
		line = sprintf("  %-31s %7.3f s %7.0f MiB/s", l, s, mib / s)
		if (base > 0)
			line = line sprintf("  %5.2fx  %s", base / ns, note)
		print line
	}'
}

plain_cp() { cp "$data" out; }
psplice_cp() { "$bin" cp --debug "$data" out 2>v.cp >/dev/null; }
plain_cat() { cat "$data" | cat >/dev/null; }
psplice_cat() {
	"$bin" cat --verbose "$data" 2>v.cat1 | "$bin" cat --verbose 2>v.cat2 >/dev/null
}

fs=$(findmnt -n -o FSTYPE -T . 2>/dev/null || stat -f -c %T .)
echo "psplice demo: $mib MiB of random data in $work ($fs)"
head -c "${mib}M" /dev/urandom >"$data" || die "cannot generate $data"
echo "times are the best of 3 runs, page cache warm; ratios against the"
echo "plain tool measured just before"
echo

echo "copy a file on the same filesystem (FILE -> COPY)"
t_cp=$(best plain_cp)
t_ps=$(best psplice_cp)
cmp -s "$data" out || die "psplice cp: the copy differs from the source"
row "cp" "$t_cp"
row "psplice cp" "$t_ps" "$t_cp" "$(path_of v.cp): $(bytes_of v.cp) bytes"
echo "  copy verified with cmp"
echo

echo "stream a file through a pipe (FILE | ... > /dev/null)"
t_cat=$(best plain_cat)
t_ps=$(best psplice_cat)
"$bin" cat "$data" | "$bin" cat | cmp -s - "$data" ||
	die "psplice cat: the stream differs from the file"
row "cat FILE | cat" "$t_cat"
row "psplice cat FILE | psplice cat" "$t_ps" "$t_cat" \
	"$(path_of v.cat1) into the pipe, $(path_of v.cat2) out of it"
echo "  stream verified with cmp"
echo
echo "cp --debug and cat --verbose said:"
sed 's/^/  /' v.cp v.cat1 v.cat2
