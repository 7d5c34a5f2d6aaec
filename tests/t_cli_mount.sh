#!/bin/sh
# psplice cp and cat against destinations that really fail: a full tmpfs
# (ENOSPC mid-copy), a read-only bind mount (EROFS), and, with privileges
# dropped, a directory we may not write and a file we may not read (EACCES).
# Needs root; the mounts live in a private mount namespace, so that nothing
# is left mounted whatever happens to the test.
[ -z "${BASH_VERSION:-}" ] && command -v bash >/dev/null && exec bash "$0" "$@"
set -u
P=${PSPLICE_BIN:?PSPLICE_BIN is not set}
[ -x "$P" ] || { echo "t_cli_mount: $P is not built" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root to mount"; exit 77; }
if [ -z "${T_CLI_MOUNT_NS:-}" ]; then
	unshare -m --propagation private true 2>/dev/null ||
		{ echo "SKIP: cannot make a mount namespace (unshare -m)"; exit 77; }
	T_CLI_MOUNT_NS=1 exec unshare -m --propagation private "${BASH:-sh}" "$0" "$@"
fi
name=t_cli_mount; . "$(dirname "$0")/cli-lib.sh"
cli_cleanup() { umount -l "$d/full" "$d/ro" 2>/dev/null; }

head -c 2097152 /dev/urandom >big
head -c 1000 /dev/urandom >small
mkdir full ro
mount -t tmpfs -o size=1m tmpfs full || { echo "SKIP: cannot mount a tmpfs"; exit 77; }

# ENOSPC part way: the error is the output's, a DEST cp created is removed
"$P" cp big full/new 2>err; rc=$?
rc_is $LINENO 1
err_is $LINENO "psplice: error writing 'full/new': No space left on device"
[ ! -e full/new ] || fail $LINENO "the half-written full/new was left behind"
# a DEST that existed is the user's: it stays, as far as it was written
cp small full/old
"$P" cp big full/old 2>err; rc=$?
rc_is $LINENO 1
err_is $LINENO "psplice: error writing 'full/old': No space left on device"
[ -e full/old ] || fail $LINENO "an existing DEST was removed"
rm -f full/old
# cat stops at the first write error, whichever file it was copying
"$P" cat small big small >full/cat 2>err; rc=$?
rc_is $LINENO 1
err_is $LINENO "psplice: error writing 'standard output': No space left on device"
rm -f full/cat
# and a copy that fits still works there
"$P" cp small full/ 2>err; rc=$?
rc_is $LINENO 0; same $LINENO small full/small

# a read-only filesystem: nothing can be created or opened for writing
cp small ro/existing
mount --bind ro ro && mount -o remount,ro,bind ro ||
	fail $LINENO "cannot make a read-only bind mount"
"$P" cp small ro/ 2>err; rc=$?
rc_is $LINENO 1
err_is $LINENO "psplice: cannot create regular file 'ro/small': Read-only file system"
"$P" cp big ro/existing 2>err; rc=$?
rc_is $LINENO 1; same $LINENO small ro/existing
err_is $LINENO "psplice: cannot create regular file 'ro/existing': Read-only file system"
"$P" cat ro/existing >o 2>err; rc=$?
rc_is $LINENO 0; same $LINENO small o

# permissions, as a user without root's override
if command -v setpriv >/dev/null 2>&1 &&
	setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null; then
	as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
	mkdir locked && chmod 555 locked
	cp small secret && chmod 600 secret
	chmod 755 "$d"
	if as_nobody test -r small; then
		as_nobody "$P" cp small locked/ 2>err; rc=$?
		rc_is $LINENO 1
		err_is $LINENO "psplice: cannot create regular file 'locked/small': Permission denied"
		as_nobody "$P" cat secret small >o 2>err; rc=$?
		rc_is $LINENO 1
		err_is $LINENO "psplice: cannot open 'secret': Permission denied"
		same $LINENO small o
	fi
fi
exit 0
