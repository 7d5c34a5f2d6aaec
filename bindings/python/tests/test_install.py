"""make install-python: the package alone, into DESTDIR, importable from
there; make install leaves it out."""

import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))


def make(*args):
    if not shutil.which("make"):
        pytest.skip("no make")
    return subprocess.run(["make", "--no-print-directory", "-C", ROOT,
                           "PYTHON=" + sys.executable, *args],
                          capture_output=True, text=True, timeout=300)


def test_install_python_into_destdir(tmp_path):
    r = make("install-python", "DESTDIR=" + str(tmp_path), "PREFIX=/opt/x",
             "PYTHONDIR=/opt/x/py")
    assert r.returncode == 0, r.stderr
    pkg = tmp_path / "opt/x/py/psplice"
    src = os.path.join(ROOT, "bindings", "python", "psplice")
    want = sorted(n for n in os.listdir(src) if n.endswith(".py"))
    assert "aio.py" in want
    assert sorted(p.name for p in pkg.iterdir()) == want
    # The library this run loaded, by path: the test runs from elsewhere,
    # where a relative LD_LIBRARY_PATH would not find it.
    from test_load import loaded_path
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "opt/x/py"),
               PSPLICE_LIBRARY=loaded_path())
    out = subprocess.run([sys.executable, "-c", "import psplice; print(psplice.__file__)"],
                         cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(pkg / "__init__.py")


def test_install_python_finds_the_site_directory():
    r = make("-n", "install-python", "PREFIX=/usr/local")
    assert r.returncode == 0, r.stderr
    target = r.stdout.split("install -d ")[1].split()[0]
    assert target.startswith("/usr/local/lib/python3")
    assert target.endswith("-packages/psplice")


def test_make_install_leaves_the_package_out():
    r = make("-n", "install", "DESTDIR=/nonexistent")
    assert r.returncode == 0, r.stderr
    assert "bindings/python" not in r.stdout and "-packages" not in r.stdout
