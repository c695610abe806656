"""Installs the package the build laid out (<build>/python) with pip, offline, into a fresh
folder, then, in a new interpreter that sees only that folder, imports it and gathers random
data over two thread ranks: the installed package must find its own libxccl.
Usage: check_pip_install.py <build>/python. Exit 77 (skip) where pip is missing."""

import os
import subprocess
import sys
import tempfile

PROBE = r"""
import os, sys, threading
import numpy as np
import xccl
target = sys.argv[1]
assert xccl.library_path.startswith(target), xccl.library_path
comms = xccl.init_all(2)
blocks = [np.random.default_rng().standard_normal(333).astype(np.float32) for _ in comms]
outs = [np.full(666, np.nan, np.float32) for _ in comms]
threads = [threading.Thread(target=c.all_gather, args=(outs[c.rank], blocks[c.rank]))
           for c in comms]
[t.start() for t in threads]
[t.join(60) for t in threads]
for out in outs:
    np.testing.assert_array_equal(out, np.concatenate(blocks))
[c.destroy() for c in comms]
print("installed package works:", xccl.library_path)
"""


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    laid_out = sys.argv[1]
    if subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True).returncode:
        print(f"skipped: {sys.executable} has no pip (Debian: apt-get install python3-pip)")
        return 77
    with tempfile.TemporaryDirectory() as target:
        with tempfile.TemporaryDirectory() as scratch:
            # pip builds in place: a copy keeps the build tree free of its build/ folders.
            subprocess.run(["cp", "-r", laid_out, scratch], check=True)
            source = os.path.join(scratch, os.path.basename(laid_out.rstrip("/")))
            install = subprocess.run(
                [sys.executable, "-m", "pip", "install", "--no-index", "--no-build-isolation",
                 "--disable-pip-version-check", "--no-warn-script-location", "--quiet",
                 "--target", target, source], capture_output=True, text=True)
        if install.returncode:
            print("pip install failed:\n" + install.stdout + install.stderr)
            return 1
        env = {k: v for k, v in os.environ.items() if k not in ("XCCL_LIBRARY", "PYTHONPATH")}
        env["PYTHONPATH"] = target
        probe = subprocess.run([sys.executable, "-c", PROBE, target], env=env, cwd=target,
                               capture_output=True, text=True, timeout=120)
        print(probe.stdout + probe.stderr)
        return probe.returncode


if __name__ == "__main__":
    sys.exit(main())
