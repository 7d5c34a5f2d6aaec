#!/bin/sh
# The man pages: every subcommand of cli/psplice.c has its page
# man/psplice-NAME.1, which names every option of its longopts table and
# getopt_long string; every function include/psplice.h declares has its own
# page man/NAME.3 (not a .so redirect) whose SYNOPSIS declares it; each page
# has the sections it must, an EXAMPLES section with an example, and renders
# without a warning; and every example program marked
#   .\" complete program
# before its .EX is compiled with -Wall -Wextra -Werror against the built
# static library, to prove it is correct C that uses the API as declared.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
bin=${PSPLICE_BIN:-$top/build/psplice}
build=$(dirname "$bin")
man=$top/man
d=$(mktemp -d "${1:-/tmp}/t_man.XXXXXX") && d=$(cd "$d" && pwd) || exit 1
trap 'rm -rf "$d"' EXIT
fails=0

fail() { echo "t_man: $*" >&2; fails=$((fails + 1)); }

# has_sections PAGE SECTION...: PAGE has each .SH SECTION.
has_sections() {
	p=$1; shift
	for s in "$@"; do
		grep -qx "\.SH \"*$s\"*" "$p" || fail "$(basename "$p"): no $s section"
	done
}

# The subcommands and their options, read as t_cli_completion.sh reads them.
cmds=$(sed -n 's/^[[:space:]]*&cli_cmd_\([a-z]*\),.*/\1/p' "$top/cli/psplice.c")
[ -n "$cmds" ] || { echo "t_man: no command found in cli/psplice.c" >&2; exit 1; }
ncmd=0 nopt=0
for cmd in $cmds; do
	ncmd=$((ncmd + 1))
	page=$man/psplice-$cmd.1
	[ -s "$page" ] || { fail "no man/psplice-$cmd.1 for command $cmd"; continue; }
	has_sections "$page" NAME SYNOPSIS DESCRIPTION OPTIONS "EXIT STATUS" EXAMPLES "SEE ALSO"
	grep -q "^psplice\\\\-$cmd \\\\- " "$page" || fail "psplice-$cmd.1: NAME is not 'psplice\\-$cmd \\- ...'"
	grep -qx "\.BR psplice\\\\-$cmd (1)\.*" "$man/psplice.1" ||
		fail "psplice.1 does not refer to psplice-$cmd(1)"
	grep -qx '\.BR psplice (1),' "$page" || fail "psplice-$cmd.1: SEE ALSO lacks psplice(1)"
	src=$top/cli/cmd_$cmd.c
	# A folder's command reads its options in options.c, if it has one.
	[ -r "$src" ] || src=$top/cli/$cmd/options.c
	[ -r "$src" ] || src=$top/cli/$cmd/cmd.c
	[ "$cmd" != bench ] || src=$top/bench/cmd_bench.c
	long=$(sed -n 's/^[[:space:]]*{ "\([a-z-]*\)", [a-z_]*,.*/\1/p' "$src")
	[ -n "$long" ] || fail "no option table found in $src"
	short=$(sed -n 's/.*getopt_long(argc, argv, "+\{0,1\}\([^"]*\)".*/\1/p' "$src" |
		tr -d : | sed 's/./&\n/g')
	# An option is documented when it heads an item of OPTIONS (the line
	# after a .TP). In roff a dash is \-: --sync is \-\-sync, -f is \-f
	# not followed by a letter (so \-\-force does not count for -f).
	sed -n '/^\.SH OPTIONS/,/^\.SH /{/^\.TP/{n;p}}' "$page" >"$d/tags"
	for o in $long help version; do
		nopt=$((nopt + 1))
		pat=$(printf '%s' "$o" | sed 's/-/\\\\-/g')
		grep -q "\\\\-\\\\-$pat\\([^a-z-]\\|\$\\)" "$d/tags" ||
			fail "psplice-$cmd.1: option --$o of $(basename "$src") has no item in OPTIONS"
	done
	for o in $short; do
		nopt=$((nopt + 1))
		grep -q "\\\\-$o\\([^A-Za-z0-9]\\|\$\\)" "$d/tags" ||
			fail "psplice-$cmd.1: option -$o of $(basename "$src") has no item in OPTIONS"
	done
