"""A long wait yields the rank's core (``mpiworkbench.core.yielding``): the switch, on the MPI of
the run. The ``mpich`` wheel's MPICH knows ``MPIR_CVAR_ENABLE_HEAVY_YIELD``, so the switch turns it
on and off as the library holds it; Open MPI and Intel MPI do not, and nothing is switched."""

from __future__ import annotations

from mpi4py import MPI

from mpiworkbench.core import implementations, yielding


def test_the_switch_turns_mpichs_yield_on_and_off_and_other_mpis_get_none():
    switch = yielding.switch()
    if implementations.current().name != "mpich":
        assert switch is None, MPI.Get_library_version()
        return
    assert switch is not None, MPI.Get_library_version()
    assert switch.value() == 0
    try:
        assert switch.set(True) and switch.value() == 1 and switch.on
        MPI.COMM_WORLD.Barrier()  # the library works on with it
        assert switch.set(False) and switch.value() == 0 and not switch.on
    finally:
        switch.set(False)
    MPI.COMM_WORLD.Barrier()
