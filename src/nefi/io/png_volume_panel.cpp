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
  int i, j, k;        // the voxel the slices pass through
  bool above = true;  // the truth's strongest feature lies above its median
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
  return {i, j, k, g.v[best] >= bulk};
}

// The last word of an axis name ("depth z" -> "z"), for tile titles.
std::string short_name(const DataAxis& a) {
  const size_t sp = a.name.rfind(' ');
  return sp == std::string::npos ? a.name : a.name.substr(sp + 1);
}

// The four views of a volume: x-y at depth c.k, x-z at c.j, y-z at c.i, and
// per column the maximum (c.above) or minimum along depth, or for an error
// volume the value of largest magnitude: a strict intensity projection,
// every pixel a value of the volume.
std::vector<Slice> views(const Vol& f, const Cut& c, const std::vector<DataAxis>& axes,
                         bool error = false) {
  const DataAxis &x = axes[0], &y = axes[1], &z = axes[2];
  Slice xy = panel::slice(f.nx, f.ny, {}, x, y), xz = panel::slice(f.nz, f.nx, {}, z, x),
        yz = panel::slice(f.nz, f.ny, {}, z, y), proj = panel::slice(f.nx, f.ny, {}, x, y);
  for (int i = 0; i < f.nx; ++i)
    for (int j = 0; j < f.ny; ++j) {
      xy.v.push_back(f.at(i, j, c.k));
      double e = f.at(i, j, 0);
      for (int k = 1; k < f.nz; ++k) {
        const double v = f.at(i, j, k);
        e = error ? (std::abs(v) > std::abs(e) ? v : e) : c.above ? std::max(e, v) : std::min(e, v);
      }
      proj.v.push_back(e);
    }
  for (int k = 0; k < f.nz; ++k) {
    for (int i = 0; i < f.nx; ++i) xz.v.push_back(f.at(i, c.j, k));
    for (int j = 0; j < f.ny; ++j) yz.v.push_back(f.at(c.i, j, k));
  }
  return {xy, xz, yz, proj};
}

std::vector<std::string> view_titles(const Cut& c, const std::vector<DataAxis>& axes,
                                     const Vol& g) {
  const std::string x = short_name(axes[0]), y = short_name(axes[1]), z = short_name(axes[2]);
  auto at = [&](int axis, int idx, int n) {
    const DataAxis& a = axes[axis];
    return short_name(a) + " = " + short_number(cell_centre(a, idx, n)) + " " + a.unit;
  };
  return {x + "-" + y + " at " + at(2, c.k, g.nz), x + "-" + z + " at " + at(1, c.j, g.ny),
          y + "-" + z + " at " + at(0, c.i, g.nx),
          (c.above ? "maximum over " : "minimum over ") + z};
}

// The measured frames (n_obs, rows, cols) over their last two axes, or the
// one frame of a 2-D measurement, and the first method's prediction of the
// last frame shown (a z-stack's: of the frame at focus).
void frames_row(fk::plot::Figure& f, double y, const PanelInput& in, int focus) {
  const std::vector<DataAxis>& ma = in.labels.measured_axes;
  const bool stack = in.measurement.dim() == 3;
  const int nt = stack ? static_cast<int>(in.measurement.size(0)) : 1;
  const size_t d = ma.size();
  const int nx = static_cast<int>(in.measurement.size(stack ? 1 : 0)),
            ny = static_cast<int>(in.measurement.size(stack ? 2 : 1));
  const std::vector<double> o = in.measurement.to_vector<double>();
  const fk::Tensor& pred = in.methods.front().prediction;
  const bool has_pred = pred.defined() && pred.shape() == in.measurement.shape();
  const std::vector<int> ts = shown_frames(nt, focus, has_pred);
  const int predicted = focus >= 0 ? focus : nt - 1;
  auto frame = [&](const std::vector<double>& src, int t) {
    Slice s = panel::slice(nx, ny, {}, ma[d - 2], ma[d - 1]);
    s.v.assign(src.begin() + static_cast<size_t>(t) * nx * ny,
               src.begin() + static_cast<size_t>(t + 1) * nx * ny);
    return s;
  };
  auto name = [&](int t) { return stack ? ", " + frame_label(ma[0], t, nt) : std::string(); };
  const fk::plot::Range r = fk::plot::value_range({&o});
  for (size_t c = 0; c < ts.size(); ++c)
    panel::tile(f, c * panel::tile_w(), y, frame(o, ts[c]), r, fk::plot::Colormap::Magma,
                "Measured" + name(ts[c]), in.labels.measured.name);
  if (has_pred)
    panel::tile(f, static_cast<double>(ts.size()) * panel::tile_w(), y,
                frame(pred.to_vector<double>(), predicted), r, fk::plot::Colormap::Magma,
                "Predicted" + name(predicted), in.methods.front().name);
  panel::bar(f, 4 * panel::tile_w() - panel::kGap + 4, y, r, fk::plot::Colormap::Magma,
             quantity_label(in.labels.measured));
}

}  // namespace

