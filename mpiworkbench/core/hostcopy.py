"""One copy of an array per host, which every rank of the host maps as its own.

Giving *n* ranks of a host each a fresh copy of an array writes it *n* times into fresh memory;
on a machine with fewer cores than ranks that is most of a ``wb.push``'s time (a fresh page costs
more than copying into it). Here one rank per host writes the array once into an anonymous
memory file (``memfd_create``: no name in ``/dev/shm``, gone with the last mapping), and each rank
of the host maps that file privately (``MAP_PRIVATE``): its array is writable and its own — a
page is copied the first time the rank writes it, and a rank's writes are never seen by another.

Linux only (``memfd_create``, ``/proc/<pid>/fd``); a rank that cannot open the file (another
system, another PID namespace, no permission to the writer's ``/proc``) gets the array by
``Bcast`` from the writer instead. Plain mpi4py on the ranks of one host.
"""

from __future__ import annotations

import mmap
import os

import numpy as np

from mpiworkbench.core import mpi


class HostCopy:
    """The host's copy of an array of *nbytes*, writable, held by the host's writer (rank 0 of
    *node*): fill :attr:`array`, then every rank of the host calls :meth:`share` (collective)."""

    def __init__(self, nbytes: int, dtype: np.dtype, shape: tuple):
        self.fd = os.memfd_create("mpiworkbench-push", os.MFD_CLOEXEC)
        os.ftruncate(self.fd, nbytes)
        self._map = mmap.mmap(self.fd, nbytes, mmap.MAP_SHARED)
        self.array = np.frombuffer(self._map, dtype, _count(shape)).reshape(shape)

    def where(self) -> tuple[int, int, int]:
        """What another rank of the host needs to open the file: pid, descriptor, inode."""
        return os.getpid(), self.fd, os.fstat(self.fd).st_ino

    def close(self) -> None:
        del self.array  # (the shared mapping cannot close while an array points into it)
        self._map.close()
        os.close(self.fd)


def available() -> bool:
    """Whether this system has anonymous memory files (Linux)."""
    return hasattr(os, "memfd_create")


def private_map(where: tuple[int, int, int], nbytes: int, dtype: np.dtype, shape: tuple) -> np.ndarray:
    """The array in the file *where* (:meth:`HostCopy.where`), mapped copy-on-write: writable,
    this rank's own. Raises :class:`OSError` when the file cannot be opened, or another file
    (another PID namespace) answers under that pid."""
    pid, fd, inode = where
    opened = os.open(f"/proc/{pid}/fd/{fd}", os.O_RDONLY | os.O_CLOEXEC)
    try:
        if os.fstat(opened).st_ino != inode:
            raise OSError(f"/proc/{pid}/fd/{fd} is not the host's copy (inode {os.fstat(opened).st_ino}, not {inode})")
        mapped = mmap.mmap(opened, nbytes, mmap.MAP_PRIVATE, mmap.PROT_READ | mmap.PROT_WRITE)
    finally:
        os.close(opened)  # (the mapping keeps the file)
    return np.frombuffer(mapped, dtype, _count(shape)).reshape(shape)


def share(copy: HostCopy | None, where: tuple[int, int, int], node, nbytes: int, dtype: np.dtype,
          shape: tuple) -> np.ndarray:
    """Collective on the ranks of one host (*node*), whose rank 0 holds the filled *copy* (None
    elsewhere), found at *where*: every rank's own array mapped from it. A rank that cannot map
    it receives it by ``Bcast`` from rank 0. Rank 0 closes its copy once every rank has mapped it
    (the mappings keep the memory); while some have not, the others wait asleep."""
    MPI = mpi.MPI()
    try:
        mine = private_map(where, nbytes, dtype, shape)
    except OSError:
        mine = None
    unmapped = np.array([mine is None], np.int64)
    mpi.wait_asleep(node.Iallreduce(MPI.IN_PLACE, unmapped, MPI.SUM))
    if unmapped[0]:  # every rank that could not map it, and rank 0, which holds it
        missing = node.Split(0 if mine is None or node.rank == 0 else MPI.UNDEFINED, node.rank)
        if missing != MPI.COMM_NULL:
            if mine is None:
                mine = np.empty(shape, dtype)
            mpi.bcast_bytes(missing, copy.array if node.rank == 0 else mine)
            missing.Free()
    if copy is not None:
        copy.close()
    return mine


def _count(shape: tuple) -> int:
    return int(np.prod(shape, dtype=np.int64))
