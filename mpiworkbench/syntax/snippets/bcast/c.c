/* MPI_Bcast in C: rank 0's four doubles reach every rank (Table 4.5). */
#include <mpi.h>
#include <stdio.h>

int snippet_bcast(MPI_Comm comm, double *result, char *text, int textlen) {
    int rank;
    double data[4] = {0.0, 0.0, 0.0, 0.0};
    MPI_Comm_rank(comm, &rank);
    if (rank == 0)
        for (int i = 0; i < 4; i++) data[i] = 10.0 * i;
    MPI_Bcast(data, 4, MPI_DOUBLE, 0, comm);
    for (int i = 0; i < 4; i++) result[i] = data[i];
    return 4;
}
