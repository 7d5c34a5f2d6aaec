#!/bin/sh
# make install-check: install into a scratch root as a package build would
# (PREFIX=/usr DESTDIR=ROOT), then build a C and a C++ program against the
# installed header and library through pkg-config, run them, and check the
# soname, the exported symbols, the man pages and the installed binary.
# Prints one summary line; exits 1 if any check failed.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
root=$tmp/root
lib=$root/usr/lib
mandir=$root/usr/share/man
CC=${CC:-cc}
CXX=${CXX:-g++}
checks=0 failed=0

fail() { echo "install-check: $*" >&2; failed=$((failed + 1)); }
# ok DESCRIPTION CMD...: run CMD, count it, say what failed.
ok() {
	d=$1; shift
	checks=$((checks + 1))
	"$@" >"$tmp/out" 2>&1 || { fail "$d"; sed 's/^/    /' "$tmp/out" >&2; }
}

# Built in its own directory, so the work tree's build is left alone.
if ! make -C "$top" -j2 BUILD="$tmp/build" PREFIX=/usr DESTDIR="$root" install \
	>"$tmp/make.log" 2>&1; then
	sed 's/^/    /' "$tmp/make.log" >&2
	echo "install-check: FAILED: make install did not succeed"
	exit 1
fi

# What make install must have put where.
for f in include/psplice.h lib/libpsplice.a lib/pkgconfig/psplice.pc bin/psplice \
	share/man/man1/psplice.1 share/man/man3/psplice.3 \
	share/bash-completion/completions/psplice lib/psplice/libpsplice-preload.so \
	libexec/psplice/psplice-bench; do
	ok "missing /usr/$f" test -s "$root/usr/$f"
