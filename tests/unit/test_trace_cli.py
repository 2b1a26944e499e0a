"""``mpiworkbench trace -- wave --np N …`` from a shell: the Chrome JSON holds what the wave
solver's halo exchange did, rank by rank; bad use is refused clearly."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter

import pytest


def _mpiworkbench(*argv: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mpiworkbench", *argv], capture_output=True, text=True,
                          cwd=cwd, timeout=600, check=False)


@pytest.mark.parametrize("np_", [1, 2, 3])
def test_trace_of_wave_steps_writes_chrome_json(tmp_path, np_):
    steps = 3
    out = tmp_path / "wave.json"
    proc = _mpiworkbench("trace", "--out", str(out), "--", "wave", "--np", str(np_), "--mesh", "17",
                         "--steps", str(steps), "--dims", f"{np_},1,1", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "written to" in proc.stdout
    data = json.loads(out.read_text())
    calls = Counter((e["pid"], e["name"]) for e in data["traceEvents"] if e["ph"] == "X")
    for rank in range(np_):
        # the halo exchange: one Sendrecv per face direction per step (PROC_NULL at the walls)
        assert calls[(rank, "MPI_Sendrecv")] == 6 * steps
    halo = [e for e in data["traceEvents"] if e["ph"] == "X" and e["name"] == "MPI_Sendrecv" and "peer" in e["args"]]
    # along x, each of the np-1 inner faces carries one message each way per step
    assert len(halo) == 2 * (np_ - 1) * steps
    assert sum(e["ph"] == "s" for e in data["traceEvents"]) >= len(halo)  # each one matched: an arrow


def test_trace_needs_a_command(tmp_path):
    proc = _mpiworkbench("trace", "--out", str(tmp_path / "t.json"), cwd=tmp_path)
    assert proc.returncode == 2 and "name the command to trace" in proc.stderr


@pytest.mark.parametrize("argv", [
    ["trace", "--out", "{missing}/t.json", "--", "wave", "--np", "2", "--mesh", "17", "--steps", "2"],
    ["trace", "--out", "{tmp}/t.json", "--", "wave", "--np", "2", "--mesh", "17", "--json", "{missing}/w.json"],
    ["wave", "--np", "2", "--mesh", "17", "--save", "{missing}/f.npy"],
    ["speedup", "inner", "--np", "1,2", "--plot", "{missing}/s.png"],
    ["bench", "pingpong", "--np", "2", "--csv", "{tmp}"],
])
def test_an_output_that_cannot_be_written_is_named_before_any_job_runs(tmp_path, argv):
    missing = tmp_path / "no" / "such"
    argv = [a.format(missing=missing, tmp=tmp_path) for a in argv]
    proc = _mpiworkbench(*argv, cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    said = proc.stderr
    assert (f"the directory {missing} does not exist" in said) or (f"{str(tmp_path)!r} is a directory" in said), said
    # refused up front: no rank started, so no job printed anything and nothing was written
    assert "mpiexec" not in said.lower() and proc.stdout == "", proc.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == [], sorted(tmp_path.iterdir())


# A program of the user's own: a non-blocking collective on a duplicate of COMM_WORLD, then a
# partitioned ring on COMM_WORLD (MPI-3 and MPI-4 families, two communicators).
PROGRAM = '''
import sys
import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
parts = int(sys.argv[1])
dup = comm.Dup()
x, y = np.ones(8), np.empty(8)
dup.Iallreduce(x, y).Wait()
assert y[0] == comm.size
right, left = (comm.rank + 1) % comm.size, (comm.rank - 1) % comm.size
out, got = np.arange(4.0 * parts), np.empty(4 * parts)
recv, send = comm.Precv_init(got, parts, left, 3), comm.Psend_init(out, parts, right, 3)
MPI.Prequest.Startall([recv, send])
for p in range(parts):
    send.Pready(p)
MPI.Request.Waitall([recv, send])
for r in (recv, send, dup):
    r.Free()
'''


@pytest.mark.parametrize("np_", [1, 2, 3])
def test_a_python_program_is_traced_with_its_families_and_communicators(tmp_path, np_):
    from mpiworkbench.trace.model import Trace

    program = tmp_path / "prog.py"
    program.write_text(PROGRAM)
    out = tmp_path / "t.json"
    proc = _mpiworkbench("trace", "--np", str(np_), "--out", str(out), "--", str(program), "3", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "communicators: COMM_WORLD, dup" in proc.stdout
    trace = Trace.from_chrome(json.loads(out.read_text()))
    assert trace.nranks == np_
    dup = next(c for c in trace.comms if c.kind == "dup")
    for rank in range(np_):
        assert trace.count("MPI_Iallreduce", rank, comm=dup.id) == 1
        assert trace.count("MPI_Psend_init", rank, comm="COMM_WORLD") == 1
        assert trace.count("MPI_Pready", rank) == 3
    messages = trace.messages()
    assert len(messages) == np_ and set(messages["bytes"]) == {8 * 4 * 3}


def _installed_others():
    from mpiworkbench.core import implementations

    return [pytest.param(impl.name, marks=pytest.mark.skipif(not impl.installed(), reason=impl.missing()))
            for impl in implementations.REGISTRY if not impl.in_venv]


@pytest.mark.parametrize("name", _installed_others())
def test_a_program_is_traced_under_each_mpi_implementation(tmp_path, name):
    """The interposer is built with that implementation's mpicc and preloaded its launcher's way."""
    from mpiworkbench.trace.model import Trace

    program = tmp_path / "prog.py"
    # one write per rank (the ranks share the pipe): print's separate pieces could interleave
    program.write_text(PROGRAM + "print(f'library: {MPI.Get_library_version().splitlines()[0]}', flush=True)\n")
    out = tmp_path / "t.json"
    proc = _mpiworkbench("trace", "--np", "2", "--mpi", name, "--out", str(out), "--", str(program), "2",
                         cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    from mpiworkbench.core import implementations

    assert proc.stdout.count(f"library: {implementations.get(name).marker}") == 2, proc.stdout
    trace = Trace.from_chrome(json.loads(out.read_text()))
    for rank in range(2):
        assert trace.count("MPI_Iallreduce", rank) == 1 and trace.count("MPI_Pready", rank) == 2
    assert len(trace.messages()) == 2


def test_a_full_buffer_is_said_with_the_capacity_to_ask_for(tmp_path):
    program = tmp_path / "prog.py"
    program.write_text(PROGRAM)
    proc = _mpiworkbench("trace", "--np", "2", "--capacity", "4", "--out", str(tmp_path / "t.json"), "--",
                         str(program), "2", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "dropped (buffer full)" in proc.stdout
    assert "the trace buffer was full" in proc.stderr and "--capacity 100" in proc.stderr, proc.stderr


@pytest.mark.parametrize("argv, said", [
    (["--", "{tmp}/absent.py"], "no Python program"),
    (["--np", "3", "--", "wave", "--np", "2", "--mesh", "9"], "disagrees with the traced command's --np 2"),
    (["--np", "0", "--", "{tmp}/prog.py"], "--np must be at least 1; got 0"),
    (["--mpi", "mpich", "--", "wave", "--np", "2", "--mesh", "9", "--mpi", "impi"], "disagrees with the traced command's --mpi impi"),
    (["--mpi", "lam", "--np", "2", "--", "{tmp}/prog.py"], "unknown MPI implementation 'lam'"),
])
def test_bad_use_with_a_program_is_refused_before_any_job(tmp_path, argv, said):
    (tmp_path / "prog.py").write_text(PROGRAM)
    proc = _mpiworkbench("trace", "--out", str(tmp_path / "t.json"), *[a.format(tmp=tmp_path) for a in argv],
                         cwd=tmp_path)
    assert proc.returncode == 2 and said in proc.stderr, proc.stderr
    assert not (tmp_path / "t.json").exists()
