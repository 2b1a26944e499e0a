/* MPI_Allreduce in C: every rank gets the sum (the CG dot product of thesis §6.2.2; Table 4.7). */
#include <mpi.h>
#include <stdio.h>

int snippet_allreduce(MPI_Comm comm, double *result, char *text, int textlen) {
    int rank;
    MPI_Comm_rank(comm, &rank);
    double mine[2] = {rank + 1.0, 2.0 * (rank + 1)};
    MPI_Allreduce(mine, result, 2, MPI_DOUBLE, MPI_SUM, comm);
    return 2;
}
