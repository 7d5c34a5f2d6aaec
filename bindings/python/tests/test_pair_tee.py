"""Pair and Tee: pending bytes under a slow or gone reader, handed back
and never dropped; per-sink results."""

import errno
import gc
import os
import socket
import sys

import pytest

import psplice
from test_copy import fill, write_file


def read_all_nonblocking(sock):
    sock.setblocking(False)
    out = b""
    for _ in range(100000):
        try:
            b = sock.recv(1 << 20)
        except BlockingIOError:
            return out
        if not b:
            return out
        out += b
    raise AssertionError("no end")


@pytest.fixture
def slow_pair(payload):
    """a -> b is the input, c -> d the output; c is full, so a pair from b
    to c takes bytes it cannot deliver."""
    a, b = socket.socketpair()
    c, d = socket.socketpair()
    c.setblocking(False)
    filler = fill(c)
    chunk = payload[:200000]
    a.sendall(chunk)
    yield a, b, c, d, filler, chunk
    for s in (a, b, c, d):
        s.close()


def test_pair_copy_file_to_pipe(tmp_path, payload, drain):
    src = write_file(tmp_path / "src", payload)
    r, w = os.pipe()
    reader = drain(r)
    with open(src, "rb") as fi, psplice.Pair(fi, w) as p:
        res = p.copy()
        assert res.out_bytes == len(payload) and res.method == psplice.Method.SPLICE
        assert p.pending == 0
        assert p.move().out_bytes == 0
    os.close(w)
    assert reader.data == payload
    os.close(r)


def test_pair_offsets_advance(tmp_path, payload):
    src = write_file(tmp_path / "src", payload)
    with open(src, "rb") as fi, open(tmp_path / "dst", "wb") as fo:
        with psplice.Pair(fi, fo) as p:
            r = p.move(100, offset_in=1000, offset_out=0)
            assert (r.offset_in, r.offset_out) == (1100, 100)
            r = p.copy(100, offset_in=r.offset_in, offset_out=r.offset_out)
            assert (r.offset_in, r.offset_out) == (1200, 200)
    assert (tmp_path / "dst").read_bytes() == payload[1000:1200]


def test_pair_new_refuses_a_bad_fd_with_its_side():
    r, w = os.pipe()
    os.close(w)
    try:
        with pytest.raises(psplice.Error) as ei:
            psplice.Pair(r, w)
        assert ei.value.errno == errno.EBADF and ei.value.side == "out"
    finally:
        os.close(r)


def test_pending_under_a_slow_reader_then_delivered(slow_pair):
    a, b, c, d, filler, chunk = slow_pair
    with psplice.Pair(b, c) as p:
        got = 0
        # The first move takes from b and cannot deliver all: pending.
        try:
            got += p.move(flags=psplice.F_NONBLOCK).out_bytes
        except psplice.Error as e:
            assert e.errno == errno.EAGAIN and e.side == "out"
            assert e.parked == b""  # a pair never parks
        assert p.pending > 0
        held = p.pending
        # With bytes held and the output still full: EAGAIN on the output,
        # not the input, whatever the input has.
        with pytest.raises(psplice.Error) as ei:
            p.move(flags=psplice.F_NONBLOCK)
        assert ei.value.errno == errno.EAGAIN and ei.value.side == "out"
        assert p.pending == held
        # The reader drains; the pending bytes go out first.
        received = read_all_nonblocking(d)
        a.shutdown(socket.SHUT_WR)
        for _ in range(1000):
            try:
                r = p.move(flags=psplice.F_NONBLOCK)
            except psplice.Error as e:
                assert e.errno == errno.EAGAIN
                received += read_all_nonblocking(d)
                continue
            if not r.out_bytes and not r.in_bytes:
                break
        assert p.pending == 0
        c.shutdown(socket.SHUT_WR)
        received += read_all_nonblocking(d)
    assert received[filler:] == chunk


