#pragma once
// The flat stencil: the iterate lives in a padded buffer of (nx + 2, ny + 2, nz)
// cells (one ghost plane on each side of x, one ghost row on each side of y,
// z unpadded), so every neighbour of an interior cell is at a constant offset:
// ±(ny + 2)·nz along x, ±nz along y, ±1 along z. z ± 1 at the front and back
// faces reads the adjacent row's cell, which is finite and carries weight 0.
// The interior of each x-plane is one contiguous run of ny·nz cells (and a
// chunk of planes one run, ghost rows included), so a Jacobi sweep is one
// branch-free multiply-add loop, compiled for AVX2+FMA and baseline, that then
// refills the periodic ghosts of the planes it wrote.
//
// One sweep is one fused op (one OpScope, one launch when it goes parallel
// over x-planes); FlatSweeper's buffers are allocated once per system, never
// per sweep.
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

// The symmetric scaling of a system on compact grids (CPU, the weights' dtype):
// faces (3, nx, ny, nz) holds Ŵ of the +x, +y, +z face of every cell (0 for a
// z face past the back and for closed side faces), root_d (2, nx, ny, nz) D^½
// and D^-½. FlatSweeper pads them; the CUDA sweeper builds the same arrays
// from α on the device (nefi/cuda/heat_cells.h, bit for bit).
struct SymmetricFaces {
  fk::Tensor faces, root_d;
};
SymmetricFaces symmetric_faces(const HeatSystem& system, const StepGeometry& g);

// A Jacobi / Chebyshev sweeper over one system, without a graph (the adjoint's
// forward and backward solves, simulate). It iterates the symmetrically scaled
// system: with y = D^½ x, Jacobi's x ← D⁻¹b + Σ_j W_j S_j x becomes
// y ← D^-½ b + Σ_f Ŵ_f S_f y with one weight per face, Ŵ_f = Δt a_f / √(D_i D_j),
// shared by the two cells of the face. Each cell then reads three padded face
// arrays (at its own index and one offset back) instead of six neighbour
// weights, 24 instead of 36 bytes per f32 cell update; the iterates are the
// same as the unscaled Jacobi / Chebyshev ones up to rounding (a similarity
// transform). Two padded iterate buffers swap after each sweep.
class FlatSweeper {
 public:
  FlatSweeper(HeatSystem system, const StepGeometry& g);

  void load(const fk::Tensor& x);   // iterate := x (a grid)
  void store(fk::Tensor& x) const;  // x (a contiguous grid) := iterate
  // The right-hand side b + s at z = 0 (s (nx, ny) or undefined).
  void set_rhs(const fk::Tensor& b, const fk::Tensor& surface = fk::Tensor());
  // store(x) and set_rhs(x) in one pass (the next step of a rollout starts
  // from this one's solution); add_surface then adds s at z = 0.
  void store_and_set_rhs(fk::Tensor& x);
  void add_surface(const fk::Tensor& surface);
  void jacobi(int64_t iters);
  // omega (K,) as chebyshev_weights gives: sweep k is x ← x_prev + ω_k (S x − x_prev).
  void chebyshev(const fk::Tensor& omega);

  const HeatSystem& system() const { return system_; }

 private:
  void sweep(bool lerp, const void* omega);
  HeatSystem system_;
  StepGeometry g_;
  FlatLayout layout_;
  fk::Tensor faces_;   // (3, padded): Ŵ of the +x, +y, +z face of every cell, ghosts wrapped
  fk::Tensor root_d_;  // (2, grid): D^½ and D^-½
  fk::Tensor buf_[2];
  fk::Tensor rhs_;  // padded: D^-½ b
  int cur_ = 0;
};

// y = c + Σ_j W_j S_j x on compact grids (c may be undefined: y = Σ_j W_j S_j x),
// one fused op through a padded scratch copy of x; differentiable in x, c and
// the weights (its own autograd node, which saves x and the weights).
fk::Tensor flat_sweep(const fk::Tensor& x, const fk::Tensor& c, const fk::Tensor& weights,
                      const StepGeometry& g);

}  // namespace nefi::heat
