"""Every rank's ``%%px`` output reaches the notebook, however late it trails the cell's replies.

An engine's output travels on IOPub, its reply on another socket: the reply may come first, and
under load seconds first. ``%%px`` streamed the output only while it waited for the replies, so
output that came after was dropped — a cell ended with nothing shown (``tests/browser/
test_hub_class.py`` met it in the full browser tier: the student's ``rank 0 of 2`` never showed;
here about one cell in ten lost its output on a 2-core machine). A real kernel (ipykernel, the
Jupyter protocol) runs many short ``%%px`` cells; each must show both ranks' lines under its own
cell.
"""

from __future__ import annotations

import json
import os

import pytest

pytestmark = pytest.mark.timeout(600)

#: Cells run; with one in ten losing its output before the fix, 30 cells all complete by chance
#: about 4 % of the time.
CELLS = 30
LIMIT_S = 120


def test_every_px_cell_shows_every_rank_s_output(tmp_path):
    from jupyter_client.manager import start_new_kernel

    env = {k: v for k, v in os.environ.items() if k != "IPP_NONINTERACTIVE"}  # streamed, as in a notebook
    km, kc = start_new_kernel(kernel_name="python3", env=env, cwd=str(tmp_path))

    def run(code: str) -> list[str]:
        msg_id, outputs = kc.execute(code), []
        while True:
            msg = kc.get_iopub_msg(timeout=LIMIT_S)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            if msg["msg_type"] in ("stream", "display_data", "error"):
                outputs.append(json.dumps(msg["content"]))
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                return outputs

    try:
        started = run("from mpiworkbench import Workbench\nwb = Workbench(n=2).start()\nprint(wb.origin)")
        assert any("started a cluster" in text for text in started), started
        lost = []
        for i in range(CELLS):
            outputs = run(f"%%px\nprint(f'rank {{MPI.COMM_WORLD.rank}} says {i}')")
            if not all(any(f"rank {rank} says {i}" in text for text in outputs) for rank in (0, 1)):
                lost.append((i, outputs))
        assert lost == [], f"{len(lost)} of {CELLS} cells lost output: {lost[:3]}"
        # Made certain: every rank's output is in before the streaming begins (what the loop above
        # met by chance once on CI, 2026-11-28: ipyparallel gave both ranks' displays one id, and
        # rank 1's lines replaced rank 0's)
        captured = run("from mpiworkbench.client import upstream\n"
                       "ar = wb.view.execute(\"print(f'captured on rank {MPI.COMM_WORLD.rank}')\", block=False)\n"
                       "assert ar.wait_for_output(60)\n"
                       "with upstream.stream_output(ar):\n    pass")
        assert all(any(f"captured on rank {rank}" in text for text in captured) for rank in (0, 1)), captured
        assert any("stopped" in text for text in run("print(wb.stop())"))
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=False)
