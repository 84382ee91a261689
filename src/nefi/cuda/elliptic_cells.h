#pragma once
// The per-cell arithmetic of the elliptic kernels (elliptic.cu) and the
// block CG they run: what thread t of each kernel computes and writes. Host
// and device functions alike, so the kernels' own code is checked against
// the CPU system (operators/elliptic/elliptic_grid.cpp) on machines without
// a GPU (tests/nefi/operators/elliptic_cells_test.cpp):
//   face_system_cell, apply_cell, sigma_gradient_cell repeat the CPU loops'
//   operations for one cell in the same order (build_face_system's face
//   visits, apply_runs' runs, accumulate_sigma_gradient's faces), so with
//   the same inputs they give the same bits (elliptic.cu is built with
//   --fmad=false, the CPU loops for baseline x86-64: no contraction);
//   block_pcg is the device CG, written once over an executor: DeviceBlock
//   (elliptic.cu: kCgThreads threads and __syncthreads) or HostBlock (the
//   same phases, thread after thread, on the host), which give the same bits.
// The block CG is elliptic_cg.cpp's solve_one (Jacobi, or the multigrid
// V-cycle of elliptic_multigrid_cells.h) with its dot products summed in a
// different fixed order: thread t sums cells t, t + K,
// … in double, then a tree halves the K partial sums (K = kCgThreads). So it
// agrees with pcg_solve to the tolerance, not to the bit.
#include <math.h>

#include <cstdint>

#include "nefi/cuda/elliptic_kernels.h"
#include "nefi/cuda/host_device.h"

