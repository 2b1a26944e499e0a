"""scatter with boostmpi (Table 4.10; emulated): one value per rank from the root."""

from mpiworkbench.syntax.historic import boostmpi
def main():
    comm = boostmpi.world
    values = [[2.0 * r, 2.0 * r + 1] for r in range(comm.size)] if comm.rank == 0 else None
    return boostmpi.scatter(comm, values, 0)


if __name__ == "__main__":
    print(main())
