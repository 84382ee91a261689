#include "nefi/bench/stats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "fk/error.h"

namespace {

using nefi::bench::mean_ci;
using nefi::bench::student_t_cdf;
using nefi::bench::student_t_quantile;

TEST(BenchStats, StudentTQuantilesMatchTables) {
  // Two-sided 95 % critical values (t_{0.975, df}) from standard tables.
  const std::pair<double, double> table[] = {{1, 12.7062047},  {2, 4.30265273},   {3, 3.18244631},
                                             {4, 2.77644511},  {5, 2.57058184},   {10, 2.22813885},
                                             {30, 2.04227246}, {1000, 1.96233908}};
  for (const auto& [df, t] : table) EXPECT_NEAR(student_t_quantile(0.975, df), t, 2e-7) << df;
  // t_{0.995, 4} = 4.604095 and symmetry.
  EXPECT_NEAR(student_t_quantile(0.995, 4), 4.60409487, 2e-7);
  EXPECT_NEAR(student_t_quantile(0.025, 7), -student_t_quantile(0.975, 7), 1e-9);
  // df = 1 is the Cauchy distribution: F(t) = 1/2 + atan(t) / pi.
  for (double t : {-3.0, -0.5, 0.0, 0.7, 5.0})
    EXPECT_NEAR(student_t_cdf(t, 1), 0.5 + std::atan(t) / M_PI, 1e-12) << t;
  // df = 2: F(t) = 1/2 + t / (2 sqrt(2 + t^2)).
  for (double t : {-2.0, 0.3, 4.0})
    EXPECT_NEAR(student_t_cdf(t, 2), 0.5 + t / (2 * std::sqrt(2 + t * t)), 1e-12) << t;
  EXPECT_THROW(student_t_quantile(1.0, 3), fk::Error);
  EXPECT_THROW(student_t_quantile(0.5, 0), fk::Error);
}

TEST(BenchStats, MeanCIOnKnownData) {
  // 1..5: mean 3, s = sqrt(2.5), half = t_{0.975,4} s / sqrt(5).
  const auto ci = mean_ci({1, 2, 3, 4, 5});
  EXPECT_EQ(ci.n, 5);
  EXPECT_DOUBLE_EQ(ci.mean, 3.0);
  EXPECT_NEAR(ci.half, 2.77644511 * std::sqrt(2.5) / std::sqrt(5.0), 1e-7);
  // Non-finite values (failed runs) are dropped.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const auto c2 = mean_ci({nan, 10, 14, nan});
  EXPECT_EQ(c2.n, 2);
  EXPECT_DOUBLE_EQ(c2.mean, 12.0);
  EXPECT_NEAR(c2.half, 12.7062047 * std::sqrt(8.0) / std::sqrt(2.0), 1e-6);
  // One value: no interval; none: no mean.
  EXPECT_TRUE(std::isnan(mean_ci({4}).half));
  EXPECT_TRUE(std::isnan(mean_ci({nan}).mean));
  // 90 % level uses t_{0.95}.
  EXPECT_NEAR(mean_ci({1, 2, 3, 4, 5}, 0.90).half, 2.13184679 * std::sqrt(0.5), 1e-7);
  EXPECT_THROW(mean_ci({1, 2}, 1.5), fk::Error);
}

TEST(BenchStats, SceneMeanCICountsScenesNotRuns) {
  // Two scenes, three seeds each: a deterministic method repeats its value
  // over the seeds, so the interval is the one of the two scene means.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const auto ci = nefi::bench::scene_mean_ci({10, 10, 10, 14, 14, 14}, {0, 0, 0, 1, 1, 1});
  EXPECT_EQ(ci.n, 2);
  EXPECT_EQ(ci.runs, 6);
  EXPECT_DOUBLE_EQ(ci.mean, 12.0);
  EXPECT_NEAR(ci.half, mean_ci({10, 14}).half, 1e-12);
  EXPECT_GT(ci.half, 4 * mean_ci({10, 10, 10, 14, 14, 14}).half);  // what counting runs gave
  // A scene's missing values leave its others' mean; a scene without any is
  // left out (one scene left: no interval).
  const auto part = nefi::bench::scene_mean_ci({1, nan, 3, nan}, {0, 0, 0, 1});
  EXPECT_EQ(part.n, 1);
  EXPECT_EQ(part.runs, 2);
  EXPECT_DOUBLE_EQ(part.mean, 2.0);
  EXPECT_TRUE(std::isnan(part.half));
  EXPECT_THROW(nefi::bench::scene_mean_ci({1, 2}, {0}), fk::Error);
}

}  // namespace
