#pragma once
// A geometric multigrid V-cycle as the CG's preconditioner for the
// finite-volume systems of elliptic_grid.h (matrix-free, one hierarchy per
// conductivity field, shared by every system on that field).
//
// Coarsening: cells are paired along every axis longer than one cell (an odd
// axis keeps a last aggregate of one cell) until at most kDirectCells remain;
// restriction sums an aggregate's residuals (Pᵀ), prolongation copies a coarse
// correction to its cells (P). The coarse operator is P ᵀA P with its face
// conductances halved: Galerkin aggregation of piecewise constants makes a
// Laplacian's coarse couplings twice the rediscretised ones (2^(d−1) fine
// faces of σh^(d−2) against σ(2h)^(d−2)), the halving restores them, while
// the cell sinks (κ and Dirichlet terms) are summed exactly, so the smooth
// modes they govern are corrected in full. The coarsest grid is solved by a
// dense Cholesky in double.
//
// The cycle is V(1,1) from a zero guess with ω-damped Jacobi (ω = 0.8) before
// and after each coarse correction: the same smoother on both sides and
// R = Pᵀ make it a symmetric operator, positive definite because the damped
// Jacobi sweep is an A-norm contraction (λ(D⁻¹A) ≤ 2 for these diagonally
// dominant systems), so CG stays valid. It needs a non-singular system (a κ
// or a Dirichlet side); the null-space case is refused.
#include <cstdint>
#include <vector>

#include "nefi/operators/elliptic/elliptic_grid.h"

namespace nefi::elliptic {

template <typename T>
struct MultigridLevel {
  EllipticGrid grid;
  std::vector<T> faces, diag, inv_diag;  // (ndim, numel), (numel), (numel)
  std::vector<int64_t> parent;           // the next level's cell of each cell (empty: coarsest)
  // The same by rows of the last axis (cells along it pair up in order):
  // the next level's row of each row, for branch-free transfer loops.
  std::vector<int64_t> row_parent;
};

// rc += Pᵀ v: each row's pairs summed into its parent row (len cells → (len + 1) / 2).
template <typename T>
[[gnu::always_inline]] inline void restrict_rows(const MultigridLevel<T>& L, const T* v, T* rc) {
  const int64_t len = L.grid.shape[L.grid.ndim() - 1], clen = (len + 1) / 2, half = len / 2;
  for (size_t row = 0; row < L.row_parent.size(); ++row) {
    const T* __restrict src = v + row * len;
    T* __restrict dst = rc + L.row_parent[row] * clen;
    for (int64_t k = 0; k < half; ++k) dst[k] += src[2 * k] + src[2 * k + 1];
    if (len % 2) dst[clen - 1] += src[len - 1];
  }
}

// z += P zc: each cell takes its parent's value.
template <typename T>
[[gnu::always_inline]] inline void prolong_rows(const MultigridLevel<T>& L, const T* zc, T* z) {
  const int64_t len = L.grid.shape[L.grid.ndim() - 1], clen = (len + 1) / 2;
  for (size_t row = 0; row < L.row_parent.size(); ++row) {
    const T* __restrict src = zc + L.row_parent[row] * clen;
    T* __restrict dst = z + row * len;
    for (int64_t k = 0; k < len; ++k) dst[k] += src[k / 2];
  }
}

template <typename T>
struct Multigrid {
  static constexpr int64_t kDirectCells = 64;
  static constexpr double kOmega = 0.8;
  std::vector<MultigridLevel<T>> levels;
  std::vector<double> coarse_cholesky;  // the coarsest level's L (row-major, dense)

  // Per-thread buffers: r, z and a temporary per level.
  struct Scratch {
    std::vector<std::vector<T>> r, z, t;
  };
  Scratch scratch() const;
};

// The hierarchy of one field: faces (ndim, numel) and diag (numel) as in
// FaceSystem. Throws fk::Error when the coarsest system is not positive
// definite (a pure Neumann / periodic system without κ).
template <typename T>
Multigrid<T> build_multigrid(const EllipticGrid& g, const T* faces, const T* diag);

// y := L⁻ᵀ L⁻¹ y for the coarsest level (n cells).
void coarse_solve(const std::vector<double>& l, int64_t n, const double* b, double* y);

// z := M⁻¹ r, one V(1,1) cycle (inlined into the CG's ISA variants).
template <typename T>
[[gnu::always_inline]] inline void vcycle(const Multigrid<T>& mg, typename Multigrid<T>::Scratch& s,
                                          const T* r, T* z) {
  const size_t nl = mg.levels.size();
  const T omega = T(Multigrid<T>::kOmega);
  const T* rl = r;
  for (size_t l = 0; l + 1 < nl; ++l) {
    const MultigridLevel<T>& L = mg.levels[l];
    const int64_t n = L.grid.numel();
    T* zl = l == 0 ? z : s.z[l].data();
    T* t = s.t[l].data();
    for (int64_t i = 0; i < n; ++i) zl[i] = omega * L.inv_diag[i] * rl[i];
    apply_runs<T>(L.grid, L.faces.data(), L.diag.data(), zl, t);
    for (int64_t i = 0; i < n; ++i) t[i] = rl[i] - t[i];
    T* rc = s.r[l + 1].data();
    std::fill(rc, rc + mg.levels[l + 1].grid.numel(), T(0));
    restrict_rows(L, t, rc);
    rl = rc;
  }
  {
    const int64_t n = mg.levels.back().grid.numel();
    T* zc = nl == 1 ? z : s.z[nl - 1].data();
    double buf[Multigrid<T>::kDirectCells], out[Multigrid<T>::kDirectCells];
    for (int64_t i = 0; i < n; ++i) buf[i] = rl[i];
    coarse_solve(mg.coarse_cholesky, n, buf, out);
    for (int64_t i = 0; i < n; ++i) zc[i] = T(out[i]);
  }
  for (size_t l = nl - 1; l-- > 0;) {
    const MultigridLevel<T>& L = mg.levels[l];
    const int64_t n = L.grid.numel();
    const T* rr = l == 0 ? r : s.r[l].data();
    T* zl = l == 0 ? z : s.z[l].data();
    const T* zc = s.z[l + 1].data();
    T* t = s.t[l].data();
    prolong_rows(L, zc, zl);
    apply_runs<T>(L.grid, L.faces.data(), L.diag.data(), zl, t);
    for (int64_t i = 0; i < n; ++i) zl[i] += omega * L.inv_diag[i] * (rr[i] - t[i]);
  }
}

}  // namespace nefi::elliptic
