# Reference solutions (and deliberately wrong answers) for notebooks/14_why_is_it_slow.ipynb.
# Jupytext percent format: one "# %% NAME" section per answer cell, IPython magics commented out
# ("# %%px ..."); the test suite and the course export read them (see mpiworkbench.exercises).

# %% 14-load-balance
def load_balance(P):
    return 2 / (P + 1)   # mean (2P shares / P ranks = 2) over rank 0's P + 1 shares

# %% 14-load-balance wrong
def load_balance(P):
    return 1 / (P + 1)   # rank 0's share of the total, not the mean over the maximum
