"""psplice.aio: a relay that waits on the side EAGAIN names, and forwards
the end with a half-close."""

import asyncio
import errno
import socket
import threading

import pytest

import psplice
import psplice.aio as aio


def run(coro, timeout=60):
    return asyncio.run(asyncio.wait_for(coro, timeout))


def send_and_end(sock, data):
    def go():
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
    t = threading.Thread(target=go, daemon=True)
    t.start()
    return t


@pytest.fixture
def waits(monkeypatch):
    """The sides the relay waited on, in order."""
    seen = []
    real = aio._wait

    async def spy(loop, fd, side):
        seen.append(side)
        await real(loop, fd, side)
    monkeypatch.setattr(aio, "_wait", spy)
    return seen


def test_relay_moves_everything_and_half_closes(tcp_pair, payload, drain, waits):
    a, s1 = tcp_pair()          # a -> s1: the relay's input
    c2, d2 = tcp_pair()         # c2 -> d2: the relay's output
    s1.setblocking(False)
    c2.setblocking(False)
    # Small buffers and a slow reader: the output fills, and the relay
    # waits for it.
    c2.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 32 << 10)
    d2.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 << 10)
    reader = drain(d2, delay=0.005)

    # The input comes in two parts: between them the relay waits for it.
    def send():
        a.sendall(payload[:100000])
        threading.Event().wait(0.1)
        a.sendall(payload[100000:])
        a.shutdown(socket.SHUT_WR)
    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    r = run(aio.relay(s1, c2))
    sender.join(30)
    assert reader.data == payload
    assert r.in_bytes == r.out_bytes == len(payload)
    assert r.method in (psplice.Method.SPLICE_PIPE, psplice.Method.READWRITE)
    assert "in" in waits and "out" in waits
    # Only c2's sending half was shut down: d2 can still talk back.
    d2.sendall(b"back")
    c2.setblocking(True)
    assert c2.recv(10) == b"back"


def test_relay_from_a_pipe_into_a_socket(tcp_pair, payload, drain):
    import os
    r, w = os.pipe()
    os.set_blocking(r, False)
    a, b = tcp_pair()
    a.setblocking(False)
    reader = drain(b)
    writer = threading.Thread(target=lambda: (os.write(w, payload), os.close(w)),
                              daemon=True)
    writer.start()
    try:
        res = run(aio.relay(r, a))
    finally:
        os.close(r)
    writer.join(30)
    assert reader.data == payload and res.out_bytes == len(payload)


def test_bridge_relays_both_ways_to_both_ends(tcp_pair, payload):
    x, a = tcp_pair()           # client x, relay side a
    b, y = tcp_pair()           # relay side b, server y
    a.setblocking(False)
    b.setblocking(False)
    there, back = payload, payload[::-1]
    tx = send_and_end(x, there)
    ty = send_and_end(y, back)
    got = {}

    def recv_all(name, s):
        chunks = []
        while True:
            k = s.recv(1 << 16)
            if not k:
                break
            chunks.append(k)
        got[name] = b"".join(chunks)
    rx = threading.Thread(target=recv_all, args=("x", x), daemon=True)
    ry = threading.Thread(target=recv_all, args=("y", y), daemon=True)
    rx.start()
    ry.start()
    ab, ba = run(aio.bridge(a, b))
    for t in (tx, ty, rx, ry):
        t.join(30)
    assert got["y"] == there and got["x"] == back
    assert ab.out_bytes == len(there) and ba.out_bytes == len(back)


def test_relay_into_a_gone_peer_fails_on_the_output(tcp_pair, payload):
    a, s1 = tcp_pair()
    c2, d2 = tcp_pair()
    s1.setblocking(False)
    c2.setblocking(False)
    d2.close()
    sender = send_and_end(a, payload)
    with pytest.raises(psplice.Error) as ei:
        run(aio.relay(s1, c2))
    e = ei.value
    assert e.side == "out" and e.errno in (errno.EPIPE, errno.ECONNRESET)
    assert e.in_bytes >= e.out_bytes
    # Whatever the relay took and never delivered is handed back.
    assert len(e.pending or b"") <= e.in_bytes - e.out_bytes
    s1.close()
    sender.join(30)


def test_relay_wants_non_blocking_descriptors(tcp_pair):
    a, b = tcp_pair()
    with pytest.raises(ValueError):
        run(aio.relay(a, b))


def test_cancelling_a_relay_stops_waiting(tcp_pair):
    a, s1 = tcp_pair()
    c2, d2 = tcp_pair()
    s1.setblocking(False)
    c2.setblocking(False)

    async def go():
        t = asyncio.ensure_future(aio.relay(s1, c2))
        await asyncio.sleep(0.05)
        assert not t.done()      # waiting for input that never comes
        t.cancel()
        with pytest.raises(asyncio.CancelledError):
            await t
    run(go())
