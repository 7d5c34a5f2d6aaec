#!/usr/bin/python3
"""The Python binding's copy of a cached file into a pipe, against Python's
own copy and against the C library, in the same run.

Each method pushes the whole file into a pipe that a reader process drains
to /dev/null (build/psplice cat, which splices and so costs the writer
least), and times its own copy, from the first byte to the return of the
call that wrote the last (the pipe then holds at most its size behind):

  binding     psplice.copy(file, pipe)
  copyfileobj shutil.copyfileobj(file, pipe), what Python programs use: read
              and write through user memory (it has no sendfile path)
  readinto    a readinto/os.write loop with a 1 MiB buffer, the best plain
              Python does
  c           psplice_copy() called from a small C program linked with the
              same libpsplice.so.0 (built here with cc), timed inside it

Every pipe is grown to --pipe-size (1 MiB, as psplice cat grows its output)
for every method alike. The methods take turns, --runs rounds, and the
median of each is reported, with the ratios the goal is stated in: the
binding within 1.05x of C, and 5x or more of copyfileobj.

  LD_LIBRARY_PATH=build /usr/bin/python3 bench/python_bench.py --size 1G
"""

import argparse
import fcntl
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, "build")
sys.path.insert(0, os.path.join(ROOT, "bindings", "python"))
if not os.environ.get("PSPLICE_LIBRARY") and not os.environ.get("LD_LIBRARY_PATH"):
    os.environ["PSPLICE_LIBRARY"] = os.path.join(BUILD, "libpsplice.so.0")

import psplice  # noqa: E402

C_LOOP = r"""
#include <fcntl.h>
#include <stdio.h>
#include <time.h>
#include <psplice.h>

int main(int argc, char **argv)
{
	struct psplice_result r;
	struct timespec a, b;
	int fd;

	if (argc != 2 || (fd = open(argv[1], O_RDONLY)) < 0)
		return 2;
	clock_gettime(CLOCK_MONOTONIC, &a);
	if (psplice_copy(fd, NULL, 1, NULL, PSPLICE_TO_EOF, 0, &r) < 0) {
		perror("psplice_copy");
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	fprintf(stderr, "%lld %llu %s\n",
		(long long)(b.tv_sec - a.tv_sec) * 1000000000 + (b.tv_nsec - a.tv_nsec),
		(unsigned long long)r.out_bytes, psplice_method_name(r.method));
	return 0;
}
"""


def size_arg(s):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(s[:-1]) * mult[s[-1].upper()] if s[-1].upper() in mult else int(s)


def make_file(path, size):
    block = os.urandom(1 << 20)
    with open(path, "wb") as f:
        left = size
        while left:
            left -= f.write(block[:min(left, len(block))])
    # Read it once so that it is in the page cache for every method.
    with open(path, "rb") as f:
        while f.read(1 << 24):
            pass


def build_c_loop(tmp):
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        return None
    src, exe = os.path.join(tmp, "loop.c"), os.path.join(tmp, "loop")
    with open(src, "w") as f:
        f.write(C_LOOP)
    subprocess.run([cc, "-O2", "-I", os.path.join(ROOT, "include"), "-o", exe, src,
                    "-L", BUILD, "-l:libpsplice.so.0", "-Wl,-rpath," + BUILD], check=True)
    return exe


class Drained:
    """A pipe whose read end a reader process drains to /dev/null."""

    def __init__(self, pipe_size):
        self.r, self.w = os.pipe()
        fcntl.fcntl(self.w, fcntl.F_SETPIPE_SZ, pipe_size)
        drain = os.path.join(BUILD, "psplice")
        cmd = [drain, "cat"] if os.access(drain, os.X_OK) else ["cat"]
        with open(os.devnull, "wb") as null:
            self.proc = subprocess.Popen(cmd, stdin=self.r, stdout=null)
        os.close(self.r)

    def finish(self):
        os.close(self.w)
        if self.proc.wait(120) != 0:
            raise RuntimeError("the reader failed")


def run_binding(path, pipe):
    with open(path, "rb") as f:
        t0 = time.perf_counter_ns()
        r = psplice.copy(f, pipe.w)
        t = time.perf_counter_ns() - t0
    return t, r.out_bytes, str(r.method)


def run_copyfileobj(path, pipe):
    with open(path, "rb") as f, open(pipe.w, "wb", closefd=False) as out:
        t0 = time.perf_counter_ns()
        shutil.copyfileobj(f, out)
        out.flush()
        t = time.perf_counter_ns() - t0
    return t, os.path.getsize(path), "read/write"


def run_readinto(path, pipe):
    buf = bytearray(1 << 20)
    view = memoryview(buf)
    n = 0
    with open(path, "rb", buffering=0) as f:
        t0 = time.perf_counter_ns()
        while True:
            k = f.readinto(buf)
            if not k:
                break
            done = 0
            while done < k:
                done += os.write(pipe.w, view[done:k])
            n += k
        t = time.perf_counter_ns() - t0
    return t, n, "read/write"


def run_c(exe):
    def go(path, pipe):
        p = subprocess.run([exe, path], stdout=pipe.w, stderr=subprocess.PIPE,
                           text=True, check=True)
        ns, n, method = p.stderr.split()
        return int(ns), int(n), method
    return go


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=size_arg, default=1 << 30)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--pipe-size", type=size_arg, default=1 << 20)
    ap.add_argument("--dir", default=BUILD, help="where the test file goes (a disk)")
    args = ap.parse_args()

    os.makedirs(args.dir, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        path = os.path.join(tmp, "input")
        make_file(path, args.size)
        methods = {"binding": run_binding, "copyfileobj": run_copyfileobj,
                   "readinto": run_readinto}
        exe = build_c_loop(tmp)
        if exe:
            methods["c"] = run_c(exe)
        else:
            print("c: skipped, no C compiler")
        times = {m: [] for m in methods}
        how = {}
        for _ in range(args.runs):
            for name, fn in methods.items():
                pipe = Drained(args.pipe_size)
                try:
                    t, n, how[name] = fn(path, pipe)
                finally:
                    pipe.finish()
                if n != args.size:
                    raise RuntimeError(f"{name} moved {n} bytes of {args.size}")
                times[name].append(t)

    gib = args.size / (1 << 30)
    print(f"python {sys.version.split()[0]}, libpsplice {psplice.version()}, "
          f"{args.size >> 20} MiB cached file into a {args.pipe_size >> 10} KiB pipe, "
          f"median of {args.runs}, load {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    med = {m: statistics.median(v) for m, v in times.items()}
    for m in methods:
        print(f"  {m:12s} {gib / (med[m] / 1e9):7.2f} GiB/s  ({how[m]}; runs: "
              + ", ".join(f"{gib / (t / 1e9):.2f}" for t in times[m]) + ")")
    print(f"binding/copyfileobj speed: {med['copyfileobj'] / med['binding']:.2f}x (goal >= 5)")
    print(f"binding/readinto speed: {med['readinto'] / med['binding']:.2f}x")
    if "c" in med:
        print(f"binding time / C time: {med['binding'] / med['c']:.3f} (goal <= 1.05)")


if __name__ == "__main__":
    main()
