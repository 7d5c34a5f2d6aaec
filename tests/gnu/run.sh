#!/bin/sh
# make check-gnu: GNU coreutils' own tests of cp, cat and tee, run once with
# GNU's programs and once with psplice's in their place, side by side.
# Usage: tests/gnu/run.sh BUILD
#
# Debian's coreutils source (apt-get source, from a deb-src line made of
# this machine's own Debian lines, in apt directories of our own so that
# the system's apt configuration is left alone) is fetched and built once
# into BUILD/gnu. Each test of tests/cp/*.sh, tests/misc/cat-*.sh and
# tests/misc/tee.sh then runs twice, as GNU's `make check` would run it
# (its TESTS_ENVIRONMENT, src/ first on PATH): in BUILD/gnu/tree-gnu,
# whose src/ links every program built, and in BUILD/gnu/tree-psplice,
# whose src/cp, src/cat and src/tee run BUILD/psplice instead. A test that
# passes with GNU's programs and not with psplice's is a failure unless
# tests/gnu/known.txt lists it, with the reason; a listed test that passes
# is named, so that the list gets shortened.
# GNU_TESTS (a list of test paths, e.g. tests/cp/same-file.sh) runs some;
# GNU_TEST_TIMEOUT (300) bounds each run of a test, in seconds;
# RUN_EXPENSIVE_TESTS=no skips GNU's expensive tests (below).
set -u
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$build" && pwd)
psplice=$build/psplice
B=$build/gnu
known=$here/known.txt
timeout_s=${GNU_TEST_TIMEOUT:-300}
# GNU's "expensive" tests too: tests/cp/link-heap.sh (the memory cp -al
# takes for 20,000 hard links) and tests/cp/perm.sh (every mode), a
# minute or two between them.
RUN_EXPENSIVE_TESTS=${RUN_EXPENSIVE_TESTS:-yes}
RUN_VERY_EXPENSIVE_TESTS=${RUN_VERY_EXPENSIVE_TESTS:-yes}
export RUN_EXPENSIVE_TESTS RUN_VERY_EXPENSIVE_TESTS
mkdir -p "$B"
# coreutils' make is a make of its own, not a part of ours: under make -j
# it would find our jobserver's flags without its fds, and build at -j1.
unset MAKEFLAGS MFLAGS MAKELEVEL

die() { echo "check-gnu: $*" >&2; echo "check-gnu: 0 passed, 1 failed, 0 skipped"; exit 1; }
now() { date +%s; }

# The deb-src lines: each of this machine's deb lines (one-line and deb822
# forms) for its own release's suite, made deb-src. Prints nothing when
# there is none (not a Debian machine, or no line for its release).
src_lines() {
	codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
	[ -n "$codename" ] || return 0
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -r "$f" ] || continue
		awk -v suite="$codename" '$1 == "deb" { i = 2
			if ($2 ~ /^\[/) while (i <= NF && $i !~ /\]$/) i++
			if ($2 ~ /^\[/) i++
			if ($(i + 1) == suite) { $1 = "deb-src"; print } }' "$f"
	done
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -r "$f" ] || continue
		awk -v suite="$codename" '
		function flush() {
			if (st != "" && (" " types " ") ~ / deb / && (" " suites " ") ~ (" " suite " ") &&
			    enabled != "no")
				printf "Types: deb-src\nSuites: %s%s\n\n", suite, st
			st = types = suites = enabled = ""
		}
		/^[ \t]*$/ { flush(); next }
		/^#/ { next }
		/^Types:/ { types = $0; sub(/^Types:[ \t]*/, "", types); next }
		/^Suites:/ { suites = $0; sub(/^Suites:[ \t]*/, "", suites); next }
		/^Enabled:/ { enabled = tolower($2) }
		{ st = st "\n" $0 }
		END { flush() }' "$f"
	done
}

