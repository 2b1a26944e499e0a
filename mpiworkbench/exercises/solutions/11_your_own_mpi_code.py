# Reference solutions (and deliberately wrong answers) for notebooks/11_your_own_mpi_code.ipynb.
# Jupytext percent format: one "# %% NAME" section per answer cell, IPython magics commented out
# ("# %%px ..."); the test suite and the course export read them (see mpiworkbench.exercises).


# %% 11-cart-neighbours
def neighbours(dims, coords):
    def rank_of(c):
        rank = 0
        for size, position in zip(dims, c):
            rank = rank * size + position
        return rank

    pairs = []
    for axis in range(len(dims)):
        down, up = list(coords), list(coords)
        down[axis] = (coords[axis] - 1) % dims[axis]
        up[axis] = (coords[axis] + 1) % dims[axis]
        pairs.append((rank_of(down), rank_of(up)))
    return pairs

# %% 11-cart-neighbours wrong
def neighbours(dims, coords):
    def rank_of(c):
        rank = 0
        for size, position in zip(dims, c):
            rank = rank * size + position
        return rank

    pairs = []
    for axis in range(len(dims)):
        down, up = list(coords), list(coords)
        down[axis] = coords[axis] - 1          # no wrap-around: the grid is periodic
        up[axis] = coords[axis] + 1
        pairs.append((rank_of(down), rank_of(up)))
    return pairs
