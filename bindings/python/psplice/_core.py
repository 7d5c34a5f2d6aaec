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
import threading

from ._lib import lib, CResult, TO_EOF, MAX_STEP

F_MOVE = 0x01
F_NONBLOCK = 0x02
F_MORE = 0x04
F_NOFALLBACK = 0x100
F_REFLINK = 0x200
F_SIGPIPE_IGNORED = 0x400


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


_SIDES = {1: "in", 2: "out"}


def _method(value):
    try:
        return Method(value)
    except ValueError:
        return value


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


def copy(src, dst, length=None, *, offset_in=None, offset_out=None, flags=0):
    """Copy length bytes (None: to the end of input) from src to dst,
    retrying short transfers and EINTR: psplice_copy(3). src and dst are fds
    or objects with fileno(). An offset makes that side positional: the file
    position stays untouched, and the Result's offset_in or offset_out (or
    the Error's) is that offset advanced past the bytes delivered. Returns a
    Result; compare out_bytes with length to tell the end of input from the
    length reached. Raises Error."""
    fi, fo = fileno(src), fileno(dst)
    return _run(lambda oi, oo, *rest: lib.psplice_copy(fi, oi, fo, oo, *rest),
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


class PendingError(Error):
    """A Pair or Tee was closed by a with block, or collected, while it
    still held bytes it had taken and not delivered. close() returns such
    bytes; this error carries them when no one else could: pending (and
    parked) is the bytes for a Pair, a list of bytes, one per sink, for a
    Tee. A with block left by a psplice.Error gives them to that error's
    pending instead, so that the error that stopped the work is the one
    raised."""

    __module__ = "psplice"

    def __init__(self, what, parked):
        super().__init__(f"{what} closed with undelivered bytes, in parked")
        self.side = "out"
        self.parked = self.pending = parked
        if isinstance(parked, bytes):
            self.in_bytes = len(parked)


def _hand_back(what, held, exc):
    """What a with block does with the bytes close() handed back."""
    if isinstance(exc, Error) and exc.pending is None:
        exc.pending = held
    else:
        raise PendingError(what, held)


class _Handle:
    """A C object's pointer, kept from being freed while another thread is
    inside a call on it: close() waits for those calls to end, and calls
    that start after it see the object closed."""

    def __init__(self, ptr):
        self._ptr = ptr
        self._users = 0
        self._cond = threading.Condition()

    def acquire(self):
        with self._cond:
            if self._ptr is None:
                raise ValueError("I/O operation on a closed psplice object")
            self._users += 1
            return self._ptr

    def release(self):
        with self._cond:
            self._users -= 1
            if not self._users:
                self._cond.notify_all()

    def detach(self):
        """The pointer, once no call uses it; None if already detached."""
        with self._cond:
            ptr, self._ptr = self._ptr, None
            while self._users:
                self._cond.wait()
            return ptr

    @property
    def closed(self):
        return self._ptr is None


def _take_all(pending, take):
    """Every pending byte, through take(buf, len) until pending() is 0."""
    chunks = []
    while True:
        n = pending()
        if not n:
            return b"".join(chunks)
        buf = ctypes.create_string_buffer(n)
        got = take(buf, n)
        if not got:
            raise RuntimeError("psplice: pending bytes the library would not hand back")
        chunks.append(buf.raw[:got])


def _take_some(n, take):
    """Up to n pending bytes, through take(buf, len)."""
    if n < 0:
        raise ValueError("n must be 0 or more")
    buf = ctypes.create_string_buffer(n)
    got = take(buf, n)
    return buf.raw[:got]


class Pair:
    """A prepared pair, psplice_pair_new(3): src and dst classified once for
    many moves. A pair whose input cannot seek never parks: bytes it took
    and could not deliver stay pending, and its next move or copy delivers
    them first (an EAGAIN with nothing of them delivered says side "out").
    pending and take() show and hand back those bytes.

    close() hands back whatever is still pending, as bytes (b"" when
    nothing): it never drops them. Leaving a with block, or collecting an
    unclosed pair, with bytes pending raises PendingError carrying them
    (from __del__, through sys.unraisablehook). The fds stay open; the pair
    keeps src and dst referenced so that a file object is not collected
    under it."""

    def __init__(self, src, dst, flags=0):
        self.src, self.dst = src, dst
        ptr = lib.psplice_pair_new(fileno(src), fileno(dst), flags)
        if not ptr:
            raise _last_error()
        self._h = _Handle(ptr)

    def _call(self, fn, offset_in, offset_out, length, flags):
        p = self._h.acquire()
        try:
            return _run(lambda oi, oo, *rest: fn(p, oi, oo, *rest),
                        offset_in, offset_out, length, flags)
        finally:
            self._h.release()

    def move(self, length=None, *, offset_in=None, offset_out=None, flags=0):
        """One step, as move() but on the pair: psplice_pair_move(3)."""
        return self._call(lib.psplice_pair_move, offset_in, offset_out,
                          _length(length, MAX_STEP, 2**64 - 1), flags)

    def copy(self, length=None, *, offset_in=None, offset_out=None, flags=0):
        """A copy, as copy() but on the pair: psplice_pair_copy(3). Pending
        bytes go first and count in out_bytes and toward length."""
        return self._call(lib.psplice_pair_copy, offset_in, offset_out,
                          _length(length, TO_EOF, TO_EOF), flags)

    @property
    def pending(self):
        """The bytes the pair holds, taken and not yet delivered."""
        p = self._h.acquire()
        try:
            return lib.psplice_pair_pending(p)
        finally:
            self._h.release()

    def take(self, n=None):
        """Hand back up to n pending bytes (None: all), the oldest first:
        they are no longer the pair's."""
        p = self._h.acquire()
        try:
            if n is None:
                return _take_all(lambda: lib.psplice_pair_pending(p),
                                 lambda buf, k: lib.psplice_pair_take(p, buf, k))
            return _take_some(n, lambda buf, k: lib.psplice_pair_take(p, buf, k))
        finally:
            self._h.release()

    @property
    def closed(self):
        return self._h.closed

    def close(self):
        """Free the pair; returns the bytes it still held (b"" if none)."""
        p = self._h.detach()
        if p is None:
            return b""
        try:
            return _take_all(lambda: lib.psplice_pair_pending(p),
                             lambda buf, k: lib.psplice_pair_take(p, buf, k))
        finally:
            lib.psplice_pair_free(p)

    def __enter__(self):
        return self

    def __exit__(self, typ, exc, tb):
        data = self.close()
        if data:
            _hand_back("psplice.Pair", data, exc)

    def __del__(self):
        if getattr(self, "_h", None) is not None and not self._h.closed:
            data = self.close()
            if data:
                raise PendingError("psplice.Pair", data)


class Tee:
    """One input to many sinks through tee(2): psplice_tee_new(3). Each
    move or copy returns a Result for the input (in_bytes taken, out_bytes
    the fewest delivered to a sink) whose sinks is the Result of each sink;
    a sink that failed is out, and says its error in its Result, while the
    others go on. With F_NONBLOCK a sink that cannot keep up falls behind
    by up to hold_max bytes, held for it; pending(i) and take(i) show and
    hand back what is held for sink i.

    close() takes what is still held and returns it, a list of bytes, one
    per sink: the C library would drop it. Leaving a with block, or
    collecting an unclosed tee, with bytes held raises PendingError whose
    parked is that list."""

    def __init__(self, src, sinks, hold_max=0, flags=0):
        self.src, self.sinks = src, list(sinks)
        n = len(self.sinks)
        fds = (ctypes.c_int * max(n, 1))(*[fileno(s) for s in self.sinks])
        ptr = lib.psplice_tee_new(fileno(src), fds, n, hold_max, flags)
        if not ptr:
            raise _last_error()
        self._n = n
        self._h = _Handle(ptr)

    def _call(self, fn, length, flags):
        res = (CResult * self._n)()
        p = self._h.acquire()
        try:
            rc = fn(p, length, flags, res)
            return _tee_result(rc, res)
        finally:
            self._h.release()

    def move(self, length=None, flags=0):
        """One step: psplice_tee_move(3). in_bytes 0: the end of input,
        once nothing is held."""
        return self._call(lib.psplice_tee_move, _length(length, MAX_STEP, 2**64 - 1), flags)

    def copy(self, length=None, flags=0):
        """Steps to length bytes (None: the end of input):
        psplice_tee_copy(3). Raises Error when the input or any sink
        failed, after serving the others to the end."""
        return self._call(lib.psplice_tee_copy, _length(length, TO_EOF, TO_EOF), flags)

    def _sink(self, i):
        # The C calls answer 0 for a sink that does not exist, which would
        # read as "nothing held".
        if not 0 <= i < self._n:
            raise IndexError("psplice.Tee has no sink %d" % i)

    def pending(self, i):
        """The bytes held for sink i."""
        self._sink(i)
        p = self._h.acquire()
        try:
            return lib.psplice_tee_pending(p, i)
        finally:
            self._h.release()

    def take(self, i, n=None):
        """Hand back up to n bytes held for sink i (None: all)."""
        self._sink(i)
        p = self._h.acquire()
        try:
            if n is None:
                return _take_all(lambda: lib.psplice_tee_pending(p, i),
                                 lambda buf, k: lib.psplice_tee_take(p, i, buf, k))
            return _take_some(n, lambda buf, k: lib.psplice_tee_take(p, i, buf, k))
        finally:
            self._h.release()

    @property
    def closed(self):
        return self._h.closed

    def close(self):
        """Free the tee; returns what it held, a list of bytes per sink."""
        p = self._h.detach()
        if p is None:
            return [b""] * self._n
        try:
            return [_take_all(lambda: lib.psplice_tee_pending(p, i),
                              lambda buf, k: lib.psplice_tee_take(p, i, buf, k))
                    for i in range(self._n)]
        finally:
            lib.psplice_tee_free(p)

    def __enter__(self):
        return self

    def __exit__(self, typ, exc, tb):
        held = self.close()
        if any(held):
            _hand_back("psplice.Tee", held, exc)

    def __del__(self):
        if getattr(self, "_h", None) is not None and not self._h.closed:
            held = self.close()
            if any(held):
                raise PendingError("psplice.Tee", held)


def _tee_result(rc, res):
    """The Result of a tee call: psplice_last() holds the call's own
    counts, res those of each sink."""
    sinks = [Result(r) for r in res]
    if rc < 0:
        e = _last_error()
        e.sinks = sinks
        raise e
    return Result(lib.psplice_last().contents, sinks=sinks)


def tee(src, sinks, length=None, flags=0):
    """src to every sink, length bytes (None: to the end of input), in one
    call: psplice_tee(3). Returns a Result whose sinks holds each sink's
    totals; raises Error (with sinks) when the input or any sink failed."""
    sinks = list(sinks)
    n = len(sinks)
    fds = (ctypes.c_int * max(n, 1))(*[fileno(s) for s in sinks])
    res = (CResult * max(n, 1))()
    rc = lib.psplice_tee(fileno(src), fds, n, _length(length, TO_EOF, TO_EOF), flags, res)
    return _tee_result(rc, res[:n])


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


def version():
    """The running library's version, "MAJOR.MINOR.PATCH"."""
    return lib.psplice_version().decode()
