"""all_gather with boostmpi (Table 4.9; emulated)."""

from mpiworkbench.syntax.historic import boostmpi
def main():
    comm = boostmpi.world
    return boostmpi.all_gather(comm, [comm.rank, comm.rank**2])


if __name__ == "__main__":
    print(main())
