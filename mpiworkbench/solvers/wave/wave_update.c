/* One leapfrog step of the 7-point wave stencil on a box of a ghosted 3-D block.
 *
 *   un = cx2*(u[i-1]+u[i+1]) + cy2*(u[j-1]+u[j+1]) + cz2*(u[k-1]+u[k+1]) + center*u - uo
 *
 * evaluated left to right in exactly this order (and built with -ffp-contract=off, so no
 * fused multiply-adds), which makes the result bit-for-bit equal to the NumPy and numba
 * kernels and independent of the decomposition. Arrays are C-ordered (nx, ny, nz) with
 * ghosts included; the box [i0,i1) x [j0,j1) x [k0,k1) is in local (ghosted) indices.
 */
#include <stddef.h>

void wave_update(double *restrict un, const double *restrict u, const double *restrict uo,
                 int nx, int ny, int nz,
                 int i0, int i1, int j0, int j1, int k0, int k1,
                 double cx2, double cy2, double cz2, double center)
{
    (void)nx;
    const ptrdiff_t sx = (ptrdiff_t)ny * nz, sy = nz;
    for (int i = i0; i < i1; ++i) {
        for (int j = j0; j < j1; ++j) {
            const ptrdiff_t row = i * sx + j * sy;
            const double *c = u + row, *xm = c - sx, *xp = c + sx, *ym = c - sy, *yp = c + sy;
            const double *o = uo + row;
            double *n = un + row;
            for (int k = k0; k < k1; ++k) {
                double t = cx2 * (xm[k] + xp[k]);
                t = t + cy2 * (ym[k] + yp[k]);
                t = t + cz2 * (c[k - 1] + c[k + 1]);
                t = t + center * c[k];
                n[k] = t - o[k];
            }
        }
    }
}
