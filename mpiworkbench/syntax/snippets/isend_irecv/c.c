/* MPI_Isend / MPI_Irecv / MPI_Waitall in C: a periodic ring (Table 4.4). */
#include <mpi.h>
#include <stdio.h>

int snippet_isend_irecv(MPI_Comm comm, double *result, char *text, int textlen) {
    int rank, size;
    double mine[3];
    MPI_Request requests[2];
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    for (int i = 0; i < 3; i++) mine[i] = rank;
    MPI_Irecv(result, 3, MPI_DOUBLE, (rank - 1 + size) % size, 0, comm, &requests[0]);
    MPI_Isend(mine, 3, MPI_DOUBLE, (rank + 1) % size, 0, comm, &requests[1]);
    /* ... computation could overlap here ... */
    MPI_Waitall(2, requests, MPI_STATUSES_IGNORE);
    return 3;
}
