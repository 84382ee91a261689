#pragma once
// The cell-centred finite-volume discretisation of −∇·(σ∇u) + κu on a box
// grid in 1–3 D (nefi.md §5.3). Cell i and its neighbour j = i + e_a share a
// face of conductance K = σ̄/h_a², σ̄ the harmonic mean 2σ_iσ_j/(σ_i+σ_j)
// (exact for layers in series) or the arithmetic mean (σ_i+σ_j)/2. Per axis
// and side the boundary is
//   dirichlet  u = 0 on the face: a ghost −u_i, so the cell's diagonal gains
//              the boundary conductance 2σ_i/h_a² (no neighbour term);
//   neumann    no flux (a prescribed flux j enters the right-hand side as the
//              volume source j/h_a of the boundary cell);
//   periodic   the last cell's face wraps to the first (both sides at once).
// So (A u)_i = Σ_faces K (u_i − u_j) + Σ_dirichlet K_b u_i + κ_i u_i, which is
// symmetric and positive semi-definite; its null space is the constants when
// no side is Dirichlet and κ = 0.
//
// FaceSystem holds K per axis and face (the face between i and i + e_a is
// stored at i; 0 where there is none) and the diagonal, on the host, for a
// batch of conductivity fields. Everything is C order.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "fk/tensor.h"

namespace nefi::elliptic {

enum class Boundary { kDirichlet, kNeumann, kPeriodic };
enum class FaceMean { kHarmonic, kArithmetic };

struct EllipticGrid {
  fk::Dims shape;                                 // 1–3 axes
  std::vector<double> spacing;                    // h per axis
  std::vector<std::array<Boundary, 2>> boundary;  // per axis: low side, high side
  FaceMean face_mean = FaceMean::kHarmonic;

  int ndim() const { return static_cast<int>(shape.size()); }
  int64_t numel() const { return shape.numel(); }
  bool has_dirichlet() const;
  // Elements between neighbours along `axis` (C order).
  int64_t stride(int axis) const;
  // Checks 1–3 axes, positive sizes and spacings, one boundary pair per axis
  // and periodic on both sides or neither (fk::Error naming what was given).
  void validate() const;
};

// The boundary of every axis from a string: one kind for all ("dirichlet",
// "neumann", "periodic"), one per axis separated by commas ("periodic,
// neumann"), and a side pair as low:high ("dirichlet:neumann"). Unknown kinds,
// a wrong axis count or periodic on one side only are fk::Errors.
std::vector<std::array<Boundary, 2>> parse_boundary(const std::string& spec, int ndim);

// Host face conductances and diagonal for nb conductivity fields.
template <typename T>
struct FaceSystem {
  int64_t nb = 0;           // conductivity fields (1: shared by every system)
  std::vector<T> faces;     // (nb, ndim, numel)
  std::vector<T> diag;      // (nb, numel): Σ K of its faces + Dirichlet K_b + κ
  std::vector<T> inv_diag;  // 1 / diag (0 where diag is 0)
};

// nb systems' faces and diagonals: sigma holds numel values (shared) or
// nb·numel (sigma_batched), kappa is null, numel values (shared) or nb·numel
// (kappa_batched). Throws fk::Error on σ ≤ 0 or non-finite.
template <typename T>
FaceSystem<T> build_face_system(const EllipticGrid& g, int64_t nb, const T* sigma,
                                bool sigma_batched, const T* kappa, bool kappa_batched);

// q = A u for conductivity field `s` (one grid).
template <typename T>
void apply_face_system(const EllipticGrid& g, const FaceSystem<T>& sys, int64_t s, const T* u,
                       T* q);

// The same as an inlinable kernel (the CG compiles it for AVX2 and for the
// baseline): per axis, the faces are one contiguous run (per outer slab of
// (n_a − 1)·stride cells when the axis is periodic), so both halves of each
// face's exchange are branch-free vector loops (a gather from the +
// neighbour, then from the − one), plus the wrap faces when periodic.
// Relies on FaceSystem's zero faces where a cell has no + neighbour.
template <typename T>
[[gnu::always_inline]] inline void apply_runs(const EllipticGrid& g, const T* __restrict faces,
                                              const T* __restrict diag, const T* __restrict u,
                                              T* __restrict q) {
  const int64_t n = g.numel(), d = g.ndim();
  for (int64_t i = 0; i < n; ++i) q[i] = diag[i] * u[i];
  for (int a = 0; a < d; ++a) {
    const T* __restrict k = faces + a * n;
    const int64_t len = g.shape[a], inner = g.stride(a);
    const bool periodic = g.boundary[a][0] == Boundary::kPeriodic;
    // Without a wrap the faces of a slab's last cells are 0, so the whole
    // axis is one run (one vector loop instead of `outer` short ones: the
    // innermost axis of a 20²×10 grid has runs of 9); the zero faces only
    // subtract 0 · u, which leaves q bit for bit as the per-slab loops do.
    const int64_t outer = periodic ? n / (len * inner) : 1;
    const int64_t run = periodic ? (len - 1) * inner : n - inner;
    for (int64_t o = 0; o < outer; ++o) {
      const int64_t base = o * len * inner;
      T* __restrict qa = q + base;
      const T* __restrict ua = u + base;
      const T* __restrict ka = k + base;
      for (int64_t t = 0; t < run; ++t) qa[t] -= ka[t] * ua[t + inner];
      for (int64_t t = 0; t < run; ++t) qa[t + inner] -= ka[t] * ua[t];
      if (periodic && len > 1)
        for (int64_t m = 0; m < inner; ++m) {
          qa[run + m] -= ka[run + m] * ua[m];
          qa[m] -= ka[run + m] * ua[run + m];
        }
    }
  }
}

// grad_sigma (numel) += ∂/∂σ of Σ_faces K (a_i − a_j)(b_i − b_j) + Σ_dirichlet K_b a_i b_i
// = ∂(aᵀ A b)/∂σ without the κ term, through the face means (harmonic:
// ∂σ̄/∂σ_i = 2σ_j²/(σ_i+σ_j)²). Accumulated in double.
template <typename T>
void accumulate_sigma_gradient(const EllipticGrid& g, const T* sigma, const T* a, const T* b,
                               double scale, double* grad_sigma);

}  // namespace nefi::elliptic