namespace nefi::cuda {

constexpr int kCgThreads = 256;  // threads per system (a power of two)

template <typename T>
NEFI_HOST_DEVICE inline T elliptic_face_mean(T a, T b, bool harmonic) {
  return harmonic ? T(2) * a * b / (a + b) : (a + b) / T(2);
}

// Cell i's index along axis a.
NEFI_HOST_DEVICE inline int64_t axis_index(const StencilGrid& g, int a, int64_t i) {
  return (i / g.stride[a]) % g.shape[a];
}

// Cell i of field sigma (numel) and kappa (numel or null): writes faces[a ·
// numel + i] (K of the face to its + neighbour, 0 where none), diag[i] and
// inv_diag[i]. build_face_system adds, per axis, the face to the − neighbour
// (visited as that face's j), the one to the + neighbour, the periodic wrap
// (visited after the slab's interior faces), the low then high Dirichlet
// side; κ last.
template <typename T>
NEFI_HOST_DEVICE inline void face_system_cell(const StencilGrid& g, const T* sigma, const T* kappa,
                                              int64_t i, T* faces, T* diag, T* inv_diag) {
  T d = T(0);
  const T si = sigma[i];
  for (int a = 0; a < kStencilAxes && a < g.ndim; ++a) {
    const int64_t st = g.stride[a], len = g.shape[a], c = axis_index(g, a, i);
    const T ih = T(g.inv_h2[a]);
    const bool wrap = g.periodic[a] && len > 1;
    T plus = T(0);
    if (c > 0) d += elliptic_face_mean(sigma[i - st], si, g.harmonic) * ih;
    if (c + 1 < len) {
      plus = elliptic_face_mean(si, sigma[i + st], g.harmonic) * ih;
      d += plus;
    }
    if (wrap && c + 1 == len) {
      plus = elliptic_face_mean(si, sigma[i - (len - 1) * st], g.harmonic) * ih;
      d += plus;
    }
    if (wrap && c == 0) d += elliptic_face_mean(sigma[i + (len - 1) * st], si, g.harmonic) * ih;
    if (g.dirichlet[a][0] && c == 0) d += T(2) * si * ih;
    if (g.dirichlet[a][1] && c + 1 == len) d += T(2) * si * ih;
    faces[a * g.numel + i] = plus;
  }
  if (kappa) d += kappa[i];
  diag[i] = d;
  inv_diag[i] = d != T(0) ? T(1) / d : T(0);
}

// (A u)_i as apply_runs computes it: diag · u, then per axis the + and −
// neighbours' terms (a non-periodic axis runs over every cell with a cell
// `stride` above or below it, zero faces included), then the wrap.
template <typename T>
NEFI_HOST_DEVICE inline T apply_cell(const StencilGrid& g, const T* faces, const T* diag,
                                     const T* u, int64_t i) {
  T q = diag[i] * u[i];
  for (int a = 0; a < kStencilAxes && a < g.ndim; ++a) {
    const T* k = faces + a * g.numel;
    const int64_t st = g.stride[a];
    if (!g.periodic[a]) {
      if (i + st < g.numel) q -= k[i] * u[i + st];
      if (i >= st) q -= k[i - st] * u[i - st];
      continue;
    }
    const int64_t len = g.shape[a], c = axis_index(g, a, i), back = (len - 1) * st;
    if (c + 1 < len) q -= k[i] * u[i + st];
    if (c > 0) q -= k[i - st] * u[i - st];
    if (len > 1 && c + 1 == len) q -= k[i] * u[i - back];
    if (len > 1 && c == 0) q -= k[i + back] * u[i + back];
  }
  return q;
}

// One face (fi, fj)'s term of ∂(aᵀAb)/∂σ for the cell that is its fi
// (as_i) or fj, as accumulate_sigma_gradient writes it.
template <typename T>
NEFI_HOST_DEVICE inline double sigma_face_term(const StencilGrid& g, double ih, const T* sigma,
                                               const T* a, const T* b, int64_t fi, int64_t fj,
                                               bool as_i, double scale) {
  const double w = scale * ih * (double(a[fi]) - double(a[fj])) * (double(b[fi]) - double(b[fj]));
  if (!g.harmonic) return 0.5 * w;
  const double si = sigma[fi], sj = sigma[fj];
  const double den = (si + sj) * (si + sj);
  return as_i ? w * 2 * sj * sj / den : w * 2 * si * si / den;
}

// acc + cell i's share of scale · ∂(aᵀAb)/∂σ for one system, added term by
// term in accumulate_sigma_gradient's order (per axis: the − face, the +
// face, the wrap, the low then high Dirichlet side).
template <typename T>
NEFI_HOST_DEVICE inline double sigma_gradient_cell(const StencilGrid& g, const T* sigma, const T* a,
                                                   const T* b, double scale, int64_t i,
                                                   double acc) {
  for (int ax = 0; ax < kStencilAxes && ax < g.ndim; ++ax) {
    const int64_t st = g.stride[ax], len = g.shape[ax], c = axis_index(g, ax, i);
    const double ih = g.inv_h2[ax];
    const bool wrap = g.periodic[ax] && len > 1;
    if (c > 0) acc += sigma_face_term(g, ih, sigma, a, b, i - st, i, false, scale);
    if (c + 1 < len) acc += sigma_face_term(g, ih, sigma, a, b, i, i + st, true, scale);
    if (wrap && c + 1 == len)
      acc += sigma_face_term(g, ih, sigma, a, b, i, i - (len - 1) * st, true, scale);
    if (wrap && c == 0)
      acc += sigma_face_term(g, ih, sigma, a, b, i + (len - 1) * st, i, false, scale);
    if (g.dirichlet[ax][0] && c == 0) acc += scale * 2 * ih * double(a[i]) * double(b[i]);
    if (g.dirichlet[ax][1] && c + 1 == len) acc += scale * 2 * ih * double(a[i]) * double(b[i]);
  }
  return acc;
}

// The CG's scratch for one system, numel each.
template <typename T>
struct CgScratch {
  T *rhs, *r, *z, *p, *q;
};

struct CgOutcome {
  int64_t iterations = 0;
  bool warm_used = false, converged = true;
  double residual = 0;  // ‖b − A x‖ / ‖b‖ at exit (the true residual)
};

// Thread t's partial sum Σ_{i ≡ t} f(i) over cells t, t + K, … in order.
template <typename F>
NEFI_HOST_DEVICE inline double thread_partial(int t, int64_t n, F&& f) {
  double acc = 0;
  for (int64_t i = t; i < n; i += kCgThreads) acc += f(i);
  return acc;
}

// The tree of a block sum: red[t] += red[t + s] for s = K/2, …, 1. red is
// free between sum2 phases (the V-cycle's coarsest solve keeps its vector
// there: elliptic_multigrid_cells.h).
struct HostBlock {
  double red[2][kCgThreads];
  template <typename F>
  void each(F&& f) {
    for (int t = 0; t < kCgThreads; ++t) f(t);
  }
  // Σ over threads of f(t, 0) and f(t, 1) (two sums sharing the tree's steps).
  template <typename F>
  void sum2(F&& f, double& s0, double& s1) {
    for (int t = 0; t < kCgThreads; ++t) f(t, red[0][t], red[1][t]);
    for (int s = kCgThreads / 2; s > 0; s >>= 1)
      for (int t = 0; t < s; ++t) {
        red[0][t] += red[0][t + s];
        red[1][t] += red[1][t + s];
      }
    s0 = red[0][0];
    s1 = red[1][0];
  }
};

// The Jacobi preconditioner z = D⁻¹ r, fused by block_pcg into its update
// phase. The multigrid V-cycle (elliptic_multigrid_cells.h's
// MultigridPrecond) is a separate step: kFused false and apply(ex, r, z).
struct JacobiPrecond {
  static constexpr bool kFused = true;
  template <typename Exec, typename T>
  NEFI_HOST_DEVICE void apply(Exec&, const T*, T*) const {}
};

// The block CG of one system (elliptic_cg.cpp's solve_one): b, x,
// faces/diag/inv_diag of its field; x the warm start when c.warm, the
// solution on return; out (when not null and not x) gets a copy of x. Every
// phase is ex.each (each thread its cells t, t + K, …, then a barrier) or
// ex.sum2 (each thread's partial sums, then the tree); every thread holds the
// same scalars, so the loop's exit is uniform over the block. With a
// non-fused preconditioner m the update and m's step are separate phases
// (solve_one's multigrid path), and m.apply may use w.q as scratch.
#ifdef __CUDACC__
#pragma nv_exec_check_disable
#endif
template <typename T, typename Exec, typename Precond = JacobiPrecond>
NEFI_HOST_DEVICE inline CgOutcome block_pcg(Exec& ex, const StencilGrid& g, const T* faces,
                                            const T* diag, const T* di, const T* b, T* x, T* out,
                                            CgScratch<T> w, const CgControl& c,
                                            const Precond& m = Precond{}) {
  const int64_t n = g.numel;
  CgOutcome res;
  double s0 = 0, s1 = 0;
  auto dot = [&](const T* u, const T* v) {
    ex.sum2(
        [&](int t, double& p0, double& p1) {
          p0 = thread_partial(t, n, [&](int64_t i) { return double(u[i]) * double(v[i]); });
          p1 = 0;
        },
        s0, s1);
    return s0;
  };
  // v := v − mean(v) (remove_mean: the mean of the double sum, rounded to T).
  auto remove_mean = [&](T* v) {
    ex.sum2(
        [&](int t, double& p0, double& p1) {
          p0 = thread_partial(t, n, [&](int64_t i) { return double(v[i]); });
          p1 = 0;
        },
        s0, s1);
    const T m = T(s0 / static_cast<double>(n));
    ex.each([&](int t) {
      for (int64_t i = t; i < n; i += kCgThreads) v[i] -= m;
    });
  };
  const T* rhs = b;
  if (c.project) {
    ex.each([&](int t) {
      for (int64_t i = t; i < n; i += kCgThreads) w.rhs[i] = b[i];
    });
    remove_mean(w.rhs);
    rhs = w.rhs;
  }
  const double b_norm = sqrt(dot(rhs, rhs));
  if (b_norm == 0) {
    ex.each([&](int t) {
      for (int64_t i = t; i < n; i += kCgThreads) {
        x[i] = T(0);
        if (out && out != x) out[i] = T(0);
      }
    });
    return res;
  }
  if (c.warm) {
    if (c.project) remove_mean(x);
    ex.each([&](int t) {
      for (int64_t i = t; i < n; i += kCgThreads)
        w.q[i] = rhs[i] - apply_cell(g, faces, diag, x, i);
    });
    res.warm_used = dot(w.q, w.q) < b_norm * b_norm;
  }
  const bool warm_used = res.warm_used;
  ex.each([&](int t) {
    for (int64_t i = t; i < n; i += kCgThreads) {
      w.r[i] = warm_used ? w.q[i] : rhs[i];
      if (!warm_used) x[i] = T(0);
      if constexpr (Precond::kFused) {
        w.z[i] = di[i] * w.r[i];
        w.p[i] = w.z[i];
      }
    }
  });
  if constexpr (!Precond::kFused) {
    m.apply(ex, w.r, w.z);
    ex.each([&](int t) {
      for (int64_t i = t; i < n; i += kCgThreads) w.p[i] = w.z[i];
    });
  }
  const double stop = c.tol * b_norm > c.atol ? c.tol * b_norm : c.atol;
  double rz = 0, rr = 0;
  ex.sum2(
      [&](int t, double& p0, double& p1) {
        p0 = thread_partial(t, n, [&](int64_t i) { return double(w.r[i]) * double(w.z[i]); });
        p1 = thread_partial(t, n, [&](int64_t i) { return double(w.r[i]) * double(w.r[i]); });
      },
      rz, rr);
  bool converged = sqrt(rr) <= stop;
  int64_t it = 0;
  while (!converged && it < c.max_iter) {
    ++it;
    double pq = 0;
    ex.sum2(
        [&](int t, double& p0, double& p1) {
          p0 = thread_partial(t, n, [&](int64_t i) {
            const T qi = apply_cell(g, faces, diag, w.p, i);
            w.q[i] = qi;
            return double(w.p[i]) * double(qi);
          });
          p1 = 0;
        },
        pq, s1);
    if (!(pq > 0)) break;  // breakdown: A is not positive definite on p
    const T alpha = T(rz / pq);
    double rz_next = 0, rr_next = 0;
    if constexpr (Precond::kFused) {
      ex.sum2(
          [&](int t, double& p0, double& p1) {
            double a0 = 0, a1 = 0;
            for (int64_t i = t; i < n; i += kCgThreads) {
              x[i] += alpha * w.p[i];
              w.r[i] -= alpha * w.q[i];
              w.z[i] = di[i] * w.r[i];
              a0 += double(w.r[i]) * double(w.z[i]);
              a1 += double(w.r[i]) * double(w.r[i]);
            }
            p0 = a0;
            p1 = a1;
          },
          rz_next, rr_next);
    } else {
      ex.each([&](int t) {
        for (int64_t i = t; i < n; i += kCgThreads) {
          x[i] += alpha * w.p[i];
          w.r[i] -= alpha * w.q[i];
        }
      });
      m.apply(ex, w.r, w.z);
      ex.sum2(
          [&](int t, double& p0, double& p1) {
            double a0 = 0, a1 = 0;
            for (int64_t i = t; i < n; i += kCgThreads) {
              a0 += double(w.r[i]) * double(w.z[i]);
              a1 += double(w.r[i]) * double(w.r[i]);
            }
            p0 = a0;
            p1 = a1;
          },
          rz_next, rr_next);
    }
    if (it % c.check_every == 0 || it == c.max_iter) {
      if (c.project) {
        remove_mean(w.r);
        rr_next = dot(w.r, w.r);
      }
      if (sqrt(rr_next) <= stop) {
        converged = true;
        break;
      }
    }
    const T beta = T(rz_next / rz);
    rz = rz_next;
    ex.each([&](int t) {
      for (int64_t i = t; i < n; i += kCgThreads) w.p[i] = w.z[i] + beta * w.p[i];
    });
  }
  if (c.project) remove_mean(x);
  // The true residual, not the recurrence's.
  ex.each([&](int t) {
    for (int64_t i = t; i < n; i += kCgThreads) {
      w.q[i] = rhs[i] - apply_cell(g, faces, diag, x, i);
      if (out && out != x) out[i] = x[i];
    }
  });
  if (c.project) remove_mean(w.q);
  res.iterations = it;
  res.converged = converged;
  res.residual = sqrt(dot(w.q, w.q)) / b_norm;
  return res;
}

}  // namespace nefi::cuda
