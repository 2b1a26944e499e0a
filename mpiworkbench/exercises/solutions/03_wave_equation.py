# Reference solutions (and deliberately wrong answers) for notebooks/03_wave_equation.ipynb.
# Jupytext percent format: one "# %% NAME" section per answer cell, IPython magics commented out
# ("# %%px ..."); the test suite and the course export read them (see mpiworkbench.exercises).


# %% 03-predicted-error
def predicted_error(n, cfl, steps):
    h = 1 / (n - 1)
    dt = cfl * wave.stable_dt((n, n, n))
    omega_h = 2 / dt * math.asin(math.sqrt(3) * dt / h * math.sin(math.pi * h / 2))
    t = steps * dt
    return 2 * abs(math.cos(math.sqrt(3) * math.pi * t) - math.cos(omega_h * t))

# %% 03-predicted-error wrong
def predicted_error(n, cfl, steps):
    h = 1 / (n - 1)
    dt = cfl * wave.stable_dt((n, n, n))
    omega_h = 2 / dt * math.asin(dt / h * math.sin(math.pi * h / 2))   # the 1-D relation: no sqrt(3)
    t = steps * dt
    return 2 * abs(math.cos(math.sqrt(3) * math.pi * t) - math.cos(omega_h * t))
