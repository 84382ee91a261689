#pragma once
// The implicit system of one heat step, A = I − Δt L(α), written in Jacobi
// form A = D (I − Σ_j W_j S_j): S_j reads the neighbour j of every cell
// (j = −x, +x, −y, +y, −z, +z, the order of the weight planes and of every
// multiply-add chain), D = 1 + Δt (Σ_j a_j + β) and W_j = Δt a_j / D, with
// face conductances a = 2 α_i α_j / (α_i + α_j) / h² (harmonic mean, NeFTY
// Prop. 1; or (α_i + α_j) / 2 / h² with arithmetic faces). x and y wrap (periodic), or with
// lateral_neumann the faces at the box's sides are closed (a = 0: insulated); the front face
// z = 0 is adiabatic (a = 0) and the back face z = nz − 1 adiabatic or a sink β = h_robin / Δz on
// the diagonal. A is symmetric and strictly diagonally dominant, so the Jacobi iteration converges
// with rate ≤ ρ = max_i Σ_j W_j[i] < 1 (Gershgorin).
//
// Everything here is CPU, f32 or f64, C-contiguous (nx, ny, nz) grids, except
// that accumulate_face_products and alpha_gradient also take operands on one
// CUDA device (heat_device.h).
#include <cstdint>

#include "fk/tensor.h"

namespace nefi::heat {

inline constexpr int kNeighbours = 6;

struct StepGeometry {
  int64_t nx = 0, ny = 0, nz = 0;
  double hx = 1, hy = 1, hz = 1;
  double dt = 0;                  // of one implicit step (frame dt / implicit_substeps)
  double sink = 0;                // β = robin_h / Δz at the back face; 0 when adiabatic
  bool arithmetic_faces = false;  // face diffusivity (α_i + α_j) / 2 instead of harmonic
  bool lateral_neumann = false;   // x and y side faces closed instead of wrapping
  int64_t numel() const { return nx * ny * nz; }
  fk::Dims shape() const { return {nx, ny, nz}; }
};

struct HeatSystem {
  fk::Tensor weights;   // (6, nx, ny, nz): W_j
  fk::Tensor diag;      // (nx, ny, nz): D
  fk::Tensor inv_diag;  // (nx, ny, nz): 1 / D
};

// One fused op over α (detached; f32/f64): no graph.
HeatSystem build_system(const fk::Tensor& alpha, const StepGeometry& g);
// The same from fk ops (roll, mul, div, stack): differentiable in α; the
// reference the roll stencil and the unrolled autograd mode use.
HeatSystem build_system_ops(const fk::Tensor& alpha, const StepGeometry& g);

// ρ = max_i Σ_j W_j[i] as a 0-dim tensor of the weights' dtype (one fused op,
// no host read; no gradient).
fk::Tensor gershgorin_bound(const HeatSystem& s);

// The discrete adjoint's face sums. For the + face of every cell along x, y, z
// (planes 0, 1, 2 of `sums`, (3, nx, ny, nz)): sums_f += (Δ_f μ)(Δ_f T), Δ_f
// the difference across the face (z faces: z < nz − 1 only). One fused op.
void accumulate_face_products(fk::Tensor& sums, const fk::Tensor& mu, const fk::Tensor& t,
                              const StepGeometry& g);
// dJ/dα = Σ_n μⁿ·Δt (∂L/∂α) Tⁿ = −Δt Σ_f (∂a_f/∂α) S_f, through the harmonic
// mean's derivative ∂/∂α_i [2 α_i α_j / (α_i + α_j)] = 2 α_j² / (α_i + α_j)².
fk::Tensor alpha_gradient(const fk::Tensor& sums, const fk::Tensor& alpha, const StepGeometry& g);

}  // namespace nefi::heat
