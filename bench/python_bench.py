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
for every method alike. The methods take turns, --runs rounds (7 or more);
in each round the binding and C run --pairs times one right after the
other, each pair in the opposite order from the last, so that whatever
else the machine does weighs on both alike. The goal is stated per pair:
the median of the pairs' binding/C time ratios, with the smallest and
largest, for the wall time and for the CPU time of the copying thread
(which the machine's other load barely moves); then the binding against
copyfileobj (goal 5x or more).

--calls N then times N small copies (4 KiB, positional, into /dev/null) by
the binding and by C, CPU time per call: the binding's own cost on every
call, which a copy of a large file hides and a relay's many small moves do
not.

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
#include <stdlib.h>
#include <time.h>
#include <psplice.h>

static long long ns(clockid_t clock)
{
	struct timespec t;

	clock_gettime(clock, &t);
	return (long long)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* loop FILE: FILE to standard output, one psplice_copy().
 * loop FILE N: N copies of FILE's first 4 KiB, positional, to standard
 * output. Says on standard error: wall ns, CPU ns, bytes, method. */
int main(int argc, char **argv)
{
	struct psplice_result r = { 0 };
	long long wall, cpu, calls = argc == 3 ? atoll(argv[2]) : 0;
	unsigned long long total = 0;
	int fd;

	if (argc < 2 || argc > 3 || (fd = open(argv[1], O_RDONLY)) < 0)
		return 2;
	/* One untimed call first, as the binding's process made calls before:
	 * the library's code paged in and its symbols bound. */
	if (psplice_copy(fd, &(int64_t){ 0 }, 1, NULL, 4096, 0, &r) < 0) {
		perror("psplice_copy");
		return 1;
	}
	wall = ns(CLOCK_MONOTONIC);
	cpu = ns(CLOCK_THREAD_CPUTIME_ID);
	if (!calls && psplice_copy(fd, NULL, 1, NULL, PSPLICE_TO_EOF, 0, &r) < 0) {
		perror("psplice_copy");
		return 1;
	}
	total = calls ? 0 : r.out_bytes;
	for (long long i = 0; i < calls; i++) {
		int64_t off = 0;

		if (psplice_copy(fd, &off, 1, NULL, 4096, 0, &r) < 0) {
			perror("psplice_copy");
			return 1;
		}
		total += r.out_bytes;
	}
	cpu = ns(CLOCK_THREAD_CPUTIME_ID) - cpu;
	wall = ns(CLOCK_MONOTONIC) - wall;
	fprintf(stderr, "%lld %lld %llu %s\n", wall, cpu, total,
		psplice_method_name(r.method));
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


def timed(fn):
    """fn()'s wall and CPU time (this thread's) in ns, and what it returned."""
    w, c = time.perf_counter_ns(), time.thread_time_ns()
    r = fn()
    return time.perf_counter_ns() - w, time.thread_time_ns() - c, r


def run_binding(path, pipe):
    with open(path, "rb") as f:
        t, cpu, r = timed(lambda: psplice.copy(f, pipe.w))
    return t, cpu, r.out_bytes, str(r.method)


def run_copyfileobj(path, pipe):
    def go():
        shutil.copyfileobj(f, out)
        out.flush()
    with open(path, "rb") as f, open(pipe.w, "wb", closefd=False) as out:
        t, cpu, _ = timed(go)
    return t, cpu, os.path.getsize(path), "read/write"


def run_readinto(path, pipe):
    buf = bytearray(1 << 20)
    view = memoryview(buf)

    def go():
        n = 0
        while True:
            k = f.readinto(buf)
            if not k:
                return n
            done = 0
            while done < k:
                done += os.write(pipe.w, view[done:k])
            n += k
    with open(path, "rb", buffering=0) as f:
        t, cpu, n = timed(go)
    return t, cpu, n, "read/write"


def run_c(exe, *args, stdout=None):
    """Runs the C program; returns its wall ns, CPU ns, bytes and method."""
    p = subprocess.run([exe, *args], stdout=stdout, stderr=subprocess.PIPE,
                       text=True, check=True)
    wall, cpu, n, method = p.stderr.split()
    return int(wall), int(cpu), int(n), method


def c_copy(exe):
    return lambda path, pipe: run_c(exe, path, stdout=pipe.w)


def spread(ratios):
    """The median of per-round ratios, with the smallest and largest."""
    return (f"median {statistics.median(ratios):.3f} "
            f"(min {min(ratios):.3f}, max {max(ratios):.3f}, {len(ratios)} pairs)")


def rounds(path, args, methods):
    """Runs every method once a round, the binding and C --pairs times, back
    to back and each pair in the other order from the last. Returns each
    method's (wall, cpu) per run and its method name."""
    times = {m: [] for m in methods}
    how = {}
    paired = ["binding", "c"] if "c" in methods else ["binding"]
    rest = [m for m in methods if m not in paired]
    # Round -1 warms up (the binding's first call loads what later ones
    # find ready) and is not counted.
    for i in range(-1, args.runs):
        order = []
        for j in range(args.pairs):
            order += paired[::-1] if (i * args.pairs + j) % 2 else paired
        for name in order + rest:
            pipe = Drained(args.pipe_size)
            try:
                t, cpu, n, how[name] = methods[name](path, pipe)
            finally:
                pipe.finish()
            if n != args.size:
                raise RuntimeError(f"{name} moved {n} bytes of {args.size}")
            if i >= 0:
                times[name].append((t, cpu))
    return times, how


def per_call(tmp, exe, calls):
    """CPU time per call of a 4 KiB positional copy into /dev/null, by the
    binding and by C, taking turns over three rounds; the medians."""
    small = os.path.join(tmp, "small")
    with open(small, "wb") as f:
        f.write(os.urandom(4096))
    py, c = [], []
    with open(small, "rb") as f, open(os.devnull, "wb") as null:
        for _ in range(3):
            _, cpu, _ = timed(lambda: [psplice.copy(f, null, 4096, offset_in=0)
                                       for _ in range(calls)])
            py.append(cpu / calls)
            c.append(run_c(exe, small, str(calls), stdout=null)[1] / calls)
    return statistics.median(py), statistics.median(c)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=size_arg, default=1 << 30)
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--pairs", type=int, default=3,
                    help="runs of the binding and of C in each round")
    ap.add_argument("--calls", type=int, default=0,
                    help="then time this many small copies, binding and C")
    ap.add_argument("--pipe-size", type=size_arg, default=1 << 20)
    ap.add_argument("--dir", default=BUILD, help="where the test file goes (a disk)")
    args = ap.parse_args()

    os.makedirs(args.dir, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        path = os.path.join(tmp, "input")
        make_file(path, args.size)
        methods = {"binding": run_binding}
        exe = build_c_loop(tmp)
        if exe:
            methods["c"] = c_copy(exe)
        else:
            print("c: skipped, no C compiler")
        methods.update(copyfileobj=run_copyfileobj, readinto=run_readinto)
        times, how = rounds(path, args, methods)
        calls = per_call(tmp, exe, args.calls) if exe and args.calls else None

    gib = args.size / (1 << 30)
    print(f"python {sys.version.split()[0]}, libpsplice {psplice.version()}, "
          f"{args.size >> 20} MiB cached file into a {args.pipe_size >> 10} KiB pipe, "
          f"{args.runs} rounds, load {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    wall = {m: [t for t, _ in v] for m, v in times.items()}
    cpu = {m: [c for _, c in v] for m, v in times.items()}
    med = {m: statistics.median(v) for m, v in wall.items()}
    for m in methods:
        print(f"  {m:12s} {gib / (med[m] / 1e9):7.2f} GiB/s median ({how[m]}; runs: "
              + ", ".join(f"{gib / (t / 1e9):.2f}" for t in wall[m]) + ")")
    print(f"binding/copyfileobj speed: {med['copyfileobj'] / med['binding']:.2f}x (goal >= 5)")
    print(f"binding/readinto speed: {med['readinto'] / med['binding']:.2f}x")
    if "c" in med:
        ratio = [b / c for b, c in zip(wall["binding"], wall["c"])]
        print(f"binding time / C time, per pair: {spread(ratio)} (goal <= 1.05)")
        ratio = [b / c for b, c in zip(cpu["binding"], cpu["c"])]
        print(f"binding CPU / C CPU, per pair: {spread(ratio)}")
    if calls:
        py, c = calls
        print(f"a 4 KiB copy into /dev/null, CPU per call: binding {py / 1e3:.2f} us, "
              f"C {c / 1e3:.2f} us ({args.calls} calls, median of 3)")


if __name__ == "__main__":
    main()
