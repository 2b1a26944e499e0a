# Reference solutions (and deliberately wrong answers) for notebooks/00_start_here.ipynb.
# Jupytext percent format: one "# %% NAME" section per answer cell, IPython magics commented out
# ("# %%px ..."); the test suite and the course export read them (see mpiworkbench.exercises).


# %% 00-allreduce-gather
# %%px --no-stream
import os
comm = MPI.COMM_WORLD      # the restart gave us fresh engines: define comm again
total = comm.allreduce(comm.rank)
pids = comm.gather(os.getpid(), root=0)

# %% 00-allreduce-gather wrong
# %%px --no-stream
import os
comm = MPI.COMM_WORLD
total = comm.allreduce(comm.rank + 1)   # sums 1 … n, not the ranks
pids = os.getpid()                      # not gathered: one number per rank
