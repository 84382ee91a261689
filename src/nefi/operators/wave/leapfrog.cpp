#include "nefi/operators/wave/leapfrog.h"

#include <algorithm>
#include <cmath>

#include "fk/error.h"

namespace nefi::wave {
namespace {

// Δ_h at a cell: w0 u[p] + Σ_j w[j] (u[p + off[j]] + u[p − off[j]]).
template <typename T>
struct Laplacian {
  int pairs = 0;
  std::array<int64_t, 6> off{};
  std::array<T, 6> w{};
  T w0 = 0;
  explicit Laplacian(const WaveGrid& g) {
    double c0 = 0;
    for (int d = 0; d < 3; ++d) {
      if (!g.active[d]) continue;
      const double ih2 = 1.0 / (g.h[d] * g.h[d]);
      if (g.order == 2) {
        c0 += -2.0 * ih2;
        off[pairs] = g.stride[d], w[pairs++] = static_cast<T>(ih2);
      } else {
        c0 += -2.5 * ih2;
        off[pairs] = g.stride[d], w[pairs++] = static_cast<T>(4.0 / 3.0 * ih2);
        off[pairs] = 2 * g.stride[d], w[pairs++] = static_cast<T>(-1.0 / 12.0 * ih2);
      }
    }
    w0 = static_cast<T>(c0);
  }
  T at(const T* u, int64_t p) const {
    T s = w0 * u[p];
    for (int j = 0; j < pairs; ++j) s += w[j] * (u[p + off[j]] + u[p - off[j]]);
    return s;
  }
};

// The layer profile along axis d at padded coordinate x (in cells, centre of
// cell i at i + 1/2): (depth into the layer / its width)², 0 in the domain.
double depth_squared(const WaveGrid& g, int d, double x) {
  if (g.pad[d] == 0) return 0.0;
  const double lo = static_cast<double>(g.pad[d]);
  const double hi = static_cast<double>(g.pad[d] + g.interior[d]);
  const double depth = std::max({lo - x, x - hi, 0.0}) / lo;
  return std::min(depth, 1.0) * std::min(depth, 1.0);
}

template <typename F>
void for_each_cell(const WaveGrid& g, const F& f) {
  for (int64_t i0 = 0; i0 < g.n[0]; ++i0)
    for (int64_t i1 = 0; i1 < g.n[1]; ++i1)
      for (int64_t i2 = 0; i2 < g.n[2]; ++i2) f(std::array<int64_t, 3>{i0, i1, i2});
}

}  // namespace

Damping make_damping(const WaveGrid& g, Absorbing kind, double c_max, double absorb_R) {
  Damping dm;
  dm.kind = kind;
  dm.sigma.assign(g.numel, 0.0);
  if (kind == Absorbing::kNone) return dm;
  const double log_r = std::log(1.0 / absorb_R);
  std::array<double, 3> peak{0, 0, 0};  // ζ_max or σ_max per axis (its own width)
  for (int d = 0; d < 3; ++d)
    if (g.pad[d] > 0) {
      const double width = static_cast<double>(g.pad[d]) * g.h[d];
      peak[d] = (kind == Absorbing::kPml ? 1.5 : 3.0) * c_max * log_r / width;
    }
  auto zeta = [&](int d, double x) { return g.active[d] ? peak[d] * depth_squared(g, d, x) : 0; };
  const bool pml = kind == Absorbing::kPml;
  if (pml) {
    dm.zeta_product.assign(g.numel, 0.0);
    for (int d = 0; d < 3; ++d)
      if (g.active[d])
        dm.face_zeta[d].assign(g.numel, 0.0), dm.face_contrast[d].assign(g.numel, 0.0);
  }
  for_each_cell(g, [&](const std::array<int64_t, 3>& i) {
    const int64_t p = g.at(i[0], i[1], i[2]);
    std::array<double, 3> z{};
    double sum = 0, prod = 1;
    for (int d = 0; d < 3; ++d) {
      z[d] = zeta(d, static_cast<double>(i[d]) + 0.5);
      sum += z[d];
      if (g.active[d]) prod *= z[d];
    }
    dm.sigma[p] = sum;
    if (!pml) return;
    if (g.ndim == 2) dm.zeta_product[p] = prod;
    for (int d = 0; d < 3; ++d) {
      if (!g.active[d] || i[d] + 1 >= g.n[d]) continue;
      const double zf = zeta(d, static_cast<double>(i[d]) + 1.0);
      dm.face_zeta[d][p] = zf;
      dm.face_contrast[d][p] = (sum - z[d]) - zf;
    }
  });
  return dm;
}

template <typename T>
StepCoefficients<T> step_coefficients(const WaveGrid& g, const Damping& dm,
                                      const std::vector<double>& kappa) {
  StepCoefficients<T> co;
  const auto n = static_cast<size_t>(g.numel);
  co.q2.assign(n, T(0)), co.b.assign(n, T(0)), co.k.assign(n, T(0)), co.a_dt2.assign(n, T(0));
  co.k_per_kappa.assign(n, 0.0);
  const double dt = g.dt, dt2 = dt * dt;
  co.pml = dm.kind == Absorbing::kPml;
  for_each_cell(g, [&](const std::array<int64_t, 3>& i) {
    const int64_t p = g.at(i[0], i[1], i[2]);
    const double s = dm.sigma[p];
    double a = 1, q2 = 2, b = 1;
    if (dm.kind == Absorbing::kCerjan) {
      a = std::exp(-0.5 * s * dt), q2 = 2 * a, b = a * a;
    } else if (dm.kind != Absorbing::kNone) {
      a = 1.0 / (1.0 + 0.5 * s * dt), b = a * (1.0 - 0.5 * s * dt);
      q2 = a * (2.0 - (co.pml ? dt2 * dm.zeta_product[p] : 0.0));
    }
    co.q2[p] = static_cast<T>(q2), co.b[p] = static_cast<T>(b);
    co.k_per_kappa[p] = a * dt2;
    co.k[p] = static_cast<T>(a * dt2 * kappa[p]);
    co.a_dt2[p] = static_cast<T>(a * dt2);
  });
  if (!co.pml) return co;
  for (int d = 0; d < 3; ++d) {
    if (!g.active[d]) continue;
    co.alpha[d].assign(n, T(0)), co.beta[d].assign(n, T(0)), co.beta_per_kappa[d].assign(n, 0.0);
    for_each_cell(g, [&](const std::array<int64_t, 3>& i) {
      if (i[d] + 1 >= g.n[d]) return;
      const int64_t p = g.at(i[0], i[1], i[2]);
      const double zf = dm.face_zeta[d][p], den = 1.0 + 0.5 * dt * zf;
      const double per_kappa = dt * dm.face_contrast[d][p] / den;
      co.alpha[d][p] = static_cast<T>((1.0 - 0.5 * dt * zf) / den);
      co.beta_per_kappa[d][p] = per_kappa;
      co.beta[d][p] = static_cast<T>(per_kappa * 0.5 * (kappa[p] + kappa[p + g.stride[d]]));
    });
  }
  return co;
}

template <typename T>
std::vector<double> kappa_gradient(const WaveGrid& g, const StepCoefficients<T>& co,
                                   const std::vector<T>& kbar,
                                   const std::array<std::vector<T>, 3>& fbar) {
  std::vector<double> out(g.numel, 0.0);
  for_each_cell(g, [&](const std::array<int64_t, 3>& i) {
    const int64_t p = g.at(i[0], i[1], i[2]);
    double v = co.k_per_kappa[p] * static_cast<double>(kbar[p]);
    if (co.pml)
      for (int d = 0; d < 3; ++d) {
        if (!g.active[d]) continue;
        const auto& bk = co.beta_per_kappa[d];
        const int64_t q = p - g.stride[d];
        v += 0.5 *
             (bk[p] * static_cast<double>(fbar[d][p]) + bk[q] * static_cast<double>(fbar[d][q]));
      }
    out[p] = v;
  });
  return out;
}

namespace {

// out = u + k ⊙ Δ_h v, or with `product` out = u + Δ_h v, over the padded
// cells, with the stencil's pair count fixed so the rows vectorise.
template <typename T, int PAIRS>
void scaled_laplacian_rows(const WaveGrid& g, const Laplacian<T>& lap, const T* k, const T* u,
                           const T* v, T* out, bool product) {
  for_each_row(g, [&](int64_t p0, int64_t count) {
    for (int64_t p = p0; p < p0 + count; ++p) {
      T s = lap.w0 * v[p];
      for (int j = 0; j < PAIRS; ++j) s += lap.w[j] * (v[p + lap.off[j]] + v[p - lap.off[j]]);
      out[p] = u[p] + (product ? s : k[p] * s);
    }
  });
}

}  // namespace

template <typename T>
void add_scaled_laplacian(const WaveGrid& g, const std::vector<double>& kappa, double scale,
                          const T* u, T* out, bool transpose) {
  const Laplacian<T> lap(g);
  std::vector<T> k(g.numel, T(0));
  for (int64_t p = 0; p < g.numel; ++p) k[p] = static_cast<T>(scale * kappa[p]);
  // The transpose Δ_h(k ⊙ u) (Δ_h is symmetric) on the product formed once.
  std::vector<T> ku;
  if (transpose) {
    ku.resize(g.numel);
    for (int64_t p = 0; p < g.numel; ++p) ku[p] = k[p] * u[p];
  }
  const T* v = transpose ? ku.data() : u;
  switch (lap.pairs) {
    case 1:
      return scaled_laplacian_rows<T, 1>(g, lap, k.data(), u, v, out, transpose);
    case 2:
      return scaled_laplacian_rows<T, 2>(g, lap, k.data(), u, v, out, transpose);
    case 3:
      return scaled_laplacian_rows<T, 3>(g, lap, k.data(), u, v, out, transpose);
    case 4:
      return scaled_laplacian_rows<T, 4>(g, lap, k.data(), u, v, out, transpose);
    default:
      return scaled_laplacian_rows<T, 6>(g, lap, k.data(), u, v, out, transpose);
  }
}

double wave_energy(const WaveGrid& g, const std::vector<double>& kappa, const double* u_n,
                   const double* u_np1) {
  const Laplacian<double> lap(g);
  double e = 0;
  const double dt2 = g.dt * g.dt;
  for_each_row(g, [&](int64_t p0, int64_t count) {
    for (int64_t p = p0; p < p0 + count; ++p) {
      const double v = u_np1[p] - u_n[p];
      e += v * v / (dt2 * kappa[p]) - u_np1[p] * lap.at(u_n, p);
    }
  });
  return 0.5 * g.cell_volume() * e;
}

std::vector<double> padded_kappa(const WaveGrid& g, const std::vector<double>& c) {
  std::vector<double> kappa(g.numel, 0.0);
  for_each_cell(g, [&](const std::array<int64_t, 3>& i) {
    int64_t src = 0;
    for (int d = 0; d < 3; ++d) {
      const int64_t j = std::clamp<int64_t>(i[d] - g.pad[d], 0, g.interior[d] - 1);
      src = src * g.interior[d] + j;
    }
    kappa[g.at(i[0], i[1], i[2])] = c[src] * c[src];
  });
  return kappa;
}

std::vector<double> velocity_gradient(const WaveGrid& g, const std::vector<double>& c,
                                      const std::vector<double>& kappa_bar) {
  std::vector<double> out(c.size(), 0.0);
  for_each_cell(g, [&](const std::array<int64_t, 3>& i) {
    int64_t src = 0;
    for (int d = 0; d < 3; ++d) {
      const int64_t j = std::clamp<int64_t>(i[d] - g.pad[d], 0, g.interior[d] - 1);
      src = src * g.interior[d] + j;
    }
    out[src] += 2.0 * c[src] * kappa_bar[g.at(i[0], i[1], i[2])];
  });
  return out;
}

#define NEFI_WAVE_INSTANTIATE(T)                                                              \
  template StepCoefficients<T> step_coefficients<T>(const WaveGrid&, const Damping&,          \
                                                    const std::vector<double>&);              \
  template std::vector<double> kappa_gradient<T>(const WaveGrid&, const StepCoefficients<T>&, \
                                                 const std::vector<T>&,                       \
                                                 const std::array<std::vector<T>, 3>&);       \
  template void add_scaled_laplacian<T>(const WaveGrid&, const std::vector<double>&, double,  \
                                        const T*, T*, bool);
NEFI_WAVE_INSTANTIATE(float)
NEFI_WAVE_INSTANTIATE(double)
#undef NEFI_WAVE_INSTANTIATE

}  // namespace nefi::wave
