# Reference solutions (and deliberately wrong answers) for notebooks/07_collective_algorithms.ipynb.
# Jupytext percent format: one "# %% NAME" section per answer cell, IPython magics commented out
# ("# %%px ..."); the test suite and the course export read them (see mpiworkbench.exercises).


# %% 07-rounds
import math

def rounds(P):
    return math.ceil(math.log2(P)) if P > 1 else 0

# %% 07-rounds wrong
import math

def rounds(P):
    return math.floor(math.log2(P)) if P > 1 else 0      # right for powers of two only
