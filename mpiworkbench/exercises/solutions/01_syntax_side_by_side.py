# Reference solutions (and deliberately wrong answers) for notebooks/01_syntax_side_by_side.ipynb.
# Jupytext percent format: one "# %% NAME" section per answer cell, IPython magics commented out
# ("# %%px ..."); the test suite and the course export read them (see mpiworkbench.exercises).

# %% 01-allgather
answer_allgather = {"mpi4py", "pyMPI", "boostmpi"}

# %% 01-allgather wrong
answer_allgather = {"mpi4py", "pyMPI"}

# %% 01-allreduce-by-hand
def allreduce_by_hand(be, x):
    import numpy as np
    total = be.reduce(x, op="sum", root=0, out=np.empty_like(x) if be.rank == 0 else None)
    if be.rank != 0:
        total = np.empty_like(x)
    return be.bcast(total, root=0)

# %% 01-allreduce-by-hand wrong
def allreduce_by_hand(be, x):
    import numpy as np
    # forgets the broadcast: only rank 0 has the sum
    total = be.reduce(x, op="sum", root=0, out=np.empty_like(x) if be.rank == 0 else None)
    return total if be.rank == 0 else np.zeros_like(x)

# %% 01-exchange
def exchange(comm, nbytes):
    import numpy as np
    from mpi4py import MPI
    partner = comm.rank ^ 1 if comm.rank ^ 1 < comm.size else MPI.PROC_NULL
    mine = np.full(nbytes // 8, float(comm.rank))
    theirs = np.full_like(mine, -1.0)  # stays -1 when the partner is PROC_NULL
    comm.Sendrecv(mine, dest=partner, recvbuf=theirs, source=partner)
    return float(theirs[0])

# %% 01-exchange wrong
def exchange(comm, nbytes):
    import numpy as np
    # exchanges with itself: no deadlock, but no data crosses either
    mine = np.full(nbytes // 8, float(comm.rank))
    theirs = np.empty_like(mine)
    comm.Sendrecv(mine, dest=comm.rank, recvbuf=theirs, source=comm.rank)
    return float(theirs[0])
