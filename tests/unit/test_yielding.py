"""When a rank yields its core (``mpiworkbench.core.yielding``): after a long wait in one call,
never on the user's own setting; the MPI side is ``tests/mpi/test_yielding.py`` and
``tests/cluster/test_workbench.py``."""

from __future__ import annotations

from mpiworkbench.core import yielding


class FakeSwitch:
    def __init__(self):
        self.on, self.calls = False, []

    def set(self, on):
        self.calls.append(on)
        self.on = on
        return True


def test_on_after_a_long_wait_off_when_the_call_returned_and_short_calls_never_switch():
    made = []
    waiting = yielding.WhileWaiting(2.0, make=lambda: made.append(FakeSwitch()) or made[-1])
    for seconds in (0.0, 0.5, 1.9):  # a short wait: no switch is even made
        waiting.look(True, seconds)
    waiting.look(False, 0.0)
    assert made == []
    assert not waiting.yielding
    waiting.look(True, 2.1)
    assert made[0].on and waiting.yielding
    waiting.look(True, 5.0)
    waiting.look(False, 0.0)
    assert not made[0].on and not waiting.yielding and made[0].calls == [True, True, False]


def test_a_library_without_the_variable_is_asked_once():
    asked = []
    waiting = yielding.WhileWaiting(1.0, make=lambda: asked.append(1))
    for _ in range(3):
        waiting.look(True, 10.0)
    assert asked == [1]


def test_the_users_own_setting_stands():
    assert yielding.yield_after_s({}) == yielding.YIELD_AFTER_S
    assert yielding.yield_after_s({"MPIWORKBENCH_YIELD_AFTER_S": "5"}) == 5.0
    assert yielding.yield_after_s({"MPIWORKBENCH_YIELD_AFTER_S": "0"}) is None
    assert yielding.yield_after_s({"MPIR_CVAR_ENABLE_HEAVY_YIELD": "0"}) is None



def test_a_bad_setting_is_refused_naming_it_before_any_rank_starts(monkeypatch):
    import pytest

    from mpiworkbench.core.launch import rank_environment

    monkeypatch.setenv("MPIWORKBENCH_YIELD_AFTER_S", "soon")
    with pytest.raises(ValueError, match="MPIWORKBENCH_YIELD_AFTER_S='soon' is not a number of seconds.*0 for never"):
        rank_environment()
