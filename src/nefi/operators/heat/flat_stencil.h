#pragma once
// The flat stencil: the iterate lives in a padded buffer of (nx + 2, ny + 2, nz)
// cells (one ghost plane on each side of x, one ghost row on each side of y,
// z unpadded), so every neighbour of an interior cell is at a constant offset:
// ±(ny + 2)·nz along x, ±nz along y, ±1 along z. z ± 1 at the front and back
// faces reads the adjacent row's cell, which is finite and carries weight 0.
// The interior of each x-plane is one contiguous run of ny·nz cells, so a
// Jacobi sweep is one branch-free multiply-add loop over 7 coefficient
// streams, and it refills the periodic ghosts of the plane it wrote.
//
// One sweep is one fused op (one OpScope, one launch when it goes parallel
// over x-planes); the buffers are allocated once per system, never per sweep.
#include <cstdint>

#include "fk/tensor.h"
#include "nefi/operators/heat/heat_system.h"

namespace nefi::heat {

struct FlatLayout {
  int64_t nx = 0, ny = 0, nz = 0;
  int64_t plane() const { return (ny + 2) * nz; }
  int64_t size() const { return (nx + 2) * plane(); }
  // Padded index of interior cell (x, 0, 0); the plane's ny·nz cells follow.
  int64_t interior(int64_t x) const { return (x + 1) * plane() + nz; }
};

// A Jacobi / Chebyshev sweeper over one system, without a graph (the adjoint's
// forward and backward solves, simulate): two padded iterate buffers that
// swap after each sweep and one right-hand-side buffer c = D⁻¹ b.
class FlatSweeper {
 public:
  FlatSweeper(HeatSystem system, const StepGeometry& g);

  void load(const fk::Tensor& x);   // iterate := x (a grid)
  void store(fk::Tensor& x) const;  // x (a contiguous grid) := iterate
  // c = D⁻¹ (b + s at z = 0); s is (nx, ny) or undefined.
  void set_rhs(const fk::Tensor& b, const fk::Tensor& surface = fk::Tensor());
  void jacobi(int64_t iters);
  // omega (K,) as chebyshev_weights gives: sweep k is x ← x_prev + ω_k (S x − x_prev).
  void chebyshev(const fk::Tensor& omega);

  const HeatSystem& system() const { return system_; }

 private:
  void sweep(bool lerp, const void* omega);
  HeatSystem system_;
  StepGeometry g_;
  FlatLayout layout_;
  fk::Tensor buf_[2];
  fk::Tensor rhs_;
  int cur_ = 0;
};

// y = c + Σ_j W_j S_j x on compact grids (c may be undefined: y = Σ_j W_j S_j x),
// one fused op through a padded scratch copy of x; differentiable in x, c and
// the weights (its own autograd node, which saves x and the weights).
fk::Tensor flat_sweep(const fk::Tensor& x, const fk::Tensor& c, const fk::Tensor& weights,
                      const StepGeometry& g);

}  // namespace nefi::heat
