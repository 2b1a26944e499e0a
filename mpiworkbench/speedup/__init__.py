"""Live speedup experiments: time a kernel on 1 … n ranks of the running MPI world.

* :mod:`~mpiworkbench.speedup.experiments` — the experiments (``inner``, ``wave``, ``cg``,
  ``heat``, ``bench``), their parameters and variants, and the backends ``wave``, ``cg`` and
  ``heat`` can be crossed with (``variant@backend``; no MPI; the CLI and panel read it).
* :mod:`~mpiworkbench.speedup.point` — engine-side: one point on a sub-communicator.
* :mod:`~mpiworkbench.speedup.plan` — plans the points and runs them one by one.
* :mod:`~mpiworkbench.speedup.analysis` — medians, spread, speedup, efficiency, ratio to C,
  FLOP/s, tables, JSON.
* :mod:`~mpiworkbench.speedup.factors` — the POP factors of a traced sweep (``--trace``) as a table.

Importing this package needs neither MPI nor NumPy beyond what analysis uses.
"""

from mpiworkbench.speedup.analysis import SpeedupResult, format_html, format_table, load, save
from mpiworkbench.speedup.plan import SpeedupSpec, plan_points, run_experiment
from mpiworkbench.speedup.experiments import EXPERIMENTS, Experiment, Parameter
__all__ = [
    "EXPERIMENTS",
    "Experiment",
    "Parameter",
    "SpeedupResult",
    "SpeedupSpec",
    "format_html",
    "format_table",
    "load",
    "plan_points",
    "run_experiment",
    "save",
]
