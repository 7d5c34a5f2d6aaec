#!/bin/sh
# make check-abi: the symbols BUILD/libpsplice.so.N exports (nm -D
# --defined-only) against debian/libpsplice<N>.symbols, the list of the
# library's ABI, so that the ABI changes only by a deliberate edit of that
# file. Usage: abi-check.sh [BUILD]
#
# The rule, also printed when the check fails:
# - A symbol added: list it in the symbols file as "name@NODE VERSION",
#   VERSION the first release that has it; after 0.1.0, a new symbol goes in
#   a new version node of src/libpsplice.map (PSPLICE_x.y), also listed.
#   The soname stays.
# - A symbol gone, or moved to another version node: programs linked with it
#   no longer load. Keep it; or else bump the soname, which is
#   PSPLICE_VERSION_MAJOR in include/psplice.h (libpsplice.so.N), rename the
#   package libpsplice<N> (debian/control, debian/libpsplice<N>.symbols and
#   .install) and start the symbols file over from the new library.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

die() { echo "abi-check: FAILED: $*"; exit 1; }
rule_added="add each to the symbols file as ' name@NODE VERSION' (VERSION: the
  first release that has it; after 0.1.0 in a new version node of
  src/libpsplice.map); the soname stays."
rule_gone="a symbol that goes away breaks every program linked with it: keep it,
  or bump the soname (PSPLICE_VERSION_MAJOR in include/psplice.h), rename the
  package libpsplice<N> in debian/ and start its symbols file over."

lib=$build/libpsplice.so
[ -e "$lib" ] || die "$lib is not built (make lib)"
soname=$(readelf -d "$lib" | sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p')
[ -n "$soname" ] || die "$lib has no soname"
# Debian's name for the package of libpsplice.so.N is libpsplice<N>.
pkg=libpsplice${soname#libpsplice.so.}
symbols=$top/debian/$pkg.symbols
[ -r "$symbols" ] || die "no debian/$pkg.symbols for $soname: after a soname
  bump, rename the package libpsplice<N> in debian/ and start its symbols file
  over from the new library."
read -r file_soname file_pkg _ <"$symbols"
[ "$file_soname $file_pkg" = "$soname $pkg" ] ||
	die "debian/$pkg.symbols describes '$file_soname $file_pkg', not '$soname $pkg'"
grep -qx "Package: $pkg" "$top/debian/control" ||
	die "debian/control has no package $pkg for $soname"

# name@NODE for each symbol (a version node is NODE@NODE, as the symbols
# file writes it); a symbol without a version stays a bare name.
nm -D --defined-only "$lib" | awk '
	$2 == "A" { print $3 "@" $3; next }
	{ sub("@@", "@", $3); print $3 }' | sort >"$tmp/exported"
sed -n 's/^ \([^ ]*\) .*/\1/p' "$symbols" | sort >"$tmp/listed"
[ -s "$tmp/exported" ] || die "$lib exports nothing"

comm -13 "$tmp/listed" "$tmp/exported" >"$tmp/added"
comm -23 "$tmp/listed" "$tmp/exported" >"$tmp/gone"
if [ -s "$tmp/gone" ]; then
	echo "abi-check: FAILED: $soname no longer exports, as debian/$pkg.symbols lists:"
	sed 's/^/    /' "$tmp/gone"
	[ -s "$tmp/added" ] && { echo "  and exports instead:"; sed 's/^/    /' "$tmp/added"; }
	echo "  Rule: $rule_gone"
	exit 1
fi
if [ -s "$tmp/added" ]; then
	echo "abi-check: FAILED: $soname exports symbols debian/$pkg.symbols does not list:"
	sed 's/^/    /' "$tmp/added"
	echo "  Rule: $rule_added"
	exit 1
fi
echo "abi-check: OK: $soname exports the $(grep -vc '^PSPLICE_' "$tmp/exported")" \
	"symbols debian/$pkg.symbols lists, in $(grep -c '^PSPLICE_' "$tmp/exported")" \
	"version node(s)"
