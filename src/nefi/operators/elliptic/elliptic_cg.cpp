#include "nefi/operators/elliptic/elliptic_cg.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "fk/error.h"
#include "fk/parallel.h"
#include "fk/profile.h"

namespace nefi::elliptic {
namespace {

template <typename T>
double dot(const T* a, const T* b, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += double(a[i]) * double(b[i]);
  return s;
}

template <typename T>
void remove_mean(T* v, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += v[i];
  const T m = T(s / static_cast<double>(n));
  for (int64_t i = 0; i < n; ++i) v[i] -= m;
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

// One system by preconditioned CG (the iteration of Saad, Alg. 9.1).
template <typename T>
SystemResult solve_one(const EllipticGrid& g, const FaceSystem<T>& sys, int64_t field,
                       const T* b_in, T* x, bool warm, const CgOptions& opt, int64_t max_iter,
                       double tol, Work<T>& w) {
  const int64_t n = g.numel();
  const T* di = sys.inv_diag.data() + field * n;
  std::copy(b_in, b_in + n, w.rhs.begin());
  if (opt.project) remove_mean(w.rhs.data(), n);
  SystemResult res;
  const double b_norm = std::sqrt(dot(w.rhs.data(), w.rhs.data(), n));
  if (b_norm == 0) {
    std::fill(x, x + n, T(0));
    return res;
  }
  std::copy(w.rhs.begin(), w.rhs.end(), w.r.begin());
  if (warm) {
    if (opt.project) remove_mean(x, n);
    apply_face_system(g, sys, field, x, w.q.data());
    for (int64_t i = 0; i < n; ++i) w.q[i] = w.rhs[i] - w.q[i];
    if (opt.project) remove_mean(w.q.data(), n);
    res.warm_used = dot(w.q.data(), w.q.data(), n) < b_norm * b_norm;
    if (res.warm_used) std::copy(w.q.begin(), w.q.end(), w.r.begin());
  }
  if (!res.warm_used) std::fill(x, x + n, T(0));
  const double stop = std::max(tol * b_norm, opt.atol);
  double rr = dot(w.r.data(), w.r.data(), n);
  if (std::sqrt(rr) <= stop) {
    res.residual = std::sqrt(rr) / b_norm;
    return res;
  }
  for (int64_t i = 0; i < n; ++i) w.z[i] = di[i] * w.r[i];
  if (opt.project) remove_mean(w.z.data(), n);
  std::copy(w.z.begin(), w.z.end(), w.p.begin());
  double rz = dot(w.r.data(), w.z.data(), n);
  int64_t it = 0;
  while (it < max_iter) {
    ++it;
    apply_face_system(g, sys, field, w.p.data(), w.q.data());
    const double pq = dot(w.p.data(), w.q.data(), n);
    if (!(pq > 0)) break;  // breakdown: A is not positive definite on p
    const T alpha = T(rz / pq);
    for (int64_t i = 0; i < n; ++i) {
      x[i] += alpha * w.p[i];
      w.r[i] -= alpha * w.q[i];
    }
    if (opt.project) remove_mean(w.r.data(), n);
    if (it % opt.check_every == 0 || it == max_iter) {
      rr = dot(w.r.data(), w.r.data(), n);
      if (std::sqrt(rr) <= stop) break;
    }
    for (int64_t i = 0; i < n; ++i) w.z[i] = di[i] * w.r[i];
    if (opt.project) remove_mean(w.z.data(), n);
    const double rz_next = dot(w.r.data(), w.z.data(), n);
    const T beta = T(rz_next / rz);
    rz = rz_next;
    for (int64_t i = 0; i < n; ++i) w.p[i] = w.z[i] + beta * w.p[i];
  }
  if (opt.project) remove_mean(x, n);
  // The true residual, not the recurrence's: what the caller gets.
  apply_face_system(g, sys, field, x, w.q.data());
  for (int64_t i = 0; i < n; ++i) w.q[i] = w.rhs[i] - w.q[i];
  if (opt.project) remove_mean(w.q.data(), n);
  const double r_true = std::sqrt(dot(w.q.data(), w.q.data(), n));
  res.iterations = it;
  res.residual = r_true / b_norm;
  res.converged = std::sqrt(rr) <= stop;
  return res;
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
  fk::parallel_for(0, ns, 1, [&](int64_t lo, int64_t hi) {
    Work<T> w(n);
    for (int64_t s = lo; s < hi; ++s)
      results[s] =
          solve_one(g, sys, sys.nb == 1 ? 0 : s, b + s * n, x + s * n, warm, opt, max_iter, tol, w);
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
