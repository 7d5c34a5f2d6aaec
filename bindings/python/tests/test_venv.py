"""pip install ./bindings/python into a new virtualenv, offline, with the
virtualenv's own setuptools (--no-build-isolation --no-index): the package
lands in the virtualenv, imports, finds the library through the loader and
copies a file; its version is the library's."""

import os
import re
import shutil
import subprocess
import sys

import pytest

PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(os.path.dirname(PKG))


def run(argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True, timeout=300, **kw)


def header_version():
    with open(os.path.join(ROOT, "include", "psplice.h")) as f:
        v = dict(re.findall(r"#define PSPLICE_VERSION_([A-Z]+) (\d+)", f.read()))
    return "%s.%s.%s" % (v["MAJOR"], v["MINOR"], v["PATCH"])


def test_pip_installs_into_a_new_venv(tmp_path):
    venv = tmp_path / "venv"
    r = run([sys.executable, "-m", "venv", str(venv)])
    if r.returncode != 0:
        pytest.skip("no venv for %s: %s (apt-get install python3-venv)"
                    % (sys.executable, r.stderr.strip().splitlines()[-1:]))
    # A copy: setuptools writes its build/ and egg-info beside the sources.
    src = tmp_path / "src"
    shutil.copytree(PKG, src, ignore=shutil.ignore_patterns(
        "tests", "__pycache__", "build", "*.egg-info"))
    py = str(venv / "bin" / "python")
    # setuptools before 70 builds a wheel only with wheel installed: the
    # one Debian ships as a file (python3-wheel-whl), offline.
    whl = "/usr/share/python-wheels"
    if not os.path.isdir(whl) or not any(n.startswith("wheel-") for n in os.listdir(whl)):
        pytest.skip("no wheel in %s (apt-get install python3-wheel-whl)" % whl)
    r = run([py, "-m", "pip", "install", "--no-index", "--find-links", whl, "wheel"])
    assert r.returncode == 0, r.stdout + r.stderr
    r = run([py, "-m", "pip", "install", "--no-build-isolation", "--no-index",
             "--no-cache-dir", str(src)])
    assert r.returncode == 0, r.stdout + r.stderr
    data = os.urandom(300001)
    (tmp_path / "in").write_bytes(data)
    code = ("import psplice, sys; "
            "f = open(sys.argv[1], 'rb'); g = open(sys.argv[2], 'wb'); "
            "r = psplice.copy(f, g); "
            "print(psplice.__file__); print(r.out_bytes, r.method); print(psplice.version())")
    r = run([py, "-c", code, str(tmp_path / "in"), str(tmp_path / "out")], cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    where, moved, version = r.stdout.splitlines()
    assert where.startswith(str(venv)), where
    assert moved.split()[0] == str(len(data))
    assert (tmp_path / "out").read_bytes() == data
    assert version == header_version()
    r = run([py, "-m", "pip", "show", "psplice"])
    assert "Version: " + header_version() in r.stdout, r.stdout
