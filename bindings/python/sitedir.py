"""Print the directory below PREFIX (argv[1]) where this python3 finds
packages, for make install-python: the first of Debian's and the usual
layouts that is on sys.path, else PREFIX/lib/python3.X/site-packages."""

import os
import sys

prefix = sys.argv[1].rstrip("/") or "/"
ver = "python%d.%d" % sys.version_info[:2]
candidates = [os.path.join(prefix, "lib", "python3", "dist-packages"),
              os.path.join(prefix, "lib", ver, "dist-packages"),
              os.path.join(prefix, "lib", ver, "site-packages")]
on_path = [os.path.normpath(p) for p in sys.path]
print(next((c for c in candidates if c in on_path), candidates[-1]))
