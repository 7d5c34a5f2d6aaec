#!/bin/sh
# psplice cp's option values as GNU cp 9.1 takes them: any unambiguous
# prefix of a name (--preserve=link,time, --no-preserve=mod, --backup=nu,
# --sparse=al, --reflink=al), an ambiguous one refused with GNU's words
# ("ambiguous argument 'a' for '--sparse'", the valid names, exit 1); and
# SELinux's options as GNU takes them on a kernel without it: -Z and
# --context accepted, --context=CTX ignored with a warning,
# --preserve=context refused before anything is copied, and
# --no-preserve=context accepted.
# $1 is the scratch directory, the CLI is $PSPLICE_BIN.
[ -z "${BASH_VERSION:-}" ] && command -v bash >/dev/null && exec bash "$0" "$@"
name=t_cli_cpargs; . "$(dirname "$0")/cli-lib.sh"

echo x >s; chmod 640 s; touch -d 2001-01-01 s
# --- prefixes -------------------------------------------------------------------
"$P" cp --preserve=link,time s c1 2>err; rc=$?
rc_is $LINENO 0; err_is $LINENO; is $LINENO 978307200 "$(stat -c %Y c1)"
"$P" cp -p --no-preserve=mod s c2 2>err; rc=$?
rc_is $LINENO 0; err_is $LINENO; is $LINENO "644 978307200" "$(stat -c '%a %Y' c2)"
for p in m t o x l a; do
	"$P" cp --preserve=$p s c.$p 2>err; rc=$?; rc_is $LINENO 0; err_is $LINENO
done
is $LINENO 640 "$(stat -c %a c.m)"
echo old >c3
"$P" cp --backup=nu s c3 2>err; rc=$?
rc_is $LINENO 0; is $LINENO old "$(cat c3.~1~)"
"$P" cp --backup=ne s c3 2>err; rc=$?
rc_is $LINENO 0; is $LINENO x "$(cat c3~)"
"$P" cp --sparse=al s c4 2>err; rc=$?; rc_is $LINENO 0; err_is $LINENO
"$P" cp --sparse=n --reflink=n s c5 2>err; rc=$?; rc_is $LINENO 0; err_is $LINENO
"$P" cp --reflink=au --sparse=au s c6 2>err; rc=$?; rc_is $LINENO 0; err_is $LINENO
# --reflink=al is --reflink=always: a clone or nothing.
"$P" cp --reflink=al s c7 2>err; rc=$?
if [ $rc -ne 0 ]; then
	err_is $LINENO "psplice: failed to clone 'c7' from 's': Operation not supported"
fi

# --- ambiguous, and unknown -------------------------------------------------------
"$P" cp --sparse=a s c8 2>err; rc=$?
rc_is $LINENO 1
err_is $LINENO "psplice: ambiguous argument 'a' for '--sparse'" "Valid arguments are:" \
	"  - 'never'" "  - 'auto'" "  - 'always'" "Try 'psplice cp --help' for more information."
"$P" cp --reflink=a s c8 2>err; rc=$?
rc_is $LINENO 1; is $LINENO "psplice: ambiguous argument 'a' for '--reflink'" "$(head -n 1 err)"
"$P" cp --backup=n s c3 2>err; rc=$?
rc_is $LINENO 1
err_is $LINENO "psplice: ambiguous argument 'n' for 'backup type'" "Valid arguments are:" \
	"  - 'none', 'off'" "  - 'simple', 'never'" "  - 'existing', 'nil'" "  - 'numbered', 't'" \
	"Try 'psplice cp --help' for more information."
"$P" cp --preserve=mode,q s c8 2>err; rc=$?
rc_is $LINENO 1; is $LINENO "psplice: invalid argument 'q' for '--preserve'" "$(head -n 1 err)"
[ ! -e c8 ] || fail $LINENO "c8 made"

# --- SELinux's options -------------------------------------------------------------
if [ -e /sys/fs/selinux/enforce ]; then
	skip "SELinux is enabled here: its options are not checked"
	exit 0
fi
for o in -Z --context --no-preserve=context "-a --no-preserve=context"; do
	rm -f c9; "$P" cp $o s c9 2>err; rc=$?
	rc_is $LINENO 0; err_is $LINENO; is $LINENO x "$(cat c9)"
done
rm -f c9; "$P" cp --context=system_u:object_r:tmp_t:s0 s c9 2>err; rc=$?
rc_is $LINENO 0; is $LINENO x "$(cat c9)"
err_is $LINENO "psplice: warning: ignoring --context; it requires an SELinux-enabled kernel"
for o in --preserve=context "-a --preserve=context" "-Z --preserve=context" --preserve=c; do
	rm -f c9; "$P" cp $o s c9 2>err; rc=$?
	rc_is $LINENO 1
	err_is $LINENO "psplice: cannot preserve security context without an SELinux-enabled kernel"
	[ ! -e c9 ] || fail $LINENO "$o: c9 made"
done
# -a's all includes the context, without a word.
rm -f c9; "$P" cp --preserve=all s c9 2>err; rc=$?; rc_is $LINENO 0; err_is $LINENO
exit 0
