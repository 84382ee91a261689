#pragma once
// The per-cell arithmetic of the Gray-Scott kernels (gray_scott.cu): what
// thread c of the step and adjoint kernels computes and writes. Host and
// device functions alike, so the kernels' own code is checked against the
// CPU solver (operators/reaction_diffusion/gray_scott.cpp) on machines
// without a GPU (tests/nefi/operators/reaction_diffusion/gray_scott_cells_test.cpp),
// thread by thread. Each function repeats its CPU loop's operations in the
// same order: the Laplacian's four differences, and for a Du field the face
// fluxes of gray_scott.cpp's for_each_face in the order that loop visits a
// cell's faces (a running sum from 0, so even a zero's sign agrees). No
// contraction: gray_scott.cu is built with --fmad=false, the CPU loops for
// baseline x86-64.
#include <limits>

#include "nefi/cuda/gray_scott_kernels.h"
#include "nefi/cuda/host_device.h"

namespace nefi::cuda {

// x[i], plus add[i] when an observed cotangent is added (the CPU adds it
// into the buffer before the adjoint step; the same sum, read on the fly).
NEFI_HOST_DEVICE inline double read_with(const double* x, const double* add, int i) {
  return add ? x[i] + add[i] : x[i];
}

// Calls fn(a, b, s) for each face (a, b) of cell c, a the face's first cell
// in gray_scott.cpp's for_each_face, in the order that loop reaches them:
// rows in order, each row's vertical faces (to the next row, the last row
// to the first when wrapped), then its horizontal ones, then its wrapped one.
template <typename Fn>
NEFI_HOST_DEVICE inline void for_each_face_of(const GrayScottCoefficients& k, int c, Fn&& fn) {
  const int n1 = k.n1, i = c / n1, j = c - i * n1, last_row = (k.n0 - 1) * n1;
  if (i > 0) fn(c - n1, c, k.s0);  // the row above's vertical pass
  if (i + 1 < k.n0)
    fn(c, c + n1, k.s0);
  else if (k.wrap)
    fn(c, c - last_row, k.s0);  // the last row's wrapped vertical face
  if (j > 0) fn(c - 1, c, k.s1);
  if (j + 1 < n1) fn(c, c + 1, k.s1);
  if (k.wrap && j == 0) fn(c + n1 - 1, c, k.s1);  // the row's wrapped face comes last in it
  if (k.wrap && j == n1 - 1) fn(c, c - (n1 - 1), k.s1);
  if (k.wrap && i == 0) fn(c + last_row, c, k.s0);  // visited in the last row's pass
}

// lap(x) at c (gray_scott::laplacian's cell): a Neumann face's neighbour is
// the cell itself.
NEFI_HOST_DEVICE inline double laplacian_at(const GrayScottCoefficients& k, const double* x,
                                            const double* add, int c) {
  const int n1 = k.n1, i = c / n1, j = c - i * n1, last_row = (k.n0 - 1) * n1;
  const int up = i > 0 ? c - n1 : (k.wrap ? c + last_row : c);
  const int dn = i + 1 < k.n0 ? c + n1 : (k.wrap ? c - last_row : c);
  const int l = j > 0 ? c - 1 : (k.wrap ? c + n1 - 1 : c);
  const int r = j + 1 < n1 ? c + 1 : (k.wrap ? c - (n1 - 1) : c);
  const double xc = read_with(x, add, c);
  return k.s0 * ((read_with(x, add, up) - xc) + (read_with(x, add, dn) - xc)) +
         k.s1 * ((read_with(x, add, l) - xc) + (read_with(x, add, r) - xc));
}

NEFI_HOST_DEVICE inline double harmonic_mean(double a, double b) {
  return 2 * a * b / (a + b);
}

// div(D grad x) at c (gray_scott::diffusion's cell): the face fluxes
// s H(D_a, D_b) (x_b - x_a), added where c is a and subtracted where it is b.
NEFI_HOST_DEVICE inline double diffusion_at(const GrayScottCoefficients& k, const double* D,
                                            const double* x, const double* add, int c) {
  double y = 0.0;
  for_each_face_of(k, c, [&](int a, int b, double s) {
    const double flux =
        s * harmonic_mean(D[a], D[b]) * (read_with(x, add, b) - read_with(x, add, a));
    if (a == c)
      y += flux;
    else
      y -= flux;
  });
  return y;
}

// g plus dL/dDu_c of one adjoint step through the harmonic face means
// (gray_scott::adjoint_step's face loop, the terms of c's faces in order).
NEFI_HOST_DEVICE inline double diffusivity_gradient_at(const GrayScottCoefficients& k,
                                                       const double* D, const double* u,
                                                       const double* ub, const double* add, int c,
                                                       double g) {
  for_each_face_of(k, c, [&](int a, int b, double s) {
    const double da = D[a], db = D[b], sum = da + db;
    const double dK = -k.tau * s * (u[b] - u[a]) * (read_with(ub, add, b) - read_with(ub, add, a));
    if (a == c)
      g += dK * 2 * db * db / (sum * sum);
    else
      g += dK * 2 * da * da / (sum * sum);
  });
  return g;
}

// Thread c of the step kernel (gray_scott::step's cell, out of place).
NEFI_HOST_DEVICE inline void step_cell(const GrayScottCoefficients& k, const GrayScottFields& f,
                                       const GrayScottStep& b, int c) {
  const int n = k.n0 * k.n1;
  const double* u = b.in;
  const double* v = b.in + n;
  const double lu = f.Du ? diffusion_at(k, f.Du, u, nullptr, c) : laplacian_at(k, u, nullptr, c);
  const double lv = laplacian_at(k, v, nullptr, c);
  const double Du = f.Du ? 1.0 : k.Du;  // a Du field is inside lu already
  const double uc = u[c], vc = v[c];
  const double F = f.F ? f.F[c] : k.F, kc = f.k ? f.k[c] : k.k;
  const double uvv = uc * vc * vc;
  const double du = Du * lu - uvv + F * (1 - uc);
  const double dv = k.Dv * lv + uvv - (F + kc) * vc;
  const double un = uc + k.tau * du, vn = vc + k.tau * dv;
  b.out[c] = un;
  b.out[n + c] = vn;
  if (b.checkpoint) {
    b.checkpoint[c] = uc;
    b.checkpoint[n + c] = vc;
  }
  const bool poisoned = b.poison && *b.poison != 0;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (b.record_u) b.record_u[c] = poisoned ? nan : un;
  if (b.record_v) b.record_v[c] = poisoned ? nan : vn;
}

// Thread c of the adjoint kernel (gray_scott::adjoint_step's cell).
NEFI_HOST_DEVICE inline void adjoint_cell(const GrayScottCoefficients& k, const GrayScottFields& f,
                                          const GrayScottAdjoint& b, int c) {
  const int n = k.n0 * k.n1;
  const double* u = b.state;
  const double* v = b.state + n;
  const double* ub = b.cot_in;
  const double* vb = b.cot_in + n;
  double lu;
  if (f.Du) {
    lu = diffusion_at(k, f.Du, ub, b.add_u, c);
    if (b.grad_Du) b.grad_Du[c] = diffusivity_gradient_at(k, f.Du, u, ub, b.add_u, c, b.grad_Du[c]);
  } else {
    lu = laplacian_at(k, ub, b.add_u, c);
  }
  const double lv = laplacian_at(k, vb, b.add_v, c);
  const double Du = f.Du ? 1.0 : k.Du;
  const double a = read_with(ub, b.add_u, c), bv = read_with(vb, b.add_v, c);
  const double F = f.F ? f.F[c] : k.F, kc = f.k ? f.k[c] : k.k;
  const double uc = u[c], vc = v[c];
  const double vv = vc * vc, uv2 = 2 * uc * vc;
  if (b.grad_F) b.grad_F[c] += k.tau * ((1 - uc) * a - vc * bv);
  if (b.grad_k) b.grad_k[c] -= k.tau * vc * bv;
  b.cot_out[c] = a + k.tau * (Du * lu - (vv + F) * a + vv * bv);
  b.cot_out[n + c] = bv + k.tau * (k.Dv * lv - uv2 * a + (uv2 - F - kc) * bv);
}

// Whether x lies outside (lo_exclusive, hi] or is NaN (the range guard's test).
NEFI_HOST_DEVICE inline bool out_of_range(double x, double lo_exclusive, double hi) {
  return !(x > lo_exclusive && x <= hi);
}

}  // namespace nefi::cuda
