#include "nefi/operators/elliptic/elliptic_banded.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "fk/error.h"
#include "fk/parallel.h"
#include "fk/profile.h"

namespace nefi::elliptic {
namespace {

// The lower band of L (or of A before factoring), row-major: row i holds
// columns i − w … i at offsets 0 … w (entries left of column 0 unused).
struct Band {
  int64_t n = 0, w = 0;
  std::vector<double> v;
  double& at(int64_t i, int64_t j) { return v[i * (w + 1) + (j - i + w)]; }
  const double* row(int64_t i) const {
    return v.data() + i * (w + 1) + w - i;
  }  // [j] for j ≥ i − w
};

template <typename T>
Band assemble(const EllipticGrid& g, const FaceSystem<T>& sys, int64_t f, bool ground) {
  const int64_t n = g.numel();
  Band a;
  a.n = n;
  for (int ax = 0; ax < g.ndim(); ++ax) a.w = std::max(a.w, g.stride(ax));
  a.v.assign(n * (a.w + 1), 0.0);
  const T* diag = sys.diag.data() + f * n;
  for (int64_t i = 0; i < n; ++i) a.at(i, i) = diag[i];
  for (int ax = 0; ax < g.ndim(); ++ax) {
    const T* k = sys.faces.data() + (f * g.ndim() + ax) * n;
    const int64_t s = g.stride(ax);
    for (int64_t i = 0; i + s < n; ++i)
      if (k[i] != 0) a.at(i + s, i) = -static_cast<double>(k[i]);
  }
  if (ground) {
    a.at(0, 0) = 1;
    for (int64_t i = 1; i <= std::min(a.w, n - 1); ++i) a.at(i, 0) = 0;
  }
  return a;
}

// In place: A's band → L's band with A = L Lᵀ (Cholesky–Crout by rows). A
// pivot below 1e-10 of its diagonal entry means A is singular to round-off.
void factor(Band& a) {
  const int64_t n = a.n, w = a.w;
  for (int64_t i = 0; i < n; ++i) {
    double* ri = a.v.data() + i * (w + 1) + w - i;  // ri[j] = A/L(i, j)
    for (int64_t j = std::max<int64_t>(0, i - w); j <= i; ++j) {
      const double* rj = a.v.data() + j * (w + 1) + w - j;
      double s = ri[j];
      for (int64_t k = std::max<int64_t>(0, i - w); k < j; ++k) s -= ri[k] * rj[k];
      if (j < i) {
        ri[j] = s / rj[j];
      } else {  // a pivot at round-off of its diagonal: A is (numerically) singular
        FK_CHECK(s > 1e-10 * ri[i], "nefi::elliptic banded solve", "a positive definite system",
                 "a pivot of " + fk::to_text(s) + " at cell " + fk::to_text(i));
        ri[i] = std::sqrt(s);
      }
    }
  }
}

// Y := L⁻ᵀ L⁻¹ Y for the m right-hand sides interleaved in y (cell i of
// column c at y[i m + c]): every entry of L is read once for all m, and
// the innermost loop runs over the columns (vectorized), not along the
// dependency chain of one sweep.
void substitute(const Band& l, double* y, int64_t m) {
  const int64_t n = l.n, w = l.w;
  for (int64_t i = 0; i < n; ++i) {
    const double* ri = l.row(i);
    double* yi = y + i * m;
    for (int64_t k = std::max<int64_t>(0, i - w); k < i; ++k) {
      const double lik = ri[k];
      const double* yk = y + k * m;
      for (int64_t c = 0; c < m; ++c) yi[c] -= lik * yk[c];
    }
    const double inv = 1.0 / ri[i];
    for (int64_t c = 0; c < m; ++c) yi[c] *= inv;
  }
  for (int64_t i = n - 1; i >= 0; --i) {
    const double* ri = l.row(i);
    double* yi = y + i * m;
    const double inv = 1.0 / ri[i];
    for (int64_t c = 0; c < m; ++c) yi[c] *= inv;
    for (int64_t k = std::max<int64_t>(0, i - w); k < i; ++k) {
      const double lik = ri[k];
      double* yk = y + k * m;
      for (int64_t c = 0; c < m; ++c) yk[c] -= lik * yi[c];
    }
  }
}

// Each of the m interleaved columns of y (n cells) less its mean.
void remove_means(double* y, int64_t n, int64_t m) {
  std::vector<double> mean(m, 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < m; ++c) mean[c] += y[i * m + c];
  for (double& v : mean) v /= static_cast<double>(n);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < m; ++c) y[i * m + c] -= mean[c];
}

// The factors of the last system seen on this thread, under the exact
// coefficients that defined it: the IFT adjoint solves with the forward
// solve's σ, so it refactors nothing. A mismatch in any coefficient (or the
// grid, or the grounding) refactors.
struct FactorCache {
  std::vector<int64_t> shape;
  bool ground = false;
  std::vector<double> coefficients;  // diag then faces, as given
  std::vector<Band> factors;
};

template <typename T>
const std::vector<Band>& factors_of(const EllipticGrid& g, const FaceSystem<T>& sys, bool ground) {
  thread_local FactorCache cache;
  std::vector<double> key(sys.diag.begin(), sys.diag.end());
  key.insert(key.end(), sys.faces.begin(), sys.faces.end());
  const std::vector<int64_t> shape(g.shape.begin(), g.shape.end());
  if (cache.ground == ground && cache.shape == shape && cache.coefficients == key)
    return cache.factors;
  std::vector<Band> factors(sys.nb);
  fk::parallel_for(0, sys.nb, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t f = lo; f < hi; ++f) {
      factors[f] = assemble(g, sys, f, ground);
      factor(factors[f]);
    }
  });
  cache = {shape, ground, std::move(key), std::move(factors)};
  return cache.factors;
}

}  // namespace

