#pragma once
// The elliptic solve on a CUDA device (cuda/elliptic_device.cpp, kernels in
// cuda/elliptic.cu); CPU-only builds refuse it (elliptic_device_stub.cpp).
// Reached through solve_elliptic with a conductivity on a device.
//
// Per solve: the face system built from σ and κ on the device (one launch),
// with precond multigrid each field's V-cycle hierarchy (one launch, the CPU
// multigrid's values bit for bit), and the block PCG (one launch, one thread
// block per system, Jacobi or the V-cycle inside the block, its stopping
// test on the device); the IFT backward runs the adjoint solve the same way
// on the saved system and hierarchy and the conductivity gradient as one
// more launch (the κ gradient by fk ops). Nothing is read back to the host or
// uploaded from it, so a step with these solves can be captured in a CUDA
// graph. With warm starts the forward and adjoint iterates stay on the
// device in WarmStart's buffers and are solved in place. σ's positivity is
// not checked (a host read): a σ ≤ 0 ends the CG at its breakdown test, and
// the per-system statistics (WarmStart::device_*_stats) say so.
#include <memory>

#include "fk/tensor.h"
#include "nefi/operators/elliptic/elliptic_solve.h"

namespace nefi::elliptic {

// solve_elliptic for operands on one CUDA device, L = solve_layout(...):
// fk::Error when device_refusal(opt) is not empty, and for precond
// multigrid on a null-space (projected) system, as pcg_solve.
fk::Tensor solve_elliptic_device(const fk::Tensor& sigma, const fk::Tensor& rhs,
                                 const fk::Tensor& kappa, const EllipticGrid& grid,
                                 const SolveOptions& opt, const SolveLayout& L,
                                 const std::shared_ptr<WarmStart>& warm);

}  // namespace nefi::elliptic