# Debian's coreutils source into BUILD/gnu/coreutils-VERSION, by apt-get
# source with lists of our own (BUILD/gnu/apt).
fetch() {
	for d in "$B"/coreutils-*/; do
		[ -x "$d/configure" ] && [ -f "$d/tests/init.sh" ] && return 0
	done
	for c in apt-get dpkg-source; do
		command -v $c >/dev/null 2>&1 ||
			die "$c is missing: as root, apt-get install -y dpkg-dev (or make deps-gnu)"
	done
	a=$B/apt
	rm -rf "$a" && mkdir -p "$a/lists/partial" "$a/parts" "$a/cache"
	src_lines > "$a/parts/src.sources.tmp"
	# One-line entries go to a .list file, deb822 stanzas to a .sources one.
	grep '^deb-src ' "$a/parts/src.sources.tmp" > "$a/parts/src.list"
	grep -v '^deb-src ' "$a/parts/src.sources.tmp" > "$a/parts/src.sources"
	rm -f "$a/parts/src.sources.tmp"
	if ! grep -q . "$a/parts/src.list" "$a/parts/src.sources"; then
		echo "check-gnu: this machine has no Debian deb line for its release to make" \
			"a deb-src one of; add, e.g. in /etc/apt/sources.list.d/src.sources:" >&2
		printf '  Types: deb-src\n  URIs: http://deb.debian.org/debian\n  Suites: bookworm\n  Components: main\n' >&2
		die "then: cd $B && apt-get source coreutils"
	fi
	set -- -o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts="$a/parts" \
		-o Dir::State::Lists="$a/lists" -o Dir::Cache="$a/cache" -o APT::Sandbox::User=root
	[ "$(id -u)" = 0 ] || set -- "$@" -o Debug::NoLocking=1
	echo "check-gnu: fetching Debian's coreutils source (apt-get source coreutils)"
	apt-get "$@" -qq update > "$B/fetch.log" 2>&1 &&
		(cd "$B" && apt-get "$@" -q source coreutils) >> "$B/fetch.log" 2>&1 || {
		tail -20 "$B/fetch.log" >&2; die "apt-get source coreutils failed (log: $B/fetch.log)"; }
}

# configure and make, once: BUILD/gnu/built says it was done.
build_gnu() {
	cu=$(ls -d "$B"/coreutils-*/ | tail -n 1) && cu=${cu%/}
	# Built again when what configure finds (tests/deps.sh gnu) changed.
	stamp="$cu $(dpkg-query -W libacl1-dev libattr1-dev libselinux1-dev libcap-dev \
		libgmp-dev 2>/dev/null | tr '\n\t' '  ')"
	[ -f "$B/built" ] && [ "$(cat "$B/built")" = "$stamp" ] && return 0
	echo "check-gnu: building $(basename "$cu") (logs: $B/configure.log, $B/make.log)"
	# coreutils refuses to configure as root unless told: CI runs as root.
	(cd "$cu" && FORCE_UNSAFE_CONFIGURE=1 ./configure --quiet --disable-nls) \
		> "$B/configure.log" 2>&1 || { tail -20 "$B/configure.log" >&2; die "configure failed"; }
	make -C "$cu" -j"$(nproc 2>/dev/null || echo 2)" > "$B/make.log" 2>&1 ||
		{ tail -20 "$B/make.log" >&2; die "make failed"; }
	echo "$stamp" > "$B/built"
}

# What GNU's TESTS_ENVIRONMENT exports, from its own Makefile's variables.
gnu_env() {
	make -s -C "$cu" -f Makefile -f - print-gnu-env <<'EOF' > "$B/env.sh"
print-gnu-env:
	@printf "%s='%s'\n" VERSION '$(VERSION)' PACKAGE_VERSION '$(PACKAGE_VERSION)' \
		LOCALE_FR '$(LOCALE_FR)' LOCALE_FR_UTF8 '$(LOCALE_FR_UTF8)' \
		built_programs '$(built_programs) $(single_binary_progs)' host_os '$(host_os)' \
		host_triplet '$(host_triplet)' CC '$(CC)' AWK '$(AWK)' EGREP '$(EGREP)' \
		EXEEXT '$(EXEEXT)' PERL '$(PERL)' SHELL '$(PREFERABLY_POSIX_SHELL)' \
		CONFIG_HEADER '$(abs_top_builddir)/$(CONFIG_INCLUDE)'
EOF
}

