#pragma once
// The per-cell arithmetic of the wave kernels (wave.cu): what thread t of
// each kernel computes and writes. Host and device functions alike, so the
// kernels' own code is checked against the CPU leapfrog (leapfrog_step.cpp,
// leapfrog.cpp, wave_propagation.cpp) on machines without a GPU
// (tests/nefi/operators/wave_cells_test.cpp), bit for bit. Each function
// repeats its CPU loop's operations in the same order; wave.cu is built with
// --fmad=false and the CPU reference is its generic (no FMA) build.
//
// Thread numbering: a "padded" kernel has one thread per (shot, padded cell),
// t = s · padded + (i0 · n1 + i1) · n2 + i2; a "stored" kernel one per
// (shot, stored cell), t = s · numel + p. Field pointers are of all shots.
#include <math.h>

#include <cstdint>

#include "nefi/cuda/host_device.h"
#include "nefi/cuda/wave_kernels.h"

namespace nefi::cuda {

// v[d] for a run-time slot d < kWaveAxes through constant indices (v[d]
// itself would put the struct holding v in local memory: wave_kernels.h).
NEFI_HOST_DEVICE inline int64_t wave_slot(const int64_t (&v)[kWaveAxes], int d) {
  return d == 0 ? v[0] : d == 1 ? v[1] : v[2];
}

// Padded cell (i0, i1, i2) of a shot and its stored index p.
struct WaveCell {
  int64_t i[3];
  int64_t p;
};

template <typename T>
NEFI_HOST_DEVICE inline WaveCell padded_cell(const WaveCells<T>& g, int64_t t) {
  WaveCell c;
  c.i[2] = t % g.n[2];
  c.i[1] = (t / g.n[2]) % g.n[1];
  c.i[0] = t / (g.n[2] * g.n[1]);
  c.p = (c.i[0] + g.off[0]) * g.stride[0] + (c.i[1] + g.off[1]) * g.stride[1] +
        (c.i[2] + g.off[2]) * g.stride[2];
  return c;
}

// Whether stored cell p is a padded one (not halo); its padded coordinates in i.
template <typename T>
NEFI_HOST_DEVICE inline bool stored_is_padded(const WaveCells<T>& g, int64_t p, int64_t* i) {
  bool inside = true;
  for (int d = 0; d < 3; ++d) {
    const int64_t dim = g.n[d] + 2 * g.off[d];
    i[d] = (p / g.stride[d]) % dim - g.off[d];
    inside = inside && i[d] >= 0 && i[d] < g.n[d];
  }
  return inside;
}

// Δ_h u at p (FixedLaplacian::at).
template <typename T>
NEFI_HOST_DEVICE inline T laplacian_at(const WaveCells<T>& g, const T* u, int64_t p) {
  T v = g.w0 * u[p];
  for (int a = 0; a < kWaveAxes && a < g.nd; ++a) {
    const int64_t s = g.s[a];
    v += g.w1[a] * (u[p + s] + u[p - s]);
    if (g.half == 2) v += g.w2[a] * (u[p + 2 * s] + u[p - 2 * s]);
  }
  return v;
}

// --- forward ---------------------------------------------------------------

// Padded kernel: un[p] of step_row (p, and the fields, of one shot: offset by s · numel).
template <typename T>
NEFI_HOST_DEVICE inline void step_cell(const WaveCells<T>& g, const WaveCoefficientsView<T>& c,
                                       const T* up, const T* u, T* un, const AxisFields<T>& psi,
                                       int64_t base, int64_t p) {
  const int64_t q = base + p;
  T v = c.q2[p] * u[q] - c.b[p] * up[q] + c.k[p] * laplacian_at(g, u + base, p);
  if (g.pml) {
    T div = 0;
    for (int a = 0; a < kWaveAxes && a < g.nd; ++a)
      div += (psi.a[a][q] - psi.a[a][q - g.s[a]]) * g.ih[a];
    v += c.ad[p] * div;
  }
  un[q] = v;
}

// Padded kernel (PML, after every step_cell): ψ_a of psi_row, every axis.
template <typename T>
NEFI_HOST_DEVICE inline void psi_cell(const WaveCells<T>& g, const WaveCoefficientsView<T>& c,
                                      const T* u, const T* un, const AxisFields<T>& psi,
                                      int64_t base, int64_t p) {
  const int64_t q = base + p;
  for (int a = 0; a < kWaveAxes && a < g.nd; ++a) {
    const int64_t s = g.s[a];
    psi.a[a][q] = c.alpha[a][p] * psi.a[a][q] +
                  c.beta[a][p] * ((un[q + s] - un[q] + u[q + s] - u[q]) * g.ih2[a]);
  }
}

// Thread s of the source kernel: advance's source term of step n for shot s.
template <typename T>
NEFI_HOST_DEVICE inline void source_cell(const WaveCells<T>& g, const StencilsView& src,
                                         const T* ad, const double* wavelet, int64_t n, T* un,
                                         int64_t s) {
  const double f = wavelet[n];
  T* mine = un + s * g.numel;
  for (int64_t e = src.start[s]; e < src.start[s + 1]; ++e) {
    const int64_t p = src.index[e];
    mine[p] += ad[p] * static_cast<T>(src.weight[e] * f);
  }
}

// Thread (s, r) of the sampling kernel: receiver r of shot s (sample()).
template <typename T>
NEFI_HOST_DEVICE inline T sample_cell(const WaveCells<T>& g, const StencilsView& rec, const T* u,
                                      int64_t s, int64_t r) {
  const T* mine = u + s * g.numel;
  double acc = 0;
  for (int64_t e = rec.start[r]; e < rec.start[r + 1]; ++e)
    acc += rec.weight[e] * mine[rec.index[e]];
  return static_cast<T>(acc);
}

// --- adjoint ---------------------------------------------------------------

// Thread (s, c) of the trace-injection kernel: target cell c of shot s gets
// inject_traces's terms in the CPU's order, each rounded to T and added as
// the CPU adds it, so the cell ends with the CPU loop's bits although the
// targets run in parallel (no other thread writes the cell).
template <typename T>
NEFI_HOST_DEVICE inline void inject_traces_cell(const WaveCells<T>& g, const CellStencilsView& rec,
                                                const T* traces_bar, int64_t n_t, int64_t j, T* lam,
                                                int64_t s, int64_t c) {
  T* target = lam + s * g.numel + rec.cell[c];
  const T* gs = traces_bar + s * rec.points * n_t;
  T v = *target;
  for (int64_t e = rec.start[c]; e < rec.start[c + 1]; ++e)
    v += static_cast<T>(rec.weight[e]) * gs[rec.point[e] * n_t + j];
  *target = v;
}

// Padded kernel (PML, first): psi_transpose_row, Gᵀ(beta μ)/2 into λ and scratch.
template <typename T>
NEFI_HOST_DEVICE inline void psi_transpose_cell(const WaveCells<T>& g,
                                                const WaveCoefficientsView<T>& c,
                                                const AxisFields<T>& mu, T* lam, T* scratch,
                                                int64_t base, int64_t p) {
  const int64_t q = base + p;
  T t = 0;
  for (int a = 0; a < kWaveAxes && a < g.nd; ++a) {
    const int64_t s = g.s[a];
    t += (c.beta[a][p - s] * mu.a[a][q - s] - c.beta[a][p] * mu.a[a][q]) * g.ih2[a];
  }
  scratch[q] = t;
  lam[q] += t;
}

// Stored kernel (second): kl = k ⊙ λ (scaled_copy) and, PML on a padded cell,
// μ_a's decay (with fbar_a when u_n is given: mu_decay_row) and the
// divergence's share (mu_divergence_row). Per (cell, axis) the decay comes
// before the divergence as on the CPU; axes are independent of each other.
template <typename T>
NEFI_HOST_DEVICE inline void adjoint_prepare_cell(const WaveCells<T>& g,
                                                  const WaveCoefficientsView<T>& c, const T* lam,
                                                  T* kl, const AxisFields<T>& mu, const T* u_n,
                                                  const T* u_np1, const AxisFields<T>& fbar,
                                                  int64_t base, int64_t p) {
  const int64_t q = base + p;
  kl[q] = c.k[p] * lam[q];
  int64_t i[3];
  if (!g.pml || !stored_is_padded(g, p, i)) return;
  for (int a = 0; a < kWaveAxes && a < g.nd; ++a) {
    const int64_t s = g.s[a];
    T* m = mu.a[a];
    if (u_n) fbar.a[a][q] += m[q] * ((u_np1[q + s] - u_np1[q] + u_n[q + s] - u_n[q]) * g.ih2[a]);
    m[q] = c.alpha[a][p] * m[q];
    m[q] += (c.ad[p] * lam[q] - c.ad[p + s] * lam[q + s]) * g.ih[a];
  }
}

// Padded kernel (last): adjoint_row.
template <typename T>
NEFI_HOST_DEVICE inline void adjoint_cell(const WaveCells<T>& g, const WaveCoefficientsView<T>& c,
                                          const T* lam_c, const T* kl, const T* lam_p, T* out_cur,
                                          T* out_prev, T* kbar, const T* u_n, int64_t base,
                                          int64_t p) {
  const int64_t q = base + p;
  const T l = lam_c[q];
  T v = lam_p[q] + c.q2[p] * l + laplacian_at(g, kl + base, p);
  if (g.pml) v += out_prev[q];
  out_cur[q] = v;
  out_prev[q] = -c.b[p] * l;
  if (u_n) kbar[q] += l * laplacian_at(g, u_n + base, p);
}

// --- the velocity and the gradient ------------------------------------------

// The domain cell (C order) that padded cell i replicates (padded_kappa).
template <typename T>
NEFI_HOST_DEVICE inline int64_t domain_source(const WaveCells<T>& g, const int64_t* i) {
  int64_t src = 0;
  for (int d = 0; d < 3; ++d) {
    int64_t j = i[d] - g.pad[d];
    j = j < 0 ? 0 : (j > g.interior[d] - 1 ? g.interior[d] - 1 : j);
    src = src * g.interior[d] + j;
  }
  return src;
}

// Padded kernel (one shot): κ = c² (padded_kappa).
template <typename T>
NEFI_HOST_DEVICE inline void padded_kappa_cell(const WaveCells<T>& g, const T* c, double* kappa,
                                               int64_t t) {
  const WaveCell w = padded_cell(g, t);
  const double v = static_cast<double>(c[domain_source(g, w.i)]);
  kappa[w.p] = v * v;
}

// Padded kernel (one shot): the velocity-dependent coefficients of
// step_coefficients, k and (PML) beta_a on the faces inside the padded grid.
template <typename T>
NEFI_HOST_DEVICE inline void velocity_coefficients_cell(const WaveCells<T>& g, const double* kappa,
                                                        const double* k_per_kappa,
                                                        const AxisFields<const double>& bpk, T* k,
                                                        const AxisFields<T>& beta, int64_t t) {
  const WaveCell w = padded_cell(g, t);
  const int64_t p = w.p;
  k[p] = static_cast<T>(k_per_kappa[p] * kappa[p]);
  if (!g.pml) return;
  for (int a = 0; a < kWaveAxes && a < g.nd; ++a) {
    const int d = 3 - g.nd + a;  // the slot: a run-time index, read through wave_slot
    if (wave_slot(w.i, d) + 1 >= wave_slot(g.n, d)) continue;
    beta.a[a][p] =
        static_cast<T>(bpk.a[a][p] * 0.5 * (kappa[p] + kappa[p + wave_slot(g.stride, d)]));
  }
}

// Padded kernel (one shot): κ̄ summed over the shots in order (kappa_gradient
// per shot, then shot_kappa_gradient's total += per shot from 0.0).
template <typename T>
NEFI_HOST_DEVICE inline double kappa_gradient_cell(const WaveCells<T>& g, const double* k_per_kappa,
                                                   const AxisFields<const double>& bpk,
                                                   int64_t shots, const T* kbar,
                                                   const AxisFields<T>& fbar, int64_t p) {
  double total = 0.0;
  for (int64_t s = 0; s < shots; ++s) {
    const int64_t q = s * g.numel + p;
    double v = k_per_kappa[p] * static_cast<double>(kbar[q]);
    if (g.pml)
      for (int a = 0; a < kWaveAxes && a < g.nd; ++a) {
        const double* bk = bpk.a[a];
        const T* fb = fbar.a[a];
        const int64_t sa = g.s[a];
        v += 0.5 *
             (bk[p] * static_cast<double>(fb[q]) + bk[p - sa] * static_cast<double>(fb[q - sa]));
      }
    total += v;
  }
  return total;
}

// Thread `src` of the velocity-gradient kernel: Σ 2 c κ̄ over the padded
// cells replicating domain cell src, in for_each_cell's (lexicographic) order.
template <typename T>
NEFI_HOST_DEVICE inline T velocity_gradient_cell(const WaveCells<T>& g, const T* c,
                                                 const double* kappa_bar, int64_t src) {
  int64_t lo[3], hi[3];
  int64_t rest = src;
  for (int d = 2; d >= 0; --d) {
    const int64_t j = rest % g.interior[d];
    rest /= g.interior[d];
    lo[d] = j == 0 ? 0 : j + g.pad[d];
    hi[d] = j == g.interior[d] - 1 ? g.n[d] - 1 : j + g.pad[d];
  }
  const double cs = static_cast<double>(c[src]);
  double out = 0.0;
  for (int64_t i0 = lo[0]; i0 <= hi[0]; ++i0)
    for (int64_t i1 = lo[1]; i1 <= hi[1]; ++i1)
      for (int64_t i2 = lo[2]; i2 <= hi[2]; ++i2) {
        const int64_t p = (i0 + g.off[0]) * g.stride[0] + (i1 + g.off[1]) * g.stride[1] +
                          (i2 + g.off[2]) * g.stride[2];
        out += 2.0 * cs * kappa_bar[p];
      }
  return static_cast<T>(out);
}

// The velocity check's fold: (min, max, non-finite count) of v into acc.
NEFI_HOST_DEVICE inline void fold_velocity(double* acc, double v) {
  if (!isfinite(v)) {
    acc[2] += 1;
    return;
  }
  acc[0] = v < acc[0] ? v : acc[0];
  acc[1] = v > acc[1] ? v : acc[1];
}

// Two folds' results into one: acc := the fold of both parts' values. The
// min, the max and the count (an integer in a double, exact below 2^53)
// are the same in any merge order, so the multi-block reduction is
// deterministic without a fixed order of its own.
NEFI_HOST_DEVICE inline void merge_velocity(double* acc, const double* part) {
  acc[0] = part[0] < acc[0] ? part[0] : acc[0];
  acc[1] = part[1] > acc[1] ? part[1] : acc[1];
  acc[2] += part[2];
}

}  // namespace nefi::cuda
