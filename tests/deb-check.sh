#!/bin/sh
# make deb-check: install the packages make deb built (DIR, default
# build/deb) on this machine with dpkg, as a user would; build and run a C
# program against them through pkg-config, run the installed psplice, load
# its completion and man pages from where the system looks; psplice bench
# says the benchmark is missing until psplice-bench is installed, then runs
# it; import the Python module with Debian's python3 and copy with it; then
# purge the packages and check that nothing of them is left. Needs root (dpkg);
# refuses to touch a psplice already installed. Prints one summary line;
# exits 1 if any check failed.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$top/build/deb}
pkgs="libpsplice0 libpsplice-dev psplice psplice-bench python3-psplice"
CC=${CC:-cc}
checks=0 failed=0

if [ "$(id -u)" != 0 ]; then
	echo "deb-check: SKIP: dpkg -i needs root"
	exit 0
fi
debs=
for p in $pkgs; do
	f=$(ls "$dir/${p}_"*.deb 2>/dev/null | head -1)
	[ -n "$f" ] || { echo "deb-check: FAILED: no $p package in $dir (make deb)"; exit 1; }
	# The benchmark goes in after the check that psplice alone lacks it.
	if [ "$p" = psplice-bench ]; then bench_deb=$f; else debs="$debs $f"; fi
	st=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null)
	if [ -n "$st" ] && [ "$st" != not-installed ]; then
		echo "deb-check: FAILED: $p is already on this machine ($st); purge it first"
		exit 1
	fi
done

tmp=$(mktemp -d)
installed=false
# shellcheck disable=SC2086 # a word list
purge() { dpkg --purge $pkgs >"$tmp/purge.log" 2>&1 || { cat "$tmp/purge.log"; return 1; }; }
trap '$installed && purge; rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

fail() { echo "deb-check: $*" >&2; failed=$((failed + 1)); }
# ok DESCRIPTION CMD...: run CMD, count it, say what failed.
ok() {
	d=$1; shift
	checks=$((checks + 1))
	"$@" >"$tmp/out" 2>&1 || { fail "$d"; sed 's/^/    /' "$tmp/out" >&2; }
}

# install DEB...: dpkg -i, or the log and exit 1.
install() {
	# shellcheck disable=SC2068 # a word list
	dpkg -i $@ >"$tmp/install.log" 2>&1 && return 0
	sed 's/^/    /' "$tmp/install.log"
	echo "deb-check: FAILED: dpkg -i $*"
	exit 1
}
installed=true
# shellcheck disable=SC2086 # a word list
install $debs
# The Python module, from where Debian's python3 looks, on the installed
# library: it imports and copies.
owns_py=/usr/lib/python3/dist-packages/psplice/__init__.py
ok "python3 -c 'import psplice' does not copy with the installed library" sh -c \
	'head -c 100003 /dev/urandom >"$1/py.in" && cd / && env -u LD_LIBRARY_PATH -u PSPLICE_LIBRARY \
	/usr/bin/python3 -c "import psplice, sys
f = open(sys.argv[1], \"rb\"); g = open(sys.argv[2], \"wb\")
r = psplice.copy(f, g)
assert psplice.__file__ == sys.argv[3], psplice.__file__
assert r.out_bytes == 100003, r" "$1/py.in" "$1/py.out" "$2" && cmp "$1/py.in" "$1/py.out"' \
	- "$tmp" "$owns_py"
# psplice without psplice-bench: psplice bench says what to install.
ok "psplice bench without psplice-bench does not say it is not installed" sh -c \
	'psplice bench --help >"$1/bench.out" 2>&1; rc=$?; test $rc -eq 127 &&
	grep -qx "psplice bench: the benchmark is not installed (Debian package psplice-bench)" \
		"$1/bench.out"' - "$tmp"
install "$bench_deb"
for p in $pkgs; do
	dpkg -L "$p" >"$tmp/$p.files"
done
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
libdir=/usr/lib/$multiarch

# owns PACKAGE PATH...: dpkg says PACKAGE installed each PATH, and it is there.
owns() {
	p=$1; shift
	for f in "$@"; do
		ok "$f: not in $p" sh -c 'grep -qx "$1" "$2" && test -e "$1"' - "$f" "$tmp/$p.files"
	done
}
owns libpsplice0 $libdir/libpsplice.so.0
owns libpsplice-dev /usr/include/psplice.h $libdir/libpsplice.a $libdir/libpsplice.so \
	$libdir/pkgconfig/psplice.pc
owns psplice /usr/bin/psplice /usr/share/man/man1/psplice.1.gz \
	/usr/share/bash-completion/completions/psplice $libdir/psplice/libpsplice-preload.so
owns psplice-bench /usr/libexec/psplice/psplice-bench
owns python3-psplice "$owns_py" /usr/lib/python3/dist-packages/psplice/_lib.py
ok "the psplice package holds the benchmark" \
	sh -c '! grep -qx /usr/libexec/psplice/psplice-bench "$1"' - "$tmp/psplice.files"
ok "psplice bench --help through psplice-bench fails" sh -c \
	'psplice bench --help | grep -q "^Usage: psplice bench "'
ok "psplice bench --only nosuch is not refused by psplice-bench" sh -c \
	'psplice bench --only nosuch 2>&1 | grep -q "unknown group .nosuch."'
# A page per command in the command's package, a page per function in -dev.
for c in $(sed -n 's/^[[:space:]]*&cli_cmd_\([a-z]*\),.*/\1/p' "$top/cli/psplice.c"); do
	owns psplice /usr/share/man/man1/psplice-$c.1.gz
done
for f in $(sed -n 's/^[a-z][^(]*[ *]\(psplice[a-z0-9_]*\)(.*/\1/p' "$top/include/psplice.h"); do
	owns libpsplice-dev /usr/share/man/man3/$f.3.gz
done
ok "ldconfig does not know libpsplice.so.0" sh -c 'ldconfig -p | grep -q "libpsplice\.so\.0 "'

# A program built the way a user of libpsplice-dev builds one, run with no
# help from LD_LIBRARY_PATH.
cat >"$tmp/c.c" <<'EOF'
#include <psplice.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	struct psplice_result r;
	int in, out;

	if (argc != 3)
		return 2;
	in = open(argv[1], O_RDONLY);
	out = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (in < 0 || out < 0 || psplice_copy(in, NULL, out, NULL, PSPLICE_TO_EOF, 0, &r))
		return 3;
	printf("%s: %llu bytes by %s\n", psplice_version(), (unsigned long long)r.out_bytes,
	       psplice_method_name(r.method));
	return 0;
}
EOF
version=$(sed -n 's/^#define PSPLICE_VERSION_[A-Z]* //p' "$top/include/psplice.h" | paste -sd.)
ok "pkg-config --modversion psplice is not $version" \
	test "$(pkg-config --modversion psplice 2>&1)" = "$version"
