"""all_to_all with boostmpi (Table 4.11; emulated)."""

from mpiworkbench.syntax.historic import boostmpi
def main():
    comm = boostmpi.world
    return boostmpi.all_to_all(comm, [100.0 * comm.rank + j for j in range(comm.size)])


if __name__ == "__main__":
    print(main())