done
has_sections "$man/psplice.1" NAME SYNOPSIS DESCRIPTION COMMANDS OPTIONS "EXIT STATUS" \
	ENVIRONMENT FILES "SEE ALSO"

# The public functions: a declaration's first line names it before its '('.
funcs=$(sed -n 's/^[a-z][^(]*[ *]\(psplice[a-z0-9_]*\)(.*/\1/p' "$top/include/psplice.h")
[ -n "$funcs" ] || { echo "t_man: no function found in include/psplice.h" >&2; exit 1; }
nfunc=0
for f in $funcs; do
	nfunc=$((nfunc + 1))
	page=$man/$f.3
	[ -s "$page" ] || { fail "no man/$f.3 for $f()"; continue; }
	if grep -q '^\.so ' "$page"; then
		fail "$f.3 is a .so redirect: $f() is no alias, it needs a page of its own"
		continue
	fi
	has_sections "$page" NAME SYNOPSIS DESCRIPTION "RETURN VALUE" EXAMPLES "SEE ALSO"
	sed -n '/^\.SH NAME/,/^\.SH/p' "$page" | grep -q "^$f\\( \\|,\\)" ||
		fail "$f.3: NAME does not begin with $f"
	sed -n '/^\.SH SYNOPSIS/,/^\.SH/p' "$page" | grep -q "[ *]$f(" ||
		fail "$f.3: SYNOPSIS does not declare $f()"
done
for page in "$man"/*.3; do
	grep -q '^\.so ' "$page" && continue
	sed -n '/^\.SH EXAMPLES/,/^\.SH/p' "$page" | grep -qx '\.EX' ||
		fail "$(basename "$page"): no example in EXAMPLES"
done

# Every marked program, unescaped from roff, compiled and linked; against a
# library built with sanitizers, with the same ones.
cc=${CC:-cc}
san=
if nm "$build/libpsplice.a" 2>/dev/null | grep -q '__asan_'; then
	san="-fsanitize=address,undefined"
elif nm "$build/libpsplice.a" 2>/dev/null | grep -q '__tsan_'; then
	san="-fsanitize=thread"
fi
nprog=0
for page in "$man"/*.3 "$man"/*.1; do
	base=$(basename "$page")
	awk -v out="$d/${base%.*}" '
		/^\.\\" complete program$/ { want = 1; next }
		want && /^\.EX$/ { n++; f = out "_" n ".c"; inprog = 1; want = 0; next }
		inprog && /^\.EE$/ { inprog = 0; close(f); next }
		inprog {
			gsub(/\\e/, "\001"); gsub(/\\-/, "-"); gsub(/\\\(aq/, "\047")
			gsub(/\\\(dq/, "\""); gsub(/\\&/, ""); gsub(/\001/, "\\")
			print > f
		}' "$page"
done
for c in "$d"/*.c; do
	[ -e "$c" ] || break
	nprog=$((nprog + 1))
	if ! $cc -std=gnu11 -Wall -Wextra -Werror $san -I"$top/include" -o "${c%.c}" "$c" \
		"$build/libpsplice.a" -lpthread >"$d/cc.log" 2>&1; then
		fail "the example program $(basename "$c") does not build:"
		sed 's/^/    /' "$d/cc.log" >&2
		cat -n "$c" | sed 's/^/    /' >&2
	fi
done
[ "$nprog" -gt 0 ] || fail "no example program marked '.\\\" complete program' found"

# Every page renders without a warning.
if command -v man >/dev/null 2>&1; then
	for page in "$man"/*.1 "$man"/*.3; do
		grep -q '^\.so ' "$page" && continue
		out=$(cd "$man/.." && MANWIDTH=80 man --warnings -l -Tutf8 "$page" 2>&1 >/dev/null)
		[ -z "$out" ] || fail "$(basename "$page") renders with warnings: $out"
	done
fi

[ "$fails" -eq 0 ] || { echo "t_man: $fails problems" >&2; exit 1; }
echo "t_man: $ncmd command pages naming $nopt options, $nfunc function pages," \
	"$nprog example programs built"
exit 0
