/* Timed loops of the micro-benchmarks for the `c` backend: the physical-limit reference.
 *
 * Every function runs the same loop as its Python and numba-mpi twins
 * (loops_python.py, loops_numba.py): one barrier first, `warmup` untimed iterations,
 * then `iters` timed ones, and returns this rank's timed seconds.  Buffers are
 * allocated by the caller (NumPy, the same allocation as every other backend).
 * The communicator arrives as its Fortran handle (portable across MPI libraries).
 */
#include <mpi.h>
#include <stdlib.h>

enum {
    WB_BCAST = 0, WB_REDUCE = 1, WB_ALLREDUCE = 2, WB_ALLTOALL = 3, WB_GATHER = 4,
    WB_SCATTER = 5, WB_ALLGATHER = 6, WB_BARRIER = 7, WB_BCAST_LINEAR = 8,
    WB_BCAST_BINOMIAL = 9
};

/* Ping-pong between ranks 0 and 1 (others only join the barrier); rank-local block time. */
double wb_pingpong(MPI_Fint fcomm, char *sbuf, char *rbuf, int nbytes, int iters, int warmup)
{
    MPI_Comm comm = MPI_Comm_f2c(fcomm);
    int rank;
    double t0 = 0.0;
    MPI_Comm_rank(comm, &rank);
    MPI_Barrier(comm);
    if (rank == 0) {
        for (int i = 0; i < iters + warmup; i++) {
            if (i == warmup) t0 = MPI_Wtime();
            MPI_Send(sbuf, nbytes, MPI_BYTE, 1, 1, comm);
            MPI_Recv(rbuf, nbytes, MPI_BYTE, 1, 1, comm, MPI_STATUS_IGNORE);
        }
    } else if (rank == 1) {
        for (int i = 0; i < iters + warmup; i++) {
            if (i == warmup) t0 = MPI_Wtime();
            MPI_Recv(rbuf, nbytes, MPI_BYTE, 0, 1, comm, MPI_STATUS_IGNORE);
            MPI_Send(sbuf, nbytes, MPI_BYTE, 0, 1, comm);
        }
    } else {
        return 0.0;
    }
    return MPI_Wtime() - t0;
}

/* OSU streaming bandwidth (bidir = 0) or bi-directional bandwidth (bidir = 1), window of
 * non-blocking messages per iteration; uni-directional iterations end with a 1-byte ack. */
double wb_window(MPI_Fint fcomm, char *sbuf, char *rbuf, int nbytes, int iters, int warmup,
                 int window, int bidir)
{
    MPI_Comm comm = MPI_Comm_f2c(fcomm);
    int rank;
    double t0 = 0.0;
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * 2 * (size_t)window);
    MPI_Comm_rank(comm, &rank);
    MPI_Barrier(comm);
    if (rank > 1) {
        free(reqs);
        return 0.0;
    }
    int peer = 1 - rank;
    for (int i = 0; i < iters + warmup; i++) {
        if (i == warmup) t0 = MPI_Wtime();
        if (bidir) {
            for (int w = 0; w < window; w++)
                MPI_Irecv(rbuf, nbytes, MPI_BYTE, peer, 10, comm, &reqs[w]);
            for (int w = 0; w < window; w++)
                MPI_Isend(sbuf, nbytes, MPI_BYTE, peer, 10, comm, &reqs[window + w]);
            MPI_Waitall(2 * window, reqs, MPI_STATUSES_IGNORE);
        } else if (rank == 0) {
            for (int w = 0; w < window; w++)
                MPI_Isend(sbuf, nbytes, MPI_BYTE, 1, 10, comm, &reqs[w]);
            MPI_Waitall(window, reqs, MPI_STATUSES_IGNORE);
            MPI_Recv(rbuf, 1, MPI_BYTE, 1, 11, comm, MPI_STATUS_IGNORE);
        } else {
            for (int w = 0; w < window; w++)
                MPI_Irecv(rbuf, nbytes, MPI_BYTE, 0, 10, comm, &reqs[w]);
            MPI_Waitall(window, reqs, MPI_STATUSES_IGNORE);
            MPI_Send(sbuf, 1, MPI_BYTE, 0, 11, comm);
        }
    }
    double elapsed = MPI_Wtime() - t0;
    free(reqs);
    return elapsed;
}

/* Periodic ring: every rank Sendrecv's to rank+1 and from rank-1 (paper 001's exchange). */
double wb_sendrecv(MPI_Fint fcomm, char *sbuf, char *rbuf, int nbytes, int iters, int warmup)
{
    MPI_Comm comm = MPI_Comm_f2c(fcomm);
    int rank, size;
    double t0 = 0.0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Barrier(comm);
    for (int i = 0; i < iters + warmup; i++) {
        if (i == warmup) t0 = MPI_Wtime();
        MPI_Sendrecv(sbuf, nbytes, MPI_BYTE, right, 2, rbuf, nbytes, MPI_BYTE, left, 2, comm,
                     MPI_STATUS_IGNORE);
    }
    return MPI_Wtime() - t0;
}