done
soname=$(readelf -d "$lib/libpsplice.so" 2>/dev/null |
	sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p')
ok "soname is '$soname', want libpsplice.so.N" \
	sh -c 'echo "$1" | grep -Eq "^libpsplice\.so\.[0-9]+$"' - "$soname"
ok "$soname is not installed as a file" test -f "$lib/$soname"
ok "libpsplice.so is not a link to $soname" \
	test "$(readlink "$lib/libpsplice.so")" = "$soname"

# Only psplice_* functions leave the library, each with the symbol version.
nm -D --defined-only "$lib/$soname" | awk '$2 != "A" { print $3 }' >"$tmp/syms"
ok "no function exported" test -s "$tmp/syms"
ok "symbols other than psplice* exported" sh -c '! grep -v "^psplice" "$1"' - "$tmp/syms"
# (name@@VERSION is a symbol's default; name@VERSION an older one kept for
# the programs built against it.)
ok "exported symbols without a version" sh -c '! grep -v "@@\{0,1\}PSPLICE_" "$1"' - "$tmp/syms"
sed 's/@.*//' "$tmp/syms" >"$tmp/funcs"
for f in $(cat "$tmp/funcs"); do
	ok "$f: not declared in psplice.h" grep -q "[ *]$f(" "$root/usr/include/psplice.h"
	ok "$f: no man page" test -s "$mandir/man3/$f.3"
	ok "$f: its man page is a .so redirect, not its own" sh -c '! grep -q "^\.so " "$1"' \
		- "$mandir/man3/$f.3"
done
# A page per command, psplice-NAME(1), as git has.
for c in $(sed -n 's/^[[:space:]]*&cli_cmd_\([a-z]*\),.*/\1/p' "$top/cli/psplice.c"); do
	ok "psplice $c: no man page psplice-$c.1" test -s "$mandir/man1/psplice-$c.1"
done

# pkg-config, as a package build would use it against the staged root.
pc() {
	PKG_CONFIG_LIBDIR=$lib/pkgconfig PKG_CONFIG_PATH= PKG_CONFIG_SYSROOT_DIR=$root \
		pkg-config "$@" psplice
}
want=$(sed -n 's/^#define PSPLICE_VERSION_[A-Z]* //p' "$root/usr/include/psplice.h" |
	paste -sd.)
ok "pkg-config --modversion says '$(pc --modversion)', want '$want'" \
	test "$(pc --modversion)" = "$want"
cflags=$(pc --cflags) libs=$(pc --libs)

cat >"$tmp/c.c" <<'EOF'
/* Strict C11: the header must need nothing but itself. */
#define _POSIX_C_SOURCE 200809L
#include <psplice.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define S_(x) #x
#define S(x) S_(x)

int main(int argc, char **argv)
{
	struct psplice_result r;
	int in, out, p[2];
	char buf[4];
	ssize_t n;

	if (argc != 3 || strcmp(psplice_version(), S(PSPLICE_VERSION_MAJOR) "."
		   S(PSPLICE_VERSION_MINOR) "." S(PSPLICE_VERSION_PATCH)))
		return 2;
	in = open(argv[1], O_RDONLY);
	out = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (in < 0 || out < 0 || psplice_copy(in, NULL, out, NULL, PSPLICE_TO_EOF, 0, &r))
		return 3;
	if (r.in_bytes != r.out_bytes || r.error || r.method == PSPLICE_METHOD_NONE)
		return 4;
	/* One step into a pipe, from an offset; the file position stays. */
	int64_t off = 1;
	if (pipe(p) || psplice(in, &off, p[1], NULL, 3, 0) != 3 || off != 4 ||
	    read(p[0], buf, sizeof(buf)) != 3 || psplice_last()->method != PSPLICE_METHOD_SPLICE)
		return 5;
	/* The same through a prepared pair. */
	struct psplice_pair *pp = psplice_pair_new(in, p[1], 0);
	off = 1;
	if (!pp || psplice_pair_move(pp, &off, NULL, 3, 0, &r) != 3 || off != 4 ||
	    r.method != PSPLICE_METHOD_SPLICE || read(p[0], buf, sizeof(buf)) != 3)
		return 7;
	psplice_pair_free(pp);
	n = psplice(p[0], &off, out, NULL, 1, 0);
	if (n != -1 || psplice_last()->side != PSPLICE_SIDE_IN)
		return 6;
	printf("%llu bytes by %s\n", (unsigned long long)r.out_bytes,
	       psplice_method_name(r.method));
	return 0;
}
EOF
cat >"$tmp/cxx.cc" <<'EOF'
#include <psplice.h>
#include <fcntl.h>
#include <unistd.h>
#include <cstdio>
#include <string>

int main(int argc, char **argv)
{
	psplice_result r = psplice_result();
	int64_t oi = 0, oo = 0;

	if (argc != 3)
		return 2;
	int in = open(argv[1], O_RDONLY);
	int out = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	unsigned int flags = PSPLICE_F_ONLY(PSPLICE_METHOD_READWRITE);
	if (in < 0 || out < 0 || psplice_copy(in, &oi, out, &oo, PSPLICE_TO_EOF, flags, &r))
		return 3;
	std::string how = psplice_method_name(r.method);
	if (how != "readwrite" || oi != oo || (uint64_t)oo != r.out_bytes ||
	    std::string(psplice_side_name(PSPLICE_SIDE_OUT)) != "out")
		return 4;
	std::printf("%llu bytes by %s\n", (unsigned long long)r.out_bytes, how.c_str());
	return 0;
}
EOF

head -c 1000003 /dev/urandom >"$tmp/data"
# run NAME: run the program built as $tmp/NAME on the data, check the copy.
run() {
	LD_LIBRARY_PATH=$lib "$tmp/$1" "$tmp/data" "$tmp/$1.copy" &&
		cmp "$tmp/data" "$tmp/$1.copy"
}
# shellcheck disable=SC2086 # cflags and libs are word lists
ok "C program does not build against the installed library" \
	$CC -std=c11 -pedantic -Wall -Wextra -Werror $cflags -o "$tmp/c" "$tmp/c.c" $libs
ok "C program is not linked with $soname" \
	sh -c 'readelf -d "$1" | grep -q "NEEDED.*\[$2\]"' - "$tmp/c" "$soname"
ok "C program fails against the installed library" run c
# shellcheck disable=SC2086
ok "C++ program does not build against the installed library" \
	$CXX -std=c++11 -pedantic -Wall -Wextra -Werror $cflags -o "$tmp/cxx" "$tmp/cxx.cc" $libs
ok "C++ program fails against the installed library" run cxx
# shellcheck disable=SC2086
ok "C program does not link with the static library" \
	$CC $cflags -o "$tmp/cstatic" "$tmp/c.c" "$lib/libpsplice.a" -lpthread
ok "C program fails with the static library" run cstatic

# The installed command.
ok "installed psplice --version does not say $want" \
	sh -c '"$1" --version | grep -qx "psplice $2"' - "$root/usr/bin/psplice" "$want"
ok "installed psplice cp fails" sh -c '"$1" cp "$2" "$3" && cmp "$2" "$3"' - \
	"$root/usr/bin/psplice" "$tmp/data" "$tmp/cli.copy"
# The benchmark is a program of its own: the command carries none of it,
# nor libm (the benchmark's plot needs it).
ok "installed psplice holds benchmark code" \
	sh -c '! nm "$1" | grep -q " bench_"' - "$root/usr/bin/psplice"
ok "installed psplice links libm" sh -c '! ldd "$1" | grep -q "libm\."' - "$root/usr/bin/psplice"
ok "installed psplice-bench --help fails" sh -c \
	'"$1" --help | grep -q "^Usage: psplice bench "' - "$root/usr/libexec/psplice/psplice-bench"
# The preload library exports the calls it interposes and nothing of the
# library linked into it; psplice exec runs a command with it.
preload=$root/usr/lib/psplice/libpsplice-preload.so
ok "the preload library exports a psplice symbol" \
	sh -c '! nm -D --defined-only "$1" | grep -q " psplice\| ps__"' - "$preload"
ok "the preload library does not export write" \
	sh -c 'nm -D --defined-only "$1" | grep -q " T write$"' - "$preload"
ok "installed psplice exec fails" sh -c 'PSPLICE_PRELOAD="$2" "$1" exec -- dd if="$3" \
	of="$4" status=none && cmp "$3" "$4"' - "$root/usr/bin/psplice" "$preload" \
	"$tmp/data" "$tmp/exec.copy"

# Every page renders without a warning, as man(1) finds it (where man-db is
# installed); mandoc, where it is, lints them (.so pages only for errors:
# their .so is by design).
have_man=false
command -v man >/dev/null 2>&1 && have_man=true
for page in "$mandir"/man1/*.1 "$mandir"/man3/*.3; do
	name=$(basename "$page") sec=${page##*.}
	$have_man && ok "man $sec ${name%.*}: does not render cleanly" sh -c \
		'out=$(MANWIDTH=80 man -M "$1" "$2" "$3" 2>&1 >/dev/null) && [ -z "$out" ] ||
			{ echo "$out"; exit 1; }' - "$mandir" "$sec" "${name%.*}"
	if command -v mandoc >/dev/null 2>&1; then
		level=warning
		grep -q '^\.so ' "$page" && level=error
		ok "mandoc -T lint $name" sh -c 'cd "$1" && mandoc -T lint -W "$2" "$3"' - \
			"$mandir" "$level" "man$sec/$name"
	fi
done

npages=$(ls "$mandir"/man1 "$mandir"/man3 | grep -c '\.[13]$')
nsyms=$(wc -l <"$tmp/funcs")
note=
$have_man || note=" (not rendered: man-db is not installed)"
echo "install-check: $((checks - failed)) passed, $failed failed, 0 skipped"
if [ "$failed" -eq 0 ]; then
	echo "install-check: OK: $checks checks: $soname exports $nsyms psplice functions," \
		"C, C++ and static builds via pkg-config run, $npages man pages$note"
else
	echo "install-check: FAILED $failed of $checks checks"
	exit 1
fi
