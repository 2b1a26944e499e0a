/* MPI_Sendrecv in C: shift right along a chain; the ends talk to MPI_PROC_NULL (Table 4.3). */
#include <mpi.h>
#include <stdio.h>

int snippet_sendrecv(MPI_Comm comm, double *result, char *text, int textlen) {
    int rank, size;
    double mine[3], ghost[3] = {-1.0, -1.0, -1.0};
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int right = rank + 1 < size ? rank + 1 : MPI_PROC_NULL;
    int left = rank > 0 ? rank - 1 : MPI_PROC_NULL;
    for (int i = 0; i < 3; i++) mine[i] = rank;
    MPI_Sendrecv(mine, 3, MPI_DOUBLE, right, 0, ghost, 3, MPI_DOUBLE, left, 0, comm, MPI_STATUS_IGNORE);
    for (int i = 0; i < 3; i++) result[i] = ghost[i];
    return 3;
}
