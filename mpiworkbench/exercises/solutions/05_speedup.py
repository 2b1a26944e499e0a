# Reference solutions (and deliberately wrong answers) for notebooks/05_speedup.ipynb.
# Jupytext percent format: one "# %% NAME" section per answer cell, IPython magics commented out
# ("# %%px ..."); the test suite and the course export read them (see mpiworkbench.exercises).


# %% 05-scaling
s_two = 1 / ((1 - 0.9) + 0.9 / 2)
numpy_pts = {p["nranks"]: p for p in inner_result.series()[("numpy", n_inner)]}
e_numpy = numpy_pts[1]["median"] / numpy_pts[2]["median"] / 2
cg_mesh_4 = (63 + 1) * 2 - 1
over = [p["nranks"] for p in cli_result.points if p["oversubscribed"]][0]

# %% 05-scaling wrong
s_two = 1 / (0.9 + 0.1 / 2)                    # parallel and serial fractions swapped
numpy_pts = {p["nranks"]: p for p in inner_result.series()[("numpy", n_inner)]}
e_numpy = numpy_pts[1]["median"] / numpy_pts[2]["median"]     # the speedup, not divided by p
cg_mesh_4 = 63 * 2
over = 2
