#include "nefi/operators/elliptic/elliptic_cg.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "fk/cpu_isa.h"
#include "fk/error.h"
#include "fk/parallel.h"
#include "fk/profile.h"

namespace nefi::elliptic {
namespace {

#define FK_AI [[gnu::always_inline]] inline

// Σ a_i b_i in double over eight interleaved partial sums (a fixed order,
// so the result does not depend on the vector width).
template <typename T>
FK_AI double dot(const T* __restrict a, const T* __restrict b, int64_t n) {
  double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) acc[k] += double(a[i + k]) * double(b[i + k]);
  for (; i < n; ++i) acc[i & 7] += double(a[i]) * double(b[i]);
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

template <typename T>
FK_AI void remove_mean(T* v, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += v[i];
  const T m = T(s / static_cast<double>(n));
  for (int64_t i = 0; i < n; ++i) v[i] -= m;
}

// x += α p; r −= α q; z = D⁻¹ r. Returns (r·z, r·r), eight partial sums each.
template <typename T>
FK_AI std::pair<double, double> update(T* __restrict x, T* __restrict r, T* __restrict z,
                                       const T* __restrict p, const T* __restrict q,
                                       const T* __restrict di, T alpha, int64_t n) {
  double rz[8] = {0, 0, 0, 0, 0, 0, 0, 0}, rr[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) {
      const int64_t j = i + k;
      x[j] += alpha * p[j];
      r[j] -= alpha * q[j];
      z[j] = di[j] * r[j];
      rz[k] += double(r[j]) * double(z[j]);
      rr[k] += double(r[j]) * double(r[j]);
    }
  for (; i < n; ++i) {
    x[i] += alpha * p[i];
    r[i] -= alpha * q[i];
    z[i] = di[i] * r[i];
    rz[i & 7] += double(r[i]) * double(z[i]);
    rr[i & 7] += double(r[i]) * double(r[i]);
  }
  auto total = [](const double* v) {
    return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
  };
  return {total(rz), total(rr)};
}

struct SystemResult {
  int64_t iterations = 0;
  bool warm_used = false, converged = true;
  double residual = 0;
};

template <typename T>
struct Work {
  std::vector<T> rhs, r, z, p, q;
  explicit Work(int64_t n) : rhs(n), r(n), z(n), p(n), q(n) {}
};

// One system by preconditioned CG (Saad, Alg. 9.1). In the null-space case
// b and x₀ are projected once: then every residual A-image has zero mean in
// exact arithmetic (1ᵀA = 0), a constant in the search direction only moves
// x along the null space, and x is projected on return; the recurrence's
// residual is re-projected at each convergence test against round-off drift.
template <typename T>
FK_AI SystemResult solve_one(const EllipticGrid& g, const T* faces, const T* diag, const T* di,
                             const T* b_in, T* x, bool warm, const CgOptions& opt, int64_t max_iter,
                             double tol, Work<T>& w) {
  const int64_t n = g.numel();
  T *rhs = w.rhs.data(), *r = w.r.data(), *z = w.z.data(), *p = w.p.data(), *q = w.q.data();
  std::copy(b_in, b_in + n, rhs);
  if (opt.project) remove_mean(rhs, n);
  SystemResult res;
  const double b_norm = std::sqrt(dot(rhs, rhs, n));
  if (b_norm == 0) {
    std::fill(x, x + n, T(0));
    return res;
  }
  std::copy(rhs, rhs + n, r);
  if (warm) {
    if (opt.project) remove_mean(x, n);
    apply_runs<T>(g, faces, diag, x, q);
    for (int64_t i = 0; i < n; ++i) q[i] = rhs[i] - q[i];
    res.warm_used = dot(q, q, n) < b_norm * b_norm;
    if (res.warm_used) std::copy(q, q + n, r);
  }
  if (!res.warm_used) std::fill(x, x + n, T(0));
  const double stop = std::max(tol * b_norm, opt.atol);
  double rr = dot(r, r, n);
  bool converged = std::sqrt(rr) <= stop;
  for (int64_t i = 0; i < n; ++i) z[i] = di[i] * r[i];
  std::copy(z, z + n, p);
  double rz = dot(r, z, n);
  int64_t it = 0;
  while (!converged && it < max_iter) {
    ++it;
    apply_runs<T>(g, faces, diag, p, q);
    const double pq = dot(p, q, n);
    if (!(pq > 0)) break;  // breakdown: A is not positive definite on p
    auto [rz_next, rr_next] = update(x, r, z, p, q, di, T(rz / pq), n);
    if (it % opt.check_every == 0 || it == max_iter) {
      if (opt.project) {
        remove_mean(r, n);
        rr_next = dot(r, r, n);
      }
      if (std::sqrt(rr_next) <= stop) {
        converged = true;
        break;
      }
    }
    const T beta = T(rz_next / rz);
    rz = rz_next;
    for (int64_t i = 0; i < n; ++i) p[i] = z[i] + beta * p[i];
  }
  if (opt.project) remove_mean(x, n);
  // The true residual, not the recurrence's: what the caller is told.
  apply_runs<T>(g, faces, diag, x, q);
  for (int64_t i = 0; i < n; ++i) q[i] = rhs[i] - q[i];
  if (opt.project) remove_mean(q, n);
  res.iterations = it;
  res.residual = std::sqrt(dot(q, q, n)) / b_norm;
  res.converged = converged;
  return res;
}

template <typename T>
SystemResult solve_base(const EllipticGrid& g, const T* faces, const T* diag, const T* di,
                        const T* b, T* x, bool warm, const CgOptions& opt, int64_t max_iter,
                        double tol, Work<T>& w) {
  return solve_one(g, faces, diag, di, b, x, warm, opt, max_iter, tol, w);
}

template <typename T>
__attribute__((target("avx2,fma"))) SystemResult solve_avx2(const EllipticGrid& g, const T* faces,
                                                            const T* diag, const T* di, const T* b,
                                                            T* x, bool warm, const CgOptions& opt,
                                                            int64_t max_iter, double tol,
                                                            Work<T>& w) {
  return solve_one(g, faces, diag, di, b, x, warm, opt, max_iter, tol, w);
}

}  // namespace

int64_t resolved_max_iter(const EllipticGrid& g, const CgOptions& opt) {
  FK_CHECK(opt.tol >= 0 && std::isfinite(opt.tol), "nefi::elliptic CG", "a tolerance tol >= 0",
           std::to_string(opt.tol));
  FK_CHECK(opt.atol >= 0 && std::isfinite(opt.atol), "nefi::elliptic CG", "an atol >= 0",
           std::to_string(opt.atol));
  FK_CHECK(opt.check_every >= 1, "nefi::elliptic CG", "check_every >= 1",
           std::to_string(opt.check_every));
  FK_CHECK(opt.max_iter >= 0, "nefi::elliptic CG", "max_iter >= 0 (0: automatic)",
           std::to_string(opt.max_iter));
  if (opt.max_iter > 0) return opt.max_iter;
  int64_t m = 1;
  for (int64_t s : g.shape) m = std::max(m, s);
  return 50 * m + 200;
}

template <typename T>
CgStats pcg_solve(const EllipticGrid& g, const FaceSystem<T>& sys, const T* b, T* x, int64_t ns,
                  bool warm, const CgOptions& opt) {
  fk::profile::OpScope scope("elliptic_pcg");
  const int64_t max_iter = resolved_max_iter(g, opt), n = g.numel();
  const double tol = std::max(opt.tol, 8.0 * std::numeric_limits<T>::epsilon());
  std::vector<SystemResult> results(ns);
  const bool avx2 = fk::cpu_isa() >= fk::CpuIsa::Avx2;
  fk::parallel_for(0, ns, 1, [&](int64_t lo, int64_t hi) {
    Work<T> w(n);
    for (int64_t s = lo; s < hi; ++s) {
      const int64_t f = sys.nb == 1 ? 0 : s;
      const T* faces = sys.faces.data() + f * g.ndim() * n;
      const T* diag = sys.diag.data() + f * n;
      const T* di = sys.inv_diag.data() + f * n;
      results[s] =
          avx2 ? solve_avx2(g, faces, diag, di, b + s * n, x + s * n, warm, opt, max_iter, tol, w)
               : solve_base(g, faces, diag, di, b + s * n, x + s * n, warm, opt, max_iter, tol, w);
    }
  });
  CgStats st;
  for (const SystemResult& r : results) {
    st.max_iterations = std::max(st.max_iterations, r.iterations);
    st.total_iterations += r.iterations;
    st.warm_used += r.warm_used;
    st.unconverged += !r.converged;
    st.worst_residual = std::max(st.worst_residual, r.residual);
  }
  return st;
}

template CgStats pcg_solve(const EllipticGrid&, const FaceSystem<float>&, const float*, float*,
                           int64_t, bool, const CgOptions&);
template CgStats pcg_solve(const EllipticGrid&, const FaceSystem<double>&, const double*, double*,
                           int64_t, bool, const CgOptions&);

}  // namespace nefi::elliptic
