"""The wave CLI's parser: cheap to import, choices in sync with the solver, clear errors."""

import subprocess
import sys

import pytest

from mpiworkbench.cli import build_parser
from mpiworkbench.cli import wave as wave_cli
def test_choices_match_the_solver():
    from mpiworkbench.solvers import halo
    from mpiworkbench.solvers.wave import kernels, problem
    assert wave_cli.KERNELS == kernels.KERNELS == ("numpy", "numba", "c")
    assert wave_cli.EXCHANGES == problem.EXCHANGES == (*halo.EXCHANGES, "numba-mpi")
    assert {"sendrecv", "nonblocking", "packed", "none", "backend:c", "backend:mpi4py-buf"} <= set(wave_cli.EXCHANGES)


def test_parser_accepts_the_documented_options():
    args = build_parser().parse_args(
        ["wave", "--np", "2", "--mesh", "65,33,17", "--steps", "5", "--cfl", "0.5", "--dims", "2,1,1",
         "--kernel", "numba", "--exchange", "nonblocking", "--json", "out.json", "--save", "u.npy"]
    )
    assert (args.np, args.mesh, args.steps, args.cfl, args.dims) == (2, "65,33,17", 5, 0.5, (2, 1, 1))
    assert (args.kernel, args.exchange, args.json, args.save) == ("numba", "nonblocking", "out.json", "u.npy")


@pytest.mark.parametrize("argv", [["--mesh", "9,9"], ["--mesh", "a"], ["--mesh", "9", "--dims", "2,1"], ["--mesh", "9", "--kernel", "cuda"]])
def test_parser_rejects_malformed_options(argv, capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["wave", *argv])
    assert "error" in capsys.readouterr().err


def test_cli_import_pulls_in_neither_mpi_nor_numba():
    code = "import sys, mpiworkbench.cli.wave; print('mpi4py.MPI' in sys.modules, 'numba' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
