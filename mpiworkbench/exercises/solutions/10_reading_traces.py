# Reference solutions (and deliberately wrong answers) for notebooks/10_reading_traces.ipynb.
# Jupytext percent format: one "# %% NAME" section per answer cell, IPython magics commented out
# ("# %%px ..."); the test suite and the course export read them (see mpiworkbench.exercises).

# %% 10-allreduce-messages
def allreduce_messages(P):
    return 2 * (P - 1)   # every other rank sends its pickled object to rank 0 (mpi4py 4: two messages each)

all_to_rank0 = True

# %% 10-allreduce-messages wrong
def allreduce_messages(P):
    return P - 1   # one message per rank: forgets how mpi4py sends a pickled object

all_to_rank0 = False