# shellcheck disable=SC2046 # pkg-config's output is a word list
ok "a C program does not build through pkg-config" \
	$CC -Wall -Werror -o "$tmp/c" "$tmp/c.c" $(pkg-config --cflags --libs psplice)
ok "the C program is not linked with $libdir/libpsplice.so.0" \
	sh -c 'got=$(ldd "$1" | awk "\$1 == \"libpsplice.so.0\" { print \$3 }") &&
		test "$(readlink -f "$got")" = "$(readlink -f "$2/libpsplice.so.0")"' - "$tmp/c" "$libdir"
head -c 300001 /dev/urandom >"$tmp/data"
ok "the C program fails" sh -c '"$1" "$2" "$3" | grep -q "^$4: 300001 bytes by " &&
	cmp "$2" "$3"' - "$tmp/c" "$tmp/data" "$tmp/c.copy" "$version"

# The command, from PATH.
ok "psplice --version does not say psplice $version" \
	sh -c 'test "$(command -v psplice)" = /usr/bin/psplice &&
		test "$(psplice --version)" = "psplice $1"' - "$version"
ok "psplice cp fails" sh -c 'psplice cp "$1" "$2" && cmp "$1" "$2"' - "$tmp/data" "$tmp/cli.copy"
# psplice exec finds the installed preload library, and a command runs with it.
ok "psplice exec -- true fails" psplice exec -- true
ok "psplice exec does not preload $libdir/psplice/libpsplice-preload.so" \
	sh -c 'test "$(psplice exec -- printenv LD_PRELOAD)" = "$1"' - "$libdir/psplice/libpsplice-preload.so"
ok "dd under psplice exec fails" sh -c 'psplice exec --min-size=0 -- dd if="$1" of="$2" bs=4k \
	status=none && cmp "$1" "$2"' - "$tmp/data" "$tmp/exec.copy"
# The example units of socket activation, where dh_installexamples puts them.
ex=/usr/share/doc/psplice/examples
ok "the systemd units are not in $ex" test -r "$ex/psplice-relay@.socket" -a \
	-r "$ex/psplice-relay@.service"
# The example config file, and the installed relay reads it as it is.
ok "relay.conf is not in $ex" test -r "$ex/relay.conf"
ok "psplice relay --check does not take $ex/relay.conf" sh -c \
	'test "$(psplice relay --check --config="$1")" = "$1: 4 listeners"' - "$ex/relay.conf"
if command -v man >/dev/null 2>&1; then
	ok "man does not find psplice(1)" man -w 1 psplice
	ok "man does not find psplice_copy(3)" man -w 3 psplice_copy
	ok "man does not find psplice-cp(1)" man -w 1 psplice-cp
fi
# bash-completion loads the completion on demand, from its installed place.
if [ -r /usr/share/bash-completion/bash_completion ]; then
	ok "bash-completion does not load the psplice completion" bash -c \
		'. /usr/share/bash-completion/bash_completion
		_completion_loader psplice # 124: loaded, complete again
		test "$(complete -p psplice)" = "complete -F _psplice psplice"'
	ok "the installed completion fails t_cli_completion.sh" env \
		PSPLICE_COMPLETION=/usr/share/bash-completion/completions/psplice \
		sh "$top/tests/t_cli_completion.sh" "$tmp"
fi

# Purged, nothing of them is left but directories other packages own.
installed=false
ok "dpkg --purge fails" purge
for p in $pkgs; do
	ok "$p is still known to dpkg after purge" \
		sh -c '! dpkg-query -W -f="\${db:Status-Status}" "$1" 2>/dev/null | grep -qv not-installed' - "$p"
	while read -r f; do
		[ "$f" = /. ] && continue
		[ -d "$f" ] && [ ! -L "$f" ] && dpkg-query -S "$f" >/dev/null 2>&1 && continue
		ok "$f left behind by the purge of $p" test ! -e "$f" -a ! -L "$f"
	done <"$tmp/$p.files"
done
ok "ldconfig still knows libpsplice.so.0 after purge" \
	sh -c '! ldconfig -p | grep -q "libpsplice\.so\.0 "'

echo "deb-check: $((checks - failed)) passed, $failed failed, 0 skipped"
if [ "$failed" -eq 0 ]; then
	echo "deb-check: OK: $checks checks: installed$(for p in $pkgs; do printf ' %s' "$p"; done)" \
		"with dpkg, a C program built via pkg-config runs, python3 imports psplice and copies," \
		"psplice --version, psplice bench missing then run, man pages and completion found," \
		"purged clean"
else
	echo "deb-check: FAILED $failed of $checks checks"
	exit 1
fi
