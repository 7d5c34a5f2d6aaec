"""Prepared pairs and tees: the bytes they hold are handed back, never
dropped."""

import ctypes
import threading

from ._lib import lib, CResult, TO_EOF, MAX_STEP
from ._core import Error, Result, _last_error, _length, _run, _run_copy, fileno


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


def _take(n, pending, take):
    """Up to n pending bytes (None: every one), oldest first, through
    pending() and take(buf, len)."""
    if n is not None:
        if n < 0:
            raise ValueError("n must be 0 or more")
        buf = ctypes.create_string_buffer(n)
        got = take(buf, n)
        return buf.raw[:got]
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


class _Holder:
    """What a Pair and a Tee share: a C object that holds bytes, which
    close() hands back before freeing it, and which a with block or the
    collector hands on (see PendingError) rather than drop."""

    _what = None

    def __init__(self, ptr):
        self._h = _Handle(ptr)

    def _use(self):
        """The C object, for one call; _done() after it."""
        return self._h.acquire()

    def _done(self):
        self._h.release()

    @property
    def closed(self):
        return self._h.closed

    def close(self):
        """Free the C object; returns what it still held."""
        p = self._h.detach()
        if p is None:
            return self._nothing()
        try:
            return self._held(p)
        finally:
            self._free(p)

    @staticmethod
    def _holds(held):
        return any(held) if isinstance(held, list) else bool(held)

    def __enter__(self):
        return self

    def __exit__(self, typ, exc, tb):
        held = self.close()
        if self._holds(held):
            _hand_back(self._what, held, exc)

    def __del__(self):
        if getattr(self, "_h", None) is not None and not self._h.closed:
            held = self.close()
            if self._holds(held):
                raise PendingError(self._what, held)


class Pair(_Holder):
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

    _what = "psplice.Pair"

    def __init__(self, src, dst, flags=0):
        self.src, self.dst = src, dst
        ptr = lib.psplice_pair_new(fileno(src), fileno(dst), flags)
        if not ptr:
            raise _last_error()
        super().__init__(ptr)

    def _call(self, fn, offset_in, offset_out, length, flags, run=_run):
        p = self._use()
        try:
            return run(lambda oi, oo, *rest: fn(p, oi, oo, *rest),
                       offset_in, offset_out, length, flags)
        finally:
            self._done()

    def move(self, length=None, *, offset_in=None, offset_out=None, flags=0):
        """One step, as move() but on the pair: psplice_pair_move(3)."""
        return self._call(lib.psplice_pair_move, offset_in, offset_out,
                          _length(length, MAX_STEP, 2**64 - 1), flags)

    def copy(self, length=None, *, offset_in=None, offset_out=None, flags=0):
        """A copy, as copy() but on the pair: psplice_pair_copy(3). Pending
        bytes go first and count in out_bytes and toward length. A signal
        runs its handler, as for copy(); what the pair took and could not
        deliver when a handler raised stays pending in it."""
        return self._call(lib.psplice_pair_copy, offset_in, offset_out,
                          _length(length, TO_EOF, TO_EOF), flags, _run_copy)

    @property
    def pending(self):
        """The bytes the pair holds, taken and not yet delivered."""
        p = self._use()
        try:
            return lib.psplice_pair_pending(p)
        finally:
            self._done()

    def take(self, n=None):
        """Hand back up to n pending bytes (None: all), the oldest first:
        they are no longer the pair's."""
        p = self._use()
        try:
            return self._take(p, n)
        finally:
            self._done()

    @staticmethod
    def _take(p, n):
        return _take(n, lambda: lib.psplice_pair_pending(p),
                     lambda buf, k: lib.psplice_pair_take(p, buf, k))

    def _nothing(self):
        return b""

    def _held(self, p):
        return self._take(p, None)

    def _free(self, p):
        lib.psplice_pair_free(p)


class Tee(_Holder):
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

    _what = "psplice.Tee"

    def __init__(self, src, sinks, hold_max=0, flags=0):
        self.src, self.sinks = src, list(sinks)
        n = len(self.sinks)
        fds = (ctypes.c_int * max(n, 1))(*[fileno(s) for s in self.sinks])
        ptr = lib.psplice_tee_new(fileno(src), fds, n, hold_max, flags)
        if not ptr:
            raise _last_error()
        self._n = n
        super().__init__(ptr)

    def _call(self, fn, length, flags):
        res = (CResult * self._n)()
        p = self._use()
        try:
            rc = fn(p, length, flags, res)
            return _tee_result(rc, res)
        finally:
            self._done()

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
        p = self._use()
        try:
            return lib.psplice_tee_pending(p, i)
        finally:
            self._done()

    def take(self, i, n=None):
        """Hand back up to n bytes held for sink i (None: all)."""
        self._sink(i)
        p = self._use()
        try:
            return self._take(p, i, n)
        finally:
            self._done()

    @staticmethod
    def _take(p, i, n):
        return _take(n, lambda: lib.psplice_tee_pending(p, i),
                     lambda buf, k: lib.psplice_tee_take(p, i, buf, k))

    def _nothing(self):
        return [b""] * self._n

    def _held(self, p):
        return [self._take(p, i, None) for i in range(self._n)]

    def _free(self, p):
        lib.psplice_tee_free(p)


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
