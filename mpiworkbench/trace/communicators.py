"""The communicators of a trace: one list for all ranks, each communicator known by its lineage.

Every rank's interposer keeps a table of the communicators it saw made (``recorder.local_comms``);
:func:`communicators` joins the ranks' tables into one list (:class:`Communicator`, index 0
``COMM_WORLD``) and :func:`remap_comms` turns a rank's table indices into that list's ids.
Pure NumPy, no MPI.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from mpiworkbench.trace.events import COMMUNICATORS, EVENT_DTYPE, KIND, SELF_HOW, SEEN_HOW, WORLD_HOW


@dataclass(frozen=True)
class Communicator:
    """A communicator of a trace: events' ``comm`` field is its ``id``.

    Attributes
    ----------
    id : int
        Index in ``Trace.comms`` (0 is ``COMM_WORLD``).
    name : str
        ``"COMM_WORLD"``, ``"COMM_SELF"``, ``"dup 1"``, ``"split color=0"``, ``"cart 2x2"``, …,
        or the name the program gave it (``MPI_Comm_set_name``).
    ranks : tuple of int
        World ranks of its members, in its own rank order (empty when not known).
    kind : str
        How it was made: ``world``, ``self``, ``dup``, ``split``, ``split_type``, ``create``,
        ``cart``, ``cart_sub``, or ``seen`` (used, made out of sight).
    parent : int or None
        The communicator it was made from.
    """

    id: int
    name: str
    ranks: tuple[int, ...] = ()
    kind: str = "world"
    parent: int | None = None

    @property
    def size(self) -> int:
        """How many ranks it has (0 when its members are not known)."""
        return len(self.ranks)

    def __str__(self) -> str:
        return f"{self.name} ({self.size} ranks)" if self.ranks else self.name


_HOW_NAMES = {KIND["MPI_Comm_dup"]: "dup", KIND["MPI_Comm_split"]: "split", KIND["MPI_Comm_split_type"]: "split_type",
              KIND["MPI_Comm_create"]: "create", KIND["MPI_Cart_create"]: "cart", KIND["MPI_Cart_sub"]: "cart_sub",
              WORLD_HOW: "world", SELF_HOW: "self", SEEN_HOW: "seen"}


def communicators(tables: list[list[dict]], nranks: int,
                  used: list[set[int]] | None = None) -> tuple[list[Communicator], list[np.ndarray]]:
    """The communicators of every rank's table (``recorder.local_comms``) as one list, and per
    rank the map from its table index to that list's index (-1: left out).

    A constructor is collective over its parent, so the same communicator has, on every member,
    the same lineage: parent, how-manieth child of it, and members. That lineage is its key.
    Only the communicators that *used* names (per rank, table indices the events refer to) and
    their ancestors are kept: a long session's table holds every communicator it ever made.
    """
    key_of: list[list[tuple]] = []
    entry_of: dict[tuple, dict] = {}
    parent_key: dict[tuple, tuple | None] = {}
    order: list[tuple] = []
    for rank, table in enumerate(tables):
        local: list[tuple] = []
        for i, entry in enumerate(table):
            how, parent = int(entry["how"]), int(entry["parent"])
            members = tuple(int(m) for m in entry.get("members", ()))
            if how == WORLD_HOW:
                key = ("world",)
            elif how == SELF_HOW:
                key = ("self",)
            elif 0 <= parent < len(local):
                key = (local[parent], how, int(entry["ordinal"]), members)
            else:
                key = ("seen", members) if members else ("seen", rank, i)
            local.append(key)
            if key not in entry_of:
                entry_of[key] = entry
                parent_key[key] = local[parent] if 0 <= parent < len(local) and how not in (WORLD_HOW, SELF_HOW) else None
                order.append(key)
        key_of.append(local)
    wanted = {("world",)}
    for rank, local in enumerate(key_of):
        for i in (used[rank] if used is not None else range(len(local))):
            key = local[i] if 0 <= i < len(local) else None
            while key is not None and key not in wanted:
                wanted.add(key)
                key = parent_key.get(key)
    ids: dict[tuple, int] = {("world",): 0}
    comms = [Communicator(0, "COMM_WORLD", tuple(range(nranks)), "world", None)]
    counters: dict[str, int] = defaultdict(int)
    for key in order:
        if key not in wanted or key in ids:
            continue
        entry = entry_of[key]
        kind = _HOW_NAMES.get(int(entry["how"]), "seen")
        counters[kind] += 1
        given = str(entry.get("name", "") or "")
        if kind == "self":
            name = "COMM_SELF"
        elif given:
            name = given
        elif kind == "split":
            name = f"split color={int(entry['color'])}"
        elif kind == "cart":
            name = "cart " + "x".join(str(d) for d in list(entry["dims"])[: int(entry["ndims"])])
        elif kind == "seen":
            name = f"comm {counters[kind]}"
        else:
            name = f"{kind.replace('_', ' ')} {counters[kind]}"
        same = sum(c.name == name or c.name.startswith(name + " #") for c in comms)
        if same:
            name += f" #{same + 1}"
        members = tuple(int(m) for m in entry.get("members", ()))
        ids[key] = len(comms)
        comms.append(Communicator(len(comms), name, () if kind == "self" else members, kind,
                                  ids.get(parent_key[key]) if parent_key[key] is not None else None))
    maps = [np.array([ids.get(k, -1) for k in local], dtype=np.int64) for local in key_of]
    return comms, maps


_MADE = np.array(sorted(COMMUNICATORS))


def comms_used(events: np.ndarray) -> set[int]:
    """Table indices a rank's events refer to (their communicator; a constructor's result)."""
    ev = np.asarray(events, dtype=EVENT_DTYPE)
    made = np.isin(ev["kind"], _MADE)
    return set(ev["comm"].tolist()) | set(ev["req"][made].tolist())


def remap_comms(part: np.ndarray, mapping: np.ndarray) -> None:
    """Turn a rank's table indices (``comm``; ``req`` of communicator events) into trace ids."""
    def remap(values: np.ndarray) -> np.ndarray:
        ok = (values >= 0) & (values < len(mapping))
        out = np.full(len(values), -1, dtype=values.dtype)
        out[ok] = mapping[values[ok]]
        return out

    part["comm"] = remap(part["comm"])
    made = np.isin(part["kind"], _MADE)
    part["req"][made] = remap(part["req"][made])




def untabled_comms(per_rank: list[np.ndarray], nranks: int) -> tuple[list[Communicator], list[np.ndarray]]:
    """Communicators known only by their table index (no tables: a trace read from outside)."""
    used = sorted({int(c) for ev in per_rank for c in np.asarray(ev, dtype=EVENT_DTYPE)["comm"].tolist() if c >= 0} | {0})
    comms = [Communicator(0, "COMM_WORLD", tuple(range(nranks)), "world", None)]
    comms += [Communicator(i + 1, "COMM_SELF" if c == 1 else f"comm {c}", (), "self" if c == 1 else "seen", None)
              for i, c in enumerate(used[1:])]
    mapping = np.full(max(used) + 1, -1, dtype=np.int64)
    mapping[used] = np.arange(len(used))
    return comms, [mapping] * nranks
