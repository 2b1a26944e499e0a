"""Hello world with Scientific.MPI (thesis §3.5; emulated). Ran under `mpipython`."""

from mpiworkbench.syntax.historic import scientific_mpi as MPI  # thesis: from Scientific import MPI
def main():
    comm = MPI.world.duplicate()
    numproc = comm.size
    myrank = comm.rank
    print("Hello, world! I'm process %d of %d." % (myrank, numproc))
    return [myrank, numproc]


if __name__ == "__main__":
    print(main())
