#pragma once
// Launchers of the heat operator's CUDA kernels (heat.cu): raw device
// pointers, the grid and a stream (a cudaStream_t passed as void*), no CUDA
// types, so the host side (device_sweeper.cpp, heat_dispatch.cpp) is plain
// C++. T is float or double (explicitly instantiated for both). Every launch is
// asynchronous on `stream` and is one kernel; a failed launch throws fk::Error.
// Grids are compact and C-contiguous, cell i = (x · ny + y) · nz + z; the
// arithmetic of every kernel is that of its CPU loop in flat_stencil.cpp and
// heat_system.cpp, term for term in the same order and with the same fused
// multiply-adds: the sweeps' explicit fma() where GCC contracts the CPU
// sweep's AVX2+FMA build, none elsewhere (nvcc --fmad=false; those CPU loops
// are built for baseline x86-64, which has no FMA). Against the CPU's AVX2
// path results should then agree to the bit (up to the sign of zero); against
// its generic build (FK_CPU_ISA=generic) to rounding.
#include <cstdint>

namespace nefi::cuda {

// Every grid has fewer than 2³¹ cells (the kernels index in 32 bits).
struct Grid {
  int64_t nx = 0, ny = 0, nz = 0;
  int64_t numel() const { return nx * ny * nz; }
};

// One sweep of FlatSweeper's symmetric iteration on compact grids:
//   s = c + Ŵx⁻ y[x−1] + Ŵx⁺ y[x+1] + Ŵy⁻ y[y−1] + Ŵy⁺ y[y+1] + Ŵz⁻ y[z−1] + Ŵz⁺ y[z+1]
// (x and y wrap; z stops at the faces), faces = (3, grid) holding the + face of
// every cell (the − face is the + face of the cell one step back). Then
// out = s (Jacobi) or, with lerp, out = out + ω (s − out) (Chebyshev: out holds
// the iterate before `in`). `in` and `out` must not overlap.
template <typename T>
void launch_face_sweep(const T* in, T* out, const T* c, const T* faces, Grid g, T omega, bool lerp,
                       void* stream);

// Up to kMaxFusedSweeps sweeps in one cooperative launch: a grid-stride loop
// per sweep and a grid-wide barrier between sweeps (no host involvement).
// bufs[cur] holds the iterate and bufs[1 − cur] the one before it; after k
// sweeps bufs[(cur + k) % 2] holds the result. Sweep j uses weight omega[j],
// a plain Jacobi sweep for j < lerp_from, a Chebyshev step after. The weights
// travel by value in the kernel's parameters. Each cell's arithmetic is
// launch_face_sweep's, so both paths give the same bits.
inline constexpr int kMaxFusedSweeps = 128;
template <typename T>
struct SweepWeights {
  T omega[kMaxFusedSweeps] = {};
};
// Whether `device` can launch cooperative kernels (all current GPUs can;
// some virtualised or MPS set-ups cannot).
bool cooperative_launch_supported(int device);
template <typename T>
void launch_fused_sweeps(T* buf0, T* buf1, int cur, const T* c, const T* faces, Grid g,
                         const SweepWeights<T>& w, int k, int lerp_from, void* stream);

// out[i] = r[i] · a[i] for i < n (the scaling into and out of the symmetric variable).
template <typename T>
void launch_scale(const T* a, const T* r, T* out, int64_t n, void* stream);
// out[i] = r[i] · a[i] and c[i] = r[i] · out[i] (a solution stored and made the
// next step's right-hand side in one pass).
template <typename T>
void launch_scale_twice(const T* a, const T* r, T* out, T* c, int64_t n, void* stream);
// c[cell (x, y, 0)] += r[cell (x, y, 0)] · s[x · ny + y]: a surface source on the front face.
template <typename T>
void launch_add_surface(const T* s, const T* r, T* c, Grid g, void* stream);

// The adjoint's face sums (accumulate_face_products): for the + face of every
// cell, sums_f += (Δ_f μ)(Δ_f T); the z face of the last layer, and with
// closed sides the x faces of the last plane and y faces of the last row, are 0.
template <typename T>
void launch_face_products(T* sums, const T* mu, const T* t, Grid g, bool closed_sides,
                          void* stream);

// dJ/dα from the face sums (alpha_gradient): h2 = h² per axis (1 / h² is
// taken in T, as the CPU does), dt of one implicit step, harmonic (or
// arithmetic) face means.
struct GradientCoefficients {
  double h2[3] = {1, 1, 1};
  double dt = 0;
  bool arithmetic = false;
};
template <typename T>
void launch_alpha_gradient(const T* sums, const T* alpha, T* out, Grid g,
                           const GradientCoefficients& k, void* stream);

}  // namespace nefi::cuda
