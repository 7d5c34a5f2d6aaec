"""copy() and move(): results, offsets, errors with their side, parked
bytes, and the same bytes as shutil.copyfileobj for each kind of pair."""

import errno
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import threading

import pytest

import psplice


def write_file(path, data):
    with open(path, "wb") as f:
        f.write(data)
    return path


def fill(sock):
    """Fill a non-blocking socket's send buffer (and its peer's receive
    buffer) until it would block; returns how many bytes it took."""
    n = 0
    for _ in range(100000):
        try:
            n += sock.send(b"\0" * 65536)
        except BlockingIOError:
            return n
    raise AssertionError("the socket never filled")


def test_copy_file_to_file_to_eof(tmp_path, payload):
    src = write_file(tmp_path / "src", payload)
    with open(src, "rb") as fi, open(tmp_path / "dst", "wb") as fo:
        r = psplice.copy(fi, fo)
        assert os.lseek(fi.fileno(), 0, os.SEEK_CUR) == len(payload)
    assert (r.in_bytes, r.out_bytes) == (len(payload), len(payload))
    assert isinstance(r.method, psplice.Method) and r.method != psplice.Method.NONE
    assert str(r.method) in ("copy_file_range", "sendfile", "splice_pipe", "readwrite", "clone")
    assert r.error == 0 and r.side is None
    assert (r.offset_in, r.offset_out) == (None, None)
    assert (tmp_path / "dst").read_bytes() == payload


