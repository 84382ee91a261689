#include "nefi/operators/elliptic/elliptic_cg.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <tuple>
#include <type_traits>
#include <vector>

#include "fk/cpu_isa.h"
#include "fk/error.h"
#include "fk/parallel.h"
#include "fk/profile.h"
#include "nefi/operators/elliptic/elliptic_multigrid.h"

namespace nefi::elliptic {
namespace {

#define FK_AI [[gnu::always_inline]] inline

// The 4-wide double vectors below never cross a call boundary (everything
// here is inlined into solve_base / solve_avx2), so their ABI note is moot.
#pragma GCC diagnostic ignored "-Wpsabi"

// Sums in double over eight interleaved lanes (two 4-wide vectors, a fixed
// order, so the result does not depend on the ISA's vector width; the AVX2
// copy's FMA contraction still parts it from the generic one in the last bits).
using Lanes = double __attribute__((vector_size(32)));

template <typename T>
FK_AI Lanes load4(const T* p) {
  if constexpr (std::is_same_v<T, double>) {
    Lanes v;
    std::memcpy(&v, p, sizeof v);
    return v;
  } else {
    using Floats = float __attribute__((vector_size(16)));
    Floats f;
    std::memcpy(&f, p, sizeof f);
    return __builtin_convertvector(f, Lanes);
  }
}

FK_AI double total(Lanes a, Lanes b) {
  const Lanes s = a + b;
  return (s[0] + s[1]) + (s[2] + s[3]);
}

// Σ a_i b_i (b null: Σ a_i).
template <typename T>
FK_AI double dot(const T* __restrict a, const T* __restrict b, int64_t n) {
  Lanes s0 = {0, 0, 0, 0}, s1 = {0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    s0 += b ? load4(a + i) * load4(b + i) : load4(a + i);
    s1 += b ? load4(a + i + 4) * load4(b + i + 4) : load4(a + i + 4);
  }
  double tail = 0;
  for (; i < n; ++i) tail += b ? double(a[i]) * double(b[i]) : double(a[i]);
  return total(s0, s1) + tail;
}

template <typename T>
FK_AI void remove_mean(T* v, int64_t n) {
  const T m = T(dot<T>(v, nullptr, n) / static_cast<double>(n));
  for (int64_t i = 0; i < n; ++i) v[i] -= m;
}

// x += α p; r −= α q; z = D⁻¹ r. Returns (r·z, r·r).
template <typename T>
FK_AI std::pair<double, double> update(T* __restrict x, T* __restrict r, T* __restrict z,
                                       const T* __restrict p, const T* __restrict q,
                                       const T* __restrict di, T alpha, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    x[i] += alpha * p[i];
    r[i] -= alpha * q[i];
    z[i] = di[i] * r[i];
  }
  Lanes rz0 = {0, 0, 0, 0}, rz1 = rz0, rr0 = rz0, rr1 = rz0;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const Lanes r0 = load4(r + i), r1 = load4(r + i + 4);
    rz0 += r0 * load4(z + i);
    rz1 += r1 * load4(z + i + 4);
    rr0 += r0 * r0;
    rr1 += r1 * r1;
  }
  double rz = total(rz0, rz1), rr = total(rr0, rr1);
  for (; i < n; ++i) {
    rz += double(r[i]) * double(z[i]);
    rr += double(r[i]) * double(r[i]);
  }
  return {rz, rr};
}

// x += α p; r −= α q. Returns r·r (the multigrid path, whose z follows).
template <typename T>
FK_AI double update_xr(T* __restrict x, T* __restrict r, const T* __restrict p,
                       const T* __restrict q, T alpha, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    x[i] += alpha * p[i];
    r[i] -= alpha * q[i];
  }
  return dot(r, r, n);
}

// The preconditioner of one system: D⁻¹ (mg null) or a multigrid V-cycle.
template <typename T>
struct Precond {
  const T* di = nullptr;
  const Multigrid<T>* mg = nullptr;
  typename Multigrid<T>::Scratch* scratch = nullptr;
};

