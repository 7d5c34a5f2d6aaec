#!/bin/sh
# Bash completion (completion/psplice, or $PSPLICE_COMPLETION: an installed
# copy): every subcommand of cli/psplice.c and every option of each option
# table in cli/cmd_*.c or cli/*/cmd.c is offered, and nothing else;
# enumerated values, files, directories and unix: paths are completed. The
# completion function is driven as readline would: COMP_WORDS split at
# blanks and at '=' and ':' (the default COMP_WORDBREAKS), COMP_LINE,
# COMP_POINT, COMP_CWORD.
[ -z "${BASH_VERSION:-}" ] && command -v bash >/dev/null && exec bash "$0" "$@"
[ -n "${BASH_VERSION:-}" ] || { echo "SKIP: bash is not installed"; exit 77; }
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
comp=${PSPLICE_COMPLETION:-$top/completion/psplice}
lib=/usr/share/bash-completion/bash_completion
[ -r "$lib" ] || { echo "SKIP: bash-completion is not installed ($lib)"; exit 77; }
d=$(mktemp -d "${1:-/tmp}/t_cli_completion.XXXXXX") && d=$(cd "$d" && pwd) || exit 1
rp=
trap '[ -n "$rp" ] && kill $rp; rm -rf "$d"' EXIT

fail() { echo "t_cli_completion: line $1: $2" >&2; exit 1; }

. "$lib" || fail $LINENO "cannot source $lib"
. "$comp" || fail $LINENO "cannot source $comp"
[ "$(complete -p psplice 2>/dev/null)" = "complete -F _psplice psplice" ] ||
	fail $LINENO "$comp does not register _psplice for psplice"

# compopt only works under readline; remember what the function asked for.
compopt() { copts="$copts $*"; }

# complete LINE: complete the end of LINE; the replies, sorted, one a line,
# are in $got, compopt's options in $copts.
complete_line() {
	local line=$1 w="" c i
	COMP_WORDS=()
	for ((i = 0; i < ${#line}; i++)); do
		c=${line:i:1}
		case $c in
		' ') [ -n "$w" ] && COMP_WORDS+=("$w"); w= ;;
		[=:])
			# A run of break characters is a word of its own.
			if [[ -n $w && $w != *[!=:]* ]]; then w+=$c; else
				[ -n "$w" ] && COMP_WORDS+=("$w")
				w=$c
			fi
			;;
		*)
			[[ -n $w && $w != *[!=:]* ]] && { COMP_WORDS+=("$w"); w=; }
			w+=$c
			;;
		esac
	done
	COMP_WORDS+=("$w")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMP_LINE=$line COMP_POINT=${#line}
	COMPREPLY=() copts=
	_psplice psplice "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]:-}"
	got=$(printf '%s\n' "${COMPREPLY[@]}" | sed '/^$/d' | sort)
}
# want LINENO LINE WORD...: completing LINE offers exactly these words.
want() {
	local l=$1 line=$2 exp
	shift 2
	complete_line "$line"
	exp=$(printf '%s\n' "$@" | sed '/^$/d' | sort)
	[ "$got" = "$exp" ] ||
		fail "$l" "'$line<TAB>': want [$(echo $exp)], got [$(echo $got)]"
}
# has LINENO LINE WORD: completing LINE offers WORD among others.
has() {
	complete_line "$2"
	grep -qxF -- "$3" <<<"$got" || fail "$1" "'$2<TAB>': no '$3' in [$(echo $got)]"
}

# The subcommands: the command table of cli/psplice.c.
cmds=$(sed -n 's/^[[:space:]]*&cli_cmd_\([a-z]*\),.*/\1/p' "$top/cli/psplice.c")
[ -n "$cmds" ] || fail $LINENO "no command found in cli/psplice.c"
want $LINENO "psplice " $cmds --help --version
want $LINENO "psplice c" $(grep '^c' <<<"$cmds")
want $LINENO "psplice --v" --version
want $LINENO "psplice --version "
want $LINENO "psplice nosuch -"

# Each subcommand's options: its longopts table (required_argument as
# --NAME=, optional_argument as both --NAME and --NAME=) and the short
# options of its getopt_long string, with --help and --version.
for cmd in $cmds; do
	src=$top/cli/cmd_$cmd.c
	# A folder's command reads its options in options.c, if it has one.
	[ -r "$src" ] || src=$top/cli/$cmd/options.c
	[ -r "$src" ] || src=$top/cli/$cmd/cmd.c
	[ "$cmd" != bench ] || src=$top/bench/cmd_bench.c
	[ -r "$src" ] || fail $LINENO "no $src for command $cmd"
	long=$(sed -n 's/^[[:space:]]*{ "\([a-z0-9-]*\)", \([a-z_]*\),.*/\1 \2/p' "$src" |
		while read -r o kind; do
			case $kind in
			no_argument) echo "--$o" ;;
			required_argument) echo "--$o=" ;;
			optional_argument) echo "--$o"; echo "--$o=" ;;
			esac
		done)
	# A leading + (stop at the first operand) is not an option.
	short=$(sed -n 's/.*getopt_long(argc, argv, "+\{0,1\}\([^"]*\)".*/\1/p' "$src" |
		tr -d : | sed 's/./-&\n/g')
	[ -n "$long" ] || fail $LINENO "no option table found in $src"
	want $LINENO "psplice $cmd -" $long $short --help --version
	want $LINENO "psplice $cmd --" $long --help --version
done

