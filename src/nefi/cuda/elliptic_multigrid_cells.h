#pragma once
// The device multigrid V-cycle of the elliptic CG: the per-cell arithmetic
// of operators/elliptic/elliptic_multigrid.{h,cpp} (coarse operator,
// restriction, prolongation, damped-Jacobi sweeps, the coarsest dense
// Cholesky and its solve), written as block phases over an executor like
// elliptic_cells.h's block_pcg: DeviceBlock (elliptic.cu) or HostBlock (the
// host emulation, tests/nefi/operators/elliptic/elliptic_multigrid_cells_test.cpp).
//
// Every value is computed by the CPU's operations in the CPU's order, so the
// hierarchy, the factor and one V-cycle equal build_multigrid's and vcycle's
// bit for bit (elliptic.cu is built with --fmad=false, and the CPU's
// multigrid for baseline x86-64, which has no FMA to contract into): a
// coarse cell gathers its aggregate's fine cells in increasing index, which
// is the order in which coarsen()'s face visits and restrict_rows' row loop
// scatter into it. Only the CG's dot products (block
// tree against pcg_solve's lanes) differ, so the multigrid-PCG agrees with
// pcg_solve to the tolerance, not to the bit.
//
// Where the cycle runs: inside the CG's own block (one block of kCgThreads
// threads per system, elliptic_kernels.h), each level a few phases with a
// block barrier between them. The CG already keeps a system in one block so
// that its stopping test needs no grid-wide sync and no host read (what makes
// a step graph-capturable); the V-cycle adds about 3 stencil passes per
// iteration there, on grids that shrink by 2^ndim a level, so coarse levels
// cost barriers rather than arithmetic. A per-level kernel design would pay
// only where one system is too big for one block, which is a change of the
// whole CG (grid-wide reductions or a host loop), not of the preconditioner;
// the grid size where that pays has not been measured (no GPU here).
// The coarsest solve (at most kMgDirectCells cells) is two triangular
// solves run by thread 0: their dot products are serial chains in the CPU's
// order (bitwise parity); a parallel alternative (an explicit inverse, one
// row per thread) would trade that for speed, unmeasured.
//
// Memory per field: the coarse levels, (ndim + 2) grids of T each (about
// (ndim + 2)/(2^ndim − 1) fine grids in all), and the coarsest factor,
// n_c² doubles (≤ 32 KiB); per system: 3 grids of T per coarse level
// (multigrid_work_size). A non-positive pivot (a singular system: no κ and no
// Dirichlet side; the CPU throws) cannot be reported without a host read:
// the factor's pivot becomes NaN, the CG stops at its breakdown test
// unconverged, and the statistics say so.
#include <math.h>

#include <cstdint>

#include "nefi/cuda/elliptic_cells.h"
#include "nefi/cuda/host_device.h"

