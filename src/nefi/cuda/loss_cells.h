#pragma once
// The per-cell arithmetic of the loss kernels (loss_kernels.cu): each
// cellwise term's value and derivative, a row's denominator and
// NormalizedMSE's constants, and one cell's total variation,
// TV gradient (gathered: a cell adds the terms of the differences it ends
// and subtracts those it starts, no scatter) and Laplacian. Host and device
// functions alike, so the kernels' own arithmetic is checked against the CPU
// losses on machines without a GPU (tests/nefi/losses/loss_cells_test.cpp).
// Everything is computed in f64.
#include <math.h>

#include <cstdint>

#include "nefi/cuda/host_device.h"
#include "nefi/cuda/loss_kernels.h"

namespace nefi::cuda {

NEFI_HOST_DEVICE inline double relu(double v) {
  return v > 0 ? v : 0.0;
}
// Poisson NLL p - y log(p + eps) holds for counts p >= 0; below 0 it goes
// on as its second-order expansion at 0 with curvature (relu(y) + eps) /
// eps^2 (y / eps^2 there, + 1 / eps so that y = 0 has its minimum at -eps):
// smooth and bounded below, where relu(p) in the log made the term fall
// without bound as p went negative (slope +1 whatever y).
NEFI_HOST_DEVICE inline double poisson_nll_curvature(double y, double eps) {
  return (relu(y) + eps) / (eps * eps);
}
// 0 at 0: the derivative fk's |.| backward gives there.
NEFI_HOST_DEVICE inline double sign(double v) {
  return v > 0 ? 1.0 : (v < 0 ? -1.0 : 0.0);
}

// f(p, y) of a cellwise term (loss_kernels.h's CellwiseKind).
NEFI_HOST_DEVICE inline double cell_value(const CellwiseTerm& t, double p, double y) {
  switch (t.kind) {
    case kCellAbs:
      return fabs(p);
    case kCellSquare:
      return p * p;
    case kCellRange: {
      const double lo = relu(t.a - p), hi = relu(p - t.b);
      return lo * lo + hi * hi;
    }
    case kCellSquaredError: {
      const double r = t.a * p - t.b * y;
      return r * r;
    }
    case kCellHuber: {
      const double r = fabs(p - y);
      return r < t.a ? 0.5 * r * r : t.a * (r - 0.5 * t.a);
    }
    case kCellPoissonNll:  // a quadratic below 0 (poisson_nll_curvature)
      return p >= 0
                 ? p - y * log(p + t.a)
                 : -y * log(t.a) + (1 - y / t.a) * p + 0.5 * poisson_nll_curvature(y, t.a) * p * p;
    case kCellLogError: {
      const double r = log(relu(p) * t.a + t.b) - log(relu(y) * t.a + t.b);
      return r * r;
    }
    case kCellResidualTimesP:
      return (t.a * p - t.b * y) * p;
    default:
      return p;
  }
}

// df/dp of a cellwise term (relu' = 0 at 0, as fk's backward).
NEFI_HOST_DEVICE inline double cell_derivative(const CellwiseTerm& t, double p, double y) {
  switch (t.kind) {
    case kCellAbs:
      return sign(p);
    case kCellSquare:
      return 2 * p;
    case kCellRange:
      return 2 * relu(p - t.b) - 2 * relu(t.a - p);
    case kCellSquaredError:
      return 2 * t.a * (t.a * p - t.b * y);
    case kCellHuber: {
      const double r = p - y;
      return fabs(r) < t.a ? r : t.a * sign(r);
    }
    case kCellPoissonNll:
      return p >= 0 ? 1 - y / (p + t.a) : 1 - y / t.a + poisson_nll_curvature(y, t.a) * p;
    case kCellLogError: {
      if (!(p > 0)) return 0.0;
      const double q = p * t.a + t.b;
      return 2 * (log(q) - log(relu(y) * t.a + t.b)) * t.a / q;
    }
    case kCellResidualTimesP:
      return 2 * t.a * p - t.b * y;
    default:
      return 1.0;
  }
}

// Row r's denominator (loss_kernels.h's RowDenominator): given values, else
// the constant, else the row's weight sum times its scale.
NEFI_HOST_DEVICE inline double row_denominator(const RowDenominator& d, const double* sums,
                                               int64_t r) {
  if (d.values) return d.values[r * d.stride];
  if (d.constant > 0) return d.constant;
  return sums[2 * r + 1] * (d.row_scale ? d.row_scale[r] : d.scale);
}

// NormalizedMSE's constants c = {1 / mp, 1 / ym, W, mp} from the weighted
// sums ps = {sum w p, W} and ys = {sum w y, W}: mp = sum w p / W + 1e-12,
// ym = sum w y / W.
NEFI_HOST_DEVICE inline void normalized_constants(const double* ps, const double* ys, double* c) {
  const double W = ps[1], ym = ys[0] / W;
  const double mp = ps[0] / W + 1e-12;
  c[0] = 1 / mp;
  c[1] = 1 / ym;
  c[2] = W;
  c[3] = mp;
}

// dL/dmp · dmp/dp_j / w_j = -2 R / (W^2 mp^2), R = sum w r p: the bias of
// NormalizedMSE's gradient per unit upstream gradient.
NEFI_HOST_DEVICE inline double normalized_bias_factor(const double* c, double R) {
  const double W = c[2], mp = c[3];
  return -2 * R / (W * W * mp * mp);
}

// Coordinate of cell i along axis a.
NEFI_HOST_DEVICE inline int64_t coord(const StencilGrid& g, int64_t i, int a) {
  return (i / g.stride[a]) % g.shape[a];
}
// The forward neighbour of cell i along a (periodic axes wrap), or -1.
NEFI_HOST_DEVICE inline int64_t next_cell(const StencilGrid& g, int64_t i, int a) {
  const int64_t c = coord(g, i, a);
  if (c + 1 < g.shape[a]) return i + g.stride[a];
  return g.periodic[a] ? i - c * g.stride[a] : -1;
}
// The cell whose forward neighbour along a is i, or -1.
NEFI_HOST_DEVICE inline int64_t previous_cell(const StencilGrid& g, int64_t i, int a) {
  const int64_t c = coord(g, i, a);
  if (c > 0) return i - g.stride[a];
  return g.periodic[a] ? i + (g.shape[a] - 1) * g.stride[a] : -1;
}

// D_a x at cell i of a row (0 where no neighbour).
template <typename T>
NEFI_HOST_DEVICE inline double difference(const T* x, const StencilGrid& g, int64_t i, int a) {
  const int64_t j = next_cell(g, i, a);
  return j < 0 ? 0.0 : (static_cast<double>(x[j]) - static_cast<double>(x[i])) * g.scale[a];
}

// The isotropic magnitude sqrt(sum_a (D_a x)^2 + eps^2) at cell i.
template <typename T>
NEFI_HOST_DEVICE inline double magnitude(const T* x, const StencilGrid& g, int64_t i, double e2) {
  double q = 0;
  for (int a = 0; a < g.ndim; ++a) {
    const double d = difference(x, g, i, a);
    q += d * d;
  }
  return sqrt(q + e2);
}

// Cell i's share of the TV sum: the magnitude (isotropic) or sum_a sqrt((D_a x)^2 + eps^2).
template <typename T>
NEFI_HOST_DEVICE inline double tv_cell_value(const T* x, const StencilGrid& g, int64_t i,
                                             bool isotropic, double e2) {
  if (isotropic) return magnitude(x, g, i, e2);
  double s = 0;
  for (int a = 0; a < g.ndim; ++a) {
    const double d = difference(x, g, i, a);
    s += sqrt(d * d + e2);
  }
  return s;
}

// c_a(j) = D_a x(j) / r(j) · scale_a, the derivative of cell j's term by
// x[next_a j] (r: the isotropic magnitude at j, or the anisotropic term's own
// root); 0 where j has no neighbour along a.
template <typename T>
NEFI_HOST_DEVICE inline double tv_term(const T* x, const StencilGrid& g, int64_t j, int a,
                                       bool isotropic, double e2) {
  if (next_cell(g, j, a) < 0) return 0.0;
  const double d = difference(x, g, j, a);
  const double r = isotropic ? magnitude(x, g, j, e2) : sqrt(d * d + e2);
  return d / r * g.scale[a];
}

// dTV_sum/dx_i = sum_a [c_a(previous_a i) - c_a(i)].
template <typename T>
NEFI_HOST_DEVICE inline double tv_cell_gradient(const T* x, const StencilGrid& g, int64_t i,
                                                bool isotropic, double e2) {
  double s = 0;
  for (int a = 0; a < g.ndim; ++a) {
    const int64_t j = previous_cell(g, i, a);
    if (j >= 0) s += tv_term(x, g, j, a, isotropic, e2);
    s -= tv_term(x, g, i, a, isotropic, e2);
  }
  return s;
}

// (L x)_i = sum_a scale_a (x[i - e_a] - 2 x[i] + x[i + e_a]), the missing
// neighbour at an edge replaced by the cell itself, or by the opposite edge's
// cell along a periodic axis; axes with scale 0 skipped. L is symmetric
// either way.
template <typename T>
NEFI_HOST_DEVICE inline double laplacian_cell(const T* x, const StencilGrid& g, int64_t i) {
  const double xi = static_cast<double>(x[i]);
  double s = 0;
  for (int a = 0; a < g.ndim; ++a) {
    if (g.scale[a] == 0) continue;
    const int64_t before = previous_cell(g, i, a), after = next_cell(g, i, a);
    const double lo = static_cast<double>(x[before >= 0 ? before : i]);
    const double hi = static_cast<double>(x[after >= 0 ? after : i]);
    s += (lo - 2 * xi + hi) * g.scale[a];
  }
  return s;
}

}  // namespace nefi::cuda
