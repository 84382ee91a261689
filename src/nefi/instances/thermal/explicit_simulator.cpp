#include "nefi/instances/thermal/explicit_simulator.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <numbers>

#include "fk/error.h"

namespace nefi::thermal {
namespace {

// Mean of exp(−(s − c)² / 2w²) over s ∈ [a, b] (exact, via erf).
double gaussian_mean(double a, double b, double c, double w) {
  const double r = std::numbers::sqrt2 * w;
  return w * std::sqrt(std::numbers::pi / 2.0) * (std::erf((b - c) / r) - std::erf((a - c) / r)) /
         (b - a);
}

// Cell means of a lateral Gaussian on n cells over [0, L]; periodic sums the
// images c + k L for every k whose contribution can exceed 1e-30.
std::vector<double> lateral_profile(int64_t n, double L, double c, double w, bool periodic) {
  const int64_t images = periodic ? static_cast<int64_t>(std::ceil(12.0 * w / L)) + 1 : 0;
  std::vector<double> out(n, 0.0);
  const double h = L / static_cast<double>(n);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = -images; k <= images; ++k)
      out[i] += gaussian_mean(i * h, (i + 1) * h, c + k * L, w);
  return out;
}

}  // namespace

void ExplicitHeatConfig::validate() const {
  FK_CHECK(extent.size() == 3 && extent[0] > 0 && extent[1] > 0 && extent[2] > 0,
           "config key 'extent'", "three positive lengths", fk::to_text(extent.size()) + " values");
  FK_CHECK(dt > 0, "config key 'dt'", "dt > 0", fk::to_text(dt));
  FK_CHECK(n_frames >= 1, "config key 'n_frames'", "n_frames >= 1", fk::to_text(n_frames));
  FK_CHECK(first_frame >= 0 && first_frame <= n_frames, "config key 'first_frame'",
           "a frame in [0, n_frames]", fk::to_text(first_frame));
  FK_CHECK(frame_stride >= 1, "config key 'frame_stride'", "frame_stride >= 1",
           fk::to_text(frame_stride));
  FK_CHECK(face_mode == "harmonic" || face_mode == "arithmetic", "config key 'sim_face_mode'",
           "harmonic or arithmetic", face_mode);
  FK_CHECK(back_bc == "neumann" || back_bc == "robin", "config key 'bc_back'", "neumann or robin",
           back_bc);
  FK_CHECK(lateral_bc == "periodic" || lateral_bc == "neumann", "config key 'bc_lateral'",
           "periodic or neumann", lateral_bc);
  FK_CHECK(robin_h >= 0, "config key 'robin_h'", "robin_h >= 0", fk::to_text(robin_h));
  FK_CHECK(min_substeps >= 1, "config key 'sim_min_substeps'", "sim_min_substeps >= 1",
           fk::to_text(min_substeps));
  FK_CHECK(substep_safety >= 1, "config key 'sim_substep_safety'", "sim_substep_safety >= 1",
           fk::to_text(substep_safety));
  FK_CHECK(flash.width_xy > 0, "config key 'flash_width_xy'", "a width > 0",
           fk::to_text(flash.width_xy));
  FK_CHECK(flash.width_z > 0, "config key 'flash_width_z'", "a width > 0",
           fk::to_text(flash.width_z));
  // A centre off the slab lights its edge only (or, periodic, an image of it).
  if (flash.center)
    FK_CHECK((*flash.center)[0] >= 0 && (*flash.center)[0] <= extent[0] &&
                 (*flash.center)[1] >= 0 && (*flash.center)[1] <= extent[1],
             "config key 'flash_center'",
             "a point on the slab, in [0, " + fk::to_text(extent[0]) + "] x [0, " +
                 fk::to_text(extent[1]) + "]",
             fk::to_text((*flash.center)[0]) + ", " + fk::to_text((*flash.center)[1]));
}

