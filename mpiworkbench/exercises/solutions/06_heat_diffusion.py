# Reference solutions (and deliberately wrong answers) for notebooks/06_heat_diffusion.ipynb.
# Jupytext percent format: one "# %% NAME" section per answer cell, IPython magics commented out
# ("# %%px ..."); the test suite and the course export read them (see mpiworkbench.exercises).


# %% 06-heat
t_row10 = heat.steady_state((11, 3))[10, 0]
rows_rank1 = heat.row_range(11, 1, 2)
solver = wb.create("mpiworkbench.solvers.heat:HeatSolver", SHAPE, exchange="nonblocking")
solver.call("step", 50)
field_nb = solver.root("gather")
solver.delete()
n_requests = 2 * 4   # two buffers x (2 receives + 2 sends)

# %% 06-heat wrong
t_row10 = 1.0                  # row 10 is the bottom row, held at 0
rows_rank1 = (5, 11)
solver = wb.create("mpiworkbench.solvers.heat:HeatSolver", SHAPE, exchange="nonblocking")
solver.call("step", 49)        # one step short
field_nb = solver.root("gather")
solver.delete()
n_requests = 4
