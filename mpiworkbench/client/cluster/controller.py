"""The controller every workbench cluster runs: ipyparallel's, in one process, its schedulers as
threads (``IPController.use_threads``) instead of eight child processes, with one upstream bug
mended so that the broadcast path (``wb.run``, ``%%px`` at many ranks) works that way.

Why threads: measured with ``benchmarks/registration_storm.py --controller-sweep 2,16,64``
(docs/scale.md), the threaded controller takes about a quarter of the memory (~100 MB against
~390 MB at 2–64 engines: one Python process instead of nine), starts as fast, and its round
trips (``DirectView`` and broadcast) and CPU per call are the same or lower on this 2-core
machine — several notebooks, or a class, each with a cluster, add up the difference.

The bug (ipyparallel 9.2): ``BroadcastScheduler.accumulated_replies`` and
``accumulated_targets`` are class attributes, one dict shared by every scheduler of the
broadcast tree. As processes each scheduler has its own copy; as threads the root and the
leaves write the same key (the call's id) into the same dict, the first leaf to finish pops it
and the next raises ``KeyError``: a coalescing call never returns. :func:`mend` gives each
scheduler dicts of its own (harmless where ipyparallel already does).

This file is run by path (:data:`COMMAND`, the launcher's ``controller_cmd``; the launcher
adds ``ipcontroller``'s arguments), not as part of :mod:`mpiworkbench`, whose import the
controller would pay for nothing; it imports nothing of :mod:`mpiworkbench`.
"""

from __future__ import annotations

import sys
from pathlib import Path

#: This file, which ``ps`` shows in the controller's command line (what finds it among processes).
FILE = str(Path(__file__).resolve())
#: What starts the controller (``runpy.run_path`` keeps this file's directory off ``sys.path``,
#: where ``profile.py`` would shadow the standard library's).
COMMAND = [sys.executable, "-c", f"import runpy; runpy.run_path({FILE!r}, run_name='__main__')"]
#: The controller's own arguments: its schedulers as threads.
ARGS = ["--IPController.use_threads=True"]


_mended: set[type] = set()  # the scheduler classes mended in this process


def mend(scheduler_class: type) -> None:
    """Give every instance of *scheduler_class* (ipyparallel's ``BroadcastScheduler``) its own
    reply and target dicts (idempotent)."""
    if scheduler_class in _mended:
        return
    init = scheduler_class.__init__

    def init_with_own_state(self, *args, **kwargs):
        init(self, *args, **kwargs)
        self.accumulated_replies, self.accumulated_targets = {}, {}

    scheduler_class.__init__ = init_with_own_state
    _mended.add(scheduler_class)


def main() -> None:
    # imported here, in the controller's process only: the notebook imports this file for COMMAND
    from ipyparallel.controller import app
    from ipyparallel.controller.broadcast_scheduler import BroadcastScheduler

    mend(BroadcastScheduler)
    app.main()


if __name__ == "__main__":
    main()
