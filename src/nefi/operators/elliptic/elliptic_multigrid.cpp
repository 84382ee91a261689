#include "nefi/operators/elliptic/elliptic_multigrid.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "fk/error.h"

namespace nefi::elliptic {
namespace {

// Calls f(i, j, k) for every stored face: cell i, its + neighbour j along
// `axis` (the wrap neighbour for the last cell of a periodic axis) and the
// conductance k = faces[axis][i]; zero faces are skipped.
template <typename T, typename F>
void for_each_stored_face(const EllipticGrid& g, const T* faces, F&& f) {
  const int64_t n = g.numel();
  for (int a = 0; a < g.ndim(); ++a) {
    const int64_t len = g.shape[a], inner = g.stride(a), outer = n / (len * inner);
    const bool wrap = g.boundary[a][0] == Boundary::kPeriodic && len > 1;
    const T* k = faces + a * n;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t c = 0; c < len; ++c) {
        const int64_t i0 = (o * len + c) * inner;
        if (c + 1 == len && !wrap) continue;
        const int64_t step = c + 1 < len ? inner : -(len - 1) * inner;
        for (int64_t i = i0; i < i0 + inner; ++i)
          if (k[i] != 0) f(i, i + step, a, double(k[i]));
      }
  }
}

template <typename T>
void set_inverse_diagonal(MultigridLevel<T>& L) {
  L.inv_diag.resize(L.diag.size());
  for (size_t i = 0; i < L.diag.size(); ++i)
    L.inv_diag[i] = L.diag[i] != T(0) ? T(1) / L.diag[i] : T(0);
}

// The next level of L: its aggregates (L.parent is filled), faces and diagonal.
template <typename T>
MultigridLevel<T> coarsen(MultigridLevel<T>& L) {
  const EllipticGrid& g = L.grid;
  const int64_t n = g.numel(), d = g.ndim();
  MultigridLevel<T> C;
  C.grid = g;
  std::vector<int64_t> cs(d);
  for (int a = 0; a < d; ++a) {
    cs[a] = (g.shape[a] + 1) / 2;
    C.grid.spacing[a] *= 2;
  }
  C.grid.shape = fk::Dims(cs);
  const int64_t nc = C.grid.numel();
  // Parents by odometer over the coordinates (no divisions per cell).
  L.parent.resize(n);
  std::vector<int64_t> coord(d, 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t p = 0;
    for (int a = 0; a < d; ++a) p = p * cs[a] + coord[a] / 2;
    L.parent[i] = p;
    for (int a = d - 1; a >= 0 && ++coord[a] == g.shape[a]; --a) coord[a] = 0;
  }
  const int64_t len = g.shape[d - 1], clen = cs[d - 1];
  L.row_parent.resize(n / len);
  for (int64_t row = 0; row < n / len; ++row) L.row_parent[row] = L.parent[row * len] / clen;
  // The cell sinks: the diagonal less the faces, summed over each aggregate.
  std::vector<double> sink(nc, 0.0), face_sum(n, 0.0);
  for_each_stored_face(g, L.faces.data(), [&](int64_t i, int64_t j, int, double k) {
    face_sum[i] += k;
    face_sum[j] += k;
  });
  for (int64_t i = 0; i < n; ++i) sink[L.parent[i]] += std::max(0.0, L.diag[i] - face_sum[i]);
  std::vector<double> faces(d * nc, 0.0);
  for_each_stored_face(g, L.faces.data(), [&](int64_t i, int64_t j, int a, double k) {
    if (L.parent[i] != L.parent[j]) faces[a * nc + L.parent[i]] += 0.5 * k;
  });
  std::vector<double> diag = sink;
  for (int a = 0; a < d; ++a)
    for (int64_t I = 0; I < nc; ++I) {
      const double k = faces[a * nc + I];
      if (k == 0) continue;
      const int64_t inner = C.grid.stride(a), c = (I / inner) % cs[a];
      const int64_t J = c + 1 < cs[a] ? I + inner : I - (cs[a] - 1) * inner;
      diag[I] += k;
      diag[J] += k;
    }
  C.faces.assign(faces.begin(), faces.end());
  C.diag.assign(diag.begin(), diag.end());
  set_inverse_diagonal(C);
  return C;
}

// The dense Cholesky factor of a level with at most kDirectCells cells.
template <typename T>
std::vector<double> dense_cholesky(const MultigridLevel<T>& L) {
  const int64_t n = L.grid.numel();
  std::vector<double> a(n * n, 0.0);
  for (int64_t i = 0; i < n; ++i) a[i * n + i] = L.diag[i];
  for_each_stored_face(L.grid, L.faces.data(), [&](int64_t i, int64_t j, int, double k) {
    a[i * n + j] -= k;
    a[j * n + i] -= k;
  });
  for (int64_t j = 0; j < n; ++j) {
    double s = a[j * n + j];
    for (int64_t k = 0; k < j; ++k) s -= a[j * n + k] * a[j * n + k];
    FK_CHECK(s > 1e-12 * std::max(1.0, std::abs(a[j * n + j])), "nefi::elliptic multigrid",
             "a positive definite system (a kappa or a Dirichlet side)",
             "a coarse pivot of " + fk::to_text(s));
    a[j * n + j] = std::sqrt(s);
    for (int64_t i = j + 1; i < n; ++i) {
      double t = a[i * n + j];
      for (int64_t k = 0; k < j; ++k) t -= a[i * n + k] * a[j * n + k];
      a[i * n + j] = t / a[j * n + j];
    }
  }
  return a;
}

}  // namespace

void coarse_solve(const std::vector<double>& l, int64_t n, const double* b, double* y) {
  for (int64_t i = 0; i < n; ++i) {
    double s = b[i];
    for (int64_t k = 0; k < i; ++k) s -= l[i * n + k] * y[k];
    y[i] = s / l[i * n + i];
  }
  for (int64_t i = n - 1; i >= 0; --i) {
    double s = y[i];
    for (int64_t k = i + 1; k < n; ++k) s -= l[k * n + i] * y[k];
    y[i] = s / l[i * n + i];
  }
}

template <typename T>
typename Multigrid<T>::Scratch Multigrid<T>::scratch() const {
  Scratch s;
  for (const MultigridLevel<T>& L : levels) {
    const size_t n = static_cast<size_t>(L.grid.numel());
    s.r.emplace_back(n);
    s.z.emplace_back(n);
    s.t.emplace_back(n);
  }
  return s;
}

template <typename T>
Multigrid<T> build_multigrid(const EllipticGrid& g, const T* faces, const T* diag) {
  Multigrid<T> mg;
  MultigridLevel<T> top;
  top.grid = g;
  top.faces.assign(faces, faces + g.ndim() * g.numel());
  top.diag.assign(diag, diag + g.numel());
  set_inverse_diagonal(top);
  mg.levels.push_back(std::move(top));
  while (mg.levels.back().grid.numel() > Multigrid<T>::kDirectCells) {
    MultigridLevel<T> next = coarsen(mg.levels.back());
    mg.levels.push_back(std::move(next));
  }
  mg.coarse_cholesky = dense_cholesky(mg.levels.back());
  return mg;
}

template struct Multigrid<float>;
template struct Multigrid<double>;
template Multigrid<float> build_multigrid(const EllipticGrid&, const float*, const float*);
template Multigrid<double> build_multigrid(const EllipticGrid&, const double*, const double*);

}  // namespace nefi::elliptic