template <typename T>
FK_AI void precondition(const Precond<T>& m, const T* r, T* z, int64_t n) {
  if (m.mg)
    vcycle(*m.mg, *m.scratch, r, z);
  else
    for (int64_t i = 0; i < n; ++i) z[i] = m.di[i] * r[i];
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
FK_AI SystemResult solve_one(const EllipticGrid& g, const T* faces, const T* diag,
                             const Precond<T>& m, const T* b_in, T* x, bool warm,
                             const CgOptions& opt, int64_t max_iter, double tol, Work<T>& w) {
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
  precondition(m, r, z, n);
  std::copy(z, z + n, p);
  double rz = dot(r, z, n);
  int64_t it = 0;
  while (!converged && it < max_iter) {
    ++it;
    apply_runs<T>(g, faces, diag, p, q);
    const double pq = dot(p, q, n);
    if (!(pq > 0)) break;  // breakdown: A is not positive definite on p
    double rz_next, rr_next;
    if (m.mg) {
      rr_next = update_xr(x, r, p, q, T(rz / pq), n);
      precondition(m, r, z, n);
      rz_next = dot(r, z, n);
    } else {
      std::tie(rz_next, rr_next) = update(x, r, z, p, q, m.di, T(rz / pq), n);
    }
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
SystemResult solve_base(const EllipticGrid& g, const T* faces, const T* diag, const Precond<T>& m,
                        const T* b, T* x, bool warm, const CgOptions& opt, int64_t max_iter,
                        double tol, Work<T>& w) {
  return solve_one(g, faces, diag, m, b, x, warm, opt, max_iter, tol, w);
}

template <typename T>
__attribute__((target("avx2,fma"))) SystemResult solve_avx2(const EllipticGrid& g, const T* faces,
                                                            const T* diag, const Precond<T>& m,
                                                            const T* b, T* x, bool warm,
                                                            const CgOptions& opt, int64_t max_iter,
                                                            double tol, Work<T>& w) {
  return solve_one(g, faces, diag, m, b, x, warm, opt, max_iter, tol, w);
}

}  // namespace

Preconditioner parse_preconditioner(const std::string& s) {
  if (s == "jacobi") return Preconditioner::kJacobi;
  if (s == "multigrid") return Preconditioner::kMultigrid;
  throw fk::Error("elliptic preconditioner", "jacobi | multigrid", "'" + s + "'");
}

int64_t resolved_max_iter(const EllipticGrid& g, const CgOptions& opt) {
  FK_CHECK(opt.tol >= 0 && std::isfinite(opt.tol), "nefi::elliptic CG", "a tolerance tol >= 0",
           fk::to_text(opt.tol));
  FK_CHECK(opt.atol >= 0 && std::isfinite(opt.atol), "nefi::elliptic CG", "an atol >= 0",
           fk::to_text(opt.atol));
  FK_CHECK(opt.check_every >= 1, "nefi::elliptic CG", "check_every >= 1",
           fk::to_text(opt.check_every));
  FK_CHECK(opt.max_iter >= 0, "nefi::elliptic CG", "max_iter >= 0 (0: automatic)",
           fk::to_text(opt.max_iter));
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
  const bool multigrid = opt.precond == Preconditioner::kMultigrid;
  FK_CHECK(!multigrid || !opt.project, "nefi::elliptic CG",
           "the jacobi preconditioner for a null-space (projected) system", "multigrid");
  // One hierarchy per conductivity field, built before the parallel loop (so
  // that a refusal is an fk::Error the caller sees).
  std::vector<Multigrid<T>> hierarchies;
  for (int64_t f = 0; multigrid && f < sys.nb; ++f)
    hierarchies.push_back(
        build_multigrid<T>(g, sys.faces.data() + f * g.ndim() * n, sys.diag.data() + f * n));
  fk::parallel_for(0, ns, 1, [&](int64_t lo, int64_t hi) {
    Work<T> w(n);
    typename Multigrid<T>::Scratch scratch;
    if (multigrid) scratch = hierarchies[0].scratch();
    for (int64_t s = lo; s < hi; ++s) {
      const int64_t f = sys.nb == 1 ? 0 : s;
      const T* faces = sys.faces.data() + f * g.ndim() * n;
      const T* diag = sys.diag.data() + f * n;
      const Precond<T> m{sys.inv_diag.data() + f * n, multigrid ? &hierarchies[f] : nullptr,
                         &scratch};
      results[s] =
          avx2 ? solve_avx2(g, faces, diag, m, b + s * n, x + s * n, warm, opt, max_iter, tol, w)
               : solve_base(g, faces, diag, m, b + s * n, x + s * n, warm, opt, max_iter, tol, w);
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
