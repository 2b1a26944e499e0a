/* Thesis §2.4 in C: the inner product of two distributed vectors.
 *
 * Each rank holds a slice of v1 and v2; it sums vs1[i]*vs2[i] in a plain loop and
 * MPI_Reduce adds the partial sums on rank 0. `loops` repetitions make the time
 * measurable; the communicator arrives as its Fortran handle (portable across MPIs).
 */
#include <mpi.h>

double mwb_inner_local(const double *vs1, const double *vs2, long local_n)
{
    double res_local = 0.0;
    for (long i = 0; i < local_n; i++)
        res_local += vs1[i] * vs2[i];
    return res_local;
}

double mwb_inner_reduce(const double *vs1, const double *vs2, long local_n, long loops, MPI_Fint fcomm)
{
    MPI_Comm comm = MPI_Comm_f2c(fcomm);
    double res = 0.0;
    for (long k = 0; k < loops; k++) {
        double res_local = mwb_inner_local(vs1, vs2, local_n);
        MPI_Reduce(&res_local, &res, 1, MPI_DOUBLE, MPI_SUM, 0, comm);
    }
    return res; /* meaningful on rank 0 only */
}
