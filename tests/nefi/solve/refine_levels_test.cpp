// How the level-set refinement's automatic phase count is picked
// (RefineOptions::levels_by, solve/refine.h): by the smooth field's
// histogram, or by refitting each count and keeping the lowest chi.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/random.h"
#include "nefi/field/grid_field.h"
#include "nefi/losses/data_losses.h"
#include "nefi/operators/fft_convolution.h"
#include "nefi/solve/metrics.h"
#include "nefi/solve/refine.h"

namespace {

// A slice of a head phantom with the structure of ct3d's Shepp-Logan: a
// thin skull ring of 1.0 around a brain of 0.2 holding four small features
// of 0.3, on 0 (48 x 48, unit extent), seen through a Gaussian blur of one
// cell with noise 0.005. The smooth fit is the truth blurred by 0.6 cells
// (chi 14). The features are a small, low-contrast class: the histogram's
// variance barely sees them.
struct HeadSlice {
  nefi::InverseProblem problem;
  fk::Tensor truth, smooth;
};

HeadSlice head_slice() {
  const int64_t n = 48;
  nefi::Domain d({n, n});
  std::vector<double> x(n * n, 0.0);
  const double features[4][2] = {{17, 20}, {30, 17}, {22, 31}, {31, 29}};
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const double r = std::hypot(i + 0.5 - 24.0, j + 0.5 - 24.0);
      double v = r < 15 ? 0.2 : r < 17 ? 1.0 : 0.0;
      for (const auto& f : features)
        if (std::hypot(i + 0.5 - f[0], j + 0.5 - f[1]) < 3) v = 0.3;
      x[i * n + j] = v;
    }
  HeadSlice s;
  s.truth = fk::from_vector(x, d.shape());
  const double h = 1.0 / n;
  auto blur = std::make_shared<nefi::FFTConvolution>(nefi::gaussian_psf(1.0 * h), d);
  s.problem.domain = d;
  s.problem.op = blur;
  s.problem.field = std::make_shared<nefi::GridField>(
      d.shape(), std::vector<nefi::HeadPtr>{nefi::identity_head("x")});
  s.problem.losses.add(nefi::mse_loss(), 1.0);
  const double noise_std = 0.005;
  const auto clean = blur->apply(s.truth).to_vector<double>();
  fk::Generator g(3);
  const auto e = fk::randn(d.shape(), {fk::DType::F64}, &g).to_vector<double>();
  std::vector<double> y(clean);
  for (size_t i = 0; i < y.size(); ++i) y[i] += noise_std * e[i];
  s.problem.measurement.data = fk::from_vector(y, d.shape()).to(fk::DType::F32);
  s.problem.measurement.noise_std = noise_std;
  s.smooth = nefi::FFTConvolution(nefi::gaussian_psf(0.6 * h), d).apply(s.truth);
  return s;
}

// levels_by "chi" refits every count in [2, max_levels] and keeps the
// accepted refit of lowest chi: the same report as the refit at that count
// alone, with each count's chi (checked against the refits run one by
// one). The histogram rule picks 3 phases here; the data pick more.
TEST(NefiRefineLevels, ByChiKeepsTheAcceptedRefitOfLowestChi) {
  const HeadSlice s = head_slice();
  nefi::RefineOptions o;
  o.max_levels = 6;
  std::vector<nefi::RefineReport> each;
  for (int k = 2; k <= o.max_levels; ++k) {
    nefi::RefineOptions ok = o;
    ok.levels = k;
    each.push_back(nefi::refine_edges(s.problem, s.smooth, ok));
  }
  int best = -1;
  for (int i = 0; i < static_cast<int>(each.size()); ++i)
    if (each[i].accepted && (best < 0 || each[i].chi_refined < each[best].chi_refined)) best = i;
  ASSERT_GE(best, 0);
  o.levels_by = "chi";
  const nefi::RefineReport r = nefi::refine_edges(s.problem, s.smooth, o);
  ASSERT_EQ(r.chi_by_levels.size(), each.size());
  for (size_t i = 0; i < each.size(); ++i)
    EXPECT_EQ(r.chi_by_levels[i], each[i].chi_refined) << "levels " << i + 2;
  EXPECT_TRUE(r.accepted) << r.reason;
  EXPECT_EQ(r.start_levels.size(), static_cast<size_t>(best + 2));
  EXPECT_EQ(r.chi_refined, each[best].chi_refined);
  EXPECT_EQ(r.field.to_vector<double>(), each[best].field.to_vector<double>());
  // 3 phases by the histogram; the data pick more (measured: 5, chi 0.86 ->
  // 0.72; 6 leave the band).
  nefi::RefineOptions separation = o;
  separation.levels_by = "separation";
  const nefi::RefineReport h = nefi::refine_edges(s.problem, s.smooth, separation);
  EXPECT_EQ(h.start_levels.size(), 3u);
  EXPECT_TRUE(h.chi_by_levels.empty());
  EXPECT_GT(r.start_levels.size(), 3u);
  EXPECT_LT(r.chi_refined, h.chi_refined);
}

TEST(NefiRefineLevels, BadRuleIsNamed) {
  const HeadSlice s = head_slice();
  nefi::RefineOptions o;
  o.levels_by = "variance";
  try {
    nefi::refine_edges(s.problem, s.smooth, o);
    FAIL() << "no error";
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("levels_by"), std::string::npos) << e.what();
  }
}

}  // namespace