def test_pending_comes_back_from_close_when_the_reader_left(slow_pair):
    a, b, c, d, filler, chunk = slow_pair
    p = psplice.Pair(b, c)
    try:
        p.move(flags=psplice.F_NONBLOCK)
    except psplice.Error:
        pass
    held = p.pending
    assert held > 0
    d.close()
    with pytest.raises(psplice.Error) as ei:
        p.move(flags=psplice.F_NONBLOCK)
    assert ei.value.side == "out" and ei.value.errno in (errno.EPIPE, errno.ECONNRESET)
    back = p.close()
    assert len(back) == held
    assert p.closed and p.close() == b""
    b.setblocking(False)
    rest = read_all_nonblocking(b)
    assert chunk.endswith(back + rest)
    assert len(back + rest) < len(chunk) or back == chunk[:held]
    with pytest.raises(ValueError):
        p.move()


def test_take_hands_back_the_oldest_first(slow_pair):
    a, b, c, d, filler, chunk = slow_pair
    with psplice.Pair(b, c) as p:
        try:
            p.move(flags=psplice.F_NONBLOCK)
        except psplice.Error:
            pass
        held = p.pending
        first = p.take(10)
        assert len(first) == 10 and p.pending == held - 10
        rest = p.take()
        assert p.pending == 0
    # Nothing was delivered (c was full): the pair held the stream's start.
    assert first + rest == chunk[:held]


def test_leaving_a_with_block_with_bytes_pending_raises_them(slow_pair):
    a, b, c, d, filler, chunk = slow_pair
    with pytest.raises(psplice.PendingError) as ei:
        with psplice.Pair(b, c) as p:
            try:
                p.move(flags=psplice.F_NONBLOCK)
            except psplice.Error:
                pass
            held = p.pending
            assert held
    assert isinstance(ei.value, psplice.Error)
    assert ei.value.parked == chunk[:held] and ei.value.side == "out"


def test_an_error_leaving_a_with_block_gets_the_pending_bytes(slow_pair):
    a, b, c, d, filler, chunk = slow_pair
    with pytest.raises(psplice.Error) as ei:
        with psplice.Pair(b, c) as p:
            try:
                p.move(flags=psplice.F_NONBLOCK)
            except psplice.Error:
                pass
            held = p.pending
            p.move(flags=psplice.F_NONBLOCK)  # EAGAIN, side out, escapes
    e = ei.value
    assert not isinstance(e, psplice.PendingError)
    assert e.errno == errno.EAGAIN and e.side == "out"
    assert e.pending == chunk[:held]


def test_collecting_a_pair_with_bytes_pending_reports_them(slow_pair, monkeypatch):
    a, b, c, d, filler, chunk = slow_pair
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: seen.append(u.exc_value))
    p = psplice.Pair(b, c)
    try:
        p.move(flags=psplice.F_NONBLOCK)
    except psplice.Error:
        pass
    held = p.pending
    del p
    gc.collect()
    assert len(seen) == 1 and isinstance(seen[0], psplice.PendingError)
    assert seen[0].parked == chunk[:held]


def test_tee_one_shot_to_files_and_a_pipe(tmp_path, payload, drain):
    src = write_file(tmp_path / "src", payload)
    r, w = os.pipe()
    reader = drain(r)
    with open(src, "rb") as fi, open(tmp_path / "a", "wb") as fa, \
            open(write_file(tmp_path / "b", b"head"), "ab") as fb:
        res = psplice.tee(fi, [fa, fb, w])
    os.close(w)
    assert res.in_bytes == len(payload)
    assert [s.out_bytes for s in res.sinks] == [len(payload)] * 3
    assert all(s.error == 0 for s in res.sinks)
    assert (tmp_path / "a").read_bytes() == payload
    assert (tmp_path / "b").read_bytes() == b"head" + payload
    assert reader.data == payload
    os.close(r)


