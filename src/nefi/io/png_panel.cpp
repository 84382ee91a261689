#include "nefi/io/png_panel.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "fk/error.h"
#include "nefi/io/panel_tiles.h"
#include "nefi/io/png_volume_panel.h"

namespace nefi {
namespace {

using fk::plot::AxesSpec;
using fk::plot::Figure;
using panel::kGap;
using panel::kHead;
using panel::kTop;
using panel::minus;
using panel::plot_axis;
using panel::tile_w;

std::vector<double> values(const fk::Tensor& t) {
  return t.to_vector<double>();
}

void panel_1d(const std::string& path, const PanelInput& in) {
  const std::vector<double> g = values(in.gt), m = values(in.measurement);
  const int n = static_cast<int>(g.size());
  const DataAxis& ax = in.labels.field_axes[0];
  std::vector<double> x(n);
  for (int i = 0; i < n; ++i) x[i] = cell_centre(ax, i, n);
  std::vector<fk::plot::Series> fields{
      {"measured " + in.labels.measured.name, x, m, {0.55, 0.55, 0.55}, 1.6, 0, true},
      {"ground truth", x, g, {0.1, 0.1, 0.1}, 2.2, 6}};
  std::vector<fk::plot::Series> errors;
  for (size_t k = 0; k < in.methods.size(); ++k) {
    const PanelMethod& pm = in.methods[k];
    const std::vector<double> r = values(pm.reconstruction);
    const std::string hl = headline_metrics(pm.metrics);
    const std::string name = hl.empty() ? pm.name : pm.name + " (" + hl + ")";
    fields.push_back({name, x, r, fk::plot::series_colour(static_cast<int>(k)), 1.8});
    errors.push_back({pm.name, x, minus(r, g), fk::plot::series_colour(static_cast<int>(k)), 1.6});
  }
  std::vector<const std::vector<double>*> all;
  for (const auto& s : fields) all.push_back(&s.y);
  const fk::plot::Range vr = fk::plot::padded(fk::plot::value_range(all), 0.08);
  std::vector<const std::vector<double>*> es;
  for (const auto& s : errors) es.push_back(&s.y);
  const fk::plot::Range er = fk::plot::padded(fk::plot::symmetric_range(es), 0.08);
  const PanelLabels labels = panel_labels(in);
  const double w = 460, h = 280;
  Figure f(static_cast<int>(2 * (fk::plot::kLeftMargin + w + kGap) + 10),
           static_cast<int>(kTop + kHead + h + fk::plot::kBottomMargin));
  panel::figure_title(f, in.title);
  const double y = kTop + kHead;
  // Member by member: brace-initialising the nested axes trips GCC 12's
  // -Wmaybe-uninitialized at -O3.
  AxesSpec a;
  a.box = {fk::plot::kLeftMargin, y, w, h};
  a.x = plot_axis(ax);
  a.y = {vr.lo, vr.hi, false, labels.field_bar};
  a.title = "Fields";
  a.grid = true;
  fk::plot::draw_lines(f, a, fields);
  AxesSpec e = a;
  e.box.x = 2 * fk::plot::kLeftMargin + w + kGap;
  e.y = {er.lo, er.hi, false, labels.error_bar};
  e.title = "Signed error (reconstruction - truth)";
  fk::plot::draw_lines(f, e, errors);
  f.save_png(path);
}

// Every method's metrics in the corner the error row leaves free, `width`
// pixels wide: a method whose metrics do not fit one line (admm's
// iterations, mu, objective, ...) goes on over the next ones, indented,
// rather than over the error tiles to its right.
void metrics_table(Figure& f, double x, double y, double width, const PanelInput& in) {
  const fk::plot::Rgb ink{0.2, 0.2, 0.2};
  f.text({x, y}, "Metrics (reconstruction vs truth)",
         {13, ink, fk::plot::Align::Start, fk::plot::Align::End, true});
  double at = y + 22;
  for (const PanelMethod& pm : in.methods) {
    std::string line = pm.name + ":";
    for (const auto& [k, v] : pm.metrics) {
      const std::string item = fmt::format("  {} {:.4g}", k, v);
      if (line.size() > pm.name.size() + 1 && f.text_width(line + item, 11) > width) {
        f.text({x, at}, line, {11, ink});
        at += 16;
        line = std::string(pm.name.size(), ' ') + " ";
      }
      line += item;
    }
    f.text({x, at}, line, {11, ink});
    at += 18;
  }
  f.text({x, at + 10}, "Truth and reconstructions share the colour bar on the right;",
         {11, {0.4, 0.4, 0.4}});
  f.text({x, at + 26}, "errors are reconstruction - truth.", {11, {0.4, 0.4, 0.4}});
}

panel::Slice slice_2d(const std::vector<double>& v, int n0, int n1, const PanelInput& in) {
  return panel::slice(n0, n1, v, in.labels.field_axes[0], in.labels.field_axes[1]);
}

// `shown`: the measurement, or the first frame of a stack.
void panel_2d(const std::string& path, const PanelInput& in, const fk::Tensor& shown) {
  const int n0 = static_cast<int>(in.gt.size(0)), n1 = static_cast<int>(in.gt.size(1));
  const std::vector<double> g = values(in.gt), m = values(shown);
  std::vector<std::vector<double>> recs, errs;
  for (const PanelMethod& pm : in.methods) {
    recs.push_back(values(pm.reconstruction));
    errs.push_back(minus(recs.back(), g));
  }
  std::vector<const std::vector<double>*> es;
  for (size_t k = 0; k < recs.size(); ++k) {
    es.push_back(&errs[k]);
  }
  const fk::plot::Range fr = panel::field_range(g, recs), mr = fk::plot::value_range({&m}),
                        er = fk::plot::symmetric_range(es);
  const PanelLabels labels = panel_labels(in);
  const int k = static_cast<int>(in.methods.size());
  const double x_rec = 2 * tile_w() + panel::kBarRoom;
  Figure f(static_cast<int>(x_rec + k * tile_w() + panel::kBarRoom),
           static_cast<int>(kTop + 2 * panel::row_h()));
  panel::figure_title(f, in.title);
  const double y0 = kTop, y1 = kTop + panel::row_h();
  panel::tile(f, 0, y0, slice_2d(g, n0, n1, in), fr, fk::plot::Colormap::Viridis, "Ground truth",
              "");
  // The measurement over its own axes (the field's for an image of the
  // field's grid; a sinogram's angle and detector position otherwise).
  const std::vector<DataAxis>& ma = in.labels.measured_axes;
  const size_t d = ma.size();
  const panel::Slice ms = panel::slice(static_cast<int>(shown.size(0)),
                                       static_cast<int>(shown.size(1)), m, ma[d - 2], ma[d - 1]);
  panel::tile(f, tile_w(), y0, ms, mr, fk::plot::Colormap::Viridis, "Measurement",
              labels.measured_frame.empty() ? "own colour scale" : labels.measured_frame);
  panel::bar(f, 2 * tile_w() - kGap + 4, y0, mr, fk::plot::Colormap::Viridis, labels.measured_bar);
  for (int i = 0; i < k; ++i) {
    const PanelMethod& pm = in.methods[i];
    const double x = x_rec + i * tile_w();
    panel::tile(f, x, y0, slice_2d(recs[i], n0, n1, in), fr, fk::plot::Colormap::Viridis, pm.name,
                headline_metrics(pm.metrics));
    panel::tile(f, x, y1, slice_2d(errs[i], n0, n1, in), er, fk::plot::Colormap::Diverging,
                pm.name + " - truth", "signed error");
  }
  const double xb = x_rec + k * tile_w() - kGap + 4;
  panel::bar(f, xb, y0, fr, fk::plot::Colormap::Viridis, labels.field_bar);
  panel::bar(f, xb, y1, er, fk::plot::Colormap::Diverging, labels.error_bar);
  metrics_table(f, 16, y1 + kHead, x_rec - 16 - kGap, in);
  f.save_png(path);
}

void check_labels(const PanelInput& in) {
  FK_CHECK(in.labels.field_axes.size() == static_cast<size_t>(in.gt.dim()) &&
               in.labels.measured_axes.size() == static_cast<size_t>(in.measurement.dim()),
           "nefi::write_panel_png", "a labelled axis per axis of the truth and the measurement",
           fk::to_text(in.labels.field_axes.size()) + " for " + in.gt.shape().str() + ", " +
               fk::to_text(in.labels.measured_axes.size()) + " for " +
               in.measurement.shape().str());
}

}  // namespace

PanelLabels panel_labels(const PanelInput& in) {
  check_labels(in);
  const DataLabels& l = in.labels;
  PanelLabels out{quantity_label(l.field), error_label(l.field), quantity_label(l.measured),
                  axis_label(l.field_axes[0]),
                  axis_label(l.field_axes.size() > 1 ? l.field_axes[1] : l.field_axes[0])};
  // A 1-D measurement lies on the field's axis; a stack of frames shows a
  // frame over its last two axes, named by its first; a measured z-stack of
  // a volume shows its z slices as the frames.
  const std::vector<DataAxis>& ma = l.measured_axes;
  const size_t d = ma.size();
  const bool z_stack = d == 3 && in.measurement.shape() == in.gt.shape();
  const size_t stack = z_stack ? 2 : 0, vertical = z_stack ? 0 : (d >= 2 ? d - 2 : 0),
               horizontal = z_stack ? 1 : d - 1;
  out.measured_vertical = axis_label(ma[vertical]);
  out.measured_horizontal = axis_label(ma[horizontal]);
  if (d == 3) out.measured_frame = frame_label(ma[stack], 0, in.measurement.size(stack));
  return out;
}

std::string headline_metrics(const std::map<std::string, double>& metrics) {
  static const std::vector<std::pair<std::string, std::string>> kOrder = {
      {"psnr", "PSNR {:.1f} dB"},
      {"ssim", "SSIM {:.3f}"},
      {"relative_error", "rel. err {:.3f}"},
      {"iou", "IoU {:.3f}"},
      {"dice", "Dice {:.3f}"},
      {"surface_psnr", "surface PSNR {:.1f} dB"}};
  std::string out;
  int shown = 0;
  for (const auto& [key, form] : kOrder) {
    auto it = metrics.find(key);
    if (it == metrics.end() || shown == 2) continue;
    out += (shown++ ? ", " : "") + fmt::format(fmt::runtime(form), it->second);
  }
  if (out.empty() && !metrics.empty())
    out = fmt::format("{} {:.4g}", metrics.begin()->first, metrics.begin()->second);
  return out;
}

// A measured volume of the truth's shape (a z-stack) shown as surface frames:
// its z slices (and each prediction's) stand in for the frames.
static PanelInput z_slices_as_frames(const PanelInput& in) {
  const fk::Dims zxy{2, 0, 1};
  PanelInput out = in;
  out.measurement = in.measurement.permute(zxy).contiguous();
  const std::vector<DataAxis>& a = in.labels.measured_axes;
  out.labels.measured_axes = {a[2], a[0], a[1]};
  for (PanelMethod& pm : out.methods)
    if (pm.prediction.defined() && pm.prediction.shape() == in.gt.shape())
      pm.prediction = pm.prediction.permute(zxy).contiguous();
  return out;
}

void write_panel_png(const std::string& path, const PanelInput& in) {
  FK_CHECK(!in.methods.empty(), "nefi::write_panel_png", "at least one method", "none");
  check_labels(in);
  for (const PanelMethod& pm : in.methods)
    FK_CHECK(pm.reconstruction.shape() == in.gt.shape(), "nefi::write_panel_png",
             "reconstructions of the truth's shape " + in.gt.shape().str(),
             pm.name + ": " + pm.reconstruction.shape().str());
  if (in.gt.dim() == 3 && in.measurement.shape() == in.gt.shape())
    return write_volume_panel_png(path, z_slices_as_frames(in));
  if (in.gt.dim() == 3) return write_volume_panel_png(path, in);
  if (in.gt.dim() == 2 && in.measurement.dim() == 3) {
    // A stack of 2-D measurements (holograms at several distances): the first.
    return panel_2d(path, in, in.measurement.select(0, 0).contiguous());
  }
  FK_CHECK(in.gt.dim() >= 1 && in.gt.dim() <= 2 && in.measurement.dim() == in.gt.dim() &&
               (in.gt.dim() == 2 || in.measurement.shape() == in.gt.shape()),
           "nefi::write_panel_png", "1-D fields of one shape, or 2-D fields and a 2-D measurement",
           in.gt.shape().str() + ", " + in.measurement.shape().str());
  if (in.gt.dim() == 1) return panel_1d(path, in);
  panel_2d(path, in, in.measurement);
}

}  // namespace nefi
