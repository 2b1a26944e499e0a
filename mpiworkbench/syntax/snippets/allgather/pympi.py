"""allgather with pyMPI (Table 4.9; emulated)."""

from mpiworkbench.syntax.historic import pympi as mpi
def main():
    return mpi.allgather([mpi.rank, mpi.rank**2])


if __name__ == "__main__":
    print(main())