# A program of src/ under psplice: a link named cp to psplice when psplice
# takes the name it is run by (as busybox does), else one to as-name
# (tests/gnu/as_name.c), which runs `psplice cp` and reads "psplice:" at
# the start of its messages as "cp:".
psplice_as() {
	if [ "$mode" = link ]; then ln -s "$psplice" "$1"; else ln -s "$B/as-name" "$1"; fi
}

# Does psplice, run as cp, act as cp? Then the trees link it by name. It
# is run as the tests run it, found by PATH: its argv[0] is "cp", which
# names it in its messages as in GNU's.
name_mode() {
	d=$B/name-probe
	rm -rf "$d" && mkdir -p "$d" && ln -s "$psplice" "$d/cp"
	if env PATH="$d:$PATH" cp 2>&1 < /dev/null | grep -q '^cp: missing file operand'; then
		mode=link
	else
		mode=as-name
	fi
	rm -rf "$d"
	[ "$mode" = link ] || ${CC:-cc} -std=gnu11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror \
		-DPSPLICE_BIN="\"$psplice\"" -o "$B/as-name" "$here/as_name.c" ||
		die "cannot build $B/as-name"
}

# BUILD/gnu/tree-gnu and tree-psplice: a src/ each, of links to the
# programs built, with cp, cat and tee psplice's in the second.
trees() {
	for t in gnu psplice; do
		rm -rf "$B/tree-$t" && mkdir -p "$B/tree-$t/src" || die "cannot make $B/tree-$t"
		for p in "$cu"/src/*; do
			case $p in *.o|*.a|*.c|*.h) continue ;; esac
			[ -f "$p" ] && [ -x "$p" ] && ln -s "$p" "$B/tree-$t/src/"
		done
	done
	for p in cp cat tee; do
		rm -f "$B/tree-psplice/src/$p"
		psplice_as "$B/tree-psplice/src/$p" $p
	done
}

# One test in one tree, as GNU's harness runs it; prints PASS, FAIL or
# SKIP, and keeps the test's output (traced, as VERBOSE=yes makes it) in
# BUILD/gnu/logs/TREE/NAME.log.
log_of() { echo "$B/logs/$1/$(echo "$2" | sed 's,^tests/,,; s,/,-,g').log"; }

run_one() {
	tree=$B/tree-$1 log=$(log_of "$1" "$2")
	(
		cd "$tree" || exit 99
		. "$cu/tests/lang-default"
		tmp__=${TMPDIR-/tmp}
		test -d "$tmp__" && test -w "$tmp__" || tmp__=.
		. "$cu/tests/envvar-check"
		TMPDIR=$tmp__
		. "$B/env.sh"
		export TMPDIR VERSION PACKAGE_VERSION LOCALE_FR LOCALE_FR_UTF8 built_programs \
			host_os host_triplet CC AWK EGREP EXEEXT PERL SHELL CONFIG_HEADER
		export abs_top_builddir="$tree" abs_top_srcdir="$cu" abs_srcdir="$cu" \
			srcdir="$cu" top_srcdir="$cu" fail=0 MAKE=make VERBOSE=yes \
			CU_TEST_NAME="$(basename "$cu"),$(echo "$2" | sed 's,/,-,g')"
		PATH=$tree/src:$PATH
		exec timeout -k 10 "$timeout_s" "$SHELL" "$cu/$2" 9>&2
	) > "$log" 2>&1 < /dev/null
	case $? in
	0) echo PASS ;;
	77) echo SKIP ;;
	124|137) echo "timeout after ${timeout_s}s" >> "$log"; echo FAIL ;;
	*) echo FAIL ;;
	esac
}

# Where a test failed: the lines of its trace before each "fail=1" (or,
# if it has none, its end), without the traces of nested calls.
why() {
	grep -v '^++' "$1" > "$1.why"
	if grep -q '^+ fail=1' "$1.why"; then
		grep -B 6 '^+ fail=1' "$1.why" | head -n 40
	else
		tail -n 20 "$1.why"
	fi | sed 's/^/    /'
	rm -f "$1.why"
}

# The reason tests/gnu/known.txt gives for a test, or nothing.
known_reason() {
	awk -v t="$1" '$1 == t { $1 = ""; sub(/^ +/, ""); print; exit }' "$known"
}

t0=$(now)
fetch
t1=$(now)
build_gnu
t2=$(now)
gnu_env || die "cannot read the test environment of $cu/Makefile"
[ -x "$psplice" ] || die "$psplice is not built (make tools)"
name_mode
trees
rm -rf "$B/logs" && mkdir -p "$B/logs/gnu" "$B/logs/psplice"
if [ -n "${GNU_TESTS:-}" ]; then tests=$GNU_TESTS; else
	tests=$(cd "$cu" && ls tests/cp/*.sh tests/misc/cat-*.sh tests/misc/tee.sh)
fi
echo "check-gnu: $(basename "$cu")'s tests, GNU's programs against $psplice"
if [ "$mode" = link ]; then
	echo "check-gnu: cp, cat and tee are links to psplice, which names itself by them"
else
	echo "check-gnu: cp, cat and tee run psplice cp|cat|tee and read \"psplice:\" at the" \
		"start of its messages as \"cp:\" (\"cat:\", \"tee:\"): tests/gnu/as_name.c"
fi
printf '%-5s %-8s %s\n' GNU psplice test
pass=0 fail=0 skip=0 nknown=0 gp=0 gf=0 gs=0 pp=0 pf=0 ps=0 failed= fixed=
for t in $tests; do
	s0=$(now)
	g=$(run_one gnu "$t")
	s1=$(now)
	p=$(run_one psplice "$t")
	secs="$((s1 - s0)) s, $(($(now) - s1)) s"
	case $g in PASS) gp=$((gp + 1)) ;; FAIL) gf=$((gf + 1)) ;; *) gs=$((gs + 1)) ;; esac
	case $p in PASS) pp=$((pp + 1)) ;; FAIL) pf=$((pf + 1)) ;; *) ps=$((ps + 1)) ;; esac
	reason=$(known_reason "$t") note=
	# psplice's result is GNU's or better: passed; neither can run the
	# test here (GNU skips it or fails it too, psplice no worse): skipped;
	# else a difference, known (skipped, with its reason) or new (failed).
	if [ "$p" = PASS ]; then
		pass=$((pass + 1))
		[ -z "$reason" ] || { note="passes now: remove it from tests/gnu/known.txt"; fixed="$fixed $t"; }
	elif [ "$g" != PASS ] && [ "$g$p" != SKIPFAIL ]; then
		skip=$((skip + 1))
		if [ "$g" = SKIP ]; then
			note=$(sed -n '/^+/d; s/^.*skipped test: //p' "$(log_of gnu "$t")" | head -n 1)
		else
			note="GNU fails here too"
		fi
	elif [ -n "$reason" ]; then
		skip=$((skip + 1)) nknown=$((nknown + 1)) note="known: $reason"
	else
		fail=$((fail + 1)) failed="$failed $t" note="NEW DIFFERENCE: not in tests/gnu/known.txt"
		printf '%-5s %-8s %s (%s)  (%s)\n' "$g" "$p" "$t" "$secs" "$note"
		why "$(log_of psplice "$t")"
		continue
	fi
	printf '%-5s %-8s %s (%s)%s\n' "$g" "$p" "$t" "$secs" "${note:+  ($note)}"
done
t3=$(now)
n=$(echo $tests | wc -w)
echo "GNU: $gp passed, $gf failed, $gs skipped; psplice: $pp passed, $pf failed, $ps skipped (of $n)"
echo "check-gnu: $nknown known differences (tests/gnu/known.txt), counted as skipped"
[ -z "$fixed" ] || echo "check-gnu: listed in tests/gnu/known.txt but passing now:$fixed"
[ -z "$failed" ] || echo "check-gnu: new differences:$failed (logs: $B/logs/psplice)"
echo "check-gnu: fetch $((t1 - t0)) s, build $((t2 - t1)) s, tests $((t3 - t2)) s"
echo "check-gnu: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
