/* The C column of every side-by-side table: the Table 4.1 routines as thin C functions.
 *
 * Built by mpiworkbench.cbuild (the venv's mpicc, -O3) and called through ctypes by
 * mpiworkbench/backends/c.py. Datatypes and operators travel as small integer codes so
 * the Python side never depends on how an MPI library represents its handles; the
 * communicator travels as its C handle (mpi4py: comm.handle).
 * Every function returns the MPI error code (0 == MPI_SUCCESS).
 */
#include <mpi.h>
#include <stddef.h>

static MPI_Datatype datatype_of(int code) {
    switch (code) {
    case 0: return MPI_DOUBLE;
    case 1: return MPI_FLOAT;
    case 2: return MPI_INT32_T;
    case 3: return MPI_INT64_T;
    case 4: return MPI_C_DOUBLE_COMPLEX;
    case 5: return MPI_C_FLOAT_COMPLEX;
    case 6: return MPI_UINT8_T;
    default: return MPI_DATATYPE_NULL;
    }
}

static MPI_Op op_of(int code) {
    switch (code) {
    case 0: return MPI_SUM;
    case 1: return MPI_PROD;
    case 2: return MPI_MIN;
    case 3: return MPI_MAX;
    default: return MPI_OP_NULL;
    }
}

int wb_sizeof_request(void) { return (int)sizeof(MPI_Request); }
int wb_sizeof_comm(void) { return (int)sizeof(MPI_Comm); }
double wb_wtime(void) { return MPI_Wtime(); }
int wb_barrier(MPI_Comm comm) { return MPI_Barrier(comm); }

int wb_send(const void *buf, int count, int dt, int dest, int tag, MPI_Comm comm) {
    return MPI_Send(buf, count, datatype_of(dt), dest, tag, comm);
}

int wb_recv(void *buf, int count, int dt, int source, int tag, MPI_Comm comm) {
    return MPI_Recv(buf, count, datatype_of(dt), source, tag, comm, MPI_STATUS_IGNORE);
}

int wb_sendrecv(const void *sendbuf, int sendcount, int dest, int sendtag,
                void *recvbuf, int recvcount, int source, int recvtag, int dt, MPI_Comm comm) {
    return MPI_Sendrecv(sendbuf, sendcount, datatype_of(dt), dest, sendtag,
                        recvbuf, recvcount, datatype_of(dt), source, recvtag, comm, MPI_STATUS_IGNORE);
}

int wb_isend(const void *buf, int count, int dt, int dest, int tag, MPI_Comm comm, MPI_Request *request) {
    return MPI_Isend(buf, count, datatype_of(dt), dest, tag, comm, request);
}

int wb_irecv(void *buf, int count, int dt, int source, int tag, MPI_Comm comm, MPI_Request *request) {
    return MPI_Irecv(buf, count, datatype_of(dt), source, tag, comm, request);
}

int wb_wait(MPI_Request *request) { return MPI_Wait(request, MPI_STATUS_IGNORE); }

int wb_waitall(int n, MPI_Request *requests) { return MPI_Waitall(n, requests, MPI_STATUSES_IGNORE); }

int wb_bcast(void *buf, int count, int dt, int root, MPI_Comm comm) {
    return MPI_Bcast(buf, count, datatype_of(dt), root, comm);
}

int wb_reduce(const void *sendbuf, void *recvbuf, int count, int dt, int op, int root, MPI_Comm comm) {
    return MPI_Reduce(sendbuf, recvbuf, count, datatype_of(dt), op_of(op), root, comm);
}

int wb_allreduce(const void *sendbuf, void *recvbuf, int count, int dt, int op, MPI_Comm comm) {
    return MPI_Allreduce(sendbuf, recvbuf, count, datatype_of(dt), op_of(op), comm);
}

int wb_gather(const void *sendbuf, int count, void *recvbuf, int dt, int root, MPI_Comm comm) {
    return MPI_Gather(sendbuf, count, datatype_of(dt), recvbuf, count, datatype_of(dt), root, comm);
}

int wb_gatherv(const void *sendbuf, int count, void *recvbuf, const int *counts, const int *displs,
               int dt, int root, MPI_Comm comm) {
    return MPI_Gatherv(sendbuf, count, datatype_of(dt), recvbuf, counts, displs, datatype_of(dt), root, comm);
}

int wb_allgather(const void *sendbuf, int count, void *recvbuf, int dt, MPI_Comm comm) {
    return MPI_Allgather(sendbuf, count, datatype_of(dt), recvbuf, count, datatype_of(dt), comm);
}

int wb_allgatherv(const void *sendbuf, int count, void *recvbuf, const int *counts, const int *displs,
                  int dt, MPI_Comm comm) {
    return MPI_Allgatherv(sendbuf, count, datatype_of(dt), recvbuf, counts, displs, datatype_of(dt), comm);
}

int wb_scatter(const void *sendbuf, void *recvbuf, int count, int dt, int root, MPI_Comm comm) {
    return MPI_Scatter(sendbuf, count, datatype_of(dt), recvbuf, count, datatype_of(dt), root, comm);
}

int wb_scatterv(const void *sendbuf, const int *counts, const int *displs, void *recvbuf, int count,
                int dt, int root, MPI_Comm comm) {
    return MPI_Scatterv(sendbuf, counts, displs, datatype_of(dt), recvbuf, count, datatype_of(dt), root, comm);
}

int wb_alltoall(const void *sendbuf, void *recvbuf, int count, int dt, MPI_Comm comm) {
    return MPI_Alltoall(sendbuf, count, datatype_of(dt), recvbuf, count, datatype_of(dt), comm);
}
