/* MPI_Gather in C: [rank, rank*rank] from every rank, in rank order, on rank 0 (Table 4.8). */
#include <mpi.h>
#include <stdio.h>

int snippet_gather(MPI_Comm comm, double *result, char *text, int textlen) {
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    double mine[2] = {rank, (double)rank * rank};
    MPI_Gather(mine, 2, MPI_DOUBLE, result, 2, MPI_DOUBLE, 0, comm);
    return rank == 0 ? 2 * size : -1;
}
