"""psplice: move bytes between any two file descriptors with the least
copying Linux allows, over libpsplice (psplice(3)).

    import psplice
    with open("big.iso", "rb") as f, socket.create_connection(addr) as s:
        r = psplice.copy(f, s)
        print(r.out_bytes, r.method)     # e.g. 4700372992 sendfile

Failures raise psplice.Error, an OSError that also says the side that
failed ("in", "out" or None), the bytes taken and delivered, and the bytes
taken from a non-seekable input and not delivered (parked)."""

from ._lib import SONAME, TO_EOF, MAX_STEP
from ._core import (
    F_MOVE, F_NONBLOCK, F_MORE, F_NOFALLBACK, F_REFLINK, F_SIGPIPE_IGNORED, F_EINTR,
    F_REFLINK_ONLY, only, Method, Result, Error, copy, move, version, fileno,
)
from ._pair import PendingError, Pair, Tee, tee
from ._sync import (
    SYNC_WAIT_BEFORE, SYNC_WRITE, SYNC_WAIT_AFTER, SYNC_DATA, SYNC_METADATA,
    Level, sync, WriteBehind,
)

__all__ = [
    "SONAME", "TO_EOF", "MAX_STEP",
    "F_MOVE", "F_NONBLOCK", "F_MORE", "F_NOFALLBACK", "F_REFLINK",
    "F_SIGPIPE_IGNORED", "F_EINTR", "F_REFLINK_ONLY", "only", "Method", "Result",
    "Error", "PendingError", "copy", "move", "Pair", "Tee", "tee",
    "SYNC_WAIT_BEFORE", "SYNC_WRITE", "SYNC_WAIT_AFTER", "SYNC_DATA",
    "SYNC_METADATA", "Level", "sync", "WriteBehind", "version", "fileno",
]
