"""gather with boostmpi (Table 4.8; emulated): a tuple of values on the root."""

from mpiworkbench.syntax.historic import boostmpi
def main():
    comm = boostmpi.world
    return boostmpi.gather(comm, [comm.rank, comm.rank**2], 0)


if __name__ == "__main__":
    print(main())
