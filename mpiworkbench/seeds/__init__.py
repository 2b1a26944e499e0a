"""The numbers the source documents printed, typed from their text, one data file per seed.

``thesis_000.json`` (the thesis: Tables 2.1, 5.1, 6.1 and the stated ratios of Figs.
6.2-6.5), ``paper_001.json`` and ``paper_002.json`` (the mpi4py papers: the throughput
ratios their text states for Figs. 1-6), ``report_003.json`` (heat report: Tables 1 and
2) and ``numba_mpi_004.json`` (numba-mpi paper: Listing 1's JIT speedup, Fig. 1's stated
range). Every entry names its
table or figure and every file the machine it was measured on; a figure whose values are
only drawn, never printed, is left out. Plots draw these as the dashed "then" series,
notebooks as a table column beside the live numbers. No MPI, no NumPy.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any

#: Short name → data file (package data).
FILES = {
    "thesis": "thesis_000.json",
    "mpi4py-paper": "paper_001.json",
    "mpi4py-journal": "paper_002.json",
    "heat-report": "report_003.json",
    "numba-mpi-paper": "numba_mpi_004.json",
}


@lru_cache(maxsize=None)
def _load(filename: str) -> str:
    return resources.files(__name__).joinpath(filename).read_text(encoding="utf-8")


def load(name: str) -> dict[str, Any]:
    """The data of seed *name* (one of :data:`FILES`), a fresh copy each call.

    Raises
    ------
    ValueError
        For an unknown name, listing the known ones.
    """
    if name not in FILES:
        raise ValueError(f"unknown seed data {name!r}; choose one of {', '.join(FILES)}")
    return json.loads(_load(FILES[name]))


def wave_ratio_band() -> tuple[float, float, str]:
    """The thesis's "C 8 to 10 times faster" (§6.1.4): ``(low, high, source)``."""
    band = load("thesis")["wave_ratio_to_c"]
    return float(band["low"]), float(band["high"]), band["source"]


def heat_table(size: str = "1000x1000") -> dict[str, Any]:
    """Report 003's Table 1 for one matrix size: ``{"nranks", "time_s", "flop_s", "machine", "source"}``
    (``nranks`` starts with ``"seq"``, the sequential code)."""
    data = load("heat-report")
    table = data["table_1"]
    if size not in table["sizes"]:
        raise ValueError(f"report 003's Table 1 has the sizes {', '.join(table['sizes'])}; got {size!r}")
    return {"nranks": table["nranks"], **table["sizes"][size], "machine": data["machine"], "source": table["source"]}
