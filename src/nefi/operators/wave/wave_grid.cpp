#include "nefi/operators/wave/wave_grid.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "fk/error.h"
#include "nefi/params.h"

namespace nefi::wave {

Absorbing absorbing_from(const std::string& name, const std::string& key) {
  if (name == "none") return Absorbing::kNone;
  if (name == "pml") return Absorbing::kPml;
  if (name == "sponge") return Absorbing::kSponge;
  if (name == "cerjan") return Absorbing::kCerjan;
  throw fk::Error("config key '" + key + "'", "one of none, pml, sponge, cerjan", "'" + name + "'");
}

int64_t recording_samples(double t_max, double dt_obs) {
  const double samples = std::round(t_max / dt_obs) + 1;
  FK_CHECK(
      samples >= 2 && samples <= 1e7, "config keys 't_max', 'dt_obs'",
      "a recording of 2 to 1e7 samples (t_max / dt_obs + 1)",
      Params::render(t_max) + " / " + Params::render(dt_obs) + " + 1 = " + Params::render(samples));
  return static_cast<int64_t>(samples);
}

std::string absorbing_name(Absorbing a) {
  switch (a) {
    case Absorbing::kNone:
      return "none";
    case Absorbing::kPml:
      return "pml";
    case Absorbing::kSponge:
      return "sponge";
    case Absorbing::kCerjan:
      return "cerjan";
  }
  return "?";
}

void WaveConfig::validate(int ndim) const {
  FK_CHECK(ndim >= 1 && ndim <= 3, "wave grid", "1 to 3 axes", fk::to_text(ndim));
  FK_CHECK(static_cast<int>(extent.size()) == ndim, "wave config 'extent'",
           fk::to_text(ndim) + " lengths", Params::render(extent));
  for (double e : extent)
    FK_CHECK(e > 0 && std::isfinite(e), "wave config 'extent'", "lengths > 0",
             Params::render(extent));
  FK_CHECK(order == 2 || order == 4, "wave config 'order'", "2 or 4", fk::to_text(order));
  FK_CHECK(!(absorbing == Absorbing::kPml && ndim == 3), "wave config 'absorbing'",
           "sponge, cerjan or none in 3-D (the PML is 1-D/2-D)", "pml");
  FK_CHECK(absorb_width >= 0 && std::isfinite(absorb_width), "wave config 'absorb_width'",
           "a width >= 0", Params::render(absorb_width));
  FK_CHECK(absorb_R > 0 && absorb_R < 1, "wave config 'absorb_R'", "a reflection in (0, 1)",
           Params::render(absorb_R));
  FK_CHECK(courant > 0 && courant <= 1, "wave config 'courant'",
           "a fraction in (0, 1] (1: the CFL bound)", Params::render(courant));
  FK_CHECK(c_max > 0 && std::isfinite(c_max), "wave config 'c_max'", "a velocity > 0",
           Params::render(c_max));
  FK_CHECK(dt_obs > 0 && std::isfinite(dt_obs), "wave config 'dt_obs'", "an interval > 0",
           Params::render(dt_obs));
  FK_CHECK(n_t >= 2 && n_t <= 10000000, "wave config 'n_t'", "samples in [2, 1e7]",
           fk::to_text(n_t));
}

double WaveGrid::cell_volume() const {
  double v = 1;
  for (int d = 0; d < 3; ++d)
    if (active[d]) v *= h[d];
  return v;
}

double cfl_dt(int order, const std::vector<double>& h, double c) {
  double lam = 0;
  for (double hd : h) lam += (order == 4 ? 16.0 / 3.0 : 4.0) / (hd * hd);
  return 2.0 / (c * std::sqrt(lam));
}

WaveGrid make_wave_grid(const WaveConfig& cfg, const fk::Dims& shape) {
  const int nd = shape.size();
  cfg.validate(nd);
  WaveGrid g;
  g.ndim = nd;
  g.order = cfg.order;
  g.halo = cfg.order / 2;
  g.n_t = cfg.n_t;
  std::vector<double> h;
  for (int a = 0; a < nd; ++a) {
    const int d = 3 - nd + a;
    FK_CHECK(shape[a] >= 2, "wave grid", "at least 2 cells per axis", fk::to_text(shape[a]));
    g.active[d] = true;
    g.interior[d] = shape[a];
    g.h[d] = cfg.extent[a] / static_cast<double>(shape[a]);
    h.push_back(g.h[d]);
    if (cfg.absorbing != Absorbing::kNone)
      g.pad[d] = static_cast<int64_t>(std::ceil(cfg.absorb_width / g.h[d] - 1e-9));
    g.n[d] = g.interior[d] + 2 * g.pad[d];
    g.dims[d] = g.n[d] + 2 * g.halo;
  }
  g.stride = {g.dims[1] * g.dims[2], g.dims[2], 1};
  g.numel = g.dims[0] * g.dims[1] * g.dims[2];
  const double dt_max = cfg.courant * cfl_dt(cfg.order, h, cfg.c_max);
  g.substeps = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(cfg.dt_obs / dt_max - 1e-12)));
  g.dt = cfg.dt_obs / static_cast<double>(g.substeps);
  return g;
}

double ricker(double t, double f0) {
  const double tau = t - 1.2 / f0;
  const double a = std::numbers::pi * std::numbers::pi * f0 * f0 * tau * tau;
  return (1.0 - 2.0 * a) * std::exp(-a);
}

PointStencil point_stencil(const WaveGrid& g, const std::vector<double>& x,
                           const std::string& what) {
  FK_CHECK(static_cast<int>(x.size()) == g.ndim, what, fk::to_text(g.ndim) + " coordinates",
           Params::render(x));
  std::array<int64_t, 3> lo{0, 0, 0};
  std::array<double, 3> frac{0, 0, 0};
  for (int a = 0; a < g.ndim; ++a) {
    const int d = 3 - g.ndim + a;
    const double extent = g.h[d] * static_cast<double>(g.interior[d]);
    FK_CHECK(x[a] >= 0 && x[a] <= extent, what,
             "a position inside the domain [0, " + Params::render(extent) + "] on axis " +
                 fk::to_text(a),
             Params::render(x));
    // Padded cell coordinate: centres at (i + 1/2) h, shifted by the layer.
    const double xi = x[a] / g.h[d] - 0.5 + static_cast<double>(g.pad[d]);
    const double fl = std::clamp(std::floor(xi), 0.0, static_cast<double>(g.n[d] - 2));
    lo[d] = static_cast<int64_t>(fl);
    frac[d] = std::clamp(xi - fl, 0.0, 1.0);
  }
  PointStencil s;
  for (int c = 0; c < 8; ++c) {
    std::array<int64_t, 3> i{0, 0, 0};
    double w = 1;
    bool used = true;
    for (int d = 0; d < 3; ++d) {
      const int bit = (c >> d) & 1;
      if (!g.active[d]) {
        used = used && bit == 0;
        continue;
      }
      i[d] = lo[d] + bit;
      w *= bit ? frac[d] : 1.0 - frac[d];
    }
    if (!used || w == 0.0) continue;
    s.index.push_back(g.at(i[0], i[1], i[2]));
    s.weight.push_back(w);
  }
  return s;
}

std::vector<PointStencil> point_stencils(const WaveGrid& g,
                                         const std::vector<std::vector<double>>& points,
                                         const std::string& what) {
  std::vector<PointStencil> out;
  out.reserve(points.size());
  for (size_t i = 0; i < points.size(); ++i)
    out.push_back(point_stencil(g, points[i], what + " " + std::to_string(i)));
  return out;
}

}  // namespace nefi::wave
