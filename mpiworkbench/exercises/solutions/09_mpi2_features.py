# Reference solutions (and deliberately wrong answers) for notebooks/09_mpi2_features.ipynb.
# Jupytext percent format: one "# %% NAME" section per answer cell, IPython magics commented out
# ("# %%px ..."); the test suite and the course export read them (see mpiworkbench.exercises).

# %% 09-predictions
p = wb.n
left0 = (0 - 1) % p
ring_rank0 = [10.0 * left0 + k for k in range(5)]
got_expected = p * (p + 1) / 2
file_bytes = MESH ** 3 * 8
child_sum_expected = 2 * 100.0 + (0 + 1)

# %% 09-predictions wrong
p = wb.n
ring_rank0 = [10.0 * 1 + k for k in range(5)]   # rank 0's right neighbour, not its left
got_expected = p * (p - 1) / 2                  # forgot the +1 each rank accumulates
file_bytes = MESH ** 3                          # counted values, not bytes
child_sum_expected = 100.0
