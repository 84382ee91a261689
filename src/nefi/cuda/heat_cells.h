#pragma once
// The per-cell arithmetic and index arithmetic of the heat kernels (heat.cu):
// what thread i of each kernel computes and writes. Host and device
// functions alike, so the kernels' own code is checked against the CPU heat
// system (heat_system.cpp, flat_stencil.cpp, inner_solvers.cpp) on machines
// without a GPU (tests/nefi/operators/heat_cells_test.cpp), thread by thread.
// Each function repeats its CPU loop's operations in the same order (no
// contraction: heat.cu is built with --fmad=false, the CPU loops for
// baseline x86-64), so the same inputs give the same bits; the sweep's
// fused multiply-adds are written out (fused()).
// Cells are indexed in 32 bits, i = (x · ny + y) · nz + z (kernels.h).
#include <math.h>

#include <cmath>
#include <cstdint>

#include "nefi/cuda/host_device.h"
#include "nefi/cuda/kernels.h"

namespace nefi::cuda {

// a · b + c rounded once (the CPU's AVX2+FMA sweep contracts these).
template <typename T>
NEFI_HOST_DEVICE inline T fused(T a, T b, T c) {
#ifdef __CUDA_ARCH__
  return fma(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

template <typename T>
NEFI_HOST_DEVICE inline T square_root(T v) {
#ifdef __CUDA_ARCH__
  return sqrt(v);
#else
  return std::sqrt(v);
#endif
}

// The cell i and its wrapped lateral neighbours.
struct Cell {
  int i, z, y, x;
  int xm, xp, ym, yp;  // indices of the cells at x ∓ 1 and y ∓ 1 (wrapped)
};

NEFI_HOST_DEVICE inline Cell cell_at(int i, int nx, int ny, int nz) {
  Cell c;
  c.i = i;
  c.z = i % nz;
  const int r = i / nz;
  c.y = r % ny;
  c.x = r / ny;
  const int sx = ny * nz;
  c.xm = c.x > 0 ? i - sx : i + (nx - 1) * sx;
  c.xp = c.x + 1 < nx ? i + sx : i - (nx - 1) * sx;
  c.ym = c.y > 0 ? i - nz : i + (ny - 1) * nz;
  c.yp = c.y + 1 < ny ? i + nz : i - (ny - 1) * nz;
  return c;
}

// The constants of the system kernels, rounded to T as build_system rounds
// them: 1 / h² per axis, Δt and the back sink β.
template <typename T>
struct SystemConstants {
  int nx = 0, ny = 0, nz = 0;
  T ix = 1, iy = 1, iz = 1, step = 0, sink = 0;
  bool arithmetic = false;
  bool wrap = true;  // periodic sides (closed sides: false)
};

template <typename T>
inline SystemConstants<T> system_constants(const Grid& g, const HeatCoefficients& k) {
  SystemConstants<T> c;
  c.nx = static_cast<int>(g.nx);
  c.ny = static_cast<int>(g.ny);
  c.nz = static_cast<int>(g.nz);
  c.ix = T(1) / T(k.h2[0]);
  c.iy = T(1) / T(k.h2[1]);
  c.iz = T(1) / T(k.h2[2]);
  c.step = T(k.dt);
  c.sink = T(k.sink);
  c.arithmetic = k.arithmetic;
  c.wrap = !k.closed_sides;
  return c;
}

// The face diffusivity between a and b: the harmonic mean 2 a b / (a + b)
// (NeFTY Prop. 1) or, with arithmetic faces, (a + b) / 2.
template <typename T>
NEFI_HOST_DEVICE inline T face_diffusivity(T a, T b, bool arithmetic) {
  return arithmetic ? (a + b) * T(0.5) : a * b * T(2) / (a + b);
}

// ∂H(a_i, a_j)/∂a_i = 2 a_j² / (a_i + a_j)² (harmonic) or 1/2 (arithmetic).
template <typename T>
NEFI_HOST_DEVICE inline T face_derivative(T ai, T aj, bool arithmetic) {
  if (arithmetic) return T(0.5);
  const T s = ai + aj;
  return T(2) * aj * aj / (s * s);
}

// The larger of a running maximum and r; a NaN r leaves it (std::max's rule,
// gershgorin_bound's), so any order of combining gives the same value.
template <typename T>
NEFI_HOST_DEVICE inline T larger(T best, T r) {
  return best < r ? r : best;
}

// Thread i of the system kernel, build_system's cell and the first half of
// symmetric_faces': the six face conductances f_j, D = 1 + Δt (Σ_j f_j + β),
// W_j = Δt f_j / D. Writes root_d[i] = √D, root_d[n + i] = 1 / √D, the
// unscaled weights of the cell's + faces W_+x, W_+y, W_+z into faces planes
// 0, 1, 2 (symmetric_face_cell scales them once every √D is known) and, when
// row_sums is not null, Gershgorin's row sum Σ_j W_j (summed from 0 in j
// order, as gershgorin_bound sums).
template <typename T>
NEFI_HOST_DEVICE inline void system_cell(const T* alpha, T* faces, T* root_d, T* row_sums, int i,
                                         const SystemConstants<T>& k) {
  const int64_t n = int64_t{k.nx} * k.ny * k.nz;
  const Cell q = cell_at(i, k.nx, k.ny, k.nz);
  const bool af = k.arithmetic;
  const T ai = alpha[i];
  T f[6];
  f[0] = k.wrap || q.x > 0 ? face_diffusivity(alpha[q.xm], ai, af) * k.ix : T(0);
  f[1] = k.wrap || q.x + 1 < k.nx ? face_diffusivity(ai, alpha[q.xp], af) * k.ix : T(0);
  f[2] = k.wrap || q.y > 0 ? face_diffusivity(alpha[q.ym], ai, af) * k.iy : T(0);
  f[3] = k.wrap || q.y + 1 < k.ny ? face_diffusivity(ai, alpha[q.yp], af) * k.iy : T(0);
  f[4] = q.z > 0 ? face_diffusivity(alpha[i - 1], ai, af) * k.iz : T(0);
  f[5] = q.z + 1 < k.nz ? face_diffusivity(ai, alpha[i + 1], af) * k.iz : T(0);
  T sum = f[0] + f[1] + f[2] + f[3] + f[4] + f[5];
  if (q.z + 1 == k.nz) sum = sum + k.sink;
  const T diag = sum * k.step + T(1);
  const T sd = square_root(diag);
  root_d[i] = sd;
  root_d[n + i] = T(1) / sd;
  faces[i] = f[1] * k.step / diag;
  faces[n + i] = f[3] * k.step / diag;
  faces[2 * n + i] = f[5] * k.step / diag;
  if (row_sums) {
    T r = 0;
    for (int j = 0; j < 6; ++j) r += f[j] * k.step / diag;
    row_sums[i] = r;
  }
}

// Thread i of the symmetric-faces kernel (after every system_cell): the +
// face weights of cell i become Ŵ_f = W_f √D_i / √D_j (symmetric_faces'
// loop), in place: the thread reads and writes only its own three entries
// and reads root_d. A z face past the back is 0.
template <typename T>
NEFI_HOST_DEVICE inline void symmetric_face_cell(T* faces, const T* root_d, int i,
                                                 const SystemConstants<T>& k) {
  const int64_t n = int64_t{k.nx} * k.ny * k.nz;
  const Cell q = cell_at(i, k.nx, k.ny, k.nz);
  const T sd = root_d[i];
  const T* isd = root_d + n;
  faces[i] = faces[i] * sd * isd[q.xp];
  faces[n + i] = faces[n + i] * sd * isd[q.yp];
  faces[2 * n + i] = q.z + 1 < k.nz ? faces[2 * n + i] * sd * isd[i + 1] : T(0);
}

// The Chebyshev weights (K,) from the bound ρ, in f64 as chebyshev_weights
// computes them: ω₀ = 1, ω₁ = 2 / (2 − ρ²), ω_{k+1} = 1 / (1 − ρ² ω_k / 4).
template <typename T>
NEFI_HOST_DEVICE inline void chebyshev_weights_from(T rho, T* omega, int k) {
  const double r2 = static_cast<double>(rho) * static_cast<double>(rho);
  double w = 1.0;
  for (int j = 0; j < k; ++j) {
    omega[j] = static_cast<T>(w);
    w = j == 0 ? 2.0 / (2.0 - r2) : 1.0 / (1.0 - r2 * w / 4.0);
  }
}

// One cell of a sweep (launch_face_sweep's contract), with the FMAs GCC makes
// of the CPU sweep's AVX2+FMA build (c + w·y and s + w·y, out + ω (s − out)).
// The CPU adds Ŵz⁻ y[z−1] at z = 0 and Ŵz⁺ y[z+1] at z = nz − 1 with a zero
// face weight (s + 0 = s): skipping them gives the same sum. `in` and `out`
// are plain pointers: in the fused kernel they swap roles between barriers,
// so they must not go through the read-only cache.
template <typename T>
NEFI_HOST_DEVICE inline void sweep_cell(const T* in, T* out, const T* __restrict__ c,
                                        const T* __restrict__ fx, const T* __restrict__ fy,
                                        const T* __restrict__ fz, int i, int nx, int ny, int nz,
                                        bool lerp, T omega) {
  const Cell q = cell_at(i, nx, ny, nz);
  T s = fused(fx[q.xm], in[q.xm], c[i]);
  s = fused(fx[i], in[q.xp], s);
  s = fused(fy[q.ym], in[q.ym], s);
  s = fused(fy[i], in[q.yp], s);
  if (q.z > 0) s = fused(fz[i - 1], in[i - 1], s);
  if (q.z + 1 < nz) s = fused(fz[i], in[i + 1], s);
  if (lerp)
    out[i] = fused(omega, s - out[i], out[i]);
  else
    out[i] = s;
}

// Which buffer sweep j of a run starting at bufs[cur] reads (the other is
// written): after k sweeps the iterate is in bufs[(cur + k) % 2].
NEFI_HOST_DEVICE inline int sweep_input(int cur, int j) {
  return (cur + j) & 1;
}

// Thread i of the face-products kernel (accumulate_face_products): the +
// faces of cell i, sums_f += (Δ_f μ)(Δ_f T); 0 for the z face past the back
// and, with closed sides, for the x faces of the last plane and the y faces
// of the last row.
template <typename T>
NEFI_HOST_DEVICE inline void face_products_cell(T* sums, const T* m, const T* v, int i, int nx,
                                                int ny, int nz, bool closed_sides) {
  const int64_t n = int64_t{nx} * ny * nz;  // 2n passes 2^31 − 1 from 2^30 cells on
  const Cell q = cell_at(i, nx, ny, nz);
  T* sx = sums;
  T* sy = sums + n;
  T* sz = sums + 2 * n;
  if (closed_sides && q.x + 1 == nx)
    sx[i] = T(0);
  else
    sx[i] += (m[q.xp] - m[i]) * (v[q.xp] - v[i]);
  if (closed_sides && q.y + 1 == ny)
    sy[i] = T(0);
  else
    sy[i] += (m[q.yp] - m[i]) * (v[q.yp] - v[i]);
  if (q.z + 1 == nz)
    sz[i] = T(0);
  else
    sz[i] += (m[i + 1] - m[i]) * (v[i + 1] - v[i]);
}

// Thread i of the gradient kernel (alpha_gradient): dJ/dα_i = −Δt Σ_f (∂a_f/∂α_i) S_f.
template <typename T>
NEFI_HOST_DEVICE inline T alpha_gradient_cell(const T* sums, const T* a, int i,
                                              const SystemConstants<T>& k) {
  const int64_t n = int64_t{k.nx} * k.ny * k.nz;
  const Cell q = cell_at(i, k.nx, k.ny, k.nz);
  const T* sx = sums;
  const T* sy = sums + n;
  const T* sz = sums + 2 * n;
  const bool af = k.arithmetic;
  const T ai = a[i];
  T acc = (sx[i] * face_derivative(ai, a[q.xp], af) + sx[q.xm] * face_derivative(ai, a[q.xm], af)) *
              k.ix +
          (sy[i] * face_derivative(ai, a[q.yp], af) + sy[q.ym] * face_derivative(ai, a[q.ym], af)) *
              k.iy;
  T zf = 0;
  if (q.z + 1 < k.nz) zf += sz[i] * face_derivative(ai, a[i + 1], af);
  if (q.z > 0) zf += sz[i - 1] * face_derivative(ai, a[i - 1], af);
  return -k.step * (acc + zf * k.iz);
}

}  // namespace nefi::cuda