def test_copy_takes_fds_too(tmp_path, payload):
    src = write_file(tmp_path / "src", payload)
    fi = os.open(src, os.O_RDONLY)
    fo = os.open(tmp_path / "dst", os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        r = psplice.copy(fi, fo, 1000)
    finally:
        os.close(fi)
        os.close(fo)
    assert r.out_bytes == 1000
    assert (tmp_path / "dst").read_bytes() == payload[:1000]


def test_copy_rejects_what_has_no_fd():
    with pytest.raises(TypeError):
        psplice.copy("a", 1)


def test_length_stops_the_copy_and_past_the_end_is_the_end(tmp_path, payload):
    src = write_file(tmp_path / "src", payload)
    with open(src, "rb") as fi, open(tmp_path / "dst", "wb") as fo:
        r = psplice.copy(fi, fo, 4097)
        assert r.out_bytes == 4097
        # Asked for more than is left: the end of input, not an error.
        r = psplice.copy(fi, fo, 10 * len(payload))
        assert r.out_bytes == len(payload) - 4097
        assert psplice.copy(fi, fo).out_bytes == 0
    assert (tmp_path / "dst").read_bytes() == payload


def test_offsets_are_positional_and_advance(tmp_path, payload):
    src = write_file(tmp_path / "src", payload)
    with open(src, "rb") as fi, open(tmp_path / "dst", "wb") as fo:
        r = psplice.copy(fi, fo, 5000, offset_in=100, offset_out=7)
        assert (r.offset_in, r.offset_out) == (5100, 5007)
        # The file positions are left alone.
        assert os.lseek(fi.fileno(), 0, os.SEEK_CUR) == 0
        assert os.lseek(fo.fileno(), 0, os.SEEK_CUR) == 0
        # Chained, as a C loop passes the same int64_t on.
        r = psplice.copy(fi, fo, 3000, offset_in=r.offset_in, offset_out=r.offset_out)
        assert (r.offset_in, r.offset_out) == (8100, 8007)
        # One side positional, the other by position.
        r = psplice.move(fi, fo, 10, offset_in=len(payload) - 10)
        assert r.offset_in == len(payload) and r.offset_out is None
    got = (tmp_path / "dst").read_bytes()
    # The last step wrote bytes 0 to 9 by the file position, over 7 to 9.
    assert got[:10] == payload[-10:]
    assert got[10:8007] == payload[103:8100]


def test_an_offset_past_the_end_is_the_end(tmp_path):
    src = write_file(tmp_path / "src", b"abc")
    with open(src, "rb") as fi, open(tmp_path / "dst", "wb") as fo:
        r = psplice.copy(fi, fo, offset_in=1 << 40)
    assert r.out_bytes == 0 and r.offset_in == 1 << 40


def test_an_offset_on_a_pipe_is_espipe_on_its_side(tmp_path):
    r, w = os.pipe()
    write_file(tmp_path / "f", b"data")
    try:
        with open(tmp_path / "f", "r+b") as f:
            with pytest.raises(psplice.Error) as ei:
                psplice.copy(r, f, offset_in=0)
            assert ei.value.errno == errno.ESPIPE and ei.value.side == "in"
            assert ei.value.offset_in == 0
            with pytest.raises(psplice.Error) as ei:
                psplice.copy(f, w, offset_out=0)
            assert ei.value.errno == errno.ESPIPE and ei.value.side == "out"
    finally:
        os.close(r)
        os.close(w)


def test_a_negative_offset_is_einval():
    r, w = os.pipe()
    try:
        with pytest.raises(psplice.Error) as ei:
            psplice.move(r, w, 1, offset_in=-1)
        assert ei.value.errno in (errno.EINVAL, errno.ESPIPE)
        assert ei.value.side == "in"
    finally:
        os.close(r)
        os.close(w)


def test_copy_onto_an_append_file_appends(tmp_path, payload):
    src = write_file(tmp_path / "src", payload)
    dst = write_file(tmp_path / "log", b"head\n")
    with open(src, "rb") as fi, open(dst, "ab") as fo:
        r = psplice.copy(fi, fo)
        assert r.out_bytes == len(payload)
        # An output offset cannot be honoured by O_APPEND: refused.
        with pytest.raises(psplice.Error) as ei:
            psplice.copy(fi, fo, offset_in=0, offset_out=0)
        assert ei.value.errno == errno.EINVAL and ei.value.side == "out"
    assert dst.read_bytes() == b"head\n" + payload


def test_bad_fd_is_ebadf_with_its_side(tmp_path):
    r, w = os.pipe()
    os.close(w)
    closed = w
    try:
        with pytest.raises(psplice.Error) as ei:
            psplice.copy(closed, r)
        e = ei.value
        assert isinstance(e, OSError) and e.errno == errno.EBADF and e.side == "in"
        assert (e.in_bytes, e.out_bytes, e.parked) == (0, 0, b"")
        with open(write_file(tmp_path / "f", b"data"), "rb") as f:
            with pytest.raises(psplice.Error) as ei:
                psplice.copy(f, closed)
            assert ei.value.errno == errno.EBADF and ei.value.side == "out"
    finally:
        os.close(r)


def test_an_unknown_flag_is_einval_side_none():
    r, w = os.pipe()
    try:
        with pytest.raises(psplice.Error) as ei:
            psplice.move(r, w, 1, flags=0x80000000)
        assert ei.value.errno == errno.EINVAL and ei.value.side is None
    finally:
        os.close(r)
        os.close(w)


def test_move_is_one_step_and_zero_at_the_end(tmp_path):
    src = write_file(tmp_path / "src", b"x" * 10000)
    r, w = os.pipe()
    try:
        with open(src, "rb") as fi:
            res = psplice.move(fi, w, 4000)
            assert res.out_bytes == 4000 and res.method == psplice.Method.SPLICE
            assert os.read(r, 10000) == b"x" * 4000
            assert psplice.move(fi, w).out_bytes == 6000
            assert psplice.move(fi, w).out_bytes == 0
    finally:
        os.close(r)
        os.close(w)


def test_eagain_names_the_input():
    r, w = os.pipe()
    try:
        with pytest.raises(psplice.Error) as ei:
            psplice.move(r, w, 100, flags=psplice.F_NONBLOCK)
        e = ei.value
        assert e.errno == errno.EAGAIN and e.side == "in"
        # The built-in class of the errno too, as OSError itself gives.
        assert isinstance(e, BlockingIOError)
    finally:
        os.close(r)
        os.close(w)


def test_parked_bytes_come_back_as_bytes(payload):
    """Socket to socket goes through the library's pipe: what it took and
    a full output would not take is parked, and handed back in the Error."""
    a, b = socket.socketpair()
    c, d = socket.socketpair()
    with a, b, c, d:
        c.setblocking(False)
        fill(c)
        chunk = payload[:150000]
        a.sendall(chunk)
        with pytest.raises(psplice.Error) as ei:
            psplice.move(b, c, flags=psplice.F_NONBLOCK)
        e = ei.value
        assert e.errno == errno.EAGAIN and e.side == "out"
        assert e.in_bytes - e.out_bytes == len(e.parked) > 0
        assert e.method == psplice.Method.NONE or e.out_bytes > 0
        # What was delivered, then what was parked, then what is left in
        # the input: the stream, whole and in order.
        d.setblocking(False)
        delivered = b""
        while True:
            try:
                delivered += d.recv(1 << 20)
            except BlockingIOError:
                break
        delivered = delivered.lstrip(b"\0")
        b.setblocking(False)
        try:
            rest = b.recv(1 << 20)
        except BlockingIOError:
            rest = b""
        assert delivered + e.parked + rest == chunk


def test_epipe_is_an_error_on_the_output(payload, tmp_path):
    src = write_file(tmp_path / "src", payload)
    r, w = os.pipe()
    os.close(r)
    try:
        with open(src, "rb") as fi, pytest.raises(psplice.Error) as ei:
            psplice.copy(fi, w)
        e = ei.value
        assert e.errno == errno.EPIPE and e.side == "out"
        assert isinstance(e, BrokenPipeError)
        assert e.parked == b""  # a file input is given back, not parked
    finally:
        os.close(w)


SIGPIPE_CHILD = textwrap.dedent("""
    import errno, os, signal, socket, sys
    import psplice
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    mode = sys.argv[1]
    if mode == "blocked":
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGPIPE})
    data = b"y" * 300000
    src = os.open(sys.argv[2], os.O_RDONLY)
    outs = []
    r, w = os.pipe(); os.close(r); outs.append(w)
    a, b = socket.socketpair(); b.close(); outs.append(a)
    for out in outs:
        try:
            psplice.copy(src, out, offset_in=0)
        except psplice.Error as e:
            assert e.errno == errno.EPIPE and e.side == "out", (e, e.side)
        else:
            raise AssertionError("no error")
    # Nothing pending either, for a thread that blocks the signal.
    assert signal.SIGPIPE not in signal.sigpending()
    print("alive", mode)
""")


@pytest.mark.parametrize("mode", ["default", "blocked"])
def test_no_sigpipe_reaches_the_interpreter(tmp_path, mode):
    """Python ignores SIGPIPE itself; a child that restores the default
    disposition dies of one if the library lets it through."""
    src = write_file(tmp_path / "src", b"y" * 300000)
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    r = subprocess.run([sys.executable, "-c", SIGPIPE_CHILD, mode, str(src)],
                       cwd=pkg, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, (r.returncode, r.stderr)
    assert r.stdout.strip() == "alive " + mode




def test_file_to_socket_as_copyfileobj(tmp_path, payload, tcp_pair, drain):
    src = write_file(tmp_path / "src", payload)
    got = {}
    for kind in ("psplice", "shutil"):
        a, b = tcp_pair()
        reader = drain(b)
        with open(src, "rb") as fi:
            if kind == "psplice":
                r = psplice.copy(fi, a)
                assert r.out_bytes == len(payload) and r.method == psplice.Method.SENDFILE
            else:
                shutil.copyfileobj(fi, a.makefile("wb"))
        a.shutdown(socket.SHUT_WR)
        got[kind] = reader.data
    assert got["psplice"] == got["shutil"] == payload


def test_pipe_to_socket_as_copyfileobj(payload, tcp_pair, drain):
    got = {}
    for kind in ("psplice", "shutil"):
        a, b = tcp_pair()
        reader = drain(b)
        r, w = os.pipe()
        writer = threading.Thread(target=lambda: (os.write(w, payload), os.close(w)),
                                  daemon=True)
        writer.start()
        with os.fdopen(r, "rb") as fi:
            if kind == "psplice":
                res = psplice.copy(fi, a)
                assert res.out_bytes == len(payload)
                assert res.method == psplice.Method.SPLICE
            else:
                shutil.copyfileobj(fi, a.makefile("wb"))
        writer.join(30)
        a.shutdown(socket.SHUT_WR)
        got[kind] = reader.data
    assert got["psplice"] == got["shutil"] == payload


def test_socket_to_file_as_copyfileobj(tmp_path, payload, tcp_pair):
    got = {}
    for kind in ("psplice", "shutil"):
        a, b = tcp_pair()

        def send():
            a.sendall(payload)
            a.shutdown(socket.SHUT_WR)
        t = threading.Thread(target=send, daemon=True)
        t.start()
        dst = tmp_path / kind
        with open(dst, "wb") as fo:
            if kind == "psplice":
                r = psplice.copy(b, fo)
                assert r.in_bytes == r.out_bytes == len(payload)
                assert r.method == psplice.Method.SPLICE_PIPE
            else:
                shutil.copyfileobj(b.makefile("rb"), fo)
        t.join(30)
        got[kind] = dst.read_bytes()
    assert got["psplice"] == got["shutil"] == payload


def interrupt_after(seconds, handler):
    """SIGALRM once, after seconds, to handler; restored by the caller."""
    import signal
    old = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    return lambda: (signal.setitimer(signal.ITIMER_REAL, 0),
                    signal.signal(signal.SIGALRM, old))


def test_move_retries_a_signal_that_took_nothing():
    """As os.read() does (PEP 475): the handler runs, and the wait goes on."""
    a, b = socket.socketpair()
    r, w = os.pipe()
    seen = []
    restore = interrupt_after(0.1, lambda *_: seen.append(1))
    sender = threading.Timer(0.4, lambda: a.sendall(b"late"))
    sender.start()
    try:
        res = psplice.move(b, w, 100)
    finally:
        restore()
        sender.join(10)
    try:
        assert seen == [1]
        assert res.out_bytes == 4 and os.read(r, 10) == b"late"
    finally:
        for fd in (r, w):
            os.close(fd)
        a.close()
        b.close()


class Stop(Exception):
    pass


def raise_stop(*_):
    raise Stop()


def test_a_signal_handler_that_raises_ends_a_blocked_move():
    a, b = socket.socketpair()
    r, w = os.pipe()
    restore = interrupt_after(0.1, raise_stop)
    try:
        with pytest.raises(Stop):
            psplice.move(b, w, 100)
        with psplice.Pair(b, w) as p:
            restore()
            restore = interrupt_after(0.1, raise_stop)
            with pytest.raises(Stop):
                p.move(100)
    finally:
        restore()
        for fd in (r, w):
            os.close(fd)
        a.close()
        b.close()


def test_copy_goes_on_after_a_handler_that_returns(tmp_path):
    """A signal runs its handler in the middle of a blocked copy; the copy
    then goes on, and the Result counts every byte of it."""
    r, w = os.pipe()
    os.write(w, b"early")
    seen = []
    restore = interrupt_after(0.2, lambda *_: seen.append(1))

    def late():
        os.write(w, b"late")
        os.close(w)

    sender = threading.Timer(0.6, late)
    sender.start()
    dst = tmp_path / "out"
    try:
        with open(dst, "wb") as fo:
            res = psplice.copy(r, fo, offset_out=3)
    finally:
        restore()
        sender.join(10)
        os.close(r)
    assert seen == [1]
    assert res.in_bytes == res.out_bytes == 9 and res.offset_out == 12
    assert dst.read_bytes() == b"\0\0\0earlylate"


SIGINT_CHILD = textwrap.dedent("""
    import os, sys, time
    import psplice
    r, w = os.pipe()                 # w stays open: the pipe is idle
    os.write(w, b"x" * 100)
    out = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        if sys.argv[1] == "pair":
            with psplice.Pair(r, out) as p:
                p.copy()
        else:
            psplice.copy(r, out)
    except KeyboardInterrupt:
        print("interrupted", time.monotonic())
""")


def state_of(pid):
    """The state letter of a process ('S' while it waits in a system call)."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


@pytest.mark.parametrize("how", ["copy", "pair"])
def test_ctrl_c_ends_a_copy_blocked_on_an_idle_pipe(tmp_path, how):
    """A real SIGINT, sent once the child waits inside the copy (its first
    100 bytes delivered), raises KeyboardInterrupt in it at once; before
    the copy returned on EINTR, the C loop went back to waiting and the
    child hung until killed."""
    import signal
    import time
    out = tmp_path / "out"
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    child = subprocess.Popen([sys.executable, "-c", SIGINT_CHILD, how, str(out)],
                             cwd=pkg, stdout=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not (out.exists() and out.stat().st_size == 100 and
                   state_of(child.pid) == "S"):
            assert time.monotonic() < deadline, "the child never waited in the copy"
            time.sleep(0.01)
        sent = time.monotonic()
        os.kill(child.pid, signal.SIGINT)
        stdout, _ = child.communicate(timeout=10)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 0
    word, when = stdout.split()
    assert word == "interrupted"
    # The latency is shown, not asserted: the machine may be loaded.
    print(f"{how}: KeyboardInterrupt {1000 * (float(when) - sent):.1f} ms after SIGINT")