namespace nefi::cuda {

constexpr int64_t kMgDirectCells = 64;  // elliptic::Multigrid<T>::kDirectCells
constexpr double kMgOmega = 0.8;        // elliptic::Multigrid<T>::kOmega

// The next level's grid: every axis halved rounding up (an odd axis keeps a
// last aggregate of one cell), the boundaries kept, h doubled.
NEFI_HOST_DEVICE inline StencilGrid coarse_grid(const StencilGrid& g) {
  StencilGrid c = g;
  int64_t n = 1;
  for (int a = kStencilAxes - 1; a >= 0; --a) {
    if (a >= g.ndim) continue;
    c.shape[a] = (g.shape[a] + 1) / 2;
    c.stride[a] = n;
    n *= c.shape[a];
    c.inv_h2[a] = g.inv_h2[a] / 4;
  }
  c.numel = n;
  return c;
}

// Levels of the hierarchy: coarsened until at most kMgDirectCells cells.
NEFI_HOST_DEVICE inline int multigrid_levels(const StencilGrid& g) {
  int levels = 1;
  for (StencilGrid c = g; c.numel > kMgDirectCells; c = coarse_grid(c)) ++levels;
  return levels;
}

NEFI_HOST_DEVICE inline StencilGrid level_grid(const StencilGrid& g, int l) {
  StencilGrid c = g;
  for (int m = 0; m < l; ++m) c = coarse_grid(c);
  return c;
}

// Σ over levels 1 ≤ m < l of per_cell(ndim) · n_m: where level l's block
// starts in a field's hierarchy (per_cell = ndim + 2) or in a system's
// V-cycle scratch (per_cell = 3).
NEFI_HOST_DEVICE inline int64_t coarse_offset(const StencilGrid& g, int l, bool hierarchy) {
  int64_t off = 0;
  StencilGrid c = g;
  for (int m = 1; m < l; ++m) {
    c = coarse_grid(c);
    off += (hierarchy ? c.ndim + 2 : 3) * c.numel;
  }
  return off;
}

// Per field: the coarse levels (T) and the coarsest factor (double); per
// system: the V-cycle's scratch (T).
NEFI_HOST_DEVICE inline int64_t multigrid_hierarchy_size(const StencilGrid& g) {
  return coarse_offset(g, multigrid_levels(g), true);
}
NEFI_HOST_DEVICE inline int64_t multigrid_cholesky_size(const StencilGrid& g) {
  const int64_t n = level_grid(g, multigrid_levels(g) - 1).numel;
  return n * n;
}
NEFI_HOST_DEVICE inline int64_t multigrid_work_size(const StencilGrid& g) {
  return coarse_offset(g, multigrid_levels(g), false);
}

// The coarse cell (of grid c) that fine cell i (of grid f) belongs to.
NEFI_HOST_DEVICE inline int64_t coarse_index(const StencilGrid& f, const StencilGrid& c,
                                             int64_t i) {
  int64_t p = 0;
  for (int a = 0; a < kStencilAxes && a < f.ndim; ++a) p += axis_index(f, a, i) / 2 * c.stride[a];
  return p;
}

// Calls fn(i) for the fine cells of coarse cell I that differ from its first
// cell along the leading `axes` axes only (axes = ndim: the whole aggregate;
// ndim − 1: each fine row's first cell), in increasing fine index.
template <typename F>
NEFI_HOST_DEVICE inline void for_each_aggregate_cell(const StencilGrid& f, const StencilGrid& c,
                                                     int64_t I, int axes, F&& fn) {
  int64_t base = 0;
  for (int a = 0; a < kStencilAxes && a < f.ndim; ++a)
    base += 2 * axis_index(c, a, I) * f.stride[a];
  for (int m = 0; m < (1 << axes); ++m) {
    int64_t i = base;
    bool inside = true;
    for (int a = 0; a < kStencilAxes && a < axes; ++a)
      if ((m >> (axes - 1 - a)) & 1) {
        inside = inside && 2 * axis_index(c, a, I) + 1 < f.shape[a];
        i += f.stride[a];
      }
    if (inside) fn(i);
  }
}

// Σ of the stored faces touching fine cell i, in double, in the order
// coarsen()'s face visits add them (per axis: the face from the − neighbour,
// the cell's own face, the wrap face arriving at the first cell).
template <typename T>
NEFI_HOST_DEVICE inline double face_sum_cell(const StencilGrid& g, const T* faces, int64_t i) {
  double s = 0;
  for (int a = 0; a < kStencilAxes && a < g.ndim; ++a) {
    const T* k = faces + a * g.numel;
    const int64_t st = g.stride[a], len = g.shape[a], c = axis_index(g, a, i);
    const bool wrap = g.periodic[a] && len > 1;
    if (c > 0 && k[i - st] != T(0)) s += double(k[i - st]);
    if ((c + 1 < len || wrap) && k[i] != T(0)) s += double(k[i]);
    if (wrap && c == 0 && k[i + (len - 1) * st] != T(0)) s += double(k[i + (len - 1) * st]);
  }
  return s;
}

// The coarse face of cell I along axis a, in double: half of each fine face
// that leaves I's aggregate from one of its cells (Galerkin aggregation,
// halved: elliptic_multigrid.h).
template <typename T>
NEFI_HOST_DEVICE inline double coarse_face_cell(const StencilGrid& f, const StencilGrid& c,
                                                const T* faces, int64_t I, int a) {
  const T* k = faces + a * f.numel;
  const int64_t st = f.stride[a], len = f.shape[a];
  const bool wrap = f.periodic[a] && len > 1;
  double s = 0;
  for_each_aggregate_cell(f, c, I, f.ndim, [&](int64_t i) {
    const int64_t ci = axis_index(f, a, i);
    if (!(ci + 1 < len || wrap) || k[i] == T(0)) return;
    const int64_t j = ci + 1 < len ? i + st : i - (len - 1) * st;
    if (coarse_index(f, c, j) != I) s += 0.5 * double(k[i]);
  });
  return s;
}

// Coarse cell I of level f → c: its faces, diagonal (the aggregate's summed
// sinks, then per axis the faces in coarsen()'s order: the − neighbour's,
// its own, the wrap arriving at the first cell) and inverse diagonal.
template <typename T>
NEFI_HOST_DEVICE inline void coarse_system_cell(const StencilGrid& f, const StencilGrid& c,
                                                const T* faces, const T* diag, int64_t I,
                                                T* c_faces, T* c_diag, T* c_inv_diag) {
  double d = 0;
  for_each_aggregate_cell(f, c, I, f.ndim, [&](int64_t i) {
    const double sink = double(diag[i]) - face_sum_cell(f, faces, i);
    d += sink > 0.0 ? sink : 0.0;
  });
  NEFI_UNROLL
  for (int a = 0; a < kStencilAxes && a < c.ndim; ++a) {
    const int64_t inner = c.stride[a], cs = c.shape[a], C = axis_index(c, a, I);
    const double own = coarse_face_cell(f, c, faces, I, a);
    const double other = coarse_face_cell(f, c, faces, C > 0 ? I - inner : I + (cs - 1) * inner, a);
    if (C > 0 && other != 0) d += other;
    if (own != 0) d += own;
    if (C == 0 && other != 0) d += other;
    c_faces[a * c.numel + I] = T(own);
  }
  c_diag[I] = T(d);
  c_inv_diag[I] = c_diag[I] != T(0) ? T(1) / c_diag[I] : T(0);
}

// Restriction into coarse cell I: its fine rows (by the leading axes, in
// increasing order) each add their pair (or odd last cell) along the last axis.
template <typename T>
NEFI_HOST_DEVICE inline T restrict_cell(const StencilGrid& f, const StencilGrid& c, const T* v,
                                        int64_t I) {
  const int last = f.ndim - 1;
  // The last axis's index and length through constant indices (a run-time
  // index into a grid puts the grid in local memory: elliptic_kernels.h).
  auto at_last = [last](const int64_t(&v)[kStencilAxes]) {
    return last == 0 ? v[0] : last == 1 ? v[1] : v[2];
  };
  const bool pair = I / at_last(c.stride) % at_last(c.shape) < at_last(f.shape) / 2;
  T acc = T(0);
  for_each_aggregate_cell(f, c, I, last, [&](int64_t i) { acc += pair ? v[i] + v[i + 1] : v[i]; });
  return acc;
}

#ifdef __CUDACC__
#pragma nv_exec_check_disable
#endif
// The coarsest level's dense matrix and its Cholesky factor (dense_cholesky's
// operations): thread 0 fills it in the face-visit order, then per column
// thread 0 takes the pivot and the threads the rows below it, each entry's
// sum over k in the CPU's order.
template <typename T, typename Exec>
NEFI_HOST_DEVICE inline void block_cholesky(Exec& ex, const StencilGrid& g, const T* faces,
                                            const T* diag, double* a) {
  const int64_t n = g.numel;
  ex.each([&](int t) {
    for (int64_t e = t; e < n * n; e += kCgThreads) a[e] = 0;
  });
  ex.each([&](int t) {
    if (t != 0) return;
    for (int64_t i = 0; i < n; ++i) a[i * n + i] = double(diag[i]);
    for (int ax = 0; ax < kStencilAxes && ax < g.ndim; ++ax) {
      const int64_t len = g.shape[ax], inner = g.stride[ax];
      const bool wrap = g.periodic[ax] && len > 1;
      const T* k = faces + ax * n;
      for (int64_t i = 0; i < n; ++i) {
        const int64_t c = axis_index(g, ax, i);
        if ((c + 1 == len && !wrap) || k[i] == T(0)) continue;
        const int64_t j = c + 1 < len ? i + inner : i - (len - 1) * inner;
        a[i * n + j] -= double(k[i]);
        a[j * n + i] -= double(k[i]);
      }
    }
  });
  for (int64_t j = 0; j < n; ++j) {
    ex.each([&](int t) {
      if (t != 0) return;
      double s = a[j * n + j];
      for (int64_t k = 0; k < j; ++k) s -= a[j * n + k] * a[j * n + k];
      const double ajj = fabs(a[j * n + j]);
      a[j * n + j] = s > 1e-12 * (ajj > 1.0 ? ajj : 1.0) ? sqrt(s) : static_cast<double>(NAN);
    });
    ex.each([&](int t) {
      for (int64_t i = j + 1 + t; i < n; i += kCgThreads) {
        double s = a[i * n + j];
        for (int64_t k = 0; k < j; ++k) s -= a[i * n + k] * a[j * n + k];
        a[i * n + j] = s / a[j * n + j];
      }
    });
  }
}

#ifdef __CUDACC__
#pragma nv_exec_check_disable
#endif
// One field's hierarchy from its face system (faces, diag): each coarse
// level a phase over its cells (reading the finer level's stored T values),
// then the coarsest factor. hierarchy: multigrid_hierarchy_size(g) of T;
// cholesky: multigrid_cholesky_size(g) doubles.
template <typename T, typename Exec>
NEFI_HOST_DEVICE inline void block_multigrid_setup(Exec& ex, const StencilGrid& g, const T* faces,
                                                   const T* diag, T* hierarchy, double* cholesky) {
  const int levels = multigrid_levels(g);
  StencilGrid f = g;
  const T *f_faces = faces, *f_diag = diag;
  for (int l = 1; l < levels; ++l) {
    const StencilGrid c = coarse_grid(f);
    T* c_faces = hierarchy + coarse_offset(g, l, true);
    T* c_diag = c_faces + c.ndim * c.numel;
    T* c_inv = c_diag + c.numel;
    ex.each([&](int t) {
      for (int64_t I = t; I < c.numel; I += kCgThreads)
        coarse_system_cell(f, c, f_faces, f_diag, I, c_faces, c_diag, c_inv);
    });
    f = c;
    f_faces = c_faces;
    f_diag = c_diag;
  }
  block_cholesky(ex, f, f_faces, f_diag, cholesky);
}

// z := M⁻¹ r by one V(1,1) cycle (elliptic_multigrid.h's vcycle) for one
// system: level 0 is its face system, the coarse levels its field's
// hierarchy, work its multigrid_work_size(g) of scratch, t0 a fine grid of
// scratch (the CG's q, which is dead whenever the CG preconditions).
template <typename T>
struct MultigridPrecond {
  static constexpr bool kFused = false;  // block_pcg: a separate preconditioning step
  StencilGrid grid;
  const T *faces, *diag, *inv_diag;  // level 0
  const T* hierarchy;
  const double* cholesky;
  T *work, *t0;

