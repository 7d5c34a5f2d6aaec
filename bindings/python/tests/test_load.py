"""Loading the library: by soname through the loader's search, or from the
path PSPLICE_LIBRARY names."""

import os
import re
import subprocess
import sys

import psplice
from psplice import _lib

PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(os.path.dirname(PKG))


def run_python(code, env):
    return subprocess.run([sys.executable, "-c", code], env=env, cwd=PKG,
                          capture_output=True, text=True, timeout=60)


def loaded_path():
    with open("/proc/self/maps") as f:
        for line in f:
            if "libpsplice.so" in line:
                return os.path.realpath(line.split()[-1])
    return None


def test_loads_by_soname():
    assert _lib.lib._name == "libpsplice.so.0"
    # Under make check-python the loader found the build tree's copy
    # through LD_LIBRARY_PATH.
    ld = os.environ.get("LD_LIBRARY_PATH", "")
    here = loaded_path()
    assert here is not None
    if ld and "PSPLICE_LIBRARY" not in os.environ:
        assert os.path.dirname(here) in [os.path.realpath(d) for d in ld.split(":") if d]


def test_psplice_library_overrides_the_search():
    lib = loaded_path()
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    env["PSPLICE_LIBRARY"] = lib
    code = ("import psplice, psplice._lib as l, sys; "
            "print(l.lib._name, psplice.version())")
    r = run_python(code, env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [lib, psplice.version()]


def test_a_missing_library_is_an_import_error_that_names_it():
    env = dict(os.environ, PSPLICE_LIBRARY="/nonexistent/libpsplice.so.0")
    r = run_python("import psplice", env)
    assert r.returncode != 0
    assert "ImportError" in r.stderr
    assert "/nonexistent/libpsplice.so.0" in r.stderr


def test_version_is_the_headers():
    with open(os.path.join(ROOT, "include", "psplice.h")) as f:
        h = f.read()
    parts = [re.search(r"#define PSPLICE_VERSION_%s (\d+)" % k, h).group(1)
             for k in ("MAJOR", "MINOR", "PATCH")]
    assert psplice.version() == ".".join(parts)
