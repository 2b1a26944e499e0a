"""Shared test settings: keep every test away from the user's IPython and cache dirs."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import uuid

# Every process this test run starts inherits the marker, so leftovers (even orphans
# re-parented to init) can be found machine-wide: tests/process_tree.py.
os.environ.setdefault("MPIWORKBENCH_TEST_RUN", uuid.uuid4().hex)

# Tests must not write into the user's ~/.ipython (cluster files, profiles); the C build
# cache is shared between runs on purpose (compiling is slow, results are hash-keyed).
# Child processes (kernels, engines, MPI ranks) inherit the directory; its creator removes it.
if "MPIWORKBENCH_TEST_IPYTHONDIR" not in os.environ:
    _IPYTHONDIR = tempfile.mkdtemp(prefix="mpiwb-test-ipython-")
    os.environ["MPIWORKBENCH_TEST_IPYTHONDIR"] = os.environ["IPYTHONDIR"] = _IPYTHONDIR
    atexit.register(shutil.rmtree, _IPYTHONDIR, ignore_errors=True)
# ipyparallel: no progress bars or streaming widgets in non-interactive runs.
os.environ.setdefault("IPP_NONINTERACTIVE", "1")
os.environ.setdefault("MPLBACKEND", "Agg")
