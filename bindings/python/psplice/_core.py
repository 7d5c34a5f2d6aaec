"""The psplice calls, over the C library's results, without losing any of it.

Every call fills a struct psplice_result and copies what it needs out of it
before returning: the parked bytes the C result points to are valid only
until the thread's next psplice call, so they are copied into a bytes object
at once. ctypes releases the GIL around each C call, and the C library keeps
its last result per thread, which is the calling Python thread's.
"""

import ctypes
import enum
import errno as _errno
import os

from ._lib import lib, CResult, TO_EOF, MAX_STEP

F_MOVE = 0x01
F_NONBLOCK = 0x02
F_MORE = 0x04
F_NOFALLBACK = 0x100
F_REFLINK = 0x200
F_SIGPIPE_IGNORED = 0x400
F_EINTR = 0x800


class Method(enum.IntEnum):
    """enum psplice_method; str() gives the C library's name for it."""

    NONE = 0
    CLONE = 1
    COPY_FILE_RANGE = 2
    SENDFILE = 3
    SPLICE = 4
    SPLICE_PIPE = 5
    VMSPLICE = 6
    READWRITE = 7

    def __str__(self):
        return lib.psplice_method_name(self.value).decode()


def only(method):
    """PSPLICE_F_ONLY(method): use exactly that mechanism."""
    return (int(method) & 0xF) << 12


F_REFLINK_ONLY = F_REFLINK | only(Method.CLONE)
_SIDES = {1: "in", 2: "out"}


_METHODS = tuple(Method)


def _method(value):
    # Indexing, not Method(value): the enum's lookup costs a microsecond
    # on every move. A value a newer library adds stays an int.
    return _METHODS[value] if 0 <= value < len(_METHODS) else value


class Result:
    """What a call did: in_bytes taken from the input, out_bytes delivered,
    method, and, for a step that delivered some bytes and then failed with
    nothing parked (as write(2) returns a short count), error (an errno, 0 if
    none) and side. offset_in and offset_out are the offsets after the call,
    advanced as the C library advances them, or None where none was given."""

    __slots__ = ("in_bytes", "out_bytes", "method", "error", "side",
                 "offset_in", "offset_out", "sinks")

    __module__ = "psplice"

    def __init__(self, c, offset_in=None, offset_out=None, sinks=None):
        self.in_bytes = c.in_bytes
        self.out_bytes = c.out_bytes
        self.method = _method(c.method)
        self.error = c.error
        self.side = _SIDES.get(c.side)
        self.offset_in = offset_in
        self.offset_out = offset_out
        # A tee's: the result of each sink, in the order of the sinks.
        self.sinks = sinks

    def __repr__(self):
        extra = ""
        if self.error:
            extra = f", error={_errno.errorcode.get(self.error, self.error)}, side={self.side!r}"
        return (f"Result(in_bytes={self.in_bytes}, out_bytes={self.out_bytes}, "
                f"method={self.method!s}{extra})")


class Error(OSError):
    """A psplice call failed. errno and strerror as for any OSError; side is
    "in", "out" or None (the call itself was refused); in_bytes and out_bytes
    count what was taken and delivered before the failure; parked holds the
    bytes taken from a non-seekable input and not delivered (b"" if none),
    which only the caller can now deliver. offset_in and offset_out are the
    offsets after the call (None where none was given); method the path that
    delivered the last bytes. A tee's failure also has sinks, the per-sink
    results; a sync's has level, what was achieved. pending is set when
    the error left a with block whose Pair (or Tee) still held bytes: the
    bytes (for a Tee, a list of bytes per sink) that close() handed back.

    The instance is also of the built-in OSError subclass of its errno
    (BlockingIOError for EAGAIN, BrokenPipeError for EPIPE, ...)."""

    __module__ = "psplice"
    side = None
    in_bytes = 0
    out_bytes = 0
    parked = b""
    method = Method.NONE
    offset_in = None
    offset_out = None
    sinks = None
    level = None
    pending = None


_error_classes = {}


def _error_class(err):
    """Error, mixed with the built-in subclass OSError itself picks for err,
    so that `except BlockingIOError` sees a psplice EAGAIN too."""
    base = type(OSError(err, ""))
    if base is OSError:
        return Error
    cls = _error_classes.get(base)
    if cls is None:
        cls = type("Error", (Error, base), {"__module__": Error.__module__,
                                            "__qualname__": "Error"})
        _error_classes[base] = cls
    return cls


def _error(err, c=None, offset_in=None, offset_out=None):
    """An Error for errno err (the result's own error if errno was lost),
    with what the C result c says about the failure."""
    if not err and c is not None:
        err = c.error
    e = _error_class(err)(err, os.strerror(err))
    if c is not None:
        e.side = _SIDES.get(c.side)
        e.in_bytes = c.in_bytes
        e.out_bytes = c.out_bytes
        e.method = _method(c.method)
        if c.parked and c.parked_len:
            e.parked = ctypes.string_at(c.parked, c.parked_len)
    e.offset_in = offset_in
    e.offset_out = offset_out
    return e


