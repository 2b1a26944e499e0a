"""What the credibility benchmark measures: sizes, counts, programs (shared by its two halves)."""

PINGPONG_SIZES = [8, 1024, 8192, 65536, 1 << 20, 8 << 20]
ALLREDUCE_SIZES = [8, 1024, 65536, 1 << 20]
#: (iterations, warm-up) for every program alike: OSU's latency rule (10000/100 up to 8 KiB,
#: 1000/10 above), also for allreduce (more samples than OSU's collective 1000/100 → 100/10,
#: for a steadier mean on a shared machine).
LARGE_MESSAGE_SIZE = 8192
COUNTS = {"small": (10000, 100), "large": (1000, 10)}

#: Our harness: the backends it times (one BenchRun, interleaved, as the CLI does).
OURS = ("mpi4py-buf", "c")
#: The references that decide checks, and the variants shown for context only.
AS_SHIPPED = "mpi4py.bench (as shipped)"
NUMPY_BUFFERS = "mpi4py.bench (NumPy buffers)"
CONTEXT_ONLY = (AS_SHIPPED, NUMPY_BUFFERS, "bare C (own program)")
PROGRAMS = {
    "pingpong": ("ours", "mpi4py.bench", NUMPY_BUFFERS, AS_SHIPPED, "bare C", "bare mpi4py"),
    "allreduce": ("ours", "bare C", "bare mpi4py"),
}


def group(size: int) -> str:
    return "small" if size <= LARGE_MESSAGE_SIZE else "large"


def counts(size: int) -> tuple[int, int]:
    return COUNTS[group(size)]
