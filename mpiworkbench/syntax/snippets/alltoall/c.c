/* MPI_Alltoall in C: block j of rank r (100r + j) goes to rank j (Table 4.11). */
#include <mpi.h>
#include <stdio.h>

int snippet_alltoall(MPI_Comm comm, double *result, char *text, int textlen) {
    int rank, size;
    double mine[64];
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    for (int j = 0; j < size; j++) mine[j] = 100.0 * rank + j;
    MPI_Alltoall(mine, 1, MPI_DOUBLE, result, 1, MPI_DOUBLE, comm);
    return size;
}
