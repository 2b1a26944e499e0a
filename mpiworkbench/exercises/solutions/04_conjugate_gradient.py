# Reference solutions (and deliberately wrong answers) for notebooks/04_conjugate_gradient.ipynb.
# Jupytext percent format: one "# %% NAME" section per answer cell, IPython magics commented out
# ("# %%px ..."); the test suite and the course export read them (see mpiworkbench.exercises).


# %% 04-global-dot
def global_dot(a_local, b_local):
    import numpy as np
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    local = np.array([np.dot(a_local, b_local)])
    total = np.empty(1)
    comm.Allreduce(local, total, op=MPI.SUM)
    return float(total[0])

# %% 04-global-dot wrong
def global_dot(a_local, b_local):
    import numpy as np
    return float(np.dot(a_local, b_local))     # only this rank's piece: no allreduce
