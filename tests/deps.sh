#!/bin/sh
# Install the Debian packages a target needs (as root), or print the exact
# apt-get line. Usage: deps.sh demo|check|musl|bench|deb|gnu
need=
want() { command -v "$1" >/dev/null 2>&1 || need="$need $2"; }
want cc gcc
want make make
want timeout coreutils
want awk mawk
case $1 in
check)
	want g++ g++
	want valgrind valgrind
	want pkg-config pkg-config
	want mkfs.xfs xfsprogs
	want losetup mount
	want filefrag e2fsprogs
	# t_fault_ext4 makes an ext4 on a loop image; make stress mounts a
	# tmpfs in a mount namespace of its own (unshare).
	want mkfs.ext4 e2fsprogs
	want unshare util-linux
	want curl curl
	want iperf3 iperf3
	want python3 python3
	# make check-python runs the Python binding's tests with Debian's pytest,
	# and pip-installs the package into a new virtualenv, offline, with
	# Debian's wheel.
	want pytest-3 python3-pytest
	/usr/bin/python3 -c 'import ensurepip' 2>/dev/null || need="$need python3-venv"
	ls /usr/share/python-wheels/wheel-*.whl >/dev/null 2>&1 || need="$need python3-wheel-whl"
	# make check-rust builds the tokio relay on Debian's packaged crates,
	# used as an offline registry (bindings/rust/tokio/.cargo/config.toml).
	ls -d /usr/share/cargo/registry/tokio-1.* >/dev/null 2>&1 ||
		need="$need librust-tokio-dev"
	# ... and again with Debian's rustc, the crates' rust-version.
	[ -x /usr/bin/rustc ] && [ -x /usr/bin/cargo ] || need="$need rustc cargo"
	# t_cli_relay_slow.sh counts the relay's read/write calls; t_cli_exec.sh
	# checks the preload library makes none of its own when off, and runs
	# tar under psplice exec.
	want strace strace
	want tar tar
	# t_cli_relay_proxy.sh puts HAProxy behind and in front of the relay,
	# the PROXY protocol's reference peer.
	want haproxy haproxy
	# t_cli_relay_metrics.sh has Prometheus scrape the relay's --metrics,
	# and its promtool lint the exposition.
	want prometheus prometheus
	want promtool prometheus
	# t_cli_relay_act.sh starts the relay as systemd would, socket-activated.
	want systemd-socket-activate systemd
	# t_cli_exec.sh links a static program (cc -static wants libc.a).
	[ -e "$(gcc -print-file-name=libc.a)" ] || need="$need libc6-dev"
	# t_cli_cptree.sh and t_cli_cpopts.sh compare ACLs and extended
	# attributes of copies.
	want setfacl acl
	want setfattr attr
	# t_cli_completion.sh drives the completion with bash-completion's helpers.
	[ -r /usr/share/bash-completion/bash_completion ] || need="$need bash-completion"
	# The fuzzers: clang's libFuzzer (libclang-rt-14-dev) and llvm-cov.
	want clang clang
	want llvm-cov-14 llvm-14
	command -v clang >/dev/null 2>&1 &&
		[ -e "$(clang -print-resource-dir)/lib/linux/libclang_rt.fuzzer-x86_64.a" ] ||
		need="$need libclang-rt-14-dev"
	# gcc's sanitizer runtimes come with gcc; make sure they are there.
	[ -e "$(gcc -print-file-name=libasan.so)" ] || need="$need libasan8"
	[ -e "$(gcc -print-file-name=libtsan.so)" ] || need="$need libtsan2"
	[ -e "$(gcc -print-file-name=libubsan.so)" ] || need="$need libubsan1"
	# make check-musl builds with musl-gcc.
	want musl-gcc musl-tools
	;;
musl)
	# make check-musl: musl-gcc, and the kernel's headers it is given.
	want musl-gcc musl-tools
	[ -d /usr/include/linux ] && [ -d "/usr/include/$(gcc -print-multiarch)/asm" ] ||
		need="$need linux-libc-dev"
	;;
bench)
	# The peers psplice bench compares with.
	want pv pv
	want nocache nocache
	# The exec group runs rsync plain, under nocache and under psplice exec.
	want rsync rsync
	want socat socat
	want haproxy haproxy
	want iperf3 iperf3
	want mkfs.xfs xfsprogs
	want losetup mount
	# The requests group: real servers, their load generators, and strace
	# to count a forwarder's system calls.
	want redis-server redis-server
	want redis-benchmark redis-tools
	want nginx nginx-light
	want wrk wrk
	want strace strace
	;;
deb)
	# make deb and make deb-check. dpkg-checkbuilddeps wants build-essential;
	# no fakeroot: debian/control says Rules-Requires-Root: no.
	[ "$(dpkg-query -W -f='${db:Status-Status}' build-essential 2>/dev/null)" = installed ] ||
		need="$need build-essential"
	want dpkg-buildpackage dpkg-dev
	want dh debhelper
	[ -e /usr/share/perl5/Debian/Debhelper/Sequence/python3.pm ] || need="$need dh-python"
	want lintian lintian
	want pkg-config pkg-config
	[ -r /usr/share/bash-completion/bash_completion ] || need="$need bash-completion"
	;;
gnu)
	# make check-gnu: apt-get source unpacks with dpkg-source; coreutils
	# is built with what Debian builds it with (ACLs, xattrs, SELinux,
	# GMP) and libcap (tests/cp/capability.sh); GNU's tests use the
	# rest.
	want dpkg-source dpkg-dev
	for h in acl/libacl.h:libacl1-dev attr/libattr.h:libattr1-dev gmp.h:libgmp-dev \
			selinux/selinux.h:libselinux1-dev sys/capability.h:libcap-dev; do
		[ -e "/usr/include/${h%:*}" ] ||
			[ -e "/usr/include/$(gcc -print-multiarch 2>/dev/null)/${h%:*}" ] ||
			need="$need ${h#*:}"
	done
	want perl perl
	want python3 python3
	want setfacl acl
	want setfattr attr
	want setcap libcap2-bin
	want filefrag e2fsprogs
	want mkfs.ext2 e2fsprogs
	want valgrind valgrind
	;;
esac
[ -z "$need" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
	echo "installing:$need"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null && apt-get install -y -qq $need >/dev/null || {
		echo "apt-get install failed:$need" >&2; exit 1; }
else
	echo "missing packages; run as root:" >&2
	echo "  apt-get install -y$need" >&2
	exit 1
fi
