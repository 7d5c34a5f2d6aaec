#!/bin/sh
# make check-rust: the Rust binding's tests against the library built in
# BUILD (the first argument), offline, with build artefacts in
# BUILD/rust-target (the tokio relay's in BUILD/rust-tokio-target). Ends
# with the one line tests/check.sh counts:
#   rust: N passed, N failed, N skipped
# summed from cargo's "test result:" lines (ignored tests count as skipped).
# The crates are tested with the newest cargo there is, and again with
# Debian's rustc, the version their rust-version says.
build=$(cd "${1:-build}" && pwd) || exit 1
here=$(cd "$(dirname "$0")" && pwd)
command -v cargo >/dev/null 2>&1 || PATH=$PATH:$HOME/.cargo/bin
if ! command -v cargo >/dev/null 2>&1; then
	echo "SKIP rust: no cargo on PATH or in ~/.cargo/bin"
	echo "rust: 0 passed, 0 failed, 1 skipped"
	exit 0
fi
log=$(mktemp)
trap 'rm -f "$log" "$log.rc"' EXIT
echo 0 >"$log.rc"
# cargo test in the package $1 with artefacts in $2; a failure is kept in
# $log.rc for the end.
run() {
	# The tests' scratch files live there; a run starts without the last one's.
	rm -rf "$2/tmp"
	{ cd "$1" && CARGO_TARGET_DIR=$2 PSPLICE_LIB_DIR=$build CARGO_NET_OFFLINE=true \
		cargo test --offline --no-fail-fast 2>&1 || echo 1 >"$log.rc"; } | tee -a "$log"
}
run "$here" "$build/rust-target"
# The tokio relay (tokio/) builds on Debian's packaged crates, which its
# .cargo/config.toml uses as the registry (tests/deps.sh check installs
# them). Without them it is skipped, and the core crate still tested.
skipped=0
if ls -d /usr/share/cargo/registry/tokio-1.* >/dev/null 2>&1; then
	run "$here/tokio" "$build/rust-tokio-target"
else
	echo "SKIP rust tokio: no /usr/share/cargo/registry/tokio-1.* (apt-get install librust-tokio-dev)"
	skipped=1
fi
# The oldest Rust the crates say they build with (rust-version) is
# Debian's: its rustc and cargo (/usr/bin) build and test them too, on a
# copy without the lock file a newer cargo wrote (its format is newer).
msrv=$(sed -n 's/^rust-version = "\(.*\)"$/\1/p' "$here/Cargo.toml")
if [ -x /usr/bin/cargo ] && /usr/bin/rustc --version 2>/dev/null | grep -q "^rustc $msrv[. ]"; then
	copy=$build/rust-msrv
	rm -rf "$copy"
	mkdir -p "$copy"
	(cd "$here" && tar --exclude=Cargo.lock --exclude=target -cf - .) | (cd "$copy" && tar -xf -)
	echo "rust $msrv: $(/usr/bin/rustc --version), $(/usr/bin/cargo --version)"
	PATH=/usr/bin:$PATH RUSTC=/usr/bin/rustc run "$copy" "$build/rust-msrv-target"
	if [ "$skipped" -eq 0 ]; then
		PATH=/usr/bin:$PATH RUSTC=/usr/bin/rustc run "$copy/tokio" "$build/rust-msrv-tokio-target"
	fi
else
	echo "SKIP rust $msrv: no Debian rustc $msrv in /usr/bin (apt-get install rustc cargo)"
	skipped=$((skipped + 1))
fi
rc=$(cat "$log.rc")
set -- $(awk '/^test result: / {
	for (i = 1; i <= NF; i++) {
		if ($(i) ~ /^passed;?$/) p += $(i - 1)
		if ($(i) ~ /^failed;?$/) f += $(i - 1)
		if ($(i) ~ /^ignored;?$/) s += $(i - 1)
	}
	n++ }
	END { printf "%d %d %d %d", p, f, s, n }' "$log")
p=$1 f=$2 s=$(($3 + skipped)) n=$4
# A build error runs no test: one failure, so that it is counted.
if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
echo "rust: $p passed, $f failed, $s skipped"
[ "$rc" -eq 0 ]
