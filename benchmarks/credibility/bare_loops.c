/* The bare C reference of benchmarks/bench_credibility.py: OSU-style ping-pong and
 * allreduce loops written from scratch, with no mpiworkbench code.
 *
 * Built twice by the benchmark with the venv's mpicc (-O3 -march=native):
 *   - as a shared library (bare_pingpong_in, bare_allreduce_in: the loops in buffers handed
 *     in), called through ctypes by credibility/driver.py so that it runs in the same launch
 *     and on the same memory as the harness and is compared pair by pair;
 *   - with -DBARE_MAIN as its own program (buffers of its own), launched by mpiexec, for context.
 *
 * Buffers follow the rule every program of the comparison uses: 4 KiB-aligned; 2 MiB-aligned
 * and advised MADV_HUGEPAGE from 4 MiB, where NumPy starts advising huge pages; written once
 * before timing (the driver's, handed in; the own program's, bare_buffer below, per size).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* One-way latency in microseconds on rank 0 (round trip / 2, the loop timed as one block
 * from iteration == skip) between the buffers s and r; 0 on other ranks. */
double bare_pingpong_in(int iters, int skip, int n, char *s, char *r)
{
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double t0 = 0.0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < iters + skip; i++) {
        if (i == skip) t0 = MPI_Wtime();
        if (rank == 0) {
            MPI_Send(s, n, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
            MPI_Recv(r, n, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Recv(r, n, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(s, n, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
        }
    }
    double us = (MPI_Wtime() - t0) * 1e6 / (2.0 * iters);
    return rank == 0 ? us : 0.0;
}

/* Allreduce of n/8 doubles (SUM) from s into r, OSU style: each call timed, barrier after
 * it outside the timer; the per-rank mean averaged across ranks, returned on rank 0 (0 elsewhere). */
double bare_allreduce_in(int iters, int skip, int n, char *s, char *r)
{
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    double total = 0.0, sum = 0.0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < iters + skip; i++) {
        double t = MPI_Wtime();
        MPI_Allreduce(s, r, n / 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        if (i >= skip) total += MPI_Wtime() - t;
        MPI_Barrier(MPI_COMM_WORLD);
    }
    double us = total * 1e6 / iters;
    MPI_Reduce(&us, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    return rank == 0 ? sum / np : 0.0;
}

#ifdef BARE_MAIN
static char *bare_buffer(size_t n, int fill)
{
    size_t align = n >= (4u << 20) ? (2u << 20) : 4096;
    void *p = NULL;
    if (posix_memalign(&p, align, n + 8)) return NULL;
    if (align > 4096) madvise(p, n, MADV_HUGEPAGE);
    memset(p, fill, n + 8);
    return p;
}

/* A loop in buffers of its own (allocated by the rule above, freed after); -1 if memory ran out. */
static double in_own_buffers(double (*loop)(int, int, int, char *, char *), int iters, int skip, int n)
{
    char *s = bare_buffer(n, 'a'), *r = bare_buffer(n, 'b');
    double us = s && r ? loop(iters, skip, n, s, r) : -1.0;
    free(s);
    free(r);
    return us;
}

/* argv: pingpong|allreduce iters skip size...; rank 0 prints "size usec" per size. */
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int ar = argc > 1 && strcmp(argv[1], "allreduce") == 0;
    for (int a = 4; a < argc; a++) {
        int n = atoi(argv[a]);
        double us = in_own_buffers(ar ? bare_allreduce_in : bare_pingpong_in, atoi(argv[2]), atoi(argv[3]), n);
        if (rank == 0) printf("%d %.6f\n", n, us);
    }
    MPI_Finalize();
    return 0;
}
#endif
