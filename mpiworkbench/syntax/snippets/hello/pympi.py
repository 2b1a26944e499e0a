"""Hello world with pyMPI (thesis §3.4; emulated). rank and size are module attributes."""

from mpiworkbench.syntax.historic import pympi as mpi  # thesis: import mpi
def main():
    numproc = mpi.size
    myrank = mpi.rank
    proc_name = mpi.name
    print("Hello, world! I'm process %d of %d." % (myrank, numproc))
    return [myrank, numproc]


if __name__ == "__main__":
    print(main())