/* Report 003's ring test: persistent requests made once (MPI_Send_init/MPI_Recv_init);
 * rank 0 starts its send and waits, then its receive; the others receive first, then pass
 * the message on to the next rank (the last one to rank 0).  One iteration = one round. */
double wb_ring(MPI_Fint fcomm, char *sbuf, char *rbuf, int nbytes, int iters, int warmup)
{
    MPI_Comm comm = MPI_Comm_f2c(fcomm);
    int rank, size;
    double t0 = 0.0;
    MPI_Request send, recv;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Send_init(sbuf, nbytes, MPI_BYTE, (rank + 1) % size, 3, comm, &send);
    MPI_Recv_init(rbuf, nbytes, MPI_BYTE, (rank + size - 1) % size, 3, comm, &recv);
    MPI_Request *first = rank == 0 ? &send : &recv, *second = rank == 0 ? &recv : &send;
    MPI_Barrier(comm);
    for (int i = 0; i < iters + warmup; i++) {
        if (i == warmup) t0 = MPI_Wtime();
        MPI_Start(first);
        MPI_Wait(first, MPI_STATUS_IGNORE);
        MPI_Start(second);
        MPI_Wait(second, MPI_STATUS_IGNORE);
    }
    double elapsed = MPI_Wtime() - t0;
    MPI_Request_free(&send);
    MPI_Request_free(&recv);
    return elapsed;
}

static void collective(int op, MPI_Comm comm, int rank, int size, char *s, char *r, int nbytes,
                       MPI_Request *reqs)
{
    int count = nbytes / 8;
    switch (op) {
    case WB_BCAST:
        MPI_Bcast(s, nbytes, MPI_BYTE, 0, comm);
        break;
    case WB_REDUCE:
        MPI_Reduce(s, r, count, MPI_DOUBLE, MPI_SUM, 0, comm);
        break;
    case WB_ALLREDUCE:
        MPI_Allreduce(s, r, count, MPI_DOUBLE, MPI_SUM, comm);
        break;
    case WB_ALLTOALL:
        MPI_Alltoall(s, nbytes, MPI_BYTE, r, nbytes, MPI_BYTE, comm);
        break;
    case WB_GATHER:
        MPI_Gather(s, nbytes, MPI_BYTE, r, nbytes, MPI_BYTE, 0, comm);
        break;
    case WB_SCATTER:
        MPI_Scatter(s, nbytes, MPI_BYTE, r, nbytes, MPI_BYTE, 0, comm);
        break;
    case WB_ALLGATHER:
        MPI_Allgather(s, nbytes, MPI_BYTE, r, nbytes, MPI_BYTE, comm);
        break;
    case WB_BARRIER:
        MPI_Barrier(comm);
        break;
    case WB_BCAST_LINEAR: /* report 003 "simple": root Isends to everyone, Waitall */
        if (rank == 0) {
            for (int dest = 1; dest < size; dest++)
                MPI_Isend(s, nbytes, MPI_BYTE, dest, 3, comm, &reqs[dest - 1]);
            MPI_Waitall(size - 1, reqs, MPI_STATUSES_IGNORE);
        } else {
            MPI_Recv(s, nbytes, MPI_BYTE, 0, 3, comm, MPI_STATUS_IGNORE);
        }
        break;
    case WB_BCAST_BINOMIAL: /* report 003 "cascade": in round k, ranks < 2^k send to rank + 2^k */
        for (int step = 1; step < size; step <<= 1) {
            if (rank < step) {
                if (rank + step < size)
                    MPI_Send(s, nbytes, MPI_BYTE, rank + step, 4, comm);
            } else if (rank < 2 * step) {
                MPI_Recv(s, nbytes, MPI_BYTE, rank - step, 4, comm, MPI_STATUS_IGNORE);
            }
        }
        break;
    }
}

/* A collective timed per call with a barrier after it outside the timer (per_call = 1,
 * OSU/IMB), or as one back-to-back block (per_call = 0, OMB-Py/MPBench). */
double wb_collective(MPI_Fint fcomm, int op, char *sbuf, char *rbuf, int nbytes, int iters,
                     int warmup, int per_call)
{
    MPI_Comm comm = MPI_Comm_f2c(fcomm);
    int rank, size;
    double total = 0.0, t0 = 0.0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * (size_t)(size > 1 ? size : 1));
    MPI_Barrier(comm);
    for (int i = 0; i < iters + warmup; i++) {
        if (per_call) {
            double t = MPI_Wtime();
            collective(op, comm, rank, size, sbuf, rbuf, nbytes, reqs);
            if (i >= warmup) total += MPI_Wtime() - t;
            MPI_Barrier(comm);
        } else {
            if (i == warmup) t0 = MPI_Wtime();
            collective(op, comm, rank, size, sbuf, rbuf, nbytes, reqs);
        }
    }
    if (!per_call) total = MPI_Wtime() - t0;
    free(reqs);
    return total;
}
