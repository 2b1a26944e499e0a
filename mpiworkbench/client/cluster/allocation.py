"""A kernel inside a Slurm job: its world is the job's allocation.

A kernel whose process runs inside a Slurm job — a JupyterLab server that JupyterHub's
batchspawner submitted as a job, a notebook executed by an ``sbatch`` script — has
``SLURM_JOB_ID`` in its environment. Its workbench then chooses nothing Slurm has not granted:
the world's size is the job's task count unless asked otherwise, and the ranks are placed by
Slurm on the job's nodes — the implementation's ``mpiexec`` (MPICH's Hydra) reads the
allocation and starts its proxies with ``srun`` inside the job. The controller runs in the
kernel's process, inside the job too; nothing is started outside it, and when the job ends
(``scancel``, its time limit) Slurm ends the whole world with it. In a notebook, the world is
stopped a minute before the job's time limit, the running cell ending with a message that says
so (:mod:`~mpiworkbench.client.cluster.time_limit`).

Across several nodes the engines must reach the controller: it listens on this host's address
on the job's network (what its hostname resolves to) instead of loopback, with the traffic
encrypted (CurveZMQ), as a profile with ``--ip`` does (:mod:`~mpiworkbench.client.cluster.profiles`).

Only the batch step counts as "inside the job": a process of a job *step* (``srun python …``,
``SLURM_STEP_ID`` a number) holds only the step's share, and a world started from there would
compete with it for the same CPUs.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
import socket
from typing import Mapping

from mpiworkbench.core.addresses import LOOPBACK

#: The rank count of a workbench started outside any allocation.
DEFAULT_RANKS = 2
@dataclass(frozen=True)
class Allocation:
    """The Slurm job this process runs in: its id, task count, node count and node list (as
    Slurm writes it, e.g. ``node[1-2]``)."""

    job: str
    tasks: int
    nodes: int
    nodelist: str

    def describe(self) -> str:
        return f"Slurm job {self.job} ({self.tasks} task(s) on {self.nodes} node(s): {self.nodelist})"


def tasks_per_node(text: str) -> list[int]:
    """Slurm's ``SLURM_TASKS_PER_NODE`` (``2(x3),1``) as one count per node ([2, 2, 2, 1])."""
    counts: list[int] = []
    for part in filter(None, text.split(",")):
        match = re.fullmatch(r"(\d+)(?:\(x(\d+)\))?", part.strip())
        if match is None:
            raise ValueError(f"cannot read SLURM_TASKS_PER_NODE={text!r}")
        counts += [int(match.group(1))] * int(match.group(2) or 1)
    return counts


def current(environ: Mapping[str, str] | None = None) -> Allocation | None:
    """The allocation this process runs in (its batch step), or ``None`` outside Slurm jobs and
    inside a job step."""
    env = os.environ if environ is None else environ
    job = env.get("SLURM_JOB_ID") or env.get("SLURM_JOBID")
    if not job or env.get("SLURM_STEP_ID", "batch") not in ("batch", "extern"):
        return None
    per_node = tasks_per_node(env.get("SLURM_TASKS_PER_NODE", ""))
    tasks = int(env.get("SLURM_NTASKS") or env.get("SLURM_NPROCS") or sum(per_node) or 1)
    nodes = int(env.get("SLURM_JOB_NUM_NODES") or env.get("SLURM_NNODES") or len(per_node) or 1)
    return Allocation(job, tasks, nodes, env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST", ""))


def world_size(n: int | None, allocation: Allocation | None = None) -> int:
    """The rank count of a new world: *n* when given, else the allocation's task count inside a
    Slurm job, else :data:`DEFAULT_RANKS`."""
    if n is not None:
        return n
    allocation = allocation or current()
    return allocation.tasks if allocation is not None else DEFAULT_RANKS


def check_size(n: int, allocation: Allocation) -> None:
    """Refuse more ranks than the job's tasks (Slurm granted the CPUs of that many, no more)."""
    if n > allocation.tasks:
        raise ValueError(
            f"n={n} ranks exceeds the {allocation.tasks} task(s) of {allocation.describe()}: "
            f"use n <= {allocation.tasks} (or leave n out: the job's size), or submit the job with "
            f"more tasks (sbatch --ntasks={n})")


def controller_address(requested: str, allocation: Allocation | None) -> str:
    """Where the controller of a world in *allocation* listens: *requested* unless the world
    spans several nodes and *requested* is loopback; then this host's address on the job's
    network (what its hostname resolves to)."""
    if allocation is None or allocation.nodes < 2 or requested not in LOOPBACK:
        return requested
    host = socket.gethostname()
    try:
        address = socket.gethostbyname(host)
    except OSError as exc:
        raise RuntimeError(f"{allocation.describe()} spans {allocation.nodes} nodes, so its engines must reach "
                           f"this host, but its name {host!r} does not resolve ({exc}); pass "
                           "controller_ip='<this host's address on the cluster network>'") from exc
    if address.startswith("127."):
        raise RuntimeError(f"{allocation.describe()} spans {allocation.nodes} nodes, so its engines must reach "
                           f"this host, but its name {host!r} resolves to the loopback address {address}; pass "
                           "controller_ip='<this host's address on the cluster network>'")
    return address
