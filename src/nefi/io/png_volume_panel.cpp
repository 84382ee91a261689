#include "nefi/io/png_volume_panel.h"

#include <algorithm>
#include <cmath>

#include "fk/error.h"
#include "nefi/io/panel_tiles.h"

namespace nefi {
namespace {

using panel::Slice;

struct Vol {
  int nx, ny, nz;
  std::vector<double> v;
  double at(int i, int j, int k) const { return v[(static_cast<size_t>(i) * ny + j) * nz + k]; }
};

struct Cut {
  int i, j, k;  // the voxel the slices pass through
  double bulk;  // the truth's median: the background the projection departs from
};

// Through the voxel that departs most from the truth's median.
Cut strongest(const Vol& g) {
  std::vector<double> s = g.v;
  std::nth_element(s.begin(), s.begin() + s.size() / 2, s.end());
  const double bulk = s[s.size() / 2];
  size_t best = 0;
  for (size_t p = 0; p < g.v.size(); ++p)
    if (std::abs(g.v[p] - bulk) > std::abs(g.v[best] - bulk)) best = p;
  const int k = static_cast<int>(best % g.nz), j = static_cast<int>(best / g.nz % g.ny),
            i = static_cast<int>(best / g.nz / g.ny);
  return {i, j, k, bulk};
}

// The four views of a volume: x-y at depth c.k, x-z at c.j, y-z at c.i, and
// per column the value along depth farthest from the bulk.
std::vector<Slice> views(const Vol& f, const Cut& c, const std::vector<double>& L) {
  const plot::Axis x{0, L[0], false, "x"}, y{0, L[1], false, "y"}, z{0, L[2], false, "depth z"};
  Slice xy{f.nx, f.ny, {}, x, y}, xz{f.nz, f.nx, {}, z, x}, yz{f.nz, f.ny, {}, z, y},
      proj{f.nx, f.ny, {}, x, y};
  for (int i = 0; i < f.nx; ++i)
    for (int j = 0; j < f.ny; ++j) {
      xy.v.push_back(f.at(i, j, c.k));
      double e = f.at(i, j, 0);
      for (int k = 1; k < f.nz; ++k)
        if (std::abs(f.at(i, j, k) - c.bulk) > std::abs(e - c.bulk)) e = f.at(i, j, k);
      proj.v.push_back(e);
    }
  for (int k = 0; k < f.nz; ++k) {
    for (int i = 0; i < f.nx; ++i) xz.v.push_back(f.at(i, c.j, k));
    for (int j = 0; j < f.ny; ++j) yz.v.push_back(f.at(c.i, j, k));
  }
  return {xy, xz, yz, proj};
}

std::vector<std::string> view_titles(const Cut& c, const std::vector<double>& L, const Vol& g) {
  auto pos = [&](int idx, int n, int axis) { return (idx + 0.5) * L[axis] / n; };
  char b[3][64];
  std::snprintf(b[0], sizeof b[0], "x-y at z = %.3g", pos(c.k, g.nz, 2));
  std::snprintf(b[1], sizeof b[1], "x-z at y = %.3g", pos(c.j, g.ny, 1));
  std::snprintf(b[2], sizeof b[2], "y-z at x = %.3g", pos(c.i, g.nx, 0));
  return {b[0], b[1], b[2], "extremum over depth"};
}

void frames_row(plot::Figure& f, double y, const PanelInput& in, const std::vector<double>& L) {
  const int nt = static_cast<int>(in.measurement.size(0)),
            nx = static_cast<int>(in.measurement.size(1)),
            ny = static_cast<int>(in.measurement.size(2));
  const std::vector<double> o = in.measurement.to_vector<double>();
  const fk::Tensor& pred = in.methods.front().prediction;
  const bool has_pred = pred.defined() && pred.shape() == in.measurement.shape();
  std::vector<int> ts;  // early frames change fastest
  for (int t : {0, nt / 10, nt / 3, nt - 1})
    if ((ts.empty() || t > ts.back()) && ts.size() < (has_pred ? 3u : 4u)) ts.push_back(t);
  if (ts.back() != nt - 1) ts.back() = nt - 1;
  auto frame = [&](const std::vector<double>& src, int t) {
    Slice s{nx, ny, {}, {0, L[0], false, "x"}, {0, L[1], false, "y"}};
    s.v.assign(src.begin() + static_cast<size_t>(t) * nx * ny,
               src.begin() + static_cast<size_t>(t + 1) * nx * ny);
    return s;
  };
  const plot::Range r = plot::value_range({&o});
  for (size_t c = 0; c < ts.size(); ++c)
    panel::tile(f, c * panel::tile_w(), y, frame(o, ts[c]), r, plot::Colormap::Magma,
                "Measured frame " + std::to_string(ts[c] + 1) + "/" + std::to_string(nt),
                "surface temperature");
  if (has_pred)
    panel::tile(f, ts.size() * panel::tile_w(), y, frame(pred.to_vector<double>(), nt - 1), r,
                plot::Colormap::Magma,
                "Predicted frame " + std::to_string(nt) + "/" + std::to_string(nt),
                in.methods.front().name);
  panel::bar(f, 4 * panel::tile_w() - panel::kGap + 4, y, r, plot::Colormap::Magma,
             "measured signal");
}

}  // namespace

void write_volume_panel_png(const std::string& path, const PanelInput& in) {
  FK_CHECK(in.gt.dim() == 3 && in.measurement.dim() == 3, "nefi::write_volume_panel_png",
           "a volume (nx, ny, nz) and frames (n_obs, fx, fy)",
           in.gt.shape().str() + ", " + in.measurement.shape().str());
  const Vol g{static_cast<int>(in.gt.size(0)), static_cast<int>(in.gt.size(1)),
              static_cast<int>(in.gt.size(2)), in.gt.to_vector<double>()};
  const std::vector<double> L{panel::extent_of(in, 0), panel::extent_of(in, 1),
                              panel::extent_of(in, 2)};
  const Cut c = strongest(g);
  const int rows = 2 + static_cast<int>(in.methods.size());
  plot::Figure f(static_cast<int>(4 * panel::tile_w() + panel::kBarRoom),
                 static_cast<int>(panel::kTop + rows * panel::row_h()));
  panel::figure_title(f, in.title);
  const plot::Range r = plot::value_range({&g.v});
  const std::vector<std::string> titles = view_titles(c, L, g);
  auto row = [&](int at, const Vol& v, const std::string& who, const std::string& sub) {
    const std::vector<Slice> s = views(v, c, L);
    const double y = panel::kTop + at * panel::row_h();
    for (int q = 0; q < 4; ++q)
      panel::tile(f, q * panel::tile_w(), y, s[q], r, plot::Colormap::Viridis,
                  who + ": " + titles[q], sub);
    panel::bar(f, 4 * panel::tile_w() - panel::kGap + 4, y, r, plot::Colormap::Viridis,
               in.value_label);
  };
  row(0, g, "Truth", "");
  for (size_t m = 0; m < in.methods.size(); ++m) {
    const PanelMethod& pm = in.methods[m];
    row(static_cast<int>(m) + 1, {g.nx, g.ny, g.nz, pm.reconstruction.to_vector<double>()}, pm.name,
        headline_metrics(pm.metrics));
  }
  frames_row(f, panel::kTop + (rows - 1) * panel::row_h(), in, L);
  f.save_png(path);
}

}  // namespace nefi
