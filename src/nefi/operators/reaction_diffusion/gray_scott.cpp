#include "nefi/operators/reaction_diffusion/gray_scott.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include "fk/error.h"

namespace nefi::gray_scott {
namespace {

// Calls fn(a, b, 1/h^2) for every interior face between cells a and b (and
// the wrapped faces of a periodic grid); Neumann faces carry no flux.
template <typename Fn>
void for_each_face(const Grid& g, Fn&& fn) {
  const int64_t n0 = g.n0, n1 = g.n1;
  const double s0 = 1.0 / (g.h0 * g.h0), s1 = 1.0 / (g.h1 * g.h1);
  const bool wrap = g.boundary == Boundary::kPeriodic;
  for (int64_t i = 0; i < n0; ++i) {
    const int64_t row = i * n1, next = i + 1 < n0 ? row + n1 : 0;
    if (i + 1 < n0 || wrap)
      for (int64_t j = 0; j < n1; ++j) fn(row + j, next + j, s0);
    for (int64_t j = 0; j + 1 < n1; ++j) fn(row + j, row + j + 1, s1);
    if (wrap) fn(row + n1 - 1, row, s1);
  }
}

double harmonic(double a, double b) {
  return 2 * a * b / (a + b);
}

}  // namespace

void laplacian(const Grid& g, const double* x, double* y) {
  const int64_t n0 = g.n0, n1 = g.n1;
  // Row ends are unrolled: one cell per row would read r[-1].
  FK_CHECK(n0 >= 1 && n1 >= 2, "nefi::gray_scott::laplacian", "a grid of at least 1 x 2 cells",
           fk::to_text(n0) + " x " + fk::to_text(n1));
  const double s0 = 1.0 / (g.h0 * g.h0), s1 = 1.0 / (g.h1 * g.h1);
  const bool wrap = g.boundary == Boundary::kPeriodic;
  for (int64_t i = 0; i < n0; ++i) {
    // A Neumann face carries no flux: its neighbour is the cell itself.
    const int64_t up = i > 0 ? i - 1 : (wrap ? n0 - 1 : i);
    const int64_t dn = i < n0 - 1 ? i + 1 : (wrap ? 0 : i);
    const double* r = x + i * n1;
    const double *ru = x + up * n1, *rd = x + dn * n1;
    double* o = y + i * n1;
    auto cell = [&](int64_t j, int64_t l, int64_t rr) {
      o[j] = s0 * ((ru[j] - r[j]) + (rd[j] - r[j])) + s1 * ((r[l] - r[j]) + (r[rr] - r[j]));
    };
    cell(0, wrap ? n1 - 1 : 0, 1);
    for (int64_t j = 1; j < n1 - 1; ++j) cell(j, j - 1, j + 1);  // branch-free: vectorises
    cell(n1 - 1, n1 - 2, wrap ? 0 : n1 - 1);
  }
}

void diffusion(const Grid& g, const double* D, const double* x, double* y) {
  std::fill(y, y + g.size(), 0.0);
  for_each_face(g, [&](int64_t a, int64_t b, double s) {
    const double flux = s * harmonic(D[a], D[b]) * (x[b] - x[a]);
    y[a] += flux;
    y[b] -= flux;
  });
}

int64_t stable_substeps(const Grid& g, const Rates& r, double dt, double F_max) {
  const double rate =
      std::max(r.Du, r.Dv) * (2 / (g.h0 * g.h0) + 2 / (g.h1 * g.h1)) + F_max + r.k + 1;
  return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(dt * rate - 1e-12)));
}

void step(const Grid& g, const Rates& r, const Fields& f, double tau, double* u, double* v,
          Workspace& w) {
  if (f.Du)
    diffusion(g, f.Du, u, w.lu.data());
  else
    laplacian(g, u, w.lu.data());
  laplacian(g, v, w.lv.data());
  const double Du = f.Du ? 1.0 : r.Du;  // a Du field is inside lu already
  const int64_t n = g.size();
  for (int64_t i = 0; i < n; ++i) {
    const double uvv = u[i] * v[i] * v[i], k = f.k ? f.k[i] : r.k;
    const double du = Du * w.lu[i] - uvv + f.F[i] * (1 - u[i]);
    const double dv = r.Dv * w.lv[i] + uvv - (f.F[i] + k) * v[i];
    u[i] += tau * du;
    v[i] += tau * dv;
  }
}

void adjoint_step(const Grid& g, const Rates& r, const Fields& f, double tau, const double* u,
                  const double* v, double* ub, double* vb, const FieldGrads& grads, Workspace& w) {
  // Both diffusion operators are symmetric: their transposes are themselves.
  if (f.Du) {
    diffusion(g, f.Du, ub, w.lu.data());
    if (grads.Du)  // d/dK of tau K (u_b - u_a)(ub_a - ub_b), through the harmonic mean
      for_each_face(g, [&](int64_t a, int64_t b, double s) {
        const double da = f.Du[a], db = f.Du[b], sum = da + db;
        const double dK = -tau * s * (u[b] - u[a]) * (ub[b] - ub[a]);
        grads.Du[a] += dK * 2 * db * db / (sum * sum);
        grads.Du[b] += dK * 2 * da * da / (sum * sum);
      });
  } else {
    laplacian(g, ub, w.lu.data());
  }
  laplacian(g, vb, w.lv.data());
  const double Du = f.Du ? 1.0 : r.Du;
  const int64_t n = g.size();
  for (int64_t i = 0; i < n; ++i) {
    const double a = ub[i], b = vb[i], F = f.F[i], k = f.k ? f.k[i] : r.k;
    const double vv = v[i] * v[i], uv2 = 2 * u[i] * v[i];
    if (grads.F) grads.F[i] += tau * ((1 - u[i]) * a - v[i] * b);
    if (grads.k) grads.k[i] -= tau * v[i] * b;
    ub[i] = a + tau * (Du * w.lu[i] - (vv + F) * a + vv * b);
    vb[i] = b + tau * (r.Dv * w.lv[i] - uv2 * a + (uv2 - F - k) * b);
  }
}

void initial_condition(const Grid& g, int64_t m0, int64_t m1, std::vector<double>& u,
                       std::vector<double>& v) {
  u.resize(g.size());
  v.resize(g.size());
  const double L0 = g.n0 * g.h0, L1 = g.n1 * g.h1, two_pi = 2 * std::numbers::pi;
  for (int64_t i = 0; i < g.n0; ++i)
    for (int64_t j = 0; j < g.n1; ++j) {
      const double x0 = (i + 0.5) * g.h0, x1 = (j + 0.5) * g.h1;
      const double vv =
          0.2 + 0.1 * std::cos(two_pi * m0 * x0 / L0) * std::cos(two_pi * m1 * x1 / L1);
      v[i * g.n1 + j] = vv;
      u[i * g.n1 + j] = 1 - 2 * vv;
    }
}

}  // namespace nefi::gray_scott
