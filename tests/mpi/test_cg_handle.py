"""The notebook handle and panel driven SPMD-style: every rank holds a handle whose
"remote" calls run on its own rank, so the handle's logic is tested at 1, 2 and 3 ranks
without an ipyparallel cluster (the notebook test runs it on a real one)."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from mpi4py import MPI

from mpiworkbench.core import objects
from mpiworkbench.drivers.cg import CGHandle
from mpiworkbench.widgets.cg import CGPanel
from mpiworkbench.solvers.cg import poisson
comm = MPI.COMM_WORLD


class SpmdObject:
    """What ``wb.create`` returns, with each rank calling its own object collectively."""

    def __init__(self, key):
        self.key = key

    def call(self, method, *args, **kwargs):
        return comm.allgather(objects.call(self.key, method, args, kwargs))

    def root(self, method, *args, **kwargs):
        return self.call(method, *args, **kwargs)[0]

    def attr(self, name):
        return comm.allgather(objects.attribute(self.key, name))

    def delete(self):
        objects.delete(self.key)


class SpmdWorkbench:
    """``create``, ``run_async`` and ``gather`` of a session, each rank doing its own part."""

    made = itertools.count()

    def run_async(self, func, *args):  # "pending" = already done, SPMD
        return comm.allgather(func(*args))

    def gather(self, done):
        return done

    def create(self, factory, *args, nranks=None, **kwargs):
        key = f"spmd-{next(self.made)}"
        objects.create(key, factory, args, {**kwargs, "comm": comm})
        return SpmdObject(key)


def test_handle_iterates_and_gathers():
    c = CGHandle(SpmdWorkbench(), mesh=19)
    assert c.iterations == 0 and len(c.residuals) == 1
    c.iterate(5)
    c.iterate(5)
    assert c.iterations == 10 and len(c.residuals) == 11 and len(c.rho_ratios) == 11
    assert c.layout == [(b.i0, b.i1, b.j0, b.j1) for b in poisson.make_blocks(19, (comm.size, 1))]
    state = c.run(chunk=7)
    assert state["converged"] and c.finished
    np.testing.assert_allclose(c.rho_ratios[-1], state["rho_ratio"])
    assert c.rho_ratios[-1] <= 1e-8 < c.rho_ratios[-2]
    err = c.error()
    assert err.shape == (19, 19) and np.abs(err).max() == pytest.approx(c.result()["max_error"])
    t = c.timings()
    assert len(t) == comm.size and all(r["iterations"] == c.iterations for r in t)
    c.reset()
    assert c.iterations == 0 and len(c.residuals) == 1
    c.close()


def test_handle_warns_once_at_maxiter_and_stops_on_request():
    c = CGHandle(SpmdWorkbench(), mesh=19, maxiter=4)
    with pytest.warns(RuntimeWarning, match="CG reached maxiter=4"):
        c.run(chunk=3)
    assert c.state["status"] == "maxiter" and c.iterations == 4
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        c.iterate(1)  # no second warning
    c.close()
    d = CGHandle(SpmdWorkbench(), mesh=19)
    d.run(should_stop=lambda: d.iterations >= 6, chunk=3)
    assert d.iterations == 6 and d.state["status"] == "running"
    d.close()


def test_exact_solution_only_for_the_manufactured_rhs():
    c = CGHandle(SpmdWorkbench(), mesh=9, rhs="ones")
    with pytest.raises(ValueError, match="exact solution is known only for rhs='manufactured'"):
        c.error()
    c.close()


def test_panel_buttons_step_and_redraw():
    c = CGHandle(SpmdWorkbench(), mesh=15)
    panel = CGPanel(c)
    assert list(panel.buttons) == ["Iterate 1", "Iterate 10", "Iterate 100", "Run to convergence", "Stop", "Reset"]
    assert [b.description for b in panel.buttons.values()] == list(panel.buttons)
    before = panel.residual_image.value
    panel.buttons["Iterate 10"].click()
    assert c.iterations == 10 and "k = 10" in panel.status.value
    assert panel.residual_image.value != before and bytes(panel.field_image.value).startswith(b"\x89PNG")
    panel.buttons["Reset"].click()
    assert c.iterations == 0
    c.close()
