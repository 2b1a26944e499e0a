/* Hello world in C (thesis Ch. 3 compares every module's hello world with this one). */
#include <mpi.h>
#include <stdio.h>

int snippet_hello(MPI_Comm comm, double *result, char *text, int textlen) {
    int numproc, myrank;
    /* MPI_Init(&argc, &argv) ran when the process started (mpi4py did it for us) */
    MPI_Comm_size(comm, &numproc);
    MPI_Comm_rank(comm, &myrank);
    snprintf(text, textlen, "Hello, world! I'm process %d of %d.\n", myrank, numproc);
    /* MPI_Finalize() runs at exit */
    result[0] = myrank;
    result[1] = numproc;
    return 2;
}
