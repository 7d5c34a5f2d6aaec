"""What the relay tests' peers share (imported with PYTHONPATH=tests).

echo(portfile, seen=None, secs=150): an echo server on 127.0.0.1, its port
written to portfile (whole, by a rename) and, if seen names a file, a line
appended to it for each connection accepted; it serves for secs seconds.
one(where, size, errors): a connection to "HOST:PORT" or a unix socket's
path; size random bytes sent, then half-closed, and the same bytes must
come back before the end of stream. What went wrong is appended to errors,
nothing raised.
gated(where, total, size, state, errors): total of those, 64 at a time,
connection i started only while i < state["gate"] (another task moves the
gate), state["done"] counting those ended; returns the failures errors
does not hold (a connection past its 30 s), and prints the first of both
on standard error.
handover(where, total, size, at): gated's storm across a change of relay:
once `at` connections have ended, the file "half" says so and the test
starts the new relay; those from total / 2 on wait for the file "go",
made once it serves. Prints the count failed, exits 1 on any.
ready(path, text): text and a newline written to path whole (a rename).
recv_all(sock): what a blocking socket reads until its end of stream.
echo_back(sock): what a blocking socket reads sent back to it until its end
of stream (or an error), then closed: a threaded echo server's connection.
serve_threads(s, serve, secs): each connection the listening socket s
(with a timeout) accepts for secs seconds given to serve in a thread."""
import asyncio, os, socket, sys, threading, time


def ready(path, text):
    with open(path + ".tmp", "w") as f:
        f.write(text + "\n")
    os.rename(path + ".tmp", path)


def recv_all(c):
    got = b""
    while True:
        b = c.recv(65536)
        if not b:
            return got
        got += b


def echo_back(c):
    try:
        while True:
            b = c.recv(65536)
            if not b:
                break
            c.sendall(b)
    except OSError:
        pass
    c.close()


def serve_threads(s, serve, secs):
    end = time.time() + secs
    while time.time() < end:
        try:
            c, _ = s.accept()
        except socket.timeout:
            continue
        threading.Thread(target=serve, args=(c,), daemon=True).start()


def addr(s):
    if s.startswith("/"):
        return dict(path=s)
    host, port = s.rsplit(":", 1)
    return dict(host=host, port=int(port))


async def one(where, size, errors):
    data = os.urandom(size)
    try:
        a = addr(where)
        if "path" in a:
            r, w = await asyncio.open_unix_connection(a["path"])
        else:
            r, w = await asyncio.open_connection(a["host"], a["port"])
        async def send():
            w.write(data)
            await w.drain()
            w.write_eof()
        t = asyncio.ensure_future(send())
        back = bytearray()
        while True:
            b = await r.read(65536)
            if not b:
                break
            back += b
        await t
        w.close()
        if back != data:
            errors.append("sent %d bytes, %d came back%s" % (
                len(data), len(back), " different" if len(back) == len(data) else ""))
    except OSError as e:
        errors.append(str(e))


async def echo(portfile, seen=None, secs=150):
    async def serve(r, w):
        if seen:
            with open(seen, "a") as f:
                f.write("c\n")
        try:
            while True:
                b = await r.read(65536)
                if not b:
                    break
                w.write(b)
                await w.drain()
        finally:
            w.close()
    s = await asyncio.start_server(serve, "127.0.0.1", 0, backlog=1024)
    with open(portfile + ".tmp", "w") as f:
        f.write("%d\n" % s.sockets[0].getsockname()[1])
    os.rename(portfile + ".tmp", portfile)
    await asyncio.sleep(secs)


async def gated(where, total, size, state, errors):
    sem = asyncio.Semaphore(64)
    async def conn(i):
        while i >= state["gate"]:
            await asyncio.sleep(0.005)
        async with sem:
            await asyncio.wait_for(one(where, size, errors), 30)
        state["done"] += 1
    res = await asyncio.gather(*[conn(i) for i in range(total)], return_exceptions=True)
    bad = [r for r in res if isinstance(r, BaseException)]
    for e in errors[:10] + [repr(b) for b in bad[:10]]:
        print(e, file=sys.stderr)
    return bad


async def handover(where, total, size, at):
    errors = []
    state = dict(done=0, gate=total // 2)
    async def switch():
        while state["done"] < at:
            await asyncio.sleep(0.005)
        ready("half", str(state["done"]))
        for _ in range(3000):
            if os.path.exists("go"):
                break
            await asyncio.sleep(0.01)
        else:
            errors.append("no new relay within 30 s")
        state["gate"] = 10**9
    s = asyncio.ensure_future(switch())
    bad = await gated(where, total, size, state, errors)
    await s
    print("%d connections, %d failed" % (total, len(errors) + len(bad)))
    sys.exit(1 if errors or bad else 0)
