"""Loading libpsplice and declaring the C prototypes.

The library is found by its soname, libpsplice.so.0, so that the dynamic
loader's search (LD_LIBRARY_PATH, ld.so.cache) decides which copy runs, as it
would for a C program; PSPLICE_LIBRARY, a path, overrides that search. When
the loader has no copy (make install into a prefix the loader does not
search, or ldconfig not run yet), the prefix the package was installed
under and make install's default, /usr/local, are tried.
"""

import ctypes
import os

SONAME = "libpsplice.so.0"

# The version whose pairs hold undelivered bytes as pending instead of
# parking them, and which has tee, range sync and write-behind: the binding
# relies on all of them.
MIN_VERSION = (0, 2)

TO_EOF = 2**64 - 1
# The most one system call moves (MAX_RW_COUNT); psplice() cuts a larger
# length to it, so one step without a length asks for this much.
MAX_STEP = 0x7FFFF000


class CResult(ctypes.Structure):
    """struct psplice_result, field for field."""

    _fields_ = [
        ("in_bytes", ctypes.c_uint64),
        ("out_bytes", ctypes.c_uint64),
        ("error", ctypes.c_int),
        ("side", ctypes.c_int),
        ("method", ctypes.c_int),
        ("parked", ctypes.c_void_p),
        ("parked_len", ctypes.c_size_t),
    ]


def _prefixes():
    """lib directories beside the loader's: the prefix this package lies
    under (PREFIX/lib/python3.X/site-packages/psplice), then /usr/local."""
    here = os.path.dirname(os.path.abspath(__file__))
    parts = here.split(os.sep)
    found = []
    if "lib" in parts:
        prefix = os.sep.join(parts[:len(parts) - parts[::-1].index("lib") - 1]) or os.sep
        found.append(os.path.join(prefix, "lib"))
    found.append("/usr/local/lib")
    return found


def _candidates():
    env = os.environ.get("PSPLICE_LIBRARY")
    if env:
        return [env]
    return [SONAME] + [os.path.join(d, SONAME) for d in _prefixes()
                       if os.path.exists(os.path.join(d, SONAME))]


def _open():
    tried = []
    for path in _candidates():
        try:
            # use_errno: ctypes saves errno right after each call, before
            # the interpreter's own system calls can overwrite it.
            return ctypes.CDLL(path, use_errno=True)
        except OSError as e:
            tried.append(f"{path}: {e}")
    raise ImportError(
        "psplice: cannot load the C library (" + "; ".join(tried) + "): install it "
        "(Debian: apt-get install libpsplice0; from the source tree: make install, "
        "as root), or set LD_LIBRARY_PATH to the directory that holds " + SONAME +
        ", or PSPLICE_LIBRARY to the library's path")


lib = _open()

_i64p = ctypes.POINTER(ctypes.c_int64)
_resp = ctypes.POINTER(CResult)
_intp = ctypes.POINTER(ctypes.c_int)
_size = ctypes.c_size_t
_uint = ctypes.c_uint
_vp = ctypes.c_void_p

# name: (restype, argtypes). Every pointer the C side keeps past a call is
# owned by the library (pairs, tees, write-behind states), never by Python.
_PROTOS = {
    "psplice_ex": (ctypes.c_ssize_t,
                   [ctypes.c_int, _i64p, ctypes.c_int, _i64p, _size, _uint, _resp]),
    "psplice_copy": (ctypes.c_int,
                     [ctypes.c_int, _i64p, ctypes.c_int, _i64p, ctypes.c_uint64,
                      _uint, _resp]),
    "psplice_pair_new": (_vp, [ctypes.c_int, ctypes.c_int, _uint]),
    "psplice_pair_move": (ctypes.c_ssize_t, [_vp, _i64p, _i64p, _size, _uint, _resp]),
    "psplice_pair_copy": (ctypes.c_int,
                          [_vp, _i64p, _i64p, ctypes.c_uint64, _uint, _resp]),
    "psplice_pair_pending": (_size, [_vp]),
    "psplice_pair_take": (_size, [_vp, ctypes.c_char_p, _size]),
    "psplice_pair_free": (None, [_vp]),
    "psplice_tee_new": (_vp, [ctypes.c_int, _intp, _size, _size, _uint]),
    "psplice_tee_move": (ctypes.c_ssize_t, [_vp, _size, _uint, _resp]),
    "psplice_tee_copy": (ctypes.c_int, [_vp, ctypes.c_uint64, _uint, _resp]),
    "psplice_tee_pending": (_size, [_vp, _size]),
    "psplice_tee_take": (_size, [_vp, _size, ctypes.c_char_p, _size]),
    "psplice_tee_free": (None, [_vp]),
    "psplice_tee": (ctypes.c_int,
                    [ctypes.c_int, _intp, _size, ctypes.c_uint64, _uint, _resp]),
    "psplice_last": (_resp, []),
    "psplice_method_name": (ctypes.c_char_p, [ctypes.c_int]),
    "psplice_side_name": (ctypes.c_char_p, [ctypes.c_int]),
    "psplice_version": (ctypes.c_char_p, []),
    "psplice_sync": (ctypes.c_int,
                     [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, _uint, _intp]),
    "psplice_sync_level_name": (ctypes.c_char_p, [ctypes.c_int]),
    "psplice_wb_new": (_vp, [ctypes.c_int, _size, _uint]),
    "psplice_wb_wrote": (ctypes.c_int, [_vp, ctypes.c_int64, _size]),
    "psplice_wb_finish": (ctypes.c_int, [_vp, _uint, _intp]),
}

for _name, (_res, _args) in _PROTOS.items():
    _fn = getattr(lib, _name)
    _fn.restype = _res
    _fn.argtypes = _args

VERSION = lib.psplice_version().decode()
if tuple(int(x) for x in VERSION.split(".")[:2]) < MIN_VERSION:
    raise ImportError(f"psplice: the library loaded is version {VERSION}; "
                      "this binding needs %d.%d or later" % MIN_VERSION)
