#pragma once
// A direct solve of the finite-volume systems of elliptic_grid.h: A is
// assembled as a symmetric band (half-width w = the largest axis stride,
// n1 on a 2-D n0×n1 grid), factored once per conductivity field by a banded
// Cholesky in double (n w² / 2 multiply-adds) and every system sharing that
// field costs two triangular sweeps (2 n w), taken for all of them at once.
// The last factors are kept (per thread) and reused while the coefficients
// match exactly: the IFT adjoint refactors nothing. Exact to round-off instead of
// to the CG's tolerance, and with no iteration count to vary with σ; on the
// small 2-D grids of the smoke configs much cheaper than PCG (24²: w = 24).
// Grids with a periodic axis are not banded: banded_applicable says no and
// the caller keeps the PCG. In the null-space case (`project`) b's mean is
// removed, cell 0 is grounded (its row and column replaced by the identity,
// which leaves an SPD system whose solution solves the singular one up to a
// constant), and x is returned with zero mean (the PCG's gauge).
#include <cstdint>

#include "nefi/operators/elliptic/elliptic_cg.h"
#include "nefi/operators/elliptic/elliptic_grid.h"

namespace nefi::elliptic {

// True when no axis is periodic (a band exists).
bool banded_applicable(const EllipticGrid& g);

// x (ns, numel) := A⁻¹ b (ns, numel) for system s on field (sys.nb == 1 ? 0 :
// s). Throws fk::Error when a pivot is not positive to round-off (A not SPD,
// e.g. a Neumann box with κ = 0 solved without `project`). The statistics
// report zero iterations and the true relative residual.
template <typename T>
CgStats banded_solve(const EllipticGrid& g, const FaceSystem<T>& sys, const T* b, T* x, int64_t ns,
                     bool project);

}  // namespace nefi::elliptic
