# Reference solutions (and deliberately wrong answers) for notebooks/07_collective_algorithms.ipynb.
# One "# %% NAME" section per answer cell; the test suite injects them (see mpiworkbench.exercises).


# %% 07-rounds
import math

def rounds(P):
    return math.ceil(math.log2(P)) if P > 1 else 0

# %% 07-rounds wrong
import math

def rounds(P):
    return math.floor(math.log2(P)) if P > 1 else 0      # right for powers of two only
