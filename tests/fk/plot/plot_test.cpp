// The plotting layer's pieces: tick placement, colormaps, colour-bar ranges
// and the canvas's error paths.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "fk/error.h"
#include "fk/plot/axes.h"
#include "fk/plot/ticks.h"

namespace fk {
namespace {

TEST(PlotTicks, RoundNumbersCoveringTheRange) {
  const double ranges[][2] = {{0, 1},     {-0.37, 2.9}, {1e-4, 3.3e-4}, {12, 12345},
                              {-5, -4.2}, {0.15, 0.16}, {3, 1}};
  for (const auto& r : ranges) {
    const double lo = std::min(r[0], r[1]), hi = std::max(r[0], r[1]);
    const double step = plot::nice_step(r[0], r[1]);
    const std::vector<double> t = plot::nice_ticks(r[0], r[1]);
    ASSERT_GE(t.size(), 2u) << lo << ".." << hi;
    const double p = std::pow(10.0, std::floor(std::log10(step) + 1e-9));
    const double m = step / p;
    EXPECT_TRUE(std::abs(m - 1) < 1e-9 || std::abs(m - 2) < 1e-9 || std::abs(m - 2.5) < 1e-9 ||
                std::abs(m - 5) < 1e-9)
        << step;
    EXPECT_GE(t.front(), lo - 1e-9 * step);
    EXPECT_LT(t.front() - lo, step);
    EXPECT_LE(t.back(), hi + 1e-9 * step);
    EXPECT_LT(hi - t.back(), step);
    for (double v : t) EXPECT_NEAR(v / step, std::round(v / step), 1e-6) << v;
  }
  const std::vector<double> unit = plot::nice_ticks(0, 1), want{0, 0.2, 0.4, 0.6, 0.8, 1.0};
  ASSERT_EQ(unit.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(unit[i], want[i], 1e-12);
}

// An axis of numbered items (receivers 1..12 over [0.5, 12.5]) gets whole
// numbers: 2.5 and sub-unit steps are skipped.
TEST(PlotTicks, IntegerTicksAreWholeNumbers) {
  EXPECT_DOUBLE_EQ(plot::nice_step(0.5, 12.5, 5), 2.5);
  EXPECT_DOUBLE_EQ(plot::nice_step(0.5, 12.5, 5, true), 5);
  EXPECT_EQ(plot::nice_ticks(0.5, 12.5, 5, true), (std::vector<double>{5, 10}));
  EXPECT_DOUBLE_EQ(plot::nice_step(0.5, 6.5, 8, true), 1);
  EXPECT_EQ(plot::nice_ticks(0.5, 3.5, 8, true), (std::vector<double>{1, 2, 3}));
  EXPECT_DOUBLE_EQ(plot::nice_step(0.5, 120.5, 5, true), 25);
}

// A narrow axis whose target gives one round number inside (a detector axis
// of [-22.6, 22.6] at 170 px: step 50, 0 alone) takes a finer step.
TEST(PlotTicks, AtLeastTwoTicksInside) {
  EXPECT_EQ(plot::nice_ticks(-22.6, 22.6, 1), (std::vector<double>{-20, 0, 20}));
  EXPECT_GE(plot::nice_ticks(0.3, 0.9, 1).size(), 2u);
  // Ranges far from 0 (past 2^53 steps) end: the ticks are counted.
  EXPECT_LE(plot::nice_ticks(1e16, 1e16 + 2).size(), 1000u);
  EXPECT_LE(plot::nice_ticks(1e17, 1e17 + 16).size(), 1000u);
}

TEST(PlotTicks, FlatRangeIsWidened) {
  const std::vector<double> t = plot::nice_ticks(2, 2);
  ASSERT_GE(t.size(), 2u);
  EXPECT_LE(t.front(), 2);
  EXPECT_GE(t.back(), 2);
}

TEST(PlotTicks, LogTicksAreDecades) {
  EXPECT_EQ(plot::log_ticks(3e-4, 2), (std::vector<double>{1e-3, 1e-2, 1e-1, 1}));
  // Fewer than two decades inside: 1-2-5 values.
  EXPECT_EQ(plot::log_ticks(1.5, 30), (std::vector<double>{2, 5, 10, 20}));
  EXPECT_TRUE(plot::log_ticks(-1, 10).empty());
  EXPECT_EQ(plot::log_tick_label(1e-3), "1e-3");
  EXPECT_EQ(plot::log_tick_label(0.1), "0.1");
  EXPECT_EQ(plot::log_tick_label(1e5), "1e5");
  // Under a decade with no 1-2-5 value inside (or one): round linear
  // values, at least two, inside the range.
  for (auto [lo, hi] : {std::pair{0.3, 0.45}, {2.5, 4.5}, {0.7, 1.2}, {0.87, 0.99}}) {
    const std::vector<double> t = plot::log_ticks(lo, hi);
    EXPECT_GE(t.size(), 2u) << lo << " " << hi;
    for (double v : t) EXPECT_TRUE(v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) << v;
  }
}

TEST(PlotTicks, LabelsShowTheStep) {
  EXPECT_EQ(plot::tick_label(0.5, 0.25), "0.50");
  EXPECT_EQ(plot::tick_label(0.4, 0.2), "0.4");
  EXPECT_EQ(plot::tick_label(200, 100), "200");
  EXPECT_EQ(plot::tick_label(-1e-17, 0.1), "0.0");
  EXPECT_EQ(plot::tick_label(150000, 50000), "1.5e5");
  EXPECT_EQ(plot::tick_label(-2e-4, 1e-4), "-2e-4");
  // Ticks a step apart on a large offset read apart (all were "1e6").
  EXPECT_NE(plot::tick_label(1e6 + 0.02, 0.02), plot::tick_label(1e6 + 0.04, 0.02));
  // A 25 step needs no decimal (it was "25.0"); 2.5 and 0.25 need one more.
  EXPECT_EQ(plot::tick_label(50, 25), "50");
  EXPECT_EQ(plot::tick_label(5, 2.5), "5.0");
  EXPECT_EQ(plot::tick_label(0.75, 0.25), "0.75");
}

TEST(PlotColormap, SequentialMapsRiseInLightness) {
  for (plot::Colormap m : {plot::Colormap::Viridis, plot::Colormap::Magma}) {
    double prev = -1;
    for (int i = 0; i <= 256; ++i) {
      const double l = plot::lightness(plot::colormap(m, i / 256.0));
      EXPECT_GT(l, prev) << static_cast<int>(m) << " at " << i;
      prev = l;
    }
    EXPECT_LT(plot::lightness(plot::colormap(m, 0)), 20);
    EXPECT_GT(plot::lightness(plot::colormap(m, 1)), 85);
  }
  const plot::Rgb v0 = plot::colormap(plot::Colormap::Viridis, 0);
  EXPECT_GT(v0.b, v0.g);  // dark purple-blue
  const plot::Rgb v1 = plot::colormap(plot::Colormap::Viridis, 1);
  EXPECT_GT(v1.r, v1.b);  // yellow
  // Clamped outside [0, 1].
  EXPECT_EQ(plot::colormap(plot::Colormap::Magma, -3).r,
            plot::colormap(plot::Colormap::Magma, 0).r);
}

TEST(PlotColormap, DivergingIsLightestAtZeroAndBalanced) {
  auto L = [](double t) { return plot::lightness(plot::colormap(plot::Colormap::Diverging, t)); };
  for (int i = 1; i <= 128; ++i) {
    EXPECT_GT(L(i / 256.0), L((i - 1) / 256.0)) << i;
    EXPECT_GT(L(1 - i / 256.0), L(1 - (i - 1) / 256.0)) << i;
  }
  EXPECT_GT(L(0.5), 90);
  EXPECT_NEAR(L(0), L(1), 8);
  const plot::Rgb lo = plot::colormap(plot::Colormap::Diverging, 0),
                  hi = plot::colormap(plot::Colormap::Diverging, 1);
  EXPECT_GT(lo.b, lo.r);  // negative errors blue
  EXPECT_GT(hi.r, hi.b);  // positive red
}

TEST(PlotRanges, ColourBarRangesCoverTheData) {
  const std::vector<double> a{0.2, NAN, -1.5, 3}, b{7, std::numeric_limits<double>::infinity()};
  const plot::Range r = plot::value_range({&a, &b});
  EXPECT_EQ(r.lo, -1.5);
  EXPECT_EQ(r.hi, 7);
  const plot::Range s = plot::symmetric_range({&a});
  EXPECT_EQ(s.lo, -3);
  EXPECT_EQ(s.hi, 3);
  const std::vector<double> flat{4, 4};
  const plot::Range f = plot::value_range({&flat});
  EXPECT_LT(f.lo, 4);
  EXPECT_GT(f.hi, 4);
  const plot::Range p = plot::padded({1, 3}, 0.1);
  EXPECT_DOUBLE_EQ(p.lo, 0.8);
  EXPECT_DOUBLE_EQ(p.hi, 3.2);
  const plot::Range lg = plot::padded({1e-3, 1}, 0.1, true);
  EXPECT_NEAR(std::log10(lg.lo), -3.3, 1e-12);
  EXPECT_NEAR(std::log10(lg.hi), 0.3, 1e-12);
}

TEST(PlotFigure, BadSizeAndUnwritablePathThrow) {
  EXPECT_THROW(plot::Figure(0, 10), fk::Error);
  plot::Figure f(20, 10);
  EXPECT_THROW(f.save_png("/nonexistent-dir/x.png"), fk::Error);
  EXPECT_THROW(f.raster(0, 0, 5, 5, 2, 2, std::vector<unsigned char>(5)), fk::Error);
}

}  // namespace
}  // namespace fk