std::vector<double> flash_cell_averages(const FlashSpec& f, const fk::Dims& shape,
                                        const std::vector<double>& extent) {
  FK_CHECK(shape.size() == 3 && extent.size() == 3, "nefi::thermal::flash_cell_averages",
           "a 3-D grid and extent", shape.str());
  const double cx = f.center ? (*f.center)[0] : 0.5 * extent[0];
  const double cy = f.center ? (*f.center)[1] : 0.5 * extent[1];
  const auto px = f.uniform ? std::vector<double>(shape[0], 1.0)
                            : lateral_profile(shape[0], extent[0], cx, f.width_xy, f.periodic);
  const auto py = f.uniform ? std::vector<double>(shape[1], 1.0)
                            : lateral_profile(shape[1], extent[1], cy, f.width_xy, f.periodic);
  const double hz = extent[2] / static_cast<double>(shape[2]);
  std::vector<double> pz(shape[2]);
  for (int64_t k = 0; k < shape[2]; ++k)
    pz[k] = gaussian_mean(k * hz, (k + 1) * hz, 0.0, f.width_z);
  std::vector<double> out(shape.numel());
  for (int64_t i = 0; i < shape[0]; ++i)
    for (int64_t j = 0; j < shape[1]; ++j)
      for (int64_t k = 0; k < shape[2]; ++k)
        out[(i * shape[1] + j) * shape[2] + k] = f.amplitude * px[i] * py[j] * pz[k];
  return out;
}

ExplicitHeatSimulator::ExplicitHeatSimulator(ExplicitHeatConfig cfg) : cfg_(std::move(cfg)) {
  cfg_.validate();
}

std::vector<int64_t> ExplicitHeatSimulator::observed_frames() const {
  std::vector<int64_t> f;
  for (int64_t n = cfg_.first_frame; n <= cfg_.n_frames; n += cfg_.frame_stride) f.push_back(n);
  return f;
}

int64_t ExplicitHeatSimulator::substeps(const fk::Dims& shape, double alpha_max) const {
  double hmin = 1e300;
  for (int a = 0; a < 3; ++a) hmin = std::min(hmin, cfg_.extent[a] / static_cast<double>(shape[a]));
  const double dt_stable = hmin * hmin / (2.0 * 3.0 * alpha_max);
  const auto n = static_cast<int64_t>(std::ceil(cfg_.dt / dt_stable * cfg_.substep_safety));
  return std::max(cfg_.min_substeps, n);
}

namespace {

// The (nx, ny, nz) grid with one ghost layer on each side, C order.
struct PaddedGrid {
  int64_t nx, ny, nz, px, py, pz;
  bool mirror_sides;  // lateral ghosts copy their own cell (insulated) instead of wrapping
  PaddedGrid(const fk::Dims& shape, bool mirror)
      : nx(shape[0]),
        ny(shape[1]),
        nz(shape[2]),
        px(nx + 2),
        py(ny + 2),
        pz(nz + 2),
        mirror_sides(mirror) {}
  int64_t size() const { return px * py * pz; }
  int64_t index(int64_t i, int64_t j, int64_t k) const { return (i * py + j) * pz + k; }
  int64_t interior(int64_t i, int64_t j, int64_t k) const { return (i * ny + j) * nz + k; }

