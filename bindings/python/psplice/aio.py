"""asyncio over psplice: a relay between two descriptors that waits on the
side EAGAIN names, with no copy through Python.

    await psplice.aio.relay(reader_sock, writer_sock)   # one direction
    await psplice.aio.bridge(a, b)                       # both, as a proxy

asyncio has loop.sendfile() for a file into a socket, and nothing for a
socket into a socket; these fill that gap."""

import asyncio
import errno
import os
import socket

from ._lib import CResult
from ._core import Error, F_NONBLOCK, Method, Result, fileno
from ._pair import Pair, PendingError

CHUNK = 1 << 20


async def _wait(loop, fd, side):
    """Until fd is readable (side "in") or writable (side "out")."""
    fut = loop.create_future()

    def ready():
        if not fut.done():
            fut.set_result(None)

    if side == "in":
        loop.add_reader(fd, ready)
    else:
        loop.add_writer(fd, ready)
    try:
        await fut
    finally:
        if side == "in":
            loop.remove_reader(fd)
        else:
            loop.remove_writer(fd)


def _shutdown_write(f, fd):
    """Forward the end of input: shut down the writing half of a socket, so
    that its peer reads the end while the other direction goes on. Anything
    that is not a socket is left alone (its owner closes it)."""
    try:
        if hasattr(f, "shutdown"):
            f.shutdown(socket.SHUT_WR)
        else:
            with socket.socket(fileno=os.dup(fd)) as s:
                s.shutdown(socket.SHUT_WR)
    except OSError as e:
        # Not a socket, or a peer already gone: nothing to forward the end
        # to; the other direction meets the peer's state itself.
        if e.errno not in (errno.ENOTSOCK, errno.ENOTCONN):
            raise


async def relay(reader, writer, *, chunk=CHUNK, half_close=True):
    """Move everything reader sends to writer until reader's end, through a
    psplice Pair (splice(2), no copy through Python), and when the end
    comes shut down writer's sending half (half_close), so that its peer
    sees the end while its own direction goes on. reader and writer are
    sockets, pipes or fds in non-blocking mode; EAGAIN waits for the
    readability of reader or the writability of writer, as its side says.

    Returns a Result with the totals. Raises Error with the totals of the
    relay so far and, in pending, the bytes taken from reader that writer
    never got (None if none). If the task is cancelled while bytes are held, PendingError
    (chained to the CancelledError) carries them."""
    loop = asyncio.get_running_loop()
    fi, fo = fileno(reader), fileno(writer)
    for fd in (fi, fo):
        if os.get_blocking(fd):
            raise ValueError("psplice.aio.relay: the descriptors must be non-blocking "
                             "(sock.setblocking(False), os.set_blocking(fd, False))")
    counts = [0, 0, Method.NONE]
    pair = Pair(reader, writer)
    try:
        await _pump(loop, pair, fi, fo, chunk, counts)
        if half_close:
            _shutdown_write(writer, fo)
    except BaseException as e:
        held = pair.close()
        if isinstance(e, Error):
            e.in_bytes, e.out_bytes = counts[0], counts[1]
            if held:
                e.pending = held
        elif held:
            raise PendingError("psplice.aio.relay", held) from e
        raise
    pair.close()
    return Result(CResult(in_bytes=counts[0], out_bytes=counts[1], method=int(counts[2])))


async def _pump(loop, pair, fi, fo, chunk, counts):
    """Move until the end of input, nothing held; counts: taken, delivered
    and the last method, kept up to date for an error's report."""
    while True:
        try:
            r = pair.move(chunk, flags=F_NONBLOCK)
        except Error as e:
            counts[0] += e.in_bytes
            counts[1] += e.out_bytes
            # A step a signal interrupted after it took bytes: the pair
            # holds them, and the next step delivers them first.
            if e.errno == errno.EINTR:
                continue
            if e.errno != errno.EAGAIN or e.side is None:
                raise
            await _wait(loop, fi if e.side == "in" else fo, e.side)
            continue
        counts[0] += r.in_bytes
        counts[1] += r.out_bytes
        if r.out_bytes:
            counts[2] = r.method
        # A step that delivered some bytes and then met an error returns
        # them; the next step meets that error again and raises it.
        if not r.in_bytes and not r.out_bytes and not r.error:
            return


async def bridge(a, b, *, chunk=CHUNK):
    """Relay a to b and b to a at once, each direction forwarding its end
    with a half-close, until both ended. When one direction fails, the
    other is cancelled and the first error raised. Returns the two
    Results, a to b first."""
    ab = asyncio.ensure_future(relay(a, b, chunk=chunk))
    ba = asyncio.ensure_future(relay(b, a, chunk=chunk))
    done, _ = await asyncio.wait({ab, ba}, return_when=asyncio.FIRST_EXCEPTION)
    for t in (ab, ba):
        if t in done and not t.cancelled() and t.exception() is not None:
            other = ba if t is ab else ab
            other.cancel()
            await asyncio.gather(other, return_exceptions=True)
            raise t.exception()
    return ab.result(), ba.result()
