/* MPI_Reduce in C: the sum of [rank+1, 2(rank+1)] over all ranks lands on rank 0 (Table 4.6). */
#include <mpi.h>
#include <stdio.h>

int snippet_reduce(MPI_Comm comm, double *result, char *text, int textlen) {
    int rank;
    MPI_Comm_rank(comm, &rank);
    double mine[2] = {rank + 1.0, 2.0 * (rank + 1)};
    MPI_Reduce(mine, result, 2, MPI_DOUBLE, MPI_SUM, 0, comm);
    return rank == 0 ? 2 : -1;
}
