"""Thesis Tables 3.1 and 4.1 regenerated from the code, and the documented syntax of 4.2–4.11.

* :func:`table_4_1` — which module has which of the 12 routines: the historic columns come
  from the emulations (an operation counts when an emulation function is registered for
  it with :func:`~mpiworkbench.syntax.historic.implements`), the current columns from the
  backend registry (:func:`mpiworkbench.backends.capabilities`). Nothing is typed by hand.
* :func:`table_3_1` — the feature table, from :data:`HISTORIC_MODULES` and the mpi4py
  backend classes.
* :data:`DOCUMENTED_SYNTAX` — the calls exactly as the thesis's Tables 4.2–4.11 print them
  (quoted; source: the thesis, Ch. 4), for the read-only historic cells.
"""

from __future__ import annotations

from mpiworkbench.backends import OPERATIONS, backend_class, capabilities
from mpiworkbench.syntax.historic import FEATURES, HISTORIC_MODULES, TABLE_3_1_NOTE, HistoricModule, routines
from mpiworkbench.syntax.lessons import CURRENT_COLUMNS

#: Column order of the thesis's Table 4.1.
THESIS_MODULES = ("pypar", "mpi4py", "MYMPI", "pyMPI", "Scientific.MPI", "boostmpi")

#: (operation, module) → the call as printed in thesis Tables 4.2–4.11 (quoted).
DOCUMENTED_SYNTAX: dict[tuple[str, str], tuple[str, str]] = {
    ("send", "C"): ("int MPI_Send(void* buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)", "Table 4.2"),
    ("recv", "C"): ("int MPI_Recv(void* buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm, MPI_Status *status)", "Table 4.2"),
    ("send", "pypar"): ("pypar.send(sendbuf, destination, tag=default_tag, use_buffer=False, bypass=False, vanilla=False)", "Table 4.2"),
    ("recv", "pypar"): ("recv_ref=pypar.receive(source, tag=default_tag, buffer=None, return_status=False, bypass=False, vanilla=False)", "Table 4.2"),
    ("send", "mpi4py"): ("mpi4py.MPI.COMM_WORLD.Send(sendbuf, int destination, tag=t)", "Table 4.2"),
    ("recv", "mpi4py"): ("mpi4py.MPI.COMM_WORLD.Recv(self, buf, int source, tag=t, Status status=None)", "Table 4.2"),
    ("send", "MYMPI"): ("mpi.mpi_send(sendbuf, sendcount, sendtype, destination, tag, communicator)", "Table 4.2"),
    ("recv", "MYMPI"): ("recvbuf=mpi.mpi_recv(recvcount, recvtype, source, tag, communicator)", "Table 4.2"),
    ("send", "pyMPI"): ("mpi.send(sendbuf, destination, tag=t)", "Table 4.2"),
    ("recv", "pyMPI"): ("recvbuf, status=mpi.recv(source, tag=t)", "Table 4.2"),
    ("send", "Scientific.MPI"): ("Scientific.MPI.MPICommunicator.send(sendbuf, destination, tag)", "Table 4.2"),
    ("recv", "Scientific.MPI"): ("message, source, tag, count = Scientific.MPI.MPICommunicator.receive(recvbuf, source, tag)", "Table 4.2"),
    ("send", "boostmpi"): ("boostmpi.world.send(destination, tag=0, value=sendbuf)", "Table 4.2"),
    ("recv", "boostmpi"): ("recvbuf=boostmpi.world.recv(source=-1, tag=-1, return_status=False)", "Table 4.2"),
    ("sendrecv", "C"): ("int MPI_Sendrecv(void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag, void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm, MPI_Status *status)", "Table 4.3"),
    ("sendrecv", "mpi4py"): ("mpi4py.MPI.COMM_WORLD.Sendrecv(self, sendbuf, int dest=0, int sendtag=0, recvbuf=None, int source=0, int recvtag=0, Status status=None)", "Table 4.3"),
    ("sendrecv", "pyMPI"): ("recvbuf,status=mpi.sendrecv(sendbuf, dest, source)", "Table 4.3"),
    ("isend", "C"): ("int MPI_Isend(void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm, MPI_Request *request)", "Table 4.4"),
    ("irecv", "C"): ("int MPI_Irecv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm, MPI_Request *request)", "Table 4.4"),
    ("isend", "mpi4py"): ("mpi4py.MPI.COMM_WORLD.Isend(selfbuf, destination=0, tag=0)", "Table 4.4"),
    ("irecv", "mpi4py"): ("mpi4py.MPI.COMM_WORLD.Irecv(recvbuf, source=0, tag=0)", "Table 4.4"),
    ("isend", "pyMPI"): ("mpi.isend(sendbuf, destination, tag=t)", "Table 4.4"),
    ("irecv", "pyMPI"): ("request=mpi.irecv(source, tag=t)", "Table 4.4"),
    ("isend", "Scientific.MPI"): ("Scientific.MPI.MPICommunicator.nonblockingSend(sendbuf, destination, tag)", "Table 4.4"),
    ("irecv", "Scientific.MPI"): ("Scientific.MPI.MPICommunicator.nonblockingReceive(sendbuf, source=None, tag=None)", "Table 4.4"),
    ("isend", "boostmpi"): ("request=boostmpi.world.isend(communicator, destination, tag=0, value=sendbuf)", "Table 4.4"),
    ("irecv", "boostmpi"): ("request_with_value=boostmpi.world.irecv(communicator, source=-1, tag=-1)", "Table 4.4"),
    ("bcast", "C"): ("int MPI_Bcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm)", "Table 4.5"),
    ("bcast", "pypar"): ("pypar.broadcast(sendbuf, root)", "Table 4.5"),
    ("bcast", "mpi4py"): ("mpi4py.MPI.COMM_WORLD.Bcast(sendbuf, root=0)", "Table 4.5"),
    ("bcast", "MYMPI"): ("recvbuf=mpi.mpi_bcast(sendbuf, sendcount, sendtype, root, communicator)", "Table 4.5"),
    ("bcast", "pyMPI"): ("recvbuf=mpi.bcast(sendbuf, int root=host_rank)", "Table 4.5"),
    ("bcast", "Scientific.MPI"): ("Scientific.MPI.MPICommunicator.broadcast(sendbuf, root)", "Table 4.5"),
    ("bcast", "boostmpi"): ("recvbuf=boostmpi.broadcast(Communicator, sendbuf, root)", "Table 4.5"),
    ("reduce", "C"): ("int MPI_Reduce(void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm)", "Table 4.6"),
    ("reduce", "pypar"): ("pypar.reduce(sendbuf, op, int root, buffer=recvbuf)", "Table 4.6"),
    ("reduce", "mpi4py"): ("mpi4py.MPI.COMM_WORLD.Reduce(sendbuf=None, recvbuf=None, op=SUM, root=0)", "Table 4.6"),
    ("reduce", "MYMPI"): ("mpi.mpi_reduce(sendbuf, int sendcount, sendtype, op, int root, communicator)", "Table 4.6"),
    ("reduce", "pyMPI"): ("recvbuf=mpi.reduce(sendbuf, op)", "Table 4.6"),
    ("reduce", "Scientific.MPI"): ("Scientific.MPI.MPICommunicator.reduce(sendbuf, recvbuf, op, root)", "Table 4.6"),
    ("reduce", "boostmpi"): ("recvbuf=boostmpi.reduce(communicator, sendbuf, op)", "Table 4.6"),
    ("allreduce", "C"): ("int MPI_Allreduce(void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)", "Table 4.7"),
    ("allreduce", "mpi4py"): ("mpi4py.MPI.COMM_WORLD.Allreduce(sendbuf=None, recvbuf=None, op=SUM)", "Table 4.7"),
    ("allreduce", "pyMPI"): ("recvbuf=mpi.allreduce(sendbuf, op)", "Table 4.7"),
    ("allreduce", "Scientific.MPI"): ("Scientific.MPI.MPICommunicator.allreduce(sendbuf, recvbuf, op)", "Table 4.7"),
    ("allreduce", "boostmpi"): ("recvbuf=boostmpi.all_reduce(communicator, sendbuf, op)", "Table 4.7"),
    ("gather", "C"): ("int MPI_Gather(void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)", "Table 4.8"),
    ("gather", "pypar"): ("recvbuf = pypar.gather(sendbuf, root, buffer=None, vanilla=False)", "Table 4.8"),
    ("gather", "mpi4py"): ("mpi4py.MPI.COMM_WORLD.Gather(sendbuf=None, recvbuf=None, root=0)", "Table 4.8"),
    ("gather", "MYMPI"): ("recvbuf=mpi.mpi_gather(sendbuf, sendcount, sendtype, recvcount, recvtype, root, communicator)", "Table 4.8"),
    ("gather", "pyMPI"): ("recvbuf = mpi.gather(sendbuf)", "Table 4.8"),
    ("gather", "boostmpi"): ("recvbuf = boostmpi.gather(communicator=boostmpi.world, sendbuf, root)", "Table 4.8"),
    ("allgather", "C"): ("int MPI_Allgather(void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)", "Table 4.9"),
    ("allgather", "mpi4py"): ("mpi4py.MPI.COMM_WORLD.Allgather(self, sendbuf=None, recvbuf=None)", "Table 4.9"),
    ("allgather", "pyMPI"): ("recvbuf = mpi.allgather(sendbuf)", "Table 4.9"),
    ("allgather", "boostmpi"): ("recvbuf = boostmpi.all_gather(communicator=world, sendbuf)", "Table 4.9"),
    ("scatter", "C"): ("int MPI_Scatter(void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)", "Table 4.10"),
    ("scatter", "pypar"): ("pypar.scatter(x, root, buffer=None, vanilla=False)", "Table 4.10"),
    ("scatter", "mpi4py"): ("mpi4py.MPI.COMM_WORLD.Scatter(self, sendbuf, recvbuf, int root=0)", "Table 4.10"),
    ("scatter", "MYMPI"): ("recvbuf = mpi.mpi_scatter(sendbuf, sendcount, sendtype, recvcount, recvtype, root, communicator)", "Table 4.10"),
    ("scatter", "pyMPI"): ("recvbuf = mpi.scatter(sendbuf)", "Table 4.10"),
    ("scatter", "boostmpi"): ("recvbuf = boostmpi.scatter(communicator=world, sendbuf, root)", "Table 4.10"),
    ("alltoall", "C"): ("int MPI_Alltoall(void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)", "Table 4.11"),
    ("alltoall", "mpi4py"): ("mpi4py.MPI.COMM_WORLD.alltoall(self, sendobj=None, recvobj=None)", "Table 4.11"),
    ("alltoall", "MYMPI"): ("recvbuf = mpi.mpi_alltoall(sendbuf, sendcount, sendtype, recvcount, recvtype, communicator)", "Table 4.11"),
    ("alltoall", "boostmpi"): ("recvbuf = boostmpi.alltoall(communicator=world, sendbuf)", "Table 4.11"),
}