  // The interior of the padded `v` <- the grid values `g`.
  void load(std::vector<double>& v, const std::vector<double>& g) const {
    for (int64_t i = 0; i < nx; ++i)
      for (int64_t j = 0; j < ny; ++j)
        for (int64_t k = 0; k < nz; ++k) v[index(i + 1, j + 1, k + 1)] = g[interior(i, j, k)];
  }
  // The grid values `g` <- the interior of the padded `v`.
  void store(std::vector<double>& g, const std::vector<double>& v) const {
    for (int64_t i = 0; i < nx; ++i)
      for (int64_t j = 0; j < ny; ++j)
        for (int64_t k = 0; k < nz; ++k) g[interior(i, j, k)] = v[index(i + 1, j + 1, k + 1)];
  }
  // Ghost filling shared by α and T: lateral ghosts wrap (or mirror), depth
  // ghosts copy their neighbour (scaled by back_scale on the back face).
  void fill_ghosts(std::vector<double>& v, const std::vector<double>& back_scale) const {
    const int64_t x_lo = mirror_sides ? 1 : nx, x_hi = mirror_sides ? nx : 1;
    const int64_t y_lo = mirror_sides ? 1 : ny, y_hi = mirror_sides ? ny : 1;
    for (int64_t j = 1; j <= ny; ++j)
      for (int64_t k = 1; k <= nz; ++k) {
        v[index(0, j, k)] = v[index(x_lo, j, k)];
        v[index(nx + 1, j, k)] = v[index(x_hi, j, k)];
      }
    for (int64_t i = 0; i < px; ++i)
      for (int64_t k = 1; k <= nz; ++k) {
        v[index(i, 0, k)] = v[index(i, y_lo, k)];
        v[index(i, ny + 1, k)] = v[index(i, y_hi, k)];
      }
    for (int64_t i = 0; i < px; ++i)
      for (int64_t j = 0; j < py; ++j) {
        v[index(i, j, 0)] = v[index(i, j, 1)];
        const double s = back_scale.empty() ? 1.0 : back_scale[i * py + j];
        v[index(i, j, nz + 1)] = s * v[index(i, j, nz)];
      }
  }
};

// Robin back face: the ghost T_g = T (1 − h Δz / α) makes the face flux
// α (T_g − T) / Δz equal to −h T. Empty for an adiabatic back face.
std::vector<double> robin_back_scale(const ExplicitHeatConfig& cfg, const PaddedGrid& g,
                                     const std::vector<double>& ap, double hz) {
  std::vector<double> back_scale;
  if (cfg.back_bc != "robin") return back_scale;
  back_scale.assign(g.px * g.py, 1.0);
  for (int64_t i = 0; i < g.px; ++i)
    for (int64_t j = 0; j < g.py; ++j)
      back_scale[i * g.py + j] = 1.0 - cfg.robin_h * hz / ap[g.index(i, j, g.nz + 1)];
  return back_scale;
}

// Face diffusivity over Δ² between padded cell p and p + stride along each axis.
std::array<std::vector<double>, 3> face_conductances(const ExplicitHeatConfig& cfg,
                                                     const PaddedGrid& g,
                                                     const std::vector<double>& ap,
                                                     const double inv_h2[3]) {
  const bool harmonic = cfg.face_mode == "harmonic";
  auto face = [&](double a, double b) { return harmonic ? 2 * a * b / (a + b) : 0.5 * (a + b); };
  const int64_t P = g.size(), stride[3] = {g.py * g.pz, g.pz, 1};
  std::array<std::vector<double>, 3> kf;
  for (int a = 0; a < 3; ++a) {
    kf[a].assign(P, 0.0);
    for (int64_t p = 0; p + stride[a] < P; ++p)
      kf[a][p] = face(ap[p], ap[p + stride[a]]) * inv_h2[a];
  }
  return kf;
}

// One forward-Euler substep of length dts: tn's interior from tp (ghosts filled).
void euler_substep(const PaddedGrid& g, const std::array<std::vector<double>, 3>& kf,
                   const std::vector<double>& tp, std::vector<double>& tn, double dts) {
  const int64_t sx = g.py * g.pz, sy = g.pz, sz = 1;
  for (int64_t i = 1; i <= g.nx; ++i)
    for (int64_t j = 1; j <= g.ny; ++j) {
      const int64_t row = g.index(i, j, 0);
      for (int64_t k = 1; k <= g.nz; ++k) {
        const int64_t p = row + k;
        const double t = tp[p];
        // Σ_axes (F_{+} − F_{−}) / Δ with F = ᾱ ΔT / Δ (the 1/Δ² is in kf).
        const double div = kf[0][p] * (tp[p + sx] - t) - kf[0][p - sx] * (t - tp[p - sx]) +
                           kf[1][p] * (tp[p + sy] - t) - kf[1][p - sy] * (t - tp[p - sy]) +
                           kf[2][p] * (tp[p + sz] - t) - kf[2][p - sz] * (t - tp[p - sz]);
        tn[p] = t + dts * div;
      }
    }
}

// Forward-Euler time stepping on a ghost-padded grid; calls on_frame(n, T)
// for every frame n = 0..n_frames with the interior state (C order).
void run_explicit(const ExplicitHeatConfig& cfg, int64_t n_sub, const std::vector<double>& alpha,
                  const fk::Dims& shape, std::vector<double> t0,
                  const std::function<void(int64_t, const std::vector<double>&)>& on_frame) {
  const PaddedGrid g(shape, cfg.lateral_bc == "neumann");
  const double h[3] = {cfg.extent[0] / g.nx, cfg.extent[1] / g.ny, cfg.extent[2] / g.nz};
  const double inv_h2[3] = {1 / (h[0] * h[0]), 1 / (h[1] * h[1]), 1 / (h[2] * h[2])};
  std::vector<double> ap(g.size(), 0.0);
  g.load(ap, alpha);
  g.fill_ghosts(ap, {});
  const std::vector<double> back_scale = robin_back_scale(cfg, g, ap, h[2]);
  const std::array<std::vector<double>, 3> kf = face_conductances(cfg, g, ap, inv_h2);
  std::vector<double> tp(g.size(), 0.0), tn(g.size(), 0.0), out(shape.numel());
  g.load(tp, t0);
  auto emit = [&](int64_t n) {
    g.store(out, tp);
    on_frame(n, out);
  };
  emit(0);
  const double dts = cfg.dt / static_cast<double>(n_sub);
  for (int64_t n = 1; n <= cfg.n_frames; ++n) {
    for (int64_t s = 0; s < n_sub; ++s) {
      g.fill_ghosts(tp, back_scale);
      euler_substep(g, kf, tp, tn, dts);
      std::swap(tp, tn);
    }
    emit(n);
  }
}

}  // namespace

