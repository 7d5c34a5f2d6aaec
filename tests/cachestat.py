#!/usr/bin/env python3
"""The page cache state of a file, by cachestat(2) (Linux 6.5).

cachestat.py FILE         prints "CACHED DIRTY WRITEBACK" in bytes
cachestat.py --watch FILE -- CMD...
                          runs CMD, samples FILE every 10 ms while it runs,
                          prints the highest DIRTY+WRITEBACK in bytes and
                          exits with CMD's status
Exit 77 when the kernel has no cachestat."""
import ctypes, os, subprocess, sys, time

libc = ctypes.CDLL(None, use_errno=True)
NR_CACHESTAT = 451
PAGE = os.sysconf("SC_PAGESIZE")


class Range(ctypes.Structure):
    _fields_ = [("off", ctypes.c_uint64), ("len", ctypes.c_uint64)]


class Stat(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint64) for n in
                ("cache", "dirty", "writeback", "evicted", "recently_evicted")]


def stat(fd):
    r, s = Range(0, 0), Stat()
    if libc.syscall(NR_CACHESTAT, fd, ctypes.byref(r), ctypes.byref(s), 0) < 0:
        e = ctypes.get_errno()
        if e == 38:
            print("SKIP cachestat(2) needs Linux 6.5")
            sys.exit(77)
        raise OSError(e, os.strerror(e))
    return s.cache * PAGE, s.dirty * PAGE, s.writeback * PAGE


def watch(path, cmd):
    proc = subprocess.Popen(cmd)
    peak, fd, deadline = 0, -1, time.monotonic() + 600
    while proc.poll() is None and time.monotonic() < deadline:
        if fd < 0:
            try:
                fd = os.open(path, os.O_RDONLY)
            except FileNotFoundError:
                pass
        if fd >= 0:
            _, d, w = stat(fd)
            peak = max(peak, d + w)
        time.sleep(0.01)
    rc = proc.wait()
    print(peak)
    return rc


if sys.argv[1] == "--watch":
    sys.exit(watch(sys.argv[2], sys.argv[4:]))
fd = os.open(sys.argv[1], os.O_RDONLY)
print(*stat(fd))
