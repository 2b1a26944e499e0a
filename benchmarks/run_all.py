"""Run every benchmark in this directory, one after the other (``make bench``).

Each writes its figures as JSON into ``results/`` (git-ignored) and prints ratios measured
in its own run. Expect several minutes; run it on a machine that is otherwise idle.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE.parent / "results"
BENCHMARKS = ["session_startstop.py", "bench_credibility.py", "wave_kernels.py", "cg_iteration.py"]


def main() -> int:
    RESULTS.mkdir(exist_ok=True)
    failed = []
    for name in BENCHMARKS:
        print(f"\n=== {name} ===", flush=True)
        out = RESULTS / (Path(name).stem + ".json")
        code = subprocess.call([sys.executable, str(HERE / name), "--json", str(out)])
        if code != 0:
            failed.append(name)
    if failed:
        print(f"\nfailed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
