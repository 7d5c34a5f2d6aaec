#!/bin/sh
# make install into the running system, as a user who builds from source
# does (PREFIX=/usr/local, no DESTDIR, as root), then make uninstall: in a
# mount namespace of the test's own, /usr/local a fresh tmpfs and /etc (the
# loader's cache) a copy, so that the machine is left as it was. install
# runs ldconfig itself: a program built with pkg-config runs with no
# LD_LIBRARY_PATH, and Python's ctypes loads libpsplice.so.0 by its
# soname. uninstall removes every file install wrote and runs ldconfig
# again: the program no longer starts. As a user (nobody), install says
# the one line to run instead; a staged install (DESTDIR) says nothing.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
# What a user installs is the plain build, whichever build runs the tests:
# a sanitized library in /usr/local would not load in a program built
# without the sanitizer, and its objects do not link without its flags.
build=$top/build
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (make install into /usr/local, ldconfig)"; exit 77; }
unshare -m true 2>/dev/null || { echo "SKIP: needs unshare -m (a mount namespace of its own)"; exit 77; }
command -v pkg-config >/dev/null || { echo "SKIP: pkg-config missing (tests/deps.sh check)"; exit 77; }
t=$(mktemp -d "${1:-/tmp}/install-system.XXXXXX") || exit 1
trap 'rm -rf "$t"' EXIT

cat >"$t/prog.c" <<'EOF'
#include <psplice.h>
#include <stdio.h>

int main(void)
{
	printf("%s\n", psplice_version());
	return 0;
}
EOF

# Everything below runs in the namespace; it says FAIL: and exits 1, or
# ends with "ok".
unshare -m sh -s "$top" "$build" "$t" <<'EOF' >"$t/out" 2>&1
set -u
top=$1 build=$2 t=$3
fail() { echo "FAIL: $*"; exit 1; }
mount --make-rprivate / && mount -t tmpfs tmpfs /usr/local || fail "cannot mount a tmpfs on /usr/local"
# ldconfig writes its cache beside it and renames it: /etc is a copy.
mkdir "$t/etc" && mount -t tmpfs tmpfs "$t/etc" && cp -a /etc/. "$t/etc/" &&
	mount --bind "$t/etc" /etc || fail "cannot put a copy of /etc in place"
make -C "$top" --no-print-directory BUILD="$build" PREFIX=/usr/local install >"$t/install.log" 2>&1 ||
	fail "make install: $(tail -3 "$t/install.log")"
! grep -q "^install: " "$t/install.log" || fail "make install as root said: $(grep '^install: ' "$t/install.log")"
export PKG_CONFIG_PATH=/usr/local/lib/pkgconfig
cc -o "$t/prog" "$t/prog.c" $(pkg-config --cflags --libs psplice) || fail "cannot build with pkg-config"
v=$(env -u LD_LIBRARY_PATH "$t/prog") || fail "the program does not start after make install: $v"
[ "$v" = "$(sed -n 's/^#define PSPLICE_VERSION_[A-Z]* //p' "$top/include/psplice.h" | paste -sd.)" ] ||
	fail "the program says $v"
python3 -c 'import ctypes; ctypes.CDLL("libpsplice.so.0")' || fail "ctypes cannot load libpsplice.so.0"
make -C "$top" --no-print-directory BUILD="$build" PREFIX=/usr/local uninstall >"$t/uninstall.log" 2>&1 ||
	fail "make uninstall: $(tail -3 "$t/uninstall.log")"
# uninstall runs ldconfig itself and gives none of install's advice.
! grep -q "install: " "$t/uninstall.log" || fail "make uninstall as root said: $(grep 'install: ' "$t/uninstall.log")"
left=$(find /usr/local \( -type f -o -type l \) | head -5)
[ -z "$left" ] || fail "make uninstall left: $left"
! env -u LD_LIBRARY_PATH "$t/prog" >/dev/null 2>&1 || fail "the program still starts after make uninstall"
# As a user who may write the prefix, not run ldconfig: the line to run.
if command -v setpriv >/dev/null; then
	chown -R nobody /usr/local && chmod 755 "$t" || fail "cannot give /usr/local to nobody"
	setpriv --reuid=nobody --regid=nogroup --clear-groups make -C "$top" --no-print-directory \
		BUILD="$build" PREFIX=/usr/local install >"$t/user.log" 2>&1 ||
		fail "make install as nobody: $(tail -3 "$t/user.log")"
	grep -qx "install: run 'ldconfig' as root for programs to find libpsplice.so.[0-9]* in /usr/local/lib" \
		"$t/user.log" || fail "make install as nobody said: $(cat "$t/user.log")"
	setpriv --reuid=nobody --regid=nogroup --clear-groups make -C "$top" --no-print-directory \
		BUILD="$build" PREFIX=/usr/local uninstall >"$t/user-un.log" 2>&1 ||
		fail "make uninstall as nobody: $(tail -3 "$t/user-un.log")"
	# The loader's cache never knew this install: nothing to say.
	! grep -q "install: " "$t/user-un.log" ||
		fail "make uninstall as nobody said: $(cat "$t/user-un.log")"
	# It knows the one root installed: the line that makes it forget.
	chown -R root /usr/local
	make -C "$top" --no-print-directory BUILD="$build" PREFIX=/usr/local install >/dev/null 2>&1 ||
		fail "make install again"
	chown -R nobody /usr/local
	setpriv --reuid=nobody --regid=nogroup --clear-groups make -C "$top" --no-print-directory \
		BUILD="$build" PREFIX=/usr/local uninstall >"$t/user-un.log" 2>&1 ||
		fail "make uninstall as nobody: $(tail -3 "$t/user-un.log")"
	grep -qx "uninstall: run 'ldconfig' as root for programs to stop finding libpsplice.so.[0-9]* in /usr/local/lib" \
		"$t/user-un.log" || fail "make uninstall as nobody, cache stale, said: $(cat "$t/user-un.log")"
fi
echo ok
EOF
[ "$(tail -1 "$t/out")" = ok ] || { cat "$t/out"; exit 1; }

# A staged install (DESTDIR) leaves the loader to the package: no word.
make -C "$top" --no-print-directory BUILD="$build" DESTDIR="$t/staged" install \
	>"$t/staged.log" 2>&1 || { cat "$t/staged.log"; exit 1; }
! grep -q '^install: ' "$t/staged.log" ||
	{ echo "FAIL: a DESTDIR install spoke of ldconfig: $(cat "$t/staged.log")"; exit 1; }
echo "PASS: make install ran ldconfig, a pkg-config program and ctypes found the library; make uninstall left nothing"