def historic_modules() -> dict[str, HistoricModule]:
    return dict(HISTORIC_MODULES)


def documented_syntax(operation: str, module: str) -> tuple[str, str] | None:
    """``(call, "Table 4.x")`` as the thesis prints it, or ``None`` when the module lacks it."""
    return DOCUMENTED_SYNTAX.get((operation, module))


def table_4_1() -> dict[str, dict[str, bool]]:
    """Operation → {module: provided}, for the thesis's six modules and our backends.

    Historic modules: an operation is provided when the emulation registers a function
    for it. ``mpi4py``: when either mpi4py backend supports it. The current backends:
    from :func:`mpiworkbench.backends.capabilities`.
    """
    caps = capabilities(list(CURRENT_COLUMNS))
    table: dict[str, dict[str, bool]] = {}
    for op in OPERATIONS:
        row: dict[str, bool] = {}
        for module in THESIS_MODULES:
            if module == "mpi4py":
                row[module] = any(caps[b]["available"] and caps[b]["ops"][op] is None for b in ("mpi4py-obj", "mpi4py-buf"))
            else:
                row[module] = op in routines(module)
        for backend, cap in caps.items():
            row[backend] = bool(cap["available"] and cap["ops"][op] is None)
        table[op] = row
    return table


def table_3_1() -> dict[str, dict[str, bool]]:
    """Feature → {module: yes/no} (thesis Table 3.1), mpi4py's column from its backends."""
    obj, buf = backend_class("mpi4py-obj"), backend_class("mpi4py-buf")
    mpi4py = {
        "Pre-allocated buffer for send-recv": not buf.objects,  # the upper-case buffer API
        "Explicit MPI_Initialize": False,  # ``from mpi4py import MPI`` initialises MPI
        "Explicit communicator": True,  # every call is a method of a communicator
        "Interactively parallel run": True,  # thesis §3.2 (rebuilt interpreter); here: ipyparallel
        "Arbitrary Python object": obj.objects,  # the lower-case pickle API
    }
    columns = {name: HISTORIC_MODULES[name].features for name in ("pypar",)}
    columns["mpi4py"] = mpi4py
    for name in ("MYMPI", "pyMPI", "Scientific.MPI", "boostmpi"):
        columns[name] = HISTORIC_MODULES[name].features
    return {feature: {module: columns[module][feature] for module in THESIS_MODULES} for feature in FEATURES}


def markdown(table: dict[str, dict[str, bool]], corner: str = "") -> str:
    """A ✓/blank Markdown rendering of :func:`table_4_1` or :func:`table_3_1`."""
    columns = list(next(iter(table.values())))
    lines = [f"| {corner} | " + " | ".join(columns) + " |", "|---" * (len(columns) + 1) + "|"]
    for row, cells in table.items():
        lines.append(f"| {row} | " + " | ".join("✓" if cells[c] else "" for c in columns) + " |")
    return "\n".join(lines)


__all__ = [
    "DOCUMENTED_SYNTAX",
    "TABLE_3_1_NOTE",
    "THESIS_MODULES",
    "documented_syntax",
    "historic_modules",
    "markdown",
    "table_3_1",
    "table_4_1",
]
