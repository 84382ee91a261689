#pragma once
// The per-point arithmetic of a ParametricField's shapes
// (field/parametric_field.h): what the CPU op's loops
// (field/parametric_field.cpp) and the device kernels (parametric.cu)
// compute for one point, one channel or one chunk of points. Host and device
// functions alike, so a device run gives the CPU's bits wherever the two
// machines' exp, sin, atan2 and log agree (everywhere under the emulator;
// on a GPU within an ulp or two of each). Built without contraction on both
// sides (parametric.cu with --fmad=false; the CPU loops for baseline
// x86-64). Everything is in f64, whatever the parameters' dtype.
// Shape parameters are read through a pointer of their own type S (f32 or
// f64: a float widens to a double exactly): the device reads them where they
// are (the CPU op widens them all first).
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>

#include "nefi/cuda/host_device.h"
#include "nefi/field/polygon_outline.h"
#include "nefi/field/star_harmonics.h"

namespace nefi::cuda {

constexpr double kShapePi = 3.14159265358979323846;
constexpr double kShapeSqrt2 = 1.41421356237309504880;
// The stars' degree gates (3..8), or the polygons' one outline gate.
constexpr int kShapeGates = kStarMaxDegree - kStarMinDegree + 1;
// The profile's numbers that move as a fit anneals: 1 / (2 eps), then the
// gates (f64; a device step reads them from a buffer rewritten in place).
constexpr int kShapeTunables = 1 + kShapeGates;
// Room for a 3-D star's harmonics of degrees 1..8 ((L + 1)^2 - 1 = 80
// entries; one spare).
constexpr int kStarBasis = (kStarMaxDegree + 1) * (kStarMaxDegree + 1);
// The most entries a shape holds: alpha, a 3-D centre and matrix and a
// 3-D star's harmonics of degrees 3..8 (72), more than a polygon's 7 + V.
constexpr int kShapeMaxEntries = 1 + 3 + 9 + (kStarBasis - 1) - 8;
static_assert(kShapeMaxEntries == 85 && kShapeMaxEntries >= 7 + kPolygonMaxVertices);
// The backward's deterministic order: points in chunks of kShapeChunk (the
// CPU's unit of parallel work), each chunk's in sub-chunks of sub points
// (shape_sub_chunk: a device thread's share), every partial sum in
// order: a sub-chunk's over its points from 0, a chunk's over its
// sub-chunks from 0, the total over the chunks from 0. Both sides add in
// this order, so a device gives the CPU's bits.
constexpr int64_t kShapeChunk = 2048;
constexpr int64_t kShapeSubChunk = 256;
// The device keeps a row of partial sums per sub-chunk: past this many
// bytes of them it sums whole chunks (one sub-chunk each) instead.
constexpr double kShapeSubRowsBytes = 512e6;
// Points per sub-chunk for n points and rows of `row` f64 partials.
inline int64_t shape_sub_chunk(int64_t n, int64_t row) {
  const double subs = static_cast<double>((n + kShapeSubChunk - 1) / kShapeSubChunk);
  return subs * static_cast<double>(row) * 8.0 <= kShapeSubRowsBytes ? kShapeSubChunk : kShapeChunk;
}

// A family's profile g(q), dg/dq, and the stars' or polygons' outline.
struct ShapeProfile {
  int ellipse = 0;   // all but blobs
  int degree = 0;    // stars: the outline's highest degree L (0 otherwise)
  int vertices = 0;  // polygons: V (0 otherwise)
  double inv_2eps = 0;
  double gates[kShapeGates] = {};  // stars: per degree; polygons: gates[0]
  NEFI_HOST_DEVICE double value(double q) const {
    if (!ellipse) return exp(-0.5 * q);
    return 1.0 / (1.0 + exp(-(1.0 - q) * inv_2eps));
  }
  NEFI_HOST_DEVICE double slope(double g) const {
    return ellipse ? -g * (1.0 - g) * inv_2eps : -0.5 * g;
  }
  // inv_2eps and the gates from a kShapeTunables row.
  NEFI_HOST_DEVICE void read_tunables(const double* t) {
    inv_2eps = t[0];
    for (int i = 0; i < kShapeGates; ++i) gates[i] = t[1 + i];
  }
};

// A value with its gradient in u (up to 3 entries).
struct Dual {
  double v = 0, g[3] = {0, 0, 0};
};

NEFI_HOST_DEVICE inline Dual operator*(const Dual& a, const Dual& b) {
  Dual r;
  r.v = a.v * b.v;
  for (int k = 0; k < 3; ++k) r.g[k] = a.g[k] * b.v + a.v * b.g[k];
  return r;
}
NEFI_HOST_DEVICE inline Dual operator*(double s, const Dual& a) {
  Dual r;
  r.v = s * a.v;
  for (int k = 0; k < 3; ++k) r.g[k] = s * a.g[k];
  return r;
}
NEFI_HOST_DEVICE inline Dual operator+(const Dual& a, const Dual& b) {
  Dual r;
  r.v = a.v + b.v;
  for (int k = 0; k < 3; ++k) r.g[k] = a.g[k] + b.g[k];
  return r;
}
NEFI_HOST_DEVICE inline Dual operator-(const Dual& a, const Dual& b) {
  return a + (-1.0) * b;
}
NEFI_HOST_DEVICE inline void set_constant(double& t, double v) {
  t = v;
}
NEFI_HOST_DEVICE inline void set_constant(Dual& t, double v) {
  t = Dual();
  t.v = v;
}
NEFI_HOST_DEVICE inline double value_of(double t) {
  return t;
}
NEFI_HOST_DEVICE inline double value_of(const Dual& t) {
  return t.v;
}

// Entries of an outline's harmonics of degrees 1..l; entries of degree l.
NEFI_HOST_DEVICE inline int star_entries_through(int ndim, int l) {
  return ndim == 2 ? 2 * l : (l + 1) * (l + 1) - 1;
}
NEFI_HOST_DEVICE inline int star_entries_of_degree(int ndim, int l) {
  return ndim == 2 ? 2 : 2 * l + 1;
}

// The harmonics of degrees 1..L at the unit vector n (ndim entries): y gets
// star_entries_through(ndim, L) values, in doubles or carrying their
// gradient (star_harmonics.h's layout).
template <class T>
NEFI_HOST_DEVICE void star_harmonics_at(int ndim, int degree, const T* n, T* y) {
  // (n_x + i n_y)^m: cos and sin of m times the azimuth, times sin^m of the
  // polar angle in 3-D.
  T re[kStarMaxDegree + 1], im[kStarMaxDegree + 1];
  set_constant(re[0], 1);
  set_constant(im[0], 0);
  for (int m = 1; m <= degree; ++m) {
    re[m] = re[m - 1] * n[0] - im[m - 1] * n[1];
    im[m] = re[m - 1] * n[1] + im[m - 1] * n[0];
  }
  if (ndim == 2) {
    for (int l = 1; l <= degree; ++l) {
      y[2 * (l - 1)] = kShapeSqrt2 * re[l];
      y[2 * (l - 1) + 1] = kShapeSqrt2 * im[l];
    }
    return;
  }
  // p[l][m] = P_l^m(z) / (1 - z^2)^(m / 2), a polynomial in z = n_z.
  T p[kStarMaxDegree + 1][kStarMaxDegree + 1];
  const T& z = n[2];
  double odd_factorial = 1;  // (2m - 1)!!
  for (int m = 0; m <= degree; ++m) {
    if (m > 0) odd_factorial *= 2 * m - 1;
    set_constant(p[m][m], odd_factorial);
    if (m + 1 <= degree) p[m + 1][m] = (2.0 * m + 1) * (z * p[m][m]);
    for (int l = m + 2; l <= degree; ++l)
      p[l][m] = (1.0 / (l - m)) * ((2.0 * l - 1) * (z * p[l - 1][m]) - (l + m - 1.0) * p[l - 2][m]);
  }
  for (int l = 1; l <= degree; ++l) {
    const int at = l * l - 1;
    y[at] = sqrt(2.0 * l + 1) * p[l][0];
    double ratio = 1;  // (l - m)! / (l + m)!
    for (int m = 1; m <= l; ++m) {
      ratio /= static_cast<double>(l + m) * (l - m + 1);
      const double norm = sqrt(2.0 * (2 * l + 1) * ratio);
      y[at + 2 * m - 1] = norm * (p[l][m] * re[m]);
      y[at + 2 * m] = norm * (p[l][m] * im[m]);
    }
  }
}

// h = sum_j c_j g_l(j) Y_j over degrees 3..L; basis gets the Y_j's values.
template <class T, class S>
NEFI_HOST_DEVICE T star_gated_sum(int ndim, int degree, const T* y, const S* c, const double* gates,
                                  double* basis) {
  T h;
  set_constant(h, 0);
  const int skip = star_entries_through(ndim, kStarMinDegree - 1);
  for (int l = kStarMinDegree, j = 0; l <= degree; ++l)
    for (int e = 0; e < star_entries_of_degree(ndim, l); ++e, ++j) {
      const T& v = y[skip + j];
      basis[j] = value_of(v);
      h = h + (static_cast<double>(c[j]) * gates[l - kStarMinDegree]) * v;
    }
  return h;
}

// star_harmonics.h's star_log_radius, unchecked: h at u for coefficients c
// (degrees 3..L) and degree gates; dh_du (null: the value alone) and basis
// (star_entries_through(ndim, L) - star_entries_through(ndim, 2) entries).
template <class S>
NEFI_HOST_DEVICE double star_log_radius_at(int ndim, int degree, const double* u, const S* c,
                                           const double* gates, double* dh_du, double* basis) {
  const int count =
      degree >= kStarMinDegree && ndim >= 2
          ? star_entries_through(ndim, degree) - star_entries_through(ndim, kStarMinDegree - 1)
          : 0;
  if (dh_du)
    for (int a = 0; a < ndim; ++a) dh_du[a] = 0;
  for (int j = 0; j < count; ++j) basis[j] = 0;
  double s2 = 0;
  for (int a = 0; a < ndim; ++a) s2 += u[a] * u[a];
  if (count == 0 || s2 == 0) return 0;
  const double s = sqrt(s2);
  if (!dh_du) {  // the value alone: plain doubles
    double n[3], y[kStarBasis];
    for (int i = 0; i < ndim; ++i) n[i] = u[i] / s;
    star_harmonics_at(ndim, degree, n, y);
    return star_gated_sum(ndim, degree, y, c, gates, basis);
  }
  // n = u / |u|, with dn_i / du_k = (delta_ik - n_i n_k) / |u|.
  Dual n[3];
  for (int i = 0; i < ndim; ++i) {
    n[i].v = u[i] / s;
    for (int k = 0; k < ndim; ++k) n[i].g[k] = ((i == k ? 1.0 : 0.0) - u[i] * u[k] / s2) / s;
  }
  Dual y[kStarBasis];
  star_harmonics_at(ndim, degree, n, y);
  const Dual h = star_gated_sum(ndim, degree, y, c, gates, basis);
  for (int a = 0; a < ndim; ++a) dh_du[a] = h.g[a];
  return h.v;
}

// polygon_outline.h's polygon_log_radius: h at u (2 entries) for the V
// vertex log radii c; dh_du (null: the value alone); *first and dh_dc the
// two nonzero entries of its gradient in c.
template <class S>
NEFI_HOST_DEVICE double polygon_log_radius_at(int vertices, const double* u, const S* c,
                                              double* dh_du, int* first, double* dh_dc) {
  const double s2 = u[0] * u[0] + u[1] * u[1];
  *first = 0;
  dh_dc[0] = dh_dc[1] = 0;
  if (dh_du != nullptr) dh_du[0] = dh_du[1] = 0;
  if (s2 == 0) return 0;
  // A diverged shape (s2 infinite or NaN): NaN flows on (as through a
  // star) and no sector is read.
  if (!(s2 <= DBL_MAX)) return std::numeric_limits<double>::quiet_NaN();
  const double step = 2 * kShapePi / vertices;
  double theta = atan2(u[1], u[0]);
  if (theta < 0) theta += 2 * kShapePi;
  int j = static_cast<int>(theta / step);
  if (j > vertices - 1) j = vertices - 1;
  const int k = (j + 1) % vertices;
  const double phi = theta - j * step;
  const double cj = static_cast<double>(c[j]), ck = static_cast<double>(c[k]);
  const double rj = exp(cj), rk = exp(ck);
  const double a = rj * sin(phi), b = rk * sin(step - phi);
  const double den = a + b;  // > 0: the sector is under pi wide
  *first = j;
  dh_dc[0] = b / den;  // d h / d c_j = 1 - a / den
  dh_dc[1] = a / den;
  if (dh_du != nullptr) {
    // d h / d theta, times d theta / d u = (-u_y, u_x) / |u|^2.
    const double dh = -(rj * cos(phi) - rk * cos(step - phi)) / den;
    dh_du[0] = -dh * u[1] / s2;
    dh_du[1] = dh * u[0] / s2;
  }
  return cj + ck + log(sin(step)) - log(den);
}

// One point against one shape p (alpha, centre, M, outline): diff = x - m,
// u = diff M, and q = |u|^2 exp(-2 h(u / |u|)) (h = 0 but for stars and
// polygons), with dq/du and dh/dc (the stars' harmonics Y_j at u / |u|,
// the polygons' two vertices' weights).
struct ShapePoint {
  double diff[3], u[3], dq_du[3], basis[kStarBasis];
  double q = 0;
  int vertex = 0;                    // polygons: dh/dc is nonzero at vertex and vertex + 1
  double vertex_weight[2] = {0, 0};  // ... where it is these, times the gate
  // with_slope: dq_du too (the backward); the forward reads q alone.
  template <class X, class S>
  NEFI_HOST_DEVICE void at(int d, const ShapeProfile& pr, const X* x, const S* p, bool with_slope) {
    const S* m = p + 1;
    const S* M = p + 1 + d;
    for (int l = 0; l < d; ++l) diff[l] = static_cast<double>(x[l]) - static_cast<double>(m[l]);
    double s2 = 0;
    for (int j = 0; j < d; ++j) {
      double s = 0;
      for (int l = 0; l < d; ++l) s += diff[l] * static_cast<double>(M[l * d + j]);
      u[j] = s;
      s2 += s * s;
    }
    if (pr.degree == 0 && pr.vertices == 0) {
      q = s2;
      for (int j = 0; j < d; ++j) dq_du[j] = 2 * u[j];
      return;
    }
    double dh_du[3];
    double h = 0;
    if (pr.vertices > 0) {
      const double gate = pr.gates[0];
      h = gate * polygon_log_radius_at(pr.vertices, u, p + 1 + d + d * d,
                                       with_slope ? dh_du : nullptr, &vertex, vertex_weight);
      if (with_slope)
        for (int j = 0; j < d; ++j) dh_du[j] *= gate;
    } else {
      h = star_log_radius_at(d, pr.degree, u, p + 1 + d + d * d, pr.gates,
                             with_slope ? dh_du : nullptr, basis);
    }
    const double e = exp(-2 * h);
    q = s2 * e;
    if (with_slope)
      for (int j = 0; j < d; ++j) dq_du[j] = 2 * e * (u[j] - s2 * dh_du[j]);
  }
};

// raw_c at point x: b_c + sum_k sinh(alpha_ck) g_ck(x), k ascending (shapes
// (K, P) of channel c).
template <class X, class S>
NEFI_HOST_DEVICE double shapes_value_at(const ShapeProfile& pr, int d, int64_t K, int P, const X* x,
                                        const S* shapes, double background) {
  ShapePoint sp;
  double r = background;
  for (int64_t k = 0; k < K; ++k) {
    const S* p = shapes + k * P;
    sp.at(d, pr, x, p, false);
    r += sinh(static_cast<double>(p[0])) * pr.value(sp.q);
  }
  return r;
}

// Adds the gradient of sum_i go[i, c] raw_c(x_i), points lo..hi-1 in order,
// with respect to shape p (channel c of C) into dp (P entries).
template <class X, class S, class G>
NEFI_HOST_DEVICE void shape_gradient_over(const ShapeProfile& pr, int d, int64_t C, int64_t c,
                                          const X* x, int64_t lo, int64_t hi, const S* p,
                                          const G* go, double* dp) {
  ShapePoint sp;
  const double alpha = static_cast<double>(p[0]);
  const double a = sinh(alpha), da = cosh(alpha);
  for (int64_t i = lo; i < hi; ++i) {
    const double gi = static_cast<double>(go[i * C + c]);
    if (gi == 0) continue;
    sp.at(d, pr, x + i * d, p, true);
    const double g = pr.value(sp.q);
    dp[0] += gi * g * da;
    const double dq = gi * a * pr.slope(g);
    if (dq == 0) continue;
    for (int l = 0; l < d; ++l) {
      double dd = 0;  // d q / d diff_l = sum_j dq/du_j M_lj
      for (int j = 0; j < d; ++j) {
        dp[1 + d + l * d + j] += dq * sp.dq_du[j] * sp.diff[l];
        dd += sp.dq_du[j] * static_cast<double>(p[1 + d + l * d + j]);
      }
      dp[1 + l] -= dq * dd;
    }
    // d q / d c_j = -2 q dh/dc_j: stars g_l(j) Y_j, polygons gate times a
    // vertex weight
    double* dc = dp + 1 + d + d * d;
    if (pr.degree > 0 && d >= 2)
      for (int l = kStarMinDegree, j = 0; l <= pr.degree; ++l)
        for (int e = 0; e < star_entries_of_degree(d, l); ++e, ++j)
          dc[j] -= 2 * dq * sp.q * pr.gates[l - kStarMinDegree] * sp.basis[j];
    if (pr.vertices > 0) {
      const double f = 2 * dq * sp.q * pr.gates[0];
      dc[sp.vertex] -= f * sp.vertex_weight[0];
      dc[(sp.vertex + 1) % pr.vertices] -= f * sp.vertex_weight[1];
    }
  }
}

// sum_i go[i, c] over points lo..hi-1 in order.
template <class G>
NEFI_HOST_DEVICE double background_gradient_over(int64_t C, int64_t c, int64_t lo, int64_t hi,
                                                 const G* go) {
  double s = 0;
  for (int64_t i = lo; i < hi; ++i) s += static_cast<double>(go[i * C + c]);
  return s;
}

}  // namespace nefi::cuda
