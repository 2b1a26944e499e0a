# Reference solutions (and deliberately wrong answers) for notebooks/02_microbenchmarks.ipynb.
# Jupytext percent format: one "# %% NAME" section per answer cell, IPython magics commented out
# ("# %%px ..."); the test suite and the course export read them (see mpiworkbench.exercises).


# %% 02-bandwidth
c_rows = [r for r in pingpong["rows"] if r["backend"] == "c"]
largest = max(c_rows, key=lambda r: r["size"])
my_bandwidth = largest["size"] / (largest["t_us"] * 1e-6) / 1e6

# %% 02-bandwidth wrong
c_rows = [r for r in pingpong["rows"] if r["backend"] == "c"]
largest = max(c_rows, key=lambda r: r["size"])
my_bandwidth = largest["size"] / largest["t_us"] / 1e6      # microseconds taken for seconds

# %% 02-overhead
smallest = min(r["size"] for r in pingpong["rows"])
t = {r["backend"]: r["t_us"] for r in pingpong["rows"] if r["size"] == smallest}
my_overhead = 100 * (t["mpi4py-buf"] / t["c"] - 1)

# %% 02-overhead wrong
smallest = min(r["size"] for r in pingpong["rows"])
t = {r["backend"]: r["t_us"] for r in pingpong["rows"] if r["size"] == smallest}
my_overhead = 100 * t["mpi4py-buf"] / t["c"]                 # the ratio, not the overhead