def _last_error():
    """The error of a call that reports through errno and psplice_last()."""
    return _error(ctypes.get_errno(), lib.psplice_last().contents)


def fileno(f):
    """An fd, or an object's fileno()."""
    if isinstance(f, int) and not isinstance(f, bool):
        return f
    try:
        fn = f.fileno
    except AttributeError:
        raise TypeError(f"expected a file descriptor or an object with fileno(), "
                        f"not {type(f).__name__}") from None
    return fn()


def _offset(value):
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError("an offset is an int or None")
    if not -2**63 <= value < 2**63:
        # The C library refuses a negative offset itself (EINVAL with its
        # side); beyond int64_t no C call can carry it.
        raise OverflowError("offset out of range of int64_t")
    return ctypes.c_int64(value)


def _ref(off):
    return None if off is None else ctypes.byref(off)


def _val(off):
    return None if off is None else off.value


def _length(length, none_means, most):
    if length is None:
        return none_means
    if length < 0:
        raise ValueError("length must be 0 or more")
    # The C library cuts a step's length to what one system call moves;
    # only a length size_t or uint64_t cannot carry needs cutting here.
    return min(length, most)


def _run(call, offset_in, offset_out, length, flags):
    """call(off_in, off_out, length, flags, res) is one of the C calls that
    take two optional offsets and fill a result: a negative return is a
    failure, whose errno, side, counts and parked bytes the Error carries.

    A step interrupted by a signal before it took or delivered anything is
    made again, as Python retries its own system calls (PEP 475): the
    interpreter runs its signal handlers on the way back into the loop, and
    one that raises (KeyboardInterrupt) ends the call there. An EINTR that
    came with bytes taken is raised, so that the counts and the bytes reach
    the caller."""
    oi, oo = _offset(offset_in), _offset(offset_out)
    while True:
        c = CResult()
        if call(_ref(oi), _ref(oo), length, flags, ctypes.byref(c)) >= 0:
            return Result(c, _val(oi), _val(oo))
        err = ctypes.get_errno()
        if err != _errno.EINTR or c.in_bytes or c.out_bytes or c.parked_len:
            raise _error(err, c, _val(oi), _val(oo))


def _run_copy(call, offset_in, offset_out, length, flags):
    """_run for the C copies, which are asked to return on EINTR
    (PSPLICE_F_EINTR) with their totals: the interpreter then runs its
    signal handlers, as it does for its own system calls (PEP 475), and one
    that raises (Ctrl-C's KeyboardInterrupt) ends the copy there; otherwise
    the copy goes on from where it stopped, and the Result has the totals of
    every round. An EINTR that came with parked bytes is raised, so that
    they reach the caller."""
    oi, oo = _offset(offset_in), _offset(offset_out)
    took = gave = 0
    while True:
        c = CResult()
        rc = call(_ref(oi), _ref(oo), length, flags | F_EINTR, ctypes.byref(c))
        err = ctypes.get_errno() if rc < 0 else 0
        took += c.in_bytes
        gave += c.out_bytes
        if rc >= 0 or err != _errno.EINTR or c.parked_len:
            c.in_bytes, c.out_bytes = took, gave
            if rc >= 0:
                return Result(c, _val(oi), _val(oo))
            raise _error(err, c, _val(oi), _val(oo))
        if length != TO_EOF:
            length -= c.out_bytes


def copy(src, dst, length=None, *, offset_in=None, offset_out=None, flags=0):
    """Copy length bytes (None: to the end of input) from src to dst,
    retrying short transfers: psplice_copy(3). src and dst are fds or
    objects with fileno(). A signal that interrupts the copy runs its Python
    handler, and the copy goes on unless the handler raised (Ctrl-C). An
    offset makes that side positional: the file position stays untouched,
    and the Result's offset_in or offset_out (or the Error's) is that offset
    advanced past the bytes delivered. Returns a Result; compare out_bytes
    with length to tell the end of input from the length reached. Raises
    Error."""
    fi, fo = fileno(src), fileno(dst)
    return _run_copy(lambda oi, oo, *rest: lib.psplice_copy(fi, oi, fo, oo, *rest),
                     offset_in, offset_out, _length(length, TO_EOF, TO_EOF), flags)


def move(src, dst, length=None, *, offset_in=None, offset_out=None, flags=0):
    """One step of up to length bytes (None: as many as one step moves):
    psplice_ex(3). Returns a Result, whose out_bytes is 0 at the end of
    input; a step that delivered some bytes and then failed with nothing
    parked returns them, with the error in the Result's error and side (the
    next call meets it again). Raises Error, with any parked bytes, when the
    step failed or could not deliver bytes it took: with F_NONBLOCK, EAGAIN
    and side name the descriptor to wait for."""
    fi, fo = fileno(src), fileno(dst)
    return _run(lambda oi, oo, *rest: lib.psplice_ex(fi, oi, fo, oo, *rest),
                offset_in, offset_out, _length(length, MAX_STEP, 2**64 - 1), flags)

def version():
    """The running library's version, "MAJOR.MINOR.PATCH"."""
    return lib.psplice_version().decode()
