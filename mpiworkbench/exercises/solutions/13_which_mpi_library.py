# Reference solutions (and deliberately wrong answers) for notebooks/13_which_mpi_library.ipynb.
# Jupytext percent format: one "# %% NAME" section per answer cell, IPython magics commented out
# ("# %%px ..."); the test suite and the course export read them (see mpiworkbench.exercises).

# %% 13-libraries
fastest_1mib = min(AVAILABLE, key=lambda name: pingpong_t[name]["c"][1048576])
python_over_c = pingpong_t[fastest_1mib]["mpi4py-buf"][SMALLEST] / pingpong_t[fastest_1mib]["c"][SMALLEST]

# %% 13-libraries wrong
fastest_1mib = TITLE[min(AVAILABLE, key=lambda name: pingpong_t[name]["c"][1048576])]   # the title, not the name
python_over_c = pingpong_t["mpich"]["c"][SMALLEST] / pingpong_t["mpich"]["mpi4py-buf"][SMALLEST]
