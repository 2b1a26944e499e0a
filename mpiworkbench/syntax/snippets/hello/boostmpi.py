"""Hello world with boostmpi (thesis §3.6; emulated): rank and size are communicator attributes."""

from mpiworkbench.syntax.historic import boostmpi
def main():
    comm = boostmpi.world
    numproc = comm.size
    myrank = comm.rank
    print("Hello, world! I'm process %d of %d." % (myrank, numproc))
    boostmpi.finalize()
    return [myrank, numproc]


if __name__ == "__main__":
    print(main())
