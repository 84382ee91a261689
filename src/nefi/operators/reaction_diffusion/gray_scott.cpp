#include "nefi/operators/reaction_diffusion/gray_scott.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace nefi::gray_scott {

void laplacian(const Grid& g, const double* x, double* y) {
  const int64_t n0 = g.n0, n1 = g.n1;
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

int64_t stable_substeps(const Grid& g, const Rates& r, double dt, double F_max) {
  const double rate =
      std::max(r.Du, r.Dv) * (2 / (g.h0 * g.h0) + 2 / (g.h1 * g.h1)) + F_max + r.k + 1;
  return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(dt * rate - 1e-12)));
}

void step(const Grid& g, const Rates& r, const double* F, double tau, double* u, double* v,
          Workspace& w) {
  laplacian(g, u, w.lu.data());
  laplacian(g, v, w.lv.data());
  const int64_t n = g.size();
  for (int64_t i = 0; i < n; ++i) {
    const double uvv = u[i] * v[i] * v[i];
    const double du = r.Du * w.lu[i] - uvv + F[i] * (1 - u[i]);
    const double dv = r.Dv * w.lv[i] + uvv - (F[i] + r.k) * v[i];
    u[i] += tau * du;
    v[i] += tau * dv;
  }
}

void adjoint_step(const Grid& g, const Rates& r, const double* F, double tau, const double* u,
                  const double* v, double* ub, double* vb, double* Fb, Workspace& w) {
  laplacian(g, ub, w.lu.data());  // L is symmetric: L^T ub = L ub
  laplacian(g, vb, w.lv.data());
  const int64_t n = g.size();
  for (int64_t i = 0; i < n; ++i) {
    const double a = ub[i], b = vb[i];
    const double vv = v[i] * v[i], uv2 = 2 * u[i] * v[i];
    Fb[i] += tau * ((1 - u[i]) * a - v[i] * b);
    ub[i] = a + tau * (r.Du * w.lu[i] - (vv + F[i]) * a + vv * b);
    vb[i] = b + tau * (r.Dv * w.lv[i] - uv2 * a + (uv2 - F[i] - r.k) * b);
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
