"""The job's time left as ``squeue`` writes it, and who is watched (mpiworkbench.client.cluster.time_limit)."""

from __future__ import annotations

import pytest

from mpiworkbench.client.cluster import time_limit
from mpiworkbench.client.cluster.allocation import Allocation


@pytest.mark.parametrize("text, seconds", [
    ("0:58", 58.0), ("1:02:03", 3723.0), ("2-00:00:01", 172801.0), ("10:00", 600.0),
    ("UNLIMITED", None), ("NOT_SET", None), ("INVALID", None), ("", None),
])
def test_slurm_durations_read_in_seconds(text, seconds):
    assert time_limit.parse_duration(text) == seconds


def test_the_message_names_the_job_its_limit_and_what_to_do(monkeypatch):
    monkeypatch.setattr(time_limit.time, "monotonic", lambda: 100.0)
    clock = time_limit.JobClock("42", left=70.0, limit="0:02:00", asked=90.0)
    text = clock.message()
    assert text.startswith("your Slurm job 42 reaches its time limit (0:02:00) in 60 s: the MPI world was stopped")
    assert "save your notebook" in text and "start a new server" in text


def test_a_job_time_limit_is_no_exception_an_except_exception_swallows():
    assert not issubclass(time_limit.JobTimeLimit, Exception)
    assert not issubclass(time_limit.JobTimeLimit, KeyboardInterrupt)  # %%px turns those into signals


def test_only_a_world_inside_a_job_in_an_ipython_kernel_is_watched():
    job = Allocation("7", 2, 1, "node1")
    assert not time_limit.watch(object(), None)  # outside Slurm
    assert not time_limit.watch(object(), job)  # no IPython kernel here (pytest)
