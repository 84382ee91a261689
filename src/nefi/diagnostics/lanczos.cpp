#include "nefi/diagnostics/lanczos.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <string>

#include "fk/error.h"
#include "fk/interrupt.h"

namespace nefi::diagnostics {
namespace {

double dot(const Vec& a, const Vec& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

double norm(const Vec& a) {
  return std::sqrt(dot(a, a));
}

// x -= sum_i <x, q_i> q_i, twice ("twice is enough" for orthogonality).
void reorthogonalise(Vec& x, const std::vector<Vec>& basis) {
  for (int pass = 0; pass < 2; ++pass)
    for (const Vec& q : basis) {
      const double c = dot(x, q);
      for (size_t i = 0; i < x.size(); ++i) x[i] -= c * q[i];
    }
}

// A Gaussian vector of length n from std::mt19937_64(seed), normalised.
Vec random_unit(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  Vec v(n);
  for (double& x : v) x = normal(rng);
  const double v_norm = norm(v);
  for (double& x : v) x /= v_norm;
  return v;
}

void check_length(const Vec& v, int64_t want, const char* what) {
  FK_CHECK(static_cast<int64_t>(v.size()) == want, "nefi::diagnostics::leading_singular_values",
           std::string(what) + " of length " + fk::to_text(want), fk::to_text(v.size()));
}

}  // namespace

Spectrum leading_singular_values(const LinearMap& J, int k, int n_iter, uint64_t seed) {
  FK_CHECK(J.n >= 1 && J.m >= 1 && J.apply && J.adjoint,
           "nefi::diagnostics::leading_singular_values", "a map with n, m >= 1 and both products",
           "n " + fk::to_text(J.n) + ", m " + fk::to_text(J.m));
  FK_CHECK(k >= 1 && n_iter >= k, "nefi::diagnostics::leading_singular_values",
           "k >= 1 and n_iter >= k", "k " + fk::to_text(k) + ", n_iter " + fk::to_text(n_iter));
  const int steps = static_cast<int>(std::min<int64_t>({n_iter, J.n, J.m}));
  // B = U^T J V entry by entry: (row of u, column of v, value).
  struct Entry {
    int row, col;
    double value;
  };
  std::vector<Entry> B;
  std::vector<Vec> vs{random_unit(J.n, seed)}, us;
  Spectrum out;
  double scale = 0;
  int restarts = 0;
  bool restarted = false;
  Vec p = J.apply(vs.front());
  check_length(p, J.m, "J v");
  // A breakdown: the Krylov space of the start is exhausted (it is invariant
  // under J^T J), so every later direction is orthogonal to it and the
  // blocks decouple. Restart from a random vector orthogonal to every v
  // (another copy of a repeated value lies there); false when none is left.
  auto restart = [&]() {
    Vec v = random_unit(J.n, seed + static_cast<uint64_t>(++restarts));
    reorthogonalise(v, vs);
    const double v_norm = norm(v);
    if (v_norm <= 1e-8) return false;  // the v's span the whole input space
    for (double& x : v) x /= v_norm;
    vs.push_back(std::move(v));
    p = J.apply(vs.back());
    check_length(p, J.m, "J v");
    restarted = true;
    return true;
  };
  while (static_cast<int>(us.size()) < steps) {
    fk::poll_interrupt();  // each step applies the operator twice: the host's Ctrl-C
    reorthogonalise(p, us);
    const double a = norm(p);
    scale = std::max(scale, a);
    if (a <= 1e-13 * scale || a == 0) {
      // J v lies in span(u). Right after a restart, the random direction's
      // image is zero: J vanishes on everything left (with probability one),
      // so the values found are all there are.
      if (restarted || !restart()) {
        out.invariant = true;
        break;
      }
      continue;
    }
    restarted = false;
    for (double& x : p) x /= a;
    us.push_back(p);
    const int row = static_cast<int>(us.size()) - 1;
    B.push_back({row, static_cast<int>(vs.size()) - 1, a});
    Vec r = J.adjoint(us.back());
    check_length(r, J.n, "J^T u");
    for (size_t i = 0; i < r.size(); ++i) r[i] -= a * vs.back()[i];
    reorthogonalise(r, vs);
    const double b = norm(r);
    if (static_cast<int>(us.size()) == steps) {
      // The last row's coupling too (one adjoint more): without it the last
      // Ritz value is only its a (a wide map's last value never converges).
      if (b > 1e-13 * scale) B.push_back({row, static_cast<int>(vs.size()), b});
      break;
    }
    if (b <= 1e-13 * scale) {
      if (!restart()) {
        out.invariant = true;
        break;
      }
      continue;
    }
    for (double& x : r) x /= b;
    vs.push_back(r);
    B.push_back({row, static_cast<int>(vs.size()) - 1, b});
    p = J.apply(r);
    check_length(p, J.m, "J v");
    for (size_t i = 0; i < p.size(); ++i) p[i] -= b * us.back()[i];
  }
  const int d = static_cast<int>(us.size());
  out.iterations = d;
  if (d == 0) {
    out.singular_values.assign(1, 0.0);  // J annihilates the start vector's Krylov space
    return out;
  }
  // Columns are the v's that entered B (a trailing v without an entry, the
  // last restart's, is left out).
  int cols = 0;
  for (const Entry& e : B) cols = std::max(cols, e.col + 1);
  std::vector<double> dense(static_cast<size_t>(d) * cols, 0.0);
  for (const Entry& e : B) dense[static_cast<size_t>(e.row) * cols + e.col] = e.value;
  // B has d rows, so rank <= d: its columns past d add zeros that are not
  // singular values of J. But when J is exhausted (invariant), it is zero
  // on all that is left: its remaining values, up to min(m, n), are 0.
  std::vector<double> s = dense_singular_values(std::move(dense), d, cols);
  s.resize(std::min<size_t>(s.size(), d));
  const size_t want = static_cast<size_t>(std::min<int64_t>({k, J.m, J.n}));
  if (out.invariant && s.size() < want) s.resize(want, 0.0);
  s.resize(std::min<size_t>(s.size(), k));
  out.singular_values = std::move(s);
  return out;
}

std::vector<double> dense_singular_values(std::vector<double> a, int rows, int cols) {
  FK_CHECK(rows >= 1 && cols >= 1 && a.size() == static_cast<size_t>(rows) * cols,
           "nefi::diagnostics::dense_singular_values", "a rows x cols matrix",
           fk::to_text(a.size()) + " values for " + fk::to_text(rows) + " x " + fk::to_text(cols));
  // Rotate column pairs until all are orthogonal; the column norms are then
  // the singular values (Hestenes' one-sided Jacobi).
  auto col_dot = [&](int p, int q) {
    double s = 0;
    for (int i = 0; i < rows; ++i) s += a[i * cols + p] * a[i * cols + q];
    return s;
  };
  for (int sweep = 0; sweep < 60; ++sweep) {
    double off = 0;
    for (int p = 0; p < cols; ++p)
      for (int q = p + 1; q < cols; ++q) {
        const double app = col_dot(p, p), aqq = col_dot(q, q), apq = col_dot(p, q);
        if (apq == 0 || std::abs(apq) <= 1e-15 * std::sqrt(app * aqq)) continue;
        off = std::max(off, std::abs(apq) / std::sqrt(app * aqq));
        const double zeta = (aqq - app) / (2 * apq);
        const double t = std::copysign(1.0, zeta) / (std::abs(zeta) + std::sqrt(1 + zeta * zeta));
        const double c = 1 / std::sqrt(1 + t * t), s = c * t;
        for (int i = 0; i < rows; ++i) {
          const double x = a[i * cols + p], y = a[i * cols + q];
          a[i * cols + p] = c * x - s * y;
          a[i * cols + q] = s * x + c * y;
        }
      }
    if (off <= 1e-15) break;
  }
  std::vector<double> sv(cols);
  for (int p = 0; p < cols; ++p) sv[p] = std::sqrt(col_dot(p, p));
  std::sort(sv.begin(), sv.end(), std::greater<>());
  return sv;
}

Eigenvalues extreme_eigenvalues(const SymmetricMap& H, int k, int n_iter, uint64_t seed) {
  FK_CHECK(H.n >= 1 && H.apply, "nefi::diagnostics::extreme_eigenvalues",
           "a map with n >= 1 and its product", "n " + fk::to_text(H.n));
  FK_CHECK(k >= 1 && n_iter >= k, "nefi::diagnostics::extreme_eigenvalues",
           "k >= 1 and n_iter >= k", "k " + fk::to_text(k) + ", n_iter " + fk::to_text(n_iter));
  const int steps = static_cast<int>(std::min<int64_t>(n_iter, H.n));
  std::vector<Vec> qs{random_unit(H.n, seed)};
  std::vector<double> alpha, beta;
  Eigenvalues out;
  double scale = 0;
  for (int j = 0; j < steps; ++j) {
    fk::poll_interrupt();  // a Hessian product is two gradients: the host's Ctrl-C
    Vec w = H.apply(qs.back());
    FK_CHECK(static_cast<int64_t>(w.size()) == H.n, "nefi::diagnostics::extreme_eigenvalues",
             "H v of length " + fk::to_text(H.n), fk::to_text(w.size()));
    alpha.push_back(dot(w, qs.back()));
    reorthogonalise(w, qs);
    const double b = norm(w);
    scale = std::max({scale, std::abs(alpha.back()), b});
    out.iterations = j + 1;
    if (j + 1 == steps) break;
    if (b <= 1e-13 * scale) {
      // The start's Krylov space is invariant: it holds one copy of each
      // eigenvalue it meets. Restart orthogonally to it (the next copies lie
      // there; the tridiagonal's blocks decouple: a zero coupling), unless
      // the q's already span everything.
      Vec q = random_unit(H.n, seed + static_cast<uint64_t>(j + 1));
      reorthogonalise(q, qs);
      const double q_norm = norm(q);
      if (q_norm <= 1e-8) {
        out.invariant = true;
        break;
      }
      for (double& x : q) x /= q_norm;
      beta.push_back(0.0);
      qs.push_back(std::move(q));
      continue;
    }
    beta.push_back(b);
    for (double& x : w) x /= b;
    qs.push_back(std::move(w));
  }
  if (static_cast<int64_t>(qs.size()) == H.n) out.invariant = true;  // the whole space
  const int m = static_cast<int>(alpha.size());
  std::vector<double> t(static_cast<size_t>(m) * m, 0.0);
  for (int i = 0; i < m; ++i) {
    t[i * m + i] = alpha[i];
    if (i + 1 < m) t[i * m + i + 1] = t[(i + 1) * m + i] = beta[i];
  }
  const std::vector<double> ritz = dense_symmetric_eigenvalues(std::move(t), m);  // descending
  const int shown = std::min(k, m);
  out.largest.assign(ritz.begin(), ritz.begin() + shown);
  out.smallest.assign(ritz.rbegin(), ritz.rbegin() + shown);
  return out;
}

std::vector<double> dense_symmetric_eigenvalues(std::vector<double> a, int n) {
  FK_CHECK(n >= 1 && a.size() == static_cast<size_t>(n) * n,
           "nefi::diagnostics::dense_symmetric_eigenvalues", "an n x n matrix",
           fk::to_text(a.size()) + " entries for n " + fk::to_text(n));
  for (int sweep = 0; sweep < 100; ++sweep) {
    double off = 0, diag = 0;
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) (i == j ? diag : off) += a[i * n + j] * a[i * n + j];
    if (off <= 1e-30 * std::max(diag, 1e-300)) break;
    for (int p = 0; p < n; ++p)
      for (int q = p + 1; q < n; ++q) {
        const double apq = a[p * n + q];
        if (apq == 0) continue;
        // The rotation that zeroes a_pq (Golub & Van Loan, symmetric Schur).
        const double tau = (a[q * n + q] - a[p * n + p]) / (2 * apq);
        const double t = (tau >= 0 ? 1.0 : -1.0) / (std::abs(tau) + std::sqrt(1 + tau * tau));
        const double c = 1 / std::sqrt(1 + t * t), s = t * c;
        for (int r = 0; r < n; ++r) {  // A <- A J
          const double arp = a[r * n + p], arq = a[r * n + q];
          a[r * n + p] = c * arp - s * arq;
          a[r * n + q] = s * arp + c * arq;
        }
        for (int r = 0; r < n; ++r) {  // A <- J^T A
          const double apr = a[p * n + r], aqr = a[q * n + r];
          a[p * n + r] = c * apr - s * aqr;
          a[q * n + r] = s * apr + c * aqr;
        }
      }
  }
  std::vector<double> ev(n);
  for (int i = 0; i < n; ++i) ev[i] = a[i * n + i];
  std::sort(ev.begin(), ev.end(), std::greater<>());
  return ev;
}

}  // namespace nefi::diagnostics