def test_tee_a_gone_sink_is_out_and_the_others_go_on(tmp_path, payload):
    src = write_file(tmp_path / "src", payload)
    r, w = os.pipe()
    os.close(r)
    try:
        with open(src, "rb") as fi, open(tmp_path / "a", "wb") as fa:
            with pytest.raises(psplice.Error) as ei:
                with psplice.Tee(fi, [w, fa]) as t:
                    t.copy()
        e = ei.value
        assert e.errno == errno.EPIPE
        assert e.sinks[0].error == errno.EPIPE and e.sinks[0].side == "out"
        assert e.sinks[1].error == 0 and e.sinks[1].out_bytes == len(payload)
        # What the tee held for the dead sink came back with the error
        # that left the with block, not in place of it.
        assert not isinstance(e, psplice.PendingError)
        held = e.pending or [b"", b""]
        assert held[1] == b""
        assert len(held[0]) == e.sinks[0].in_bytes - e.sinks[0].out_bytes
        assert held[0] == payload[e.sinks[0].out_bytes:e.sinks[0].in_bytes]
        assert (tmp_path / "a").read_bytes() == payload
    finally:
        os.close(w)


def test_tee_holds_for_a_slow_sink_and_hands_it_back(tmp_path, payload):
    src = write_file(tmp_path / "src", payload)
    c, d = socket.socketpair()
    with c, d:
        c.setblocking(False)
        filler = fill(c)
        with open(src, "rb") as fi, open(tmp_path / "a", "wb") as fa:
            t = psplice.Tee(fi, [c, fa], hold_max=1 << 20)
            taken = 0
            for _ in range(100):
                try:
                    step = t.move(flags=psplice.F_NONBLOCK)
                except psplice.Error as e:
                    assert e.errno == errno.EAGAIN and e.side == "out"
                    assert e.sinks[0].error == errno.EAGAIN
                    break
                taken += step.in_bytes
            assert t.pending(0) > 0 and t.pending(1) == 0
            with pytest.raises(psplice.PendingError) as ei:
                t.__exit__(None, None, None)
        held = ei.value.parked
        assert held[1] == b""
        got = read_all_nonblocking(d)[filler:]
        assert got + held[0] == payload[:taken]
        assert (tmp_path / "a").read_bytes() == payload[:taken]


def test_tee_names_no_sink_it_does_not_have(tmp_path):
    src = write_file(tmp_path / "src", b"abc")
    with open(src, "rb") as fi, open(tmp_path / "a", "wb") as fa:
        with psplice.Tee(fi, [fa]) as t:
            assert t.pending(0) == 0
            with pytest.raises(IndexError):
                t.pending(1)
            with pytest.raises(IndexError):
                t.take(-1)


def test_close_waits_for_a_move_in_another_thread(tmp_path):
    """The pair is freed only once no call is inside it. A file input: the
    C pair takes no lock for it, so only the binding keeps close() out."""
    import threading
    src = write_file(tmp_path / "src", b"f" * 1000)
    r, w = os.pipe()
    os.set_blocking(w, False)
    filled = 0
    try:
        while True:
            filled += os.write(w, b"\0" * 65536)
    except BlockingIOError:
        pass
    os.set_blocking(w, True)
    fi = open(src, "rb")
    p = psplice.Pair(fi, w)
    moved, closed = [], []
    mover = threading.Thread(target=lambda: moved.append(p.move(100)), daemon=True)
    mover.start()
    threading.Event().wait(0.1)         # the mover waits for room in the pipe
    closer = threading.Thread(target=lambda: closed.append(p.close()), daemon=True)
    closer.start()
    closer.join(0.3)
    try:
        assert closer.is_alive() and not closed
        with pytest.raises(ValueError):
            p.move(1)                   # closing: no new call gets in
        got = b""
        while len(got) < filled:
            got += os.read(r, filled - len(got))
        mover.join(10)
        closer.join(10)
        assert moved[0].out_bytes == 100 and closed == [b""]
        assert os.read(r, 1000) == b"f" * 100
    finally:
        for fd in (r, w):
            os.close(fd)
        fi.close()
