"""Shared fixtures for the binding's tests, and the closing count line that
tests/check.sh adds to make check's total."""

import os
import socket
import sys
import threading

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))


def pytest_terminal_summary(terminalreporter):
    stats = terminalreporter.stats
    count = lambda *keys: sum(len(stats.get(k, [])) for k in keys)
    # An error in a fixture is a failure of that test as far as make check
    # is concerned; an expected failure that passed is one too.
    terminalreporter.write_line("python: %d passed, %d failed, %d skipped" % (
        count("passed"), count("failed", "error", "xpassed"),
        count("skipped", "xfailed")))


@pytest.fixture
def tcp_pair():
    """Two connected TCP sockets on loopback, closed after the test."""
    made = []

    def make():
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as ls:
            ls.bind(("127.0.0.1", 0))
            ls.listen(1)
            a = socket.create_connection(ls.getsockname(), timeout=10)
            b, _ = ls.accept()
        # Blocking, both: Python makes a socket with a timeout O_NONBLOCK,
        # and psplice then says EAGAIN as the C library does.
        a.settimeout(None)
        b.settimeout(None)
        made.extend((a, b))
        return a, b

    yield make
    for s in made:
        s.close()


class Drain(threading.Thread):
    """Reads a socket or fd to its end in a thread; .data once joined."""

    def __init__(self, src, delay=0.0):
        super().__init__(daemon=True)
        self.src, self.delay, self.chunks = src, delay, []
        self.start()

    def run(self):
        import time
        while True:
            if self.delay:
                time.sleep(self.delay)
            if isinstance(self.src, socket.socket):
                b = self.src.recv(1 << 16)
            else:
                b = os.read(self.src, 1 << 16)
            if not b:
                return
            self.chunks.append(b)

    @property
    def data(self):
        self.join(30)
        assert not self.is_alive(), "the reader did not see the end within 30 s"
        return b"".join(self.chunks)


@pytest.fixture
def drain():
    return Drain


@pytest.fixture
def payload():
    """Random bytes: a test that loses, repeats or reorders any shows it."""
    return os.urandom(3 * (1 << 20) + 12345)


def fs_type(path):
    """The filesystem type of path, as stat -f names it (tmpfs, ext2/ext3...)."""
    import subprocess
    return subprocess.run(["stat", "-f", "-c", "%T", str(path)], check=True,
                          capture_output=True, text=True).stdout.strip()
