/* MPI_Scatter in C: rank r gets elements 2r and 2r+1 of rank 0's array (Table 4.10). */
#include <mpi.h>
#include <stdio.h>

int snippet_scatter(MPI_Comm comm, double *result, char *text, int textlen) {
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    double all[64];
    if (rank == 0)
        for (int i = 0; i < 2 * size; i++) all[i] = i;
    MPI_Scatter(all, 2, MPI_DOUBLE, result, 2, MPI_DOUBLE, 0, comm);
    return 2;
}
