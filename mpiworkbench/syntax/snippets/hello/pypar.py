"""Hello world with pypar (thesis §3.1; emulated on mpi4py). The thesis writes `import pypar`."""

from mpiworkbench.syntax.historic import pypar  # automatically initialize MPI
def main():
    numproc = pypar.size()
    myrank = pypar.rank()
    print("Hello, world! I'm process %d of %d." % (myrank, numproc))
    pypar.finalize()
    return [myrank, numproc]


if __name__ == "__main__":
    print(main())