std::vector<int> shown_frames(int nt, int focus, bool has_prediction) {
  std::vector<int> ts;
  if (focus >= 0) {
    for (int t : {focus - std::max(1, nt / 4), focus, focus + std::max(1, nt / 4)})
      if (t >= 0 && t < nt) ts.push_back(t);
    return ts;
  }
  for (int t : {0, nt / 10, nt / 3, nt - 1})
    if ((ts.empty() || t > ts.back()) && ts.size() < (has_prediction ? 3u : 4u)) ts.push_back(t);
  if (ts.back() != nt - 1) ts.back() = nt - 1;
  return ts;
}

void write_volume_panel_png(const std::string& path, const PanelInput& in) {
  // Frames (n_obs, rows, cols) or one 2-D frame (sensor traces) get a row;
  // a measurement of another rank none.
  const bool frames = in.measurement.dim() == 3 || in.measurement.dim() == 2;
  FK_CHECK(in.gt.dim() == 3 && in.labels.field_axes.size() == 3 &&
               in.labels.measured_axes.size() == static_cast<size_t>(in.measurement.dim()),
           "nefi::write_volume_panel_png",
           "a volume (nx, ny, nz) and frames (n_obs, rows, cols) or traces, an axis label each",
           in.gt.shape().str() + ", " + in.measurement.shape().str());
  const Vol g{static_cast<int>(in.gt.size(0)), static_cast<int>(in.gt.size(1)),
              static_cast<int>(in.gt.size(2)), in.gt.to_vector<double>()};
  const std::vector<DataAxis>& axes = in.labels.field_axes;
  const Cut c = strongest(g);
  // Truth, then per method its reconstruction and its signed error.
  const int rows = (frames ? 2 : 1) + 2 * static_cast<int>(in.methods.size());
  fk::plot::Figure f(static_cast<int>(4 * panel::tile_w() + panel::kBarRoom),
                     static_cast<int>(panel::kTop + rows * panel::row_h()));
  panel::figure_title(f, in.title);
  std::vector<std::vector<double>> recs, errs;
  for (const PanelMethod& pm : in.methods) {
    recs.push_back(pm.reconstruction.to_vector<double>());
    errs.push_back(panel::minus(recs.back(), g.v));
  }
  std::vector<const std::vector<double>*> es;
  for (const std::vector<double>& e : errs) es.push_back(&e);
  const fk::plot::Range r = panel::field_range(g.v, recs), er = fk::plot::symmetric_range(es);
  std::vector<std::string> titles = view_titles(c, axes, g), error_titles = titles;
  error_titles[3] = "largest |error| over " + short_name(axes[2]);
  auto row = [&](int at, const std::vector<double>& v, bool error, const std::string& who,
                 const std::string& sub) {
    const std::vector<Slice> s = views({g.nx, g.ny, g.nz, v}, c, axes, error);
    const double y = panel::kTop + at * panel::row_h();
    const fk::plot::Colormap map =
        error ? fk::plot::Colormap::Diverging : fk::plot::Colormap::Viridis;
    for (int q = 0; q < 4; ++q)
      panel::tile(f, q * panel::tile_w(), y, s[q], error ? er : r, map,
                  who + ": " + (error ? error_titles : titles)[q], sub);
    panel::bar(f, 4 * panel::tile_w() - panel::kGap + 4, y, error ? er : r, map,
               error ? error_label(in.labels.field) : quantity_label(in.labels.field));
  };
  row(0, g.v, false, "Truth", "");
  for (size_t m = 0; m < in.methods.size(); ++m) {
    const PanelMethod& pm = in.methods[m];
    const int at = 1 + 2 * static_cast<int>(m);
    row(at, recs[m], false, pm.name, headline_metrics(pm.metrics));
    row(at + 1, errs[m], true, pm.name + " - truth", "signed error");
  }
  // A z-stack: frames along the truth's depth axis, one per slice.
  const std::vector<DataAxis>& ma = in.labels.measured_axes;
  const bool z_stack = in.measurement.dim() == 3 && in.measurement.size(0) == g.nz &&
                       ma[0].frames.empty() && ma[0].unit == axes[2].unit &&
                       ma[0].lo == axes[2].lo && ma[0].hi == axes[2].hi;
  if (frames) frames_row(f, panel::kTop + (rows - 1) * panel::row_h(), in, z_stack ? c.k : -1);
  f.save_png(path);
}

}  // namespace nefi
