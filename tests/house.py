#!/usr/bin/env python3
"""The house rules of ARCHITECTURE.md, read off the tree and the build.

usage: house.py TOP BUILD

- no file of src/, cli/, bench/ or preload/ over 500 lines;
- no function there over 50 lines (the lines between its braces, which
  open and close in column 0 as the style has them);
- no two files of cli/ or bench/ that call each other, directly or round
  a loop: the graph of which object file uses a symbol another defines
  (nm), whose strongly connected components must each be one file.
Each breach is one line on standard output; exit 1 if there is any."""
import glob
import os
import re
import subprocess
import sys

MAX_FILE, MAX_FUNC = 500, 50
DIRS = ("src", "cli", "bench", "preload")
LOOP_DIRS = ("cli", "bench")


def sources(top):
    for d in DIRS:
        for ext in ("c", "h"):
            yield from sorted(glob.glob(os.path.join(top, d, "**", "*." + ext),
                                        recursive=True))


def code_of(text):
    """Comments and literals blanked, line breaks kept."""
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r'"(\\.|[^"\\\n])*"', '""', text)
    return re.sub(r"'(\\.|[^'\\\n])*'", "''", text)


def long_functions(lines):
    """(line, name, length) of each function body over MAX_FUNC lines."""
    depth, start = 0, None
    for i, line in enumerate(lines):
        if depth == 0 and line.startswith("{"):
            start = i
        for ch in line:
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0 and start is not None:
                    if i - start - 1 > MAX_FUNC:
                        head = " ".join(lines[max(0, start - 3):start])
                        names = re.findall(r"(\w+)\s*\(", head)
                        yield start + 1, names[0] if names else "?", i - start - 1
                    start = None


def symbols(obj):
    out = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        f = line.split()
        if len(f) == 2 and f[0] == "U":
            used.add(f[1])
        elif len(f) == 3 and f[1] in "TDBRGV":
            defined.add(f[2])
    return defined, used


def loops(objs):
    owner, uses = {}, {}
    for o in objs:
        defined, uses[o] = symbols(o)
        for s in defined:
            owner.setdefault(s, o)
    graph = {o: {owner[s] for s in uses[o] if owner.get(s, o) != o} for o in objs}
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in objs:
        if v not in index:
            visit(v)
    return found


def main(top, build):
    bad = []
    for path in sources(top):
        rel = os.path.relpath(path, top)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        n = text.count("\n")
        if n > MAX_FILE:
            bad.append(f"{rel}: {n} lines, more than {MAX_FILE}")
        for line, name, length in long_functions(code_of(text).split("\n")):
            bad.append(f"{rel}:{line}: {name} is {length} lines, more than {MAX_FUNC}")
    # An object whose source is gone (moved since it was built) is left out.
    objs = [o for d in LOOP_DIRS
            for o in sorted(glob.glob(os.path.join(build, d, "**", "*.o"), recursive=True))
            if os.path.exists(os.path.join(top, os.path.relpath(o, build))[:-2] + ".c")]
    if not objs:
        bad.append(f"no objects of {', '.join(LOOP_DIRS)} in {build}: build first")
    for comp in loops(objs):
        bad.append("files that call each other: " +
                   " ".join(os.path.relpath(o, build) for o in comp))
    for line in bad:
        print(line)
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
