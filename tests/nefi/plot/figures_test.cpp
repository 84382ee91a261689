// Every figure type rendered from synthetic data, decoded back (stb_image)
// and measured against the layout's stated size; no golden images.
#define STB_IMAGE_IMPLEMENTATION
#include <gtest/gtest.h>
#include <stb/stb_image.h>

#include <cmath>
#include <filesystem>
#include <vector>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/plot/axes.h"
#include "nefi/bench/summary_png.h"
#include "nefi/io/history_png.h"
#include "nefi/io/panel_tiles.h"
#include "nefi/io/png_panel.h"
#include "nefi/io/png_volume_panel.h"
#include "scratch_dir.h"

namespace nefi {
namespace {

struct Decoded {
  int w = 0, h = 0;
  double non_white = 0;  // fraction of pixels that are not white
};

// A PNG's pixels as RGB bytes, row-major (empty when it cannot be read).
struct Pixels {
  int w = 0, h = 0;
  std::vector<unsigned char> rgb;
  const unsigned char* at(int row, int col) const {
    return rgb.data() + 3 * (static_cast<size_t>(row) * w + col);
  }
};

Pixels load(const std::string& path) {
  Pixels p;
  int n = 0;
  unsigned char* px = stbi_load(path.c_str(), &p.w, &p.h, &n, 3);
  EXPECT_NE(px, nullptr) << path;
  if (px) p.rgb.assign(px, px + 3 * static_cast<size_t>(p.w) * p.h);
  stbi_image_free(px);
  return p;
}

Decoded decode(const std::string& path) {
  const Pixels p = load(path);
  Decoded d{p.w, p.h, 0};
  if (p.rgb.empty()) return d;
  size_t count = 0;
  for (size_t i = 0; i < p.rgb.size(); i += 3)
    if (p.rgb[i] < 250 || p.rgb[i + 1] < 250 || p.rgb[i + 2] < 250) ++count;
  d.non_white = static_cast<double>(count) / (static_cast<double>(p.w) * p.h);
  return d;
}

std::string tmp(const std::string& name) {
  const std::string p = (fieldkit_test::scratch_dir() / name).string();
  std::filesystem::remove(p);
  return p;
}

TEST(PlotFigure, DrawsAndSavesAnAxesWithAColourBar) {
  fk::plot::Figure f(400, 300);
  fk::plot::AxesSpec a;
  a.box = {60, 30, 200, 200};
  a.y_down = true;
  fk::plot::draw_image(f, a, {2, 3, {0, 1, 2, 3, 4, 5}, 0, 5, fk::plot::Colormap::Viridis});
  fk::plot::draw_colorbar(f, {280, 30, 14, 200}, 0, 5, fk::plot::Colormap::Viridis, "u");
  const std::string p = tmp("axes.png");
  f.save_png(p);
  const Decoded d = decode(p);
  EXPECT_EQ(d.w, 400);
  EXPECT_EQ(d.h, 300);
  EXPECT_GT(d.non_white, 0.3);
}

// A series of one point (a one-step history, a finite value between NaNs)
// is a dot: as a polyline of one point it drew nothing.
TEST(PlotFigure, AOnePointSeriesIsADot) {
  fk::plot::Figure f(200, 200);
  fk::plot::AxesSpec a;
  a.box = {40, 20, 140, 140};
  a.x = {0, 2};
  a.y = {0, 2};
  fk::plot::draw_lines(f, a, {{"", {1.0, 1.5, 2.0}, {1.0, NAN, NAN}, {1, 0, 0}, 1.6}});
  const std::string p = tmp("one_point.png");
  f.save_png(p);
  const Pixels px = load(p);
  ASSERT_FALSE(px.rgb.empty());
  int red = 0;
  for (size_t i = 0; i < px.rgb.size(); i += 3)
    red += px.rgb[i] > 200 && px.rgb[i + 1] < 90 && px.rgb[i + 2] < 90;
  EXPECT_GT(red, 3);
}

fk::Tensor ramp(const fk::Dims& shape, double scale) {
  std::vector<double> v(shape.numel());
  for (size_t i = 0; i < v.size(); ++i) v[i] = scale * std::sin(0.3 * static_cast<double>(i));
  return fk::from_vector(v, shape);
}

// Labels with an axis in mm per field axis; the measurement's axes in mm,
// after a stack of frames at times "t = ..." when it has three.
DataLabels labels(const fk::Dims& field, const fk::Dims& measured) {
  DataLabels l{{"intensity", "I", "a.u."}, {}, {"signal", "s", "V"}, {}};
  for (int a = 0; a < field.size(); ++a)
    l.field_axes.push_back(span_axis("axis " + std::to_string(a), "mm", 0, 2.0 + a));
  for (int a = 0; a < measured.size(); ++a)
    l.measured_axes.push_back(a == 0 && measured.size() == 3
                                  ? frames_axis("time", "t = ", evenly(0.1, 0.1, measured[0]), "s")
                                  : span_axis("axis " + std::to_string(a), "mm", -1, 1));
  return l;
}

TEST(PlotPanel, OneDimensionalIsALinePlot) {
  const fk::Tensor gt = ramp({40}, 1), rec = ramp({40}, 0.9);
  const std::string p = tmp("panel1d.png");
  write_panel_png(
      p, {"toy", gt, ramp({40}, 1.1), labels({40}, {40}), {{"neural", rec, {}, {{"psnr", 30}}}}});
  const Decoded d = decode(p);
  EXPECT_EQ(d.w, 1098);  // 2 * (58 + 460 + 26) + 10
  EXPECT_EQ(d.h, 410);   // 40 + 46 + 280 + 44
  EXPECT_GT(d.non_white, 0.05);
}

TEST(PlotPanel, TwoDimensionalHasAColumnPerMethodAndAnErrorRow) {
  const fk::Dims s{12, 16};
  const fk::Tensor gt = ramp(s, 1);
  const std::string p = tmp("panel2d.png");
  write_panel_png(p, {"deconv",
                      gt,
                      ramp(s, 0.5),
                      labels(s, s),
                      {{"neural", ramp(s, 0.9), {}, {{"psnr", 30}, {"ssim", 0.9}}},
                       {"grid", ramp(s, 1.1), {}, {}}}});
  const Decoded d = decode(p);
  EXPECT_EQ(d.w, static_cast<int>(4 * panel::tile_w() + 2 * panel::kBarRoom));
  EXPECT_EQ(d.h, static_cast<int>(panel::kTop + 2 * panel::row_h()));
  EXPECT_GT(d.non_white, 0.2);  // the 2 x 3 mm field's tiles to scale, 2/3 of the square
  EXPECT_THROW(write_panel_png(p, {"x", gt, gt, labels(s, s), {{"bad", ramp({3, 3}, 1), {}, {}}}}),
               fk::Error);
  EXPECT_THROW(write_panel_png(p, {"x", gt, gt, labels(s, s), {}}), fk::Error);
  // Labels without an axis per array axis are an error, not a guess.
  EXPECT_THROW(write_panel_png(p, {"x", gt, gt, labels({12}, s), {{"neural", gt, {}, {}}}}),
               fk::Error);
}

TEST(PlotPanel, VolumeHasSlicesPerMethodAndAFramesRow) {
  const fk::Dims v{8, 6, 4};
  const fk::Tensor gt = ramp(v, 1), frames = ramp({5, 8, 6}, 3);
  const std::string p = tmp("panel3d.png");
  write_panel_png(p, {"thermal",
                      gt,
                      frames,
                      labels(v, {5, 8, 6}),
                      {{"nefty", ramp(v, 0.8), frames, {{"psnr", 20}}}, {"tsr", gt, {}, {}}}});
  const Decoded d = decode(p);
  EXPECT_EQ(d.w, static_cast<int>(4 * panel::tile_w() + panel::kBarRoom));
  // truth, each method and its signed error, the frames
  EXPECT_EQ(d.h, static_cast<int>(panel::kTop + 6 * panel::row_h()));
  EXPECT_GT(d.non_white, 0.3);
}

// The shared field scale takes in a reconstruction's ringing (a fifth of
// its cells below the truth's range), not one wild cell.
TEST(PlotPanel, TheFieldScaleShowsRingingButNotOneWildCell) {
  std::vector<double> truth(100), rec(100);
  for (int i = 0; i < 100; ++i) {
    truth[i] = i / 99.0;
    rec[i] = i % 5 == 0 ? -0.4 : truth[i];
  }
  rec[50] = 100;
  rec[51] = -100;
  const fk::plot::Range r = panel::field_range(truth, {rec});
  EXPECT_DOUBLE_EQ(r.lo, -0.4);
  EXPECT_DOUBLE_EQ(r.hi, 1.0);
  EXPECT_DOUBLE_EQ(panel::field_range(truth, {}).lo, 0.0);
  // A truth with no finite value: the reconstructions' range alone.
  const std::vector<double> none(100, std::nan(""));
  const fk::plot::Range only = panel::field_range(none, {truth});
  EXPECT_DOUBLE_EQ(only.lo, truth[1]);
  EXPECT_DOUBLE_EQ(only.hi, truth[98]);
}

// A series shows its first, early and last frames; a z-stack the frame at the
// slices' depth between two defocused ones (its ends lie outside the sample).
TEST(PlotPanel, FramesShownOfASeriesAndOfAZStack) {
  EXPECT_EQ(shown_frames(30, -1, false), (std::vector<int>{0, 3, 10, 29}));
  EXPECT_EQ(shown_frames(30, -1, true), (std::vector<int>{0, 3, 29}));
  EXPECT_EQ(shown_frames(1, -1, true), (std::vector<int>{0}));
  EXPECT_EQ(shown_frames(16, 8, true), (std::vector<int>{4, 8, 12}));
  EXPECT_EQ(shown_frames(16, 0, true), (std::vector<int>{0, 4}));
  EXPECT_EQ(shown_frames(3, 2, true), (std::vector<int>{1, 2}));
  EXPECT_EQ(shown_frames(1, 0, true), (std::vector<int>{0}));
}

// Two length axes in one unit are drawn to scale, up to kMaxStretch, and a
// stretch beyond it is said; other axis pairs fill the square tile.
TEST(PlotPanel, LengthAxesAreDrawnToScale) {
  const DataAxis x = span_axis("x", "mm", 0, 10), z = span_axis("depth z", "mm", 0, 1),
                 y = span_axis("y", "mm", 0, 5), t = span_axis("time t", "s", 0, 10);
  EXPECT_DOUBLE_EQ(panel::slice(4, 4, {}, z, x).aspect, 0.1);
  EXPECT_DOUBLE_EQ(panel::slice(4, 4, {}, x, y).aspect, 2.0);
  EXPECT_EQ(panel::slice(4, 4, {}, t, x).aspect, 0);  // seconds against millimetres
  // Drawn rows: count the coloured pixels down the tile's middle column.
  const auto drawn_height = [](const panel::Slice& s) {
    fk::plot::Figure f(static_cast<int>(panel::tile_w()), static_cast<int>(panel::row_h()));
    panel::Slice t = s;
    t.v.assign(16, 0.0);
    panel::tile(f, 0, 0, t, {-1, 1}, fk::plot::Colormap::Viridis, "t", "");
    const std::string p = tmp("tile.png");
    f.save_png(p);
    const Pixels px = load(p);
    int rows = 0;
    const int col = static_cast<int>(fk::plot::kLeftMargin + panel::kTile / 2);
    for (int r = 0; !px.rgb.empty() && r < px.h; ++r) {
      const unsigned char* q = px.at(r, col);
      // viridis' middle (33, 145, 140), not ink, paper or a title
      rows += std::abs(q[0] - 33) < 25 && std::abs(q[1] - 145) < 25 && std::abs(q[2] - 140) < 25;
    }
    return rows;
  };
  EXPECT_NEAR(drawn_height(panel::slice(4, 4, {}, x, y)), panel::kTile, 3);
  EXPECT_NEAR(drawn_height(panel::slice(4, 4, {}, y, x)), panel::kTile / 2, 3);
  EXPECT_NEAR(drawn_height(panel::slice(4, 4, {}, z, x)), panel::kTile / panel::kMaxStretch, 3);
  EXPECT_NEAR(drawn_height(panel::slice(4, 4, {}, t, x)), panel::kTile, 3);
}

// Measurements that are not the truth's shape: a sinogram (its own axes), a
// stack of holograms (the first plane) and a measured z-stack of a volume
// (its slices as frames) each give the panel of their truth's dimension.
TEST(PlotPanel, MeasurementsOfAnotherShape) {
  const fk::Dims s{12, 16};
  const fk::Tensor gt = ramp(s, 1);
  const int w2 = static_cast<int>(3 * panel::tile_w() + 2 * panel::kBarRoom);
  const int h2 = static_cast<int>(panel::kTop + 2 * panel::row_h());
  for (const fk::Dims& m : {fk::Dims{20, 9}, fk::Dims{3, 12, 16}}) {
    const std::string p = tmp("panel_other.png");
    write_panel_png(p, {"ct", gt, ramp(m, 2), labels(s, m), {{"neural", ramp(s, 0.9), {}, {}}}});
    const Decoded d = decode(p);
    EXPECT_EQ(d.w, w2) << m.str();
    EXPECT_EQ(d.h, h2) << m.str();
  }
  const fk::Dims v{8, 6, 4};
  const std::string p = tmp("panel_zstack.png");
  DataLabels zl = labels(v, {});
  zl.measured_axes = zl.field_axes;
  write_panel_png(
      p, {"zstack", ramp(v, 1), ramp(v, 2), zl, {{"neural", ramp(v, 0.8), ramp(v, 1.5), {}}}});
  const Decoded d = decode(p);
  EXPECT_EQ(d.w, static_cast<int>(4 * panel::tile_w() + panel::kBarRoom));
  EXPECT_EQ(d.h, static_cast<int>(panel::kTop + 4 * panel::row_h()));
  // Sensor traces (sensors, times) of a volume: one measured frame.
  write_panel_png(p, {"traces",
                      ramp(v, 1),
                      ramp({10, 7}, 2),
                      labels(v, {10, 7}),
                      {{"neural", ramp(v, 0.8), {}, {}}}});
  EXPECT_EQ(decode(p).h, static_cast<int>(panel::kTop + 4 * panel::row_h()));
  EXPECT_THROW(
      write_panel_png(
          p, {"x", gt, ramp({4, 4, 4, 4}, 1), labels(s, {4, 4, 4, 4}), {{"neural", gt, {}, {}}}}),
      fk::Error);
}

TEST(PlotPanel, HeadlineMetricsPreferPsnrAndSsim) {
  EXPECT_EQ(headline_metrics({{"mse", 0.1}, {"psnr", 31.24}, {"ssim", 0.9123}}),
            "PSNR 31.2 dB, SSIM 0.912");
  EXPECT_EQ(headline_metrics({{"relative_error", 0.25}}), "rel. err 0.250");
  EXPECT_EQ(headline_metrics({{"foo", 2}}), "foo 2");
  EXPECT_EQ(headline_metrics({}), "");
}

TEST(PlotHistory, LossesPerStepWithStages) {
  Result r;
  r.history.columns = {"step",     "global_step", "stage",     "lr",
                       "progress", "total",       "data_loss", "tv"};
  for (int i = 0; i < 60; ++i)
    r.history.rows.push_back({static_cast<double>(i % 30), static_cast<double>(i),
                              static_cast<double>(i / 30), 1e-2 * std::exp(-0.05 * (i % 30)),
                              (i % 30) / 30.0, 1.0 / (1 + i), 0.5 / (1 + i), 0.0});
  r.stages.resize(2);
  r.stages[0].name = "coarse";
  r.stages[1].name = "fine";
  const std::string p = tmp("history.png");
  write_history_png(p, "toy: history", {{"neural", &r}, {"wiener", nullptr}});
  const Decoded d = decode(p);
  EXPECT_EQ(d.w, 1062);  // 2 * 58 + 1.6 * 560 + 30 + 20
  EXPECT_EQ(d.h, 368);   // 40 + 34 + 250 + 44
  EXPECT_GT(d.non_white, 0.03);
  Result empty;
  EXPECT_THROW(write_history_png(p, "t", {{"grid", &empty}}), fk::Error);
}

TEST(PlotSummary, MetricDistributionsPerMethod) {
  bench::Protocol proto;
  proto.instance = "toy1d";
  proto.methods = {"neural", "grid"};
  std::vector<bench::Row> rows;
  for (int s = 0; s < 5; ++s)
    for (const char* m : {"neural", "grid"}) {
      bench::Row r;
      r.method = m;
      r.unit = s;
      r.metrics = {{"psnr", 25.0 + s + (m[0] == 'g')},
                   {"mse", 0.01 * (s + 1) * (1 + (m[0] == 'g'))}};
      // A property of the data (one value per unit, every method's) and one
      // method's own diagnostic: no panel for either.
      r.metrics["blurred_psnr"] = 21.0 + s;
      if (m[0] == 'n') r.metrics["admm_iterations"] = 10.0 + s;
      r.time_s = 0.1 * (s + 1);
      rows.push_back(r);
    }
  rows.back().metrics.clear();  // a failed run is left out
  rows.back().error = "diverged";
  const std::string p = tmp("summary.png");
  bench::write_summary_png(p, proto, rows);
  const Decoded d = decode(p);
  EXPECT_EQ(d.w, 1186);  // three plots (mse, psnr, time_s) of 58 + 300 + 34, and 10
  EXPECT_EQ(d.h, 342);   // 44 + 34 + 220 + 44 (one row: no blurred_psnr, admm_iterations)
  EXPECT_GT(d.non_white, 0.03);
  // One method: every metric it reports has a panel (psnr, mse, blurred_psnr,
  // admm_iterations and time_s: two rows), and a tie everywhere stays.
  proto.methods = {"neural"};
  std::vector<bench::Row> one;
  for (const bench::Row& r : rows)
    if (r.method == "neural") one.push_back(r);
  bench::write_summary_png(p, proto, one);
  EXPECT_EQ(decode(p).h, 44 + 2 * (34 + 220 + 44));
  for (bench::Row& r : rows) r.metrics["f1"] = 1.0;  // every method perfect everywhere
  proto.methods = {"neural", "grid"};
  bench::write_summary_png(p, proto, rows);
  EXPECT_EQ(decode(p).h, 44 + 2 * (34 + 220 + 44));  // mse, psnr, f1, time_s
}

}  // namespace
}  // namespace nefi
