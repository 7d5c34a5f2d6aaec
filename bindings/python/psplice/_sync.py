"""Range sync with the level it truly reached, and write-behind."""

import ctypes
import enum
import os
import threading

from ._lib import lib
from ._core import _error, fileno

SYNC_WAIT_BEFORE = 1
SYNC_WRITE = 2
SYNC_WAIT_AFTER = 4
SYNC_DATA = 8
SYNC_METADATA = 16


class Level(enum.IntEnum):
    """enum psplice_sync_level, weakest to strongest; str() gives its name."""

    NONE = 0
    SUBMITTED = 1
    WRITTEN = 2
    DATA_DURABLE = 3
    FILE_DURABLE = 4

    def __str__(self):
        return lib.psplice_sync_level_name(self.value).decode()


def sync(f, offset=0, nbytes=0, flags=SYNC_DATA):
    """Range sync, psplice_sync(3): the SYNC_* flags on [offset, offset +
    nbytes) of f (nbytes 0: to the end of the file; SYNC_DATA and
    SYNC_METADATA apply to the whole file). Returns the Level truly
    reached, which may be less than asked (Level.NONE on tmpfs); raises
    Error, whose level says what was reached before the failure. A
    writeback error seen once is raised again by every later call on the
    same fd."""
    level = ctypes.c_int(0)
    if lib.psplice_sync(fileno(f), offset, nbytes, flags, ctypes.byref(level)) < 0:
        e = _error(ctypes.get_errno())
        e.level = Level(level.value)
        raise e
    return Level(level.value)


class WriteBehind:
    """Write-behind for a long sequential writer, psplice_wb_new(3): tell
    it each write with wrote(offset, length), or write through write(); it
    writes back each full chunk and drops the one before it from the page
    cache (unless keep_cache), so dirty memory stays bounded. finish()
    writes back the rest and, with sync flags, syncs (psplice_sync); it
    returns the Level reached. Leaving a with block calls finish() with the
    sync flags given here; so does collecting an unfinished one, whose
    error, if any, goes to sys.unraisablehook."""

    def __init__(self, f, chunk=0, *, keep_cache=False, sync=0):
        self.file = f
        self.sync = sync
        self._fd = fileno(f)
        ptr = lib.psplice_wb_new(self._fd, chunk, 1 if keep_cache else 0)
        if not ptr:
            raise _error(ctypes.get_errno())
        # psplice_wb calls are not documented as safe from several threads
        # at once: this lock serializes them.
        self._lock = threading.Lock()
        self._ptr = ptr

    def _get(self):
        if self._ptr is None:
            raise ValueError("I/O operation on a finished WriteBehind")
        return self._ptr

    def wrote(self, offset, length):
        """After a write of [offset, offset + length). Raises Error with
        the first writeback error, again on every later call."""
        with self._lock:
            if lib.psplice_wb_wrote(self._get(), offset, length) < 0:
                raise _error(ctypes.get_errno())

    def write(self, data):
        """os.write(fd, data) and wrote() for the bytes written, where they
        landed (past the end for an O_APPEND file). Returns the count."""
        n = os.write(self._fd, data)
        end = os.lseek(self._fd, 0, os.SEEK_CUR)
        self.wrote(end - n, n)
        return n

    def finish(self, sync=None):
        """Write back the rest and sync with the flags sync (None: those
        given to the constructor; 0: none); frees the state. Returns the
        Level reached; raises Error with level on failure."""
        flags = self.sync if sync is None else sync
        level = ctypes.c_int(0)
        with self._lock:
            ptr, self._ptr = self._get(), None
            rc = lib.psplice_wb_finish(ptr, flags, ctypes.byref(level))
        if rc < 0:
            e = _error(ctypes.get_errno())
            e.level = Level(level.value)
            raise e
        return Level(level.value)

    @property
    def finished(self):
        return self._ptr is None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if not self.finished:
            self.finish()

    def __del__(self):
        if getattr(self, "_ptr", None) is not None:
            self.finish()
