# Reference solutions (and deliberately wrong answers) for notebooks/08_numba_mpi.ipynb.
# Jupytext percent format: one "# %% NAME" section per answer cell, IPython magics commented out
# ("# %%px ..."); the test suite and the course export read them (see mpiworkbench.exercises).

# %% 08-drivers
pi_nb = wb.run(pi_mod.pi_numba_mpi, 10_000, 3)[0]
pi_py = wb.run(pi_mod.pi_mpi4py, 10_000, 3)[0]
round_trips = "mpi4py"
numba_comm = "COMM_WORLD"

# %% 08-drivers wrong
pi_nb = wb.run(pi_mod.pi_numba_mpi, 10_000, 3)    # forgot [0]: every rank's value, a list
pi_py = wb.run(pi_mod.pi_mpi4py, 10_000, 3)[0]
round_trips = "numba-mpi"
numba_comm = "COMM_SELF"