bool banded_applicable(const EllipticGrid& g) {
  for (const auto& sides : g.boundary)
    if (sides[0] == Boundary::kPeriodic) return false;
  return true;
}

template <typename T>
CgStats banded_solve(const EllipticGrid& g, const FaceSystem<T>& sys, const T* b, T* x, int64_t ns,
                     bool project) {
  fk::profile::OpScope scope("elliptic_banded");
  FK_CHECK(banded_applicable(g), "nefi::elliptic banded solve", "a grid without periodic axes",
           "a periodic axis");
  const int64_t n = g.numel();
  const std::vector<Band>& factors = factors_of(g, sys, project);
  std::vector<double> residual(ns, 0.0);
  fk::parallel_for(0, ns, 1, [&](int64_t lo, int64_t hi) {
    std::vector<T> q(n);
    for (int64_t s0 = lo; s0 < hi;) {
      // The systems [s0, s1) share one factor: solved together, interleaved.
      const int64_t s1 = sys.nb == 1 ? hi : s0 + 1, m = s1 - s0, f = sys.nb == 1 ? 0 : s0;
      std::vector<double> rhs(n * m);
      for (int64_t c = 0; c < m; ++c)
        for (int64_t i = 0; i < n; ++i) rhs[i * m + c] = b[(s0 + c) * n + i];
      if (project) remove_means(rhs.data(), n, m);
      std::vector<double> y = rhs;
      if (project) std::fill(y.begin(), y.begin() + m, 0.0);  // the grounded cell
      substitute(factors[f], y.data(), m);
      if (project) remove_means(y.data(), n, m);
      for (int64_t c = 0; c < m; ++c) {
        T* xs = x + (s0 + c) * n;
        for (int64_t i = 0; i < n; ++i) xs[i] = static_cast<T>(y[i * m + c]);
        // The true residual, as the PCG reports it.
        apply_face_system(g, sys, f, xs, q.data());
        double rr = 0, bb = 0;
        for (int64_t i = 0; i < n; ++i) {
          const double r = rhs[i * m + c];
          rr += (r - q[i]) * (r - q[i]);
          bb += r * r;
        }
        residual[s0 + c] = bb > 0 ? std::sqrt(rr / bb) : 0.0;
      }
      s0 = s1;
    }
  });
  CgStats st;
  for (double r : residual) st.worst_residual = std::max(st.worst_residual, r);
  return st;
}

template CgStats banded_solve(const EllipticGrid&, const FaceSystem<float>&, const float*, float*,
                              int64_t, bool);
template CgStats banded_solve(const EllipticGrid&, const FaceSystem<double>&, const double*,
                              double*, int64_t, bool);

}  // namespace nefi::elliptic
