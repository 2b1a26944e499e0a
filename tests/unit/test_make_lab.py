"""``make lab`` starts JupyterLab with nothing of the test suite's environment: the Makefile exports
``MPIEXEC_TIMEOUT`` for the tests, and a kernel that inherited it would start MPI worlds that
die when it expires. The target's own recipe is run, with ``mpiworkbench`` replaced by a script
that records the environment it was started with."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_lab_starts_jupyterlab_without_the_suites_time_limit(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    seen = tmp_path / "environment.json"
    fake = bin_dir / "mpiworkbench"
    fake.write_text(f"#!{sys.executable}\nimport json, os, sys\n"
                    f"json.dump({{'argv': sys.argv[1:], 'env': dict(os.environ)}}, open({str(seen)!r}, 'w'))\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    # the recipe alone: no venv or profile to make first (PROFILE_STAMP empty)
    done = subprocess.run(["make", "--no-print-directory", "-C", str(REPO), "lab", f"BIN={bin_dir}", "PROFILE_STAMP=",
                           "MPIEXEC_TIMEOUT=5"], env={**os.environ, "MPIEXEC_TIMEOUT": "7"},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    started = json.loads(seen.read_text())
    assert started["argv"] == ["lab"]
    assert "MPIEXEC_TIMEOUT" not in started["env"], started["env"].get("MPIEXEC_TIMEOUT")