# Enumerated values, after = or a blank.
want $LINENO "psplice cp --sync=" none data full
want $LINENO "psplice cp --sync d" data
want $LINENO "psplice exec --sync=" data full
# After --, the command is completed as a command, its words as its own.
has $LINENO "psplice exec --read-behind -- tru" true
want $LINENO "psplice cp -v --reflink=" auto always never
want $LINENO "psplice cp --reflink=n" never
want $LINENO "psplice cp --sparse=" auto always never
want $LINENO "psplice cp --backup=n" none numbered never nil
want $LINENO "psplice cp --preserve=mode,t" mode,timestamps
want $LINENO "psplice cp --no-preserve x" xattr
want $LINENO "psplice cp -S "
want $LINENO "psplice relay --copy=" splice readwrite
want $LINENO "psplice relay -j 2 --copy r" readwrite
want $LINENO "psplice tee --output-error=" warn warn-nopipe exit exit-nopipe
want $LINENO "psplice tee -a --output-error=e" exit exit-nopipe
groups=$(sed -n 's/^[[:space:]]*{ "\([a-z-]*\)", bench_.*/\1/p' "$top/bench/cmd_bench.c")
[ -n "$groups" ] || fail $LINENO "no group table found in bench/cmd_bench.c"
want $LINENO "psplice bench --only " $groups
want $LINENO "psplice bench --only=cat,pe" cat,per-call
want $LINENO "psplice bench --quick --only=mechanism,cp,s" mechanism,cp,scaling
# Numbers and sizes have nothing to offer.
want $LINENO "psplice cat --offset "
want $LINENO "psplice cat --length=1"
want $LINENO "psplice sync -r "
want $LINENO "psplice relay --idle-timeout="
want $LINENO "psplice relay --rate="
want $LINENO "psplice relay --metrics="
want $LINENO "psplice bench --secs "
# An option that takes a value does not get a space after it.
complete_line "psplice cp --syn"
[ "$got" = "--sync=" ] && [[ $copts == *nospace* ]] ||
	fail $LINENO "--sy: want --sync= without a space, got [$got], compopt [$copts]"

# Files, directories and addresses.
mkdir "$d/sub" "$d/sub2" && : >"$d/a.txt" && : >"$d/ab.img" && : >"$d/-dash" &&
	: >"$d/sub/in" || exit 1
want $LINENO "psplice cat $d/a" "$d/a.txt" "$d/ab.img"
has $LINENO "psplice exec -- cat $d/a." "$d/a.txt"
want $LINENO "psplice cat --verbose --offset 4K $d/ab" "$d/ab.img"
want $LINENO "psplice cp -r $d/s" "$d/sub" "$d/sub2"
want $LINENO "psplice cp $d/a.txt $d/sub/" "$d/sub/in"
want $LINENO "psplice cp --reflink $d/ab" "$d/ab.img"
want $LINENO "psplice cp -t $d/s" "$d/sub" "$d/sub2"
want $LINENO "psplice sync --data $d/a." "$d/a.txt"
want $LINENO "psplice bench --dir $d/" "$d/sub" "$d/sub2"
want $LINENO "psplice bench --out=$d/su" "$d/sub" "$d/sub2"
want $LINENO "psplice bench "
# After --, a word that starts with - is a file.
(cd "$d" && want $LINENO "psplice cat -- -" -dash) || exit 1
want $LINENO "psplice cat --to unix:$d/a" "$d/a.txt" "$d/ab.img"
want $LINENO "psplice relay unix:$d/sub/" "$d/sub/in"
want $LINENO "psplice relay --config $d/a." "$d/a.txt"
want $LINENO "psplice relay --config=$d/ab" "$d/ab.img"
want $LINENO "psplice cat --to=unix:$d/ab" "$d/ab.img"
want $LINENO "psplice tee --to unix:$d/ab" "$d/ab.img"
want $LINENO "psplice tee -p $d/a" "$d/a.txt" "$d/ab.img"
has $LINENO "psplice relay -- u" unix:
want $LINENO "psplice relay -v 127.0.0.1:8080 unix:$d/ab" "$d/ab.img"
# A rate is no operand: LISTEN, and so "-", comes next.
has $LINENO "psplice relay --rate 1M " -
has $LINENO "psplice relay --rate-total 1M " -
has $LINENO "psplice relay --metrics :9100 " -
has $LINENO "psplice relay u" unix:
has $LINENO "psplice cat --to=" unix:
want $LINENO "psplice relay 127.0.0.1:80"
# LISTEN "-" (socket activation) where LISTEN goes, and only there.
has $LINENO "psplice relay " -
has $LINENO "psplice relay -j 2 --copy splice " -
complete_line "psplice relay - "
! grep -qxF -- - <<<"$got" || fail $LINENO "'-' offered as TARGET: [$(echo $got)]"
complete_line "psplice relay -j 2 127.0.0.1:80 "
! grep -qxF -- - <<<"$got" || fail $LINENO "'-' offered as TARGET: [$(echo $got)]"
# relay --replace: the running relays' pids, not another process's.
if [ -x "${PSPLICE_BIN:-}" ] && command -v pgrep >/dev/null; then
	"$PSPLICE_BIN" relay -j 1 127.0.0.1:0 127.0.0.1:9 2>/dev/null &
	rp=$!
	for i in $(seq 100); do
		grep -q relay /proc/$rp/cmdline 2>/dev/null && break
		sleep 0.05
	done
	sleep 30 &
	sp=$!
	complete_line "psplice relay --replace="
	grep -qxF $rp <<<"$got" || fail $LINENO "relay $rp not offered: [$(echo $got)]"
	! grep -qxF $sp <<<"$got" || fail $LINENO "sleep $sp offered: [$(echo $got)]"
	complete_line "psplice relay --replace $rp"
	grep -qxF $rp <<<"$got" || fail $LINENO "relay $rp not offered: [$(echo $got)]"
	kill $sp
else
	echo "t_cli_completion: SKIP relay --replace: no PSPLICE_BIN or no pgrep"
fi
exit 0
