"""On a rank: its hang report armed, once per engine — the interposer's slot and stack dumper, and
the reporter thread that publishes where the rank is blocked when its notebook runs on another host
(:mod:`mpiworkbench.trace.hang`); the notebook's side reads them (:mod:`mpiworkbench.client.calls.trace`)."""

from __future__ import annotations

from typing import Any

from mpiworkbench.trace import hang


def arm_engine(left_behind: list[dict[str, Any]], publish_events: bool = False) -> dict[str, Any]:
    """On an engine: :func:`mpiworkbench.trace.hang.arm`, with the engine's data publisher for
    the reporter thread (ranks on other hosts report themselves through it, and with
    *publish_events* also their trace events)."""
    from IPython import get_ipython

    shell = get_ipython()
    return hang.arm(left_behind, publisher=getattr(shell, "data_pub", None) if shell is not None else None,
                    publish_events=publish_events)
