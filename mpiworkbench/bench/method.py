"""The measurement method: message sizes, the OSU iteration/warm-up rule and the time cap.

Defaults follow the OSU Micro-Benchmarks (``osu_util.h``): latency-type point-to-point
tests run 10000 timed iterations after 100 warm-ups up to 8 KiB and 1000/10 above;
bandwidth tests (window of 64) 100/10 then 20/2; collectives 1000/100 then 100/10.
A per-size time cap (IMB-style) lowers the iteration count, never below
:data:`MIN_ITERATIONS`, so no click runs for minutes; the row records what ran.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

#: Default sweep: 8 B … 8 MiB in powers of two (the thesis measured 8 B … 2^23 B).
DEFAULT_MIN_SIZE = 8
DEFAULT_MAX_SIZE = 8 * 1024 * 1024
#: OSU's ``LARGE_MESSAGE_SIZE``: sizes above it use the "large" iteration counts.
LARGE_MESSAGE_SIZE = 8192
#: Never time fewer iterations than this, whatever the cap says.
MIN_ITERATIONS = 5
#: OSU window of back-to-back non-blocking sends in ``osu_bw``/``osu_bibw``.
DEFAULT_WINDOW = 64

#: (iterations, warm-up) below/above LARGE_MESSAGE_SIZE per benchmark kind (OSU 7.x).
OSU_RULE: dict[str, tuple[tuple[int, int], tuple[int, int]]] = {
    "latency": ((10000, 100), (1000, 10)),
    "bandwidth": ((100, 10), (20, 2)),
    "collective": ((1000, 100), (100, 10)),
}

_UNITS = {"": 1, "B": 1, "K": 1024, "KB": 1024, "KIB": 1024, "M": 1024**2, "MB": 1024**2,
          "MIB": 1024**2, "G": 1024**3, "GB": 1024**3, "GIB": 1024**3}


def parse_size(text: str) -> int:
    """``"8"``, ``"64K"``, ``"8M"``, ``"1MiB"`` → bytes (K = 1024)."""
    match = re.fullmatch(r"\s*(\d+)\s*([A-Za-z]*)\s*", str(text))
    unit = match.group(2).upper() if match else None
    if match is None or unit not in _UNITS:
        raise ValueError(
            f"cannot read message size {text!r}; write bytes with an optional unit, e.g. 8, 64K, 8M"
        )
    return int(match.group(1)) * _UNITS[unit]


def parse_sizes(spec: str | None) -> list[int]:
    """Sizes from ``"MIN:MAX"`` (powers of two between them) or ``"a,b,c"`` (an explicit list).

    ``None`` gives the default sweep 8 B … 8 MiB.
    """
    if spec is None or str(spec).strip() == "":
        return power_of_two_sizes(DEFAULT_MIN_SIZE, DEFAULT_MAX_SIZE)
    spec = str(spec)
    if ":" in spec:
        lo_text, _, hi_text = spec.partition(":")
        return power_of_two_sizes(parse_size(lo_text), parse_size(hi_text))
    sizes = [parse_size(part) for part in spec.split(",") if part.strip()]
    return check_sizes(sizes)


def power_of_two_sizes(lo: int, hi: int) -> list[int]:
    """Powers of two from the first one ≥ *lo* up to *hi* (both in bytes)."""
    if lo < 1 or hi < lo:
        raise ValueError(f"size range must satisfy 1 <= min <= max; got {lo}:{hi}")
    sizes, size = [], 1
    while size < lo:
        size *= 2
    while size <= hi:
        sizes.append(size)
        size *= 2
    if not sizes:
        raise ValueError(f"no power of two lies in the size range {lo}:{hi}; widen it or list sizes")
    return sizes


def check_sizes(sizes: list[int]) -> list[int]:
    if not sizes:
        raise ValueError("no message sizes given; pass e.g. --sizes 8:8M or --sizes 8,1K,1M")
    for size in sizes:
        if int(size) < 1:
            raise ValueError(f"message sizes must be at least 1 byte; got {size}")
    return sorted({int(s) for s in sizes})


@dataclass(frozen=True)
class Policy:
    """How many iterations to time at a size, and how long one size may take.

    ``iterations``/``warmup`` override the OSU rule for every size when given
    (like OSU's ``-i``/``-x``). ``repeats`` times every size that many times (backends
    interleaved) and reports the median, keeping each repeat (research note §6.5: on a
    shared or virtualised node the spread between runs exceeds the differences compared). ``time_cap_s`` bounds the timed loop of one size
    (estimated from the warm-up); ``collective_mode`` is ``"osu"`` (time each call,
    barrier after it outside the timer) or ``"block"`` (time the back-to-back loop).
    """

    iterations: int | None = None
    warmup: int | None = None
    time_cap_s: float = 2.0
    collective_mode: str = "osu"
    window: int = DEFAULT_WINDOW
    large_message_size: int = LARGE_MESSAGE_SIZE
    repeats: int = 1

    def __post_init__(self):
        if self.iterations is not None and self.iterations < 1:
            raise ValueError(f"iterations must be at least 1; got {self.iterations}")
        if self.warmup is not None and self.warmup < 0:
            raise ValueError(f"warm-up must be 0 or more; got {self.warmup}")
        if not self.time_cap_s > 0:
            raise ValueError(f"time cap must be positive seconds; got {self.time_cap_s}")
        if self.collective_mode not in ("osu", "block"):
            raise ValueError(
                f"collective mode must be 'osu' (per call, barrier outside the timer) or "
                f"'block' (back-to-back loop); got {self.collective_mode!r}"
            )
        if self.window < 1:
            raise ValueError(f"window must be at least 1 message; got {self.window}")
        if not isinstance(self.repeats, int) or self.repeats < 1:
            raise ValueError(f"repeats must be a whole number of at least 1; got {self.repeats!r}")

    def counts(self, kind: str, size: int) -> tuple[int, int]:
        """(iterations, warm-up) for a benchmark *kind* at *size* bytes, before the cap."""
        if kind not in OSU_RULE:
            raise ValueError(f"unknown benchmark kind {kind!r}; expected one of {sorted(OSU_RULE)}")
        small, large = OSU_RULE[kind]
        iters, skip = large if size > self.large_message_size else small
        return (self.iterations or iters, skip if self.warmup is None else self.warmup)

    def capped(self, iterations: int, seconds_per_iteration: float) -> int:
        """Iterations that fit the time cap, at least :data:`MIN_ITERATIONS` (or *iterations*)."""
        if seconds_per_iteration <= 0:
            return iterations
        fit = int(self.time_cap_s / seconds_per_iteration)
        return max(min(iterations, MIN_ITERATIONS), min(iterations, fit))

    def describe(self) -> dict:
        """The method as data, stored with every result."""
        return {
            **asdict(self),
            "rule": "OSU 7.x: " + "; ".join(
                f"{kind} {s[0]}/{s[1]} (<= {self.large_message_size} B) then {l[0]}/{l[1]}"
                for kind, (s, l) in OSU_RULE.items()
            ),
            "min_iterations": MIN_ITERATIONS,
            "timing": {
                "latency": "rank 0 block time from iteration == warm-up, one-way = round trip / 2",
                "bandwidth": f"window of {self.window} Isend + Waitall + 1-byte ack per iteration",
                "collective": (
                    "each call timed, barrier after it outside the timer (OSU C, IMB -sync on)"
                    if self.collective_mode == "osu"
                    else "back-to-back calls timed as one block, no barriers (OMB-Py, MPBench)"
                ),
            },
            "barrier": "one barrier before every size (inside each backend's own loop)",
            "repeats": (
                "one timed loop per size and backend" if self.repeats == 1 else
                f"{self.repeats} timed loops per size and backend, backends interleaved; "
                "t_us and the other times are medians over them, each repeat in t_us_repeats"
            ),
            "megabyte": "MB = 10^6 B",
        }
