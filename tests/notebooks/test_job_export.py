"""A notebook session saved as a batch job, and the job run at the session's size and others.

A notebook run by nbclient in a real kernel starts a 2-rank world and runs: ``%%px`` cells that
carry NumPy state from cell to cell, a ``wb.run`` of a function defined in the notebook (it uses a
cell's variable on the ranks), a ``wb.push``, a wave solver stepped through its handle, a cell that fails on rank
1, a ``%%px --trace`` cell, and ``wb.export_job`` with two values (the wave's field, gathered,
and a total every world size agrees on). Then ``mpiworkbench job run`` runs the job at 1, 2, 3
and 4 ranks (the session's size, and twice it): at 2 every cell's output equals the session's
rank by rank; at every size the values equal the session's; the traced cell leaves its trace;
the failed cell is left out and listed; the job's directory says what it is.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import nbformat
import numpy as np
import pytest
from jupyter_core.utils import run_sync
from nbclient import NotebookClient

from mpiworkbench.jobs import compare, layout

pytestmark = pytest.mark.cost(45, "a 2-rank notebook session saved as a job (15 s), and the job run at 1, 2, 3 and 4 ranks")

CELLS = [
    "from mpiworkbench import Workbench\nwb = Workbench(n=2).start()",
    "%%px\nimport numpy as np\nfrom mpi4py import MPI\ncomm = MPI.COMM_WORLD\n"
    "x = np.arange(6.0) + comm.rank\nprint('rank', comm.rank, 'sum', x.sum())",
    "def scale(k):\n    global y\n    y = x * k\n    return float(y.sum())\nprint(wb.run(scale, 2))",
    "wb.push('offset', [0.5, 1.5])",
    # (mpi_rank, mpi_size: the names every engine has; the job's ranks have them too)
    "%%px\nprint('rank', comm.rank, 'y', y.tolist(), 'offset', sum(offset), 'of', mpi_size, mpi_rank == comm.rank)",
    "w = wb.wave(mesh=9)\nw.step(4)\nw.step(4)\nprint(round(w.error(), 12))",
    "%%px\nif comm.rank == 1:\n    raise ValueError('rank 1 refuses')",
    "%%px --trace\npart = sum(range(comm.rank, 1000, comm.size))\ntotal = comm.allreduce(part)\nprint('total', total)",
    "saved = wb.export_job('job', values={'u': w, 'total': 'total'})\nprint(saved)",
    "wb.stop()",
]
FAILING = 6  # the index of the cell that fails on purpose
SIZES = (1, 2, 3, 4)


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    """The job the notebook saved (its directory) and the executed notebook."""
    scratch = tmp_path_factory.mktemp("session")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    nb.cells[FAILING].metadata["tags"] = ["raises-exception"]
    client = NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(scratch)}})
    run_sync(client.async_execute)()
    errors = {i: o["ename"] for i, c in enumerate(nb.cells) for o in c.get("outputs", []) if o["output_type"] == "error"}
    assert list(errors) == [FAILING], errors
    return scratch / "job", nb


@pytest.fixture(scope="module")
def runs(job):
    """``mpiworkbench job run`` at each size: ``{np: (exit code, its output)}``."""
    path, _ = job
    done = {}
    for size in SIZES:
        ran = subprocess.run([sys.executable, "-m", "mpiworkbench", "job", "run", str(path), "--np", str(size),
                              "--timeout", "240"], capture_output=True, text=True, timeout=300)
        done[size] = (ran.returncode, ran.stdout + ran.stderr)
    return done


def test_the_job_holds_the_cells_and_calls_that_succeeded_and_lists_the_failed_one(job):
    path, nb = job
    meta = layout.read_meta(path)
    assert "3 of them %%px cells" in nb.cells[8].outputs[0]["text"] and "left out: 1" in nb.cells[8].outputs[0]["text"]
    kinds = [c["kind"] for c in meta["calls"]]
    assert kinds.count("cell") == 3, meta["calls"]  # the failed cell is not one of them
    assert [c["label"] for c in meta["left_out"]] == ["%%px: if comm.rank == 1:"]
    assert meta["left_out"][0]["outcome"] == "failed"
    labels = [c["label"] for c in meta["calls"]]
    assert "wb.run: scale(2)" in labels and any("WaveSolver.advance(4)" in label for label in labels)
    assert any(label.startswith("wb.push: stage(") for label in labels), labels  # wb.push: rank 0 holds it, then Bcast
    assert [c for c in meta["calls"] if "advance(4)" in c["label"]][0]["repeat"] == 2  # two steps of 4, one entry
    program = (path / layout.PROGRAM).read_text()
    assert "x = np.arange(6.0) + comm.rank" in program and "trace=True" in program
    assert meta["world"]["n"] == 2 and meta["world"]["mpi"] == "mpich"
    assert "#SBATCH --ntasks=2" in (path / layout.SBATCH).read_text()
    assert "Left out, failed: %%px: if comm.rank == 1:" in (path / layout.README).read_text()


@pytest.mark.parametrize("size", SIZES)
def test_the_job_runs_at_any_size_and_equals_the_session(job, runs, size):
    path, _ = job
    code, said = runs[size]
    assert code == compare.EQUAL, said
    result = json.loads((layout.output_dir(path, size) / layout.COMPARE).read_text())
    assert result["failed"] == [] and result["ended_before"] is None, result
    assert all(row["outcome"] == "ok" for row in result["calls"]), result["calls"]
    assert result["values"]["u"]["equal"] and result["values"]["total"]["equal"], result["values"]
    cells = [row for row in result["calls"] if row["kind"] == "cell"]
    if size == 2:  # at the session's size, every cell's output equals the session's, rank by rank
        assert all(row["same"] for row in cells), cells
    else:  # elsewhere the cells that print a rank's sum differ: shown, not required
        assert [row["same"] for row in cells][-1], cells  # the total is the same at every size
    out = layout.output_dir(path, size)
    with np.load(out / layout.VALUES) as values:
        assert int(values["total"]) == sum(range(1000)) and values["u"].shape == (9, 9, 9)
    traced = [row for row in result["calls"] if "--trace" in row["label"]][0]
    trace = json.loads((out / layout.TRACE.format(number=traced["number"])).read_text())
    calls = [e for e in trace["traceEvents"] if str(e.get("name", "")).startswith("MPI_")]
    assert {e["pid"] for e in calls} == set(range(size)), calls  # every rank's MPI calls in the cell
    text = (out / layout.CELLS).read_text()
    assert f"[stdout:0{'' if size == 1 else '-' + str(size - 1) if size > 2 else ', 1'}] total 499500" in text, text


def test_a_rank_that_fails_in_the_job_ends_it_at_once_and_what_ran_before_is_kept(job, tmp_path):
    """job.py edited (its cells are text to edit): the first cell raises on rank 2 only, while the
    others go on to the next call's collectives; the job ends by MPI_Abort, not at its time limit,
    names the rank, the call and the error, and keeps the records written up to there."""
    import shutil

    path = tmp_path / "edited"
    shutil.copytree(job[0], path, ignore=shutil.ignore_patterns(layout.OUTPUT))
    program = (path / layout.PROGRAM).read_text()
    edited = program.replace("x = np.arange(6.0) + comm.rank\n",
                             "x = np.arange(6.0) + comm.rank\nif comm.rank == 2:\n    raise ValueError('rank 2 was edited to fail')\n", 1)
    assert edited != program
    (path / layout.PROGRAM).write_text(edited)
    ran = subprocess.run([sys.executable, "-m", "mpiworkbench", "job", "run", str(path), "--np", "3", "--timeout", "120"],
                         capture_output=True, text=True, timeout=200)
    said = ran.stdout + ran.stderr
    assert ran.returncode == compare.FAILED, said
    assert "failed: [1] %%px: import numpy as np on rank(s) 2: ValueError: rank 2 was edited to fail" in said, said
    assert "wall-clock limit" not in said, said
    result = json.loads((layout.output_dir(path, 3) / layout.COMPARE).read_text())
    assert result["failed"] == [1] and result["code"] == compare.FAILED
    kept = compare.records(path, 3)  # (the others' records race the abort: only the failed rank's is certain)
    assert kept[1][2]["outcome"] == "failed" and kept[1][2]["error"] == "ValueError: rank 2 was edited to fail", kept
