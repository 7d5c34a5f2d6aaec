#!/bin/sh
# make deb: build the Debian packages (debian/) with dpkg-buildpackage -b
# from a clean copy of the tree in OUT/psplice-VERSION, so that what it
# writes beside the tree (the .debs, .changes, .buildinfo) lands in OUT and
# the work tree is left as it was; then lintian over them, failing on any
# error or warning. Usage: deb-build.sh OUT
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: deb-build.sh OUT}
version=$(sed -n 's/^#define PSPLICE_VERSION_[A-Z]* //p' "$top/include/psplice.h" | paste -sd.)
debversion=$(cd "$top" && dpkg-parsechangelog -S Version)
# The package's upstream version is the library's: a release bumps both.
[ "${debversion%-*}" = "$version" ] || {
	echo "deb: debian/changelog is at $debversion, include/psplice.h at $version" >&2
	exit 1
}

rm -rf "$out"
mkdir -p "$out/psplice-$version"
out=$(cd "$out" && pwd)
src=$out/psplice-$version
# Everything but what builds leave (the build directories, wherever OUT
# is) and the repository; debian/rules clean runs first anyway.
(cd "$top" && tar -cf - --exclude-vcs --exclude=./build --exclude=./build-asan \
	--exclude=./build-tsan --exclude=./build-fuzz --exclude=./build-cover \
	--exclude="./${out#"$top"/}" .) | tar -xf - -C "$src"

echo "deb: dpkg-buildpackage -us -uc -b in $src (log: $out/build.log)"
if ! (cd "$src" && dpkg-buildpackage -us -uc -b) >"$out/build.log" 2>&1; then
	tail -40 "$out/build.log" | sed 's/^/    /'
	echo "deb: FAILED: dpkg-buildpackage, see $out/build.log" >&2
	exit 1
fi
rm -rf "$src"
changes=$(ls "$out"/psplice_*.changes)
ls "$out"/*.deb | sed 's|.*/|deb: built |'

# Informational tags are shown, not fatal; overrides (debian/*.lintian-
# overrides) say why a tag does not apply.
echo "deb: lintian $(basename "$changes")"
lintian --display-info --fail-on error,warning "$changes" >"$out/lintian.log" 2>&1 && rc=0 || rc=$?
awk '{ print "    " $0 }' "$out/lintian.log"
if [ "$rc" -ne 0 ]; then
	echo "deb: FAILED: lintian reports errors or warnings (or failed: exit $rc)" >&2
	exit 1
fi
echo "deb: OK: $(ls "$out"/*.deb | wc -l) packages in $out, lintian clean of errors and warnings"