std::vector<std::vector<double>> ExplicitHeatSimulator::trajectory(const std::vector<double>& alpha,
                                                                   const fk::Dims& shape,
                                                                   std::vector<double> t0) const {
  FK_CHECK(shape.size() == 3 && shape[0] >= 1 && shape[1] >= 1 && shape[2] >= 1 &&
               static_cast<int64_t>(alpha.size()) == shape.numel(),
           "nefi::thermal::ExplicitHeatSimulator", "alpha with one value per cell of a 3-D grid",
           shape.str() + " with " + fk::to_text(alpha.size()) + " values");
  double amax = 0;
  for (double a : alpha) {
    FK_CHECK(a > 0 && std::isfinite(a), "nefi::thermal::ExplicitHeatSimulator",
             "a positive finite diffusivity", fk::to_text(a));
    amax = std::max(amax, a);
  }
  if (t0.empty()) t0 = flash_cell_averages(cfg_.flash, shape, cfg_.extent);
  FK_CHECK(static_cast<int64_t>(t0.size()) == shape.numel(), "nefi::thermal::ExplicitHeatSimulator",
           "an initial state with one value per cell", fk::to_text(t0.size()));
  std::vector<std::vector<double>> frames;
  run_explicit(cfg_, substeps(shape, amax), alpha, shape, std::move(t0),
               [&](int64_t, const std::vector<double>& t) { frames.push_back(t); });
  return frames;
}

std::vector<double> ExplicitHeatSimulator::surface_frames(const std::vector<double>& alpha,
                                                          const fk::Dims& shape, int64_t s) const {
  FK_CHECK(s >= 1 && shape.size() == 3, "nefi::thermal::ExplicitHeatSimulator",
           "supersample >= 1 and a 3-D grid", fk::to_text(s) + ", " + shape.str());
  const fk::Dims fine{shape[0] * s, shape[1] * s, shape[2] * s};
  FK_CHECK(static_cast<int64_t>(alpha.size()) == fine.numel(),
           "nefi::thermal::ExplicitHeatSimulator", "alpha on the supersampled grid " + fine.str(),
           fk::to_text(alpha.size()) + " values");
  double amax = 0;
  for (double a : alpha) {
    FK_CHECK(a > 0 && std::isfinite(a), "nefi::thermal::ExplicitHeatSimulator",
             "a positive finite diffusivity", fk::to_text(a));
    amax = std::max(amax, a);
  }
  const std::vector<int64_t> obs = observed_frames();
  const int64_t nx = shape[0], ny = shape[1];
  std::vector<double> out(obs.size() * nx * ny, 0.0);
  size_t next = 0;
  const double w = 1.0 / static_cast<double>(s * s);
  run_explicit(cfg_, substeps(fine, amax), alpha, fine,
               flash_cell_averages(cfg_.flash, fine, cfg_.extent),
               [&](int64_t n, const std::vector<double>& t) {
                 if (next >= obs.size() || obs[next] != n) return;
                 double* o = out.data() + next * nx * ny;
                 for (int64_t i = 0; i < fine[0]; ++i)
                   for (int64_t j = 0; j < fine[1]; ++j)
                     o[(i / s) * ny + j / s] += w * t[(i * fine[1] + j) * fine[2]];
                 ++next;
               });
  return out;
}

}  // namespace nefi::thermal