  struct Level {
    StencilGrid g;
    const T *faces, *diag, *inv_diag;
    T *r, *z, *t;  // level 0: r and z are the cycle's arguments
  };
  NEFI_HOST_DEVICE Level level(int l) const {
    if (l == 0) return {grid, faces, diag, inv_diag, nullptr, nullptr, t0};
    const StencilGrid g = level_grid(grid, l);
    const T* f = hierarchy + coarse_offset(grid, l, true);
    T* w = work + coarse_offset(grid, l, false);
    return {g, f,           f + g.ndim * g.numel, f + (g.ndim + 1) * g.numel,
            w, w + g.numel, w + 2 * g.numel};
  }

#ifdef __CUDACC__
#pragma nv_exec_check_disable
#endif
  template <typename Exec>
  NEFI_HOST_DEVICE void apply(Exec& ex, const T* r, T* z) const {
    const int nl = multigrid_levels(grid);
    const T omega = T(kMgOmega);
    for (int l = 0; l + 1 < nl; ++l) {
      const Level L = level(l), C = level(l + 1);
      const T* rl = l == 0 ? r : L.r;
      T* zl = l == 0 ? z : L.z;
      const int64_t n = L.g.numel;
      ex.each([&](int t) {
        for (int64_t i = t; i < n; i += kCgThreads) zl[i] = omega * L.inv_diag[i] * rl[i];
      });
      ex.each([&](int t) {
        for (int64_t i = t; i < n; i += kCgThreads)
          L.t[i] = rl[i] - apply_cell(L.g, L.faces, L.diag, zl, i);
      });
      ex.each([&](int t) {
        for (int64_t I = t; I < C.g.numel; I += kCgThreads)
          C.r[I] = restrict_cell(L.g, C.g, L.t, I);
      });
    }
    {
      const Level L = level(nl - 1);
      const T* rc = nl == 1 ? r : L.r;
      T* zc = nl == 1 ? z : L.z;
      const double* lf = cholesky;
      const int64_t n = L.g.numel;
      // y lives in the block's reduction buffer, free between sum2 phases
      // (no per-thread local array, which would reserve local memory for
      // every resident thread).
      static_assert(kMgDirectCells <= kCgThreads);
      ex.each([&](int t) {
        if (t != 0) return;
        double* y = ex.red[0];
        for (int64_t i = 0; i < n; ++i) {
          double s = double(rc[i]);
          for (int64_t k = 0; k < i; ++k) s -= lf[i * n + k] * y[k];
          y[i] = s / lf[i * n + i];
        }
        for (int64_t i = n - 1; i >= 0; --i) {
          double s = y[i];
          for (int64_t k = i + 1; k < n; ++k) s -= lf[k * n + i] * y[k];
          y[i] = s / lf[i * n + i];
        }
        for (int64_t i = 0; i < n; ++i) zc[i] = T(y[i]);
      });
    }
    for (int l = nl - 2; l >= 0; --l) {
      const Level L = level(l), C = level(l + 1);
      const T* rl = l == 0 ? r : L.r;
      T* zl = l == 0 ? z : L.z;
      const int64_t n = L.g.numel;
      ex.each([&](int t) {
        for (int64_t i = t; i < n; i += kCgThreads) zl[i] += C.z[coarse_index(L.g, C.g, i)];
      });
      ex.each([&](int t) {
        for (int64_t i = t; i < n; i += kCgThreads)
          L.t[i] = apply_cell(L.g, L.faces, L.diag, zl, i);
      });
      ex.each([&](int t) {
        for (int64_t i = t; i < n; i += kCgThreads)
          zl[i] += omega * L.inv_diag[i] * (rl[i] - L.t[i]);
      });
    }
  }
};

}  // namespace nefi::cuda
