"""gather with pyMPI (Table 4.8; emulated): the sequences are concatenated on the root."""

from mpiworkbench.syntax.historic import pympi as mpi
def main():
    return mpi.gather([mpi.rank, mpi.rank**2])


if __name__ == "__main__":
    print(main())
