# What the t_cli*.sh tests share, sourced after the line that re-runs them
# under bash (dash has no $LINENO, by which failures name their line):
#   name=t_cli; . "$(dirname "$0")/cli-lib.sh"
# gives $P (the CLI), a scratch directory $d made in $1 and entered (removed
# at exit, after the test's own cli_cleanup), and the assertions below.
set -u
[ -n "${BASH_VERSION:-}" ] || LINENO=?
P=${PSPLICE_BIN:?PSPLICE_BIN is not set}
[ -x "$P" ] || { echo "$name: $P is not built" >&2; exit 1; }
# Python peers import the helpers beside the tests (relay_peers.py), found
# before the scratch directory is entered; no bytecode is written into the
# source tree.
PYTHONPATH=$(cd "$(dirname "$0")" && pwd)${PYTHONPATH:+:$PYTHONPATH}
PYTHONDONTWRITEBYTECODE=1
export PYTHONPATH PYTHONDONTWRITEBYTECODE
d=$(mktemp -d "${1:-/tmp}/$name.XXXXXX") && d=$(cd "$d" && pwd) || exit 1
# A test that leaves more behind (a mount, a process) redefines it.
cli_cleanup() { :; }
trap 'cli_cleanup; rm -rf "$d"' EXIT
trap 'exit 1' INT TERM
cd "$d" || exit 1
umask 022

fail() { echo "$name: line $1: $2" >&2; exit 1; }
# is LINE WANT GOT
is() { [ "$3" = "$2" ] || fail "$1" "want '$2', got '$3'"; }
# rc_is LINE WANT: the exit status of the last command, kept in $rc
rc_is() { [ "$rc" -eq "$2" ] || fail "$1" "exit status $rc, want $2 ($(cat err 2>/dev/null))"; }
# err_is LINE TEXT...: standard error was exactly these lines (none: empty)
err_is() {
	l=$1; shift
	if [ $# -eq 0 ]; then : >want; else printf '%s\n' "$@" >want; fi
	cmp -s want err || fail "$l" "stderr: want '$(cat want)', got '$(cat err)'"
}
# same LINE A B: the two files are byte-identical
same() { cmp -s "$2" "$3" || fail "$1" "$2 and $3 differ"; }
# A check this machine cannot make, said and passed over.
skip() { echo "$name: SKIP $*"; }
# For the processes a test starts (a test may define its own):
# wait_for FILE PATTERN [SECONDS]: whether the file has a line matching
# the extended regular expression (grep -E) within the seconds (20 unless
# said)
wait_for() {
	_i=0
	while ! grep -q -E "$2" "$1" 2>/dev/null; do
		_i=$((_i + 1))
		[ $_i -le $((${3:-20} * 10)) ] || return 1
		sleep 0.1
	done
}
# wait_count FILE PATTERN N: whether the file has N lines matching the
# extended regular expression within 20 s
wait_count() {
	_i=0
	while [ "$(grep -c -E "$2" "$1" 2>/dev/null)" != "$3" ]; do
		_i=$((_i + 1))
		[ $_i -le 200 ] || return 1
		sleep 0.1
	done
}
# served_by LOG NTH: the pid of the NTH relay that replaced the one whose
# -v log is LOG (a reload or --replace), empty when there is none yet
served_by() {
	sed -n 's/.*relay: process \([0-9]*\) serves in place of this one.*/\1/p' "$1" |
		sed -n "$2p"
}
# gone PID [SECONDS]: whether the process ended within the seconds (20
# unless said)
gone() {
	_i=0
	while kill -0 "$1" 2>/dev/null; do
		_i=$((_i + 1))
		[ $_i -le $((${2:-20} * 10)) ] || return 1
		sleep 0.1
	done
}
# port: a TCP port on 127.0.0.1 that was free a moment ago
port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
methods='(clone|copy_file_range|sendfile|splice|splice_pipe|readwrite)'
