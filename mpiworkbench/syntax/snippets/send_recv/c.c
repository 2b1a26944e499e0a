/* MPI_Send / MPI_Recv in C: rank 0 sends four doubles to rank 1 (thesis Table 4.2). */
#include <mpi.h>
#include <stdio.h>

int snippet_send_recv(MPI_Comm comm, double *result, char *text, int textlen) {
    int rank;
    double data[4] = {1.0, 2.0, 3.0, 4.0};
    MPI_Comm_rank(comm, &rank);
    if (rank == 0) {
        MPI_Send(data, 4, MPI_DOUBLE, 1, 11, comm);
    } else if (rank == 1) {
        MPI_Recv(result, 4, MPI_DOUBLE, 0, 11, comm, MPI_STATUS_IGNORE);
        return 4;
    }
    return -1; /* nothing received on this rank */
}
