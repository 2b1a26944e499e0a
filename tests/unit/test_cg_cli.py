"""The ``mpiworkbench cg`` command line (no MPI: parsing and the printed summary)."""

from __future__ import annotations

import argparse

import pytest

from mpiworkbench.cli import build_parser
from mpiworkbench.cli import cg as cli
from mpiworkbench.solvers import cg
from mpiworkbench.solvers.cg import poisson


def test_cli_choices_match_the_solver():
    assert cli.CRITERIA == cg.CRITERIA == ("thesis", "relative")
    assert cli.PARTITIONS == cg.PARTITIONS == poisson.PARTITIONS == ("rows", "blocks")
    assert cli.VARIANTS == cg.VARIANTS == ("classic", "thesis", "fused")
    assert cli.RHS_NAMES == poisson.RHS_NAMES == ("manufactured", "ones", "eigenvector")
    assert set(cg.ALLREDUCES_PER_ITERATION) == set(cg.VARIANTS)


def test_cli_import_pulls_in_neither_mpi_numba_nor_scipy():
    import subprocess
    import sys

    code = "import sys, mpiworkbench.cli.cg; print(*(m in sys.modules for m in ('mpi4py.MPI', 'numba', 'scipy')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False", "False"]


def test_parses_the_documented_command_line():
    args = build_parser().parse_args(
        "cg --np 2 --mesh 1025 --tol 1e-6 --criterion relative --partition blocks --dims 1x2 "
        "--json out.json --save u.npy".split()
    )
    assert (args.np, args.mesh, args.tol, args.criterion, args.partition) == (2, 1025, 1e-6, "relative", "blocks")
    assert args.dims == (1, 2) and args.json == "out.json" and args.save == "u.npy"
    defaults = build_parser().parse_args(["cg", "--mesh", "9"])
    assert (defaults.tol, defaults.criterion, defaults.partition, defaults.variant) == (1e-8, "thesis", "rows", "classic")


def test_bad_dims_and_criterion_are_refused(capsys):
    with pytest.raises(argparse.ArgumentTypeError, match="dims must look like 2x3"):
        cli._dims("2by3")
    with pytest.raises(SystemExit):
        build_parser().parse_args(["cg", "--mesh", "9", "--criterion", "absolute"])
    assert "invalid choice: 'absolute'" in capsys.readouterr().err


def test_summary_names_iterations_residual_and_error():
    res = {
        "mesh": 1025, "unknowns": 1025**2, "np": 2, "partition": "rows", "dims": [2, 1], "variant": "classic",
        "backend": "mpi4py-buf", "status": "converged", "iterations": 1234, "criterion": "thesis", "tol": 1e-8,
        "residual": 1.5e-4, "true_residual": 1.5e-4, "rho_ratio": 9.9e-9, "max_error": 2.0e-7, "time_s": 12.0,
        "time_per_iteration_s": 0.0097, "setup_s": 0.5,
        "timing_split_s": {"matvec": 6.0, "exchange": 0.1, "allreduce": 0.4, "vector": 5.0},
    }
    text = cli.format_result(res)
    assert "converged after 1234 iterations" in text
    assert "||r||/||b|| = 1.500e-04" in text and "rho_k/rho_0 = 9.900e-09" in text
    assert "max|x - x(1-x)y(1-y)| = 2.000e-07" in text
    assert "9.700 ms/iteration" in text and "exchange 0.100 s" in text
    res["max_error"] = None
    assert "max_error" not in cli.format_result(res)
