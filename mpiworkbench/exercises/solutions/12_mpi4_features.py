# Reference solutions (and deliberately wrong answers) for notebooks/12_mpi4_features.ipynb.
# Jupytext percent format: one "# %% NAME" section per answer cell, IPython magics commented out
# ("# %%px ..."); the test suite and the course export read them (see mpiworkbench.exercises).


# %% 12-persistent-sums
def persistent_sums(values):
    import numpy as np
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    local, total = np.zeros(1), np.zeros(1)
    request = comm.Allreduce_init(local, total, op=MPI.SUM)
    sums = []
    for v in values:
        local[0] = v * (comm.rank + 1)      # in place: the request reads this very array
        request.Start()
        request.Wait()
        sums.append(float(total[0]))
    request.Free()
    return sums

# %% 12-persistent-sums wrong
def persistent_sums(values):
    import numpy as np
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    local, total = np.zeros(1), np.zeros(1)
    request = comm.Allreduce_init(local, total, op=MPI.SUM)
    sums = []
    for v in values:
        local = np.array([v * (comm.rank + 1)])   # a new array: the request goes on reducing the old zeros
        request.Start()
        request.Wait()
        sums.append(float(total[0]))
    request.Free()
    return sums
