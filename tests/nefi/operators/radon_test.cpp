#include "nefi/operators/radon.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numbers>
#include <string>

#include "fk/factory.h"
#include "fk/random.h"
#include "fk/testing.h"
#include "nefi/baselines/fbp.h"
#include "nefi/instances/sparse_view_ct_data.h"
#include "nefi/operators/operator_checks.h"
#include "nefi/operators/radon_device.h"
#include "nefi/solve/metrics.h"

namespace {

using nefi::test::dot;
using nefi::test::rnd;

// At th = 0 (one bin and one sample per pixel) the samples are the cell
// centres: the projection is the sum over axis 1 times the cell size.
TEST(NefiRadon, ZeroAngleIsTheScaledRowSum) {
  nefi::RadonOperator op(nefi::Domain({10, 10}, {2.0, 2.0}), {3, std::numbers::pi, 1, 1});
  const fk::Tensor x = rnd({10, 10}, 1);
  const auto xv = x.to_vector<double>();
  const auto y = op.apply(x).to_vector<double>();
  ASSERT_EQ(op.output_shape({10, 10}), fk::Dims({3, 10}));
  for (int i = 0; i < 10; ++i) {
    double s = 0;
    for (int j = 0; j < 10; ++j) s += xv[i * 10 + j] * 0.2;
    EXPECT_NEAR(y[i], s, 1e-13);
  }
}

TEST(NefiRadon, AdjointGradcheckAndBatch) {
  for (nefi::RadonGeometry g :
       {nefi::RadonGeometry{5, std::numbers::pi, 1, 1}, nefi::RadonGeometry{4, 2.0, 2, 3}}) {
    nefi::RadonOperator op(nefi::Domain({7, 7}, {1.5, 1.5}), g);
    const fk::Tensor x = rnd({7, 7}, 2), y = rnd(op.output_shape({7, 7}), 3);
    const double lhs = dot(op.apply(x), y), rhs = dot(x, op.vjp(x, y));
    EXPECT_NEAR(lhs, rhs, 1e-13 * (1 + std::abs(lhs)));
  }
  nefi::RadonOperator op(nefi::Domain({5, 5}), {3, std::numbers::pi, 1, 2});
  fk::Tensor a = rnd({5, 5}, 4);
  a.set_requires_grad(true);
  auto fn = [&](const std::vector<fk::Tensor>& in) { return op.apply(in[0]); };
  EXPECT_EQ(fk::testing::gradcheck(fn, {a}), "");
  const fk::Tensor xb = rnd({2, 5, 5}, 5);
  const auto yb = op.apply(xb).to_vector<double>();
  for (int64_t b = 0; b < 2; ++b) {
    const auto yi = op.apply(xb.select(0, b).contiguous()).to_vector<double>();
    for (size_t p = 0; p < yi.size(); ++p) EXPECT_NEAR(yb[b * yi.size() + p], yi[p], 1e-15);
  }
  EXPECT_EQ(op.output_shape({2, 5, 5}), fk::Dims({2, 3, 5}));
  EXPECT_THROW(op.apply(rnd({5, 4}, 1)), fk::Error);
  EXPECT_THROW(nefi::RadonOperator(nefi::Domain({5, 4}), {}), fk::Error);
  EXPECT_THROW(nefi::RadonOperator(nefi::Domain({5, 5}), {0, 1.0, 1, 1}), fk::Error);
  // An infinite angle range put view 0 at inf * 0 = NaN: all-zero views.
  EXPECT_THROW(
      nefi::RadonOperator(nefi::Domain({5, 5}), {3, std::numeric_limits<double>::infinity(), 1, 1}),
      fk::Error);
}

// A smooth Gaussian inside the inscribed circle: the discrete projection of
// its cell averages approaches the exact line integrals.
TEST(NefiRadon, ProjectsASmoothObjectLikeTheExactLineIntegrals) {
  nefi::ct::Scene sc;
  sc.blobs.push_back({1.0, 0.45, 0.55, 0.08});
  const int64_t n = 64, views = 8;
  nefi::RadonOperator op(nefi::Domain({n, n}), {views, std::numbers::pi, 1, 1});
  const auto img = nefi::ct::render(sc, n, 4, 1.0);
  const auto y = op.apply(fk::from_vector(img, {n, n})).to_vector<double>();
  const auto exact = nefi::ct::sinogram(sc, views, std::numbers::pi, n, 8, 1.0);
  double err = 0, scale = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    err = std::max(err, std::abs(y[i] - exact[i]));
    scale = std::max(scale, exact[i]);
  }
  EXPECT_LT(err, 0.01 * scale);
  // Ellipse chords: the unit-value disk of radius r has chord 2 sqrt(r^2 - s^2).
  nefi::ct::Scene disk;
  disk.ellipses.push_back({1.0, 0.5, 0.5, 0.3, 0.3, 0.0});
  EXPECT_NEAR(disk.line_integral(0.7, 0.1, 1.0), 2 * std::sqrt(0.09 - 0.01), 1e-14);
  EXPECT_EQ(disk.line_integral(0.7, 0.31, 1.0), 0.0);
}

// Filtered back-projection of dense-view exact data recovers a smooth object.
TEST(NefiRadon, FilteredBackProjectionInvertsDenseViews) {
  nefi::ct::Scene sc;
  sc.blobs.push_back({0.8, 0.4, 0.55, 0.1});
  sc.blobs.push_back({0.5, 0.6, 0.4, 0.06});
  const int64_t n = 48, views = 96;
  const auto y = nefi::ct::sinogram(sc, views, std::numbers::pi, n, 4, 1.0);
  const auto x = nefi::filtered_back_projection(y, views, n, std::numbers::pi, n, 1.0);
  const auto gt = nefi::ct::render(sc, n, 4, 1.0);
  EXPECT_GT(nefi::psnr(fk::from_vector(x, {n, n}), fk::from_vector(gt, {n, n})), 33.0);
  EXPECT_THROW(nefi::filtered_back_projection(y, views + 1, n, 1.0, n, 1.0), fk::Error);
  // Over 2 pi and 3 pi / 2 the views pi apart see the same lines: weighted by
  // how many see each, the image keeps its scale (it came out 2x over 2 pi,
  // 14 dB against 24 dB in sparse_view_ct at 64 views).
  for (double range : {2 * std::numbers::pi, 1.5 * std::numbers::pi}) {
    const int64_t v = range > 1.9 * std::numbers::pi ? 2 * views : 3 * views / 2;
    const auto yr = nefi::ct::sinogram(sc, v, range, n, 4, 1.0);
    const auto xr = nefi::filtered_back_projection(yr, v, n, range, n, 1.0);
    EXPECT_GT(nefi::psnr(fk::from_vector(xr, {n, n}), fk::from_vector(gt, {n, n})), 33.0) << range;
  }
  // Over 2 pi opposite views (v, v + n/2) see the same lines and weigh the same:
  // ones in either one back-project to images of one sum (the ramp's response
  // is symmetric). At 30 views, view 15 sits at 2 pi 15 / 30, computed a hair
  // under pi, and took twice view 0's weight.
  const int64_t nv = 30, nd = 16;
  std::vector<double> sums;
  for (int64_t view = 0; view < nv; ++view) {
    std::vector<double> sino(static_cast<size_t>(nv * nd), 0.0);
    for (int64_t j = 0; j < nd; ++j) sino[static_cast<size_t>(view * nd + j)] = 1.0;
    const auto img = nefi::filtered_back_projection(sino, nv, nd, 2 * std::numbers::pi, 8, 1.0);
    double total = 0;
    for (double x : img) total += x;
    sums.push_back(total);
  }
  for (int64_t view = 0; view < nv / 2; ++view) {
    const double a = sums[static_cast<size_t>(view)], b = sums[static_cast<size_t>(view + nv / 2)];
    EXPECT_NEAR(a, b, 1e-9 * std::abs(a)) << view;
  }
}

// The device entry point refuses a host image, naming its device: the CUDA
// build's operand check and the CPU-only build's stub alike.
TEST(NefiRadon, DeviceEntryRefusesAHostImage) {
  const nefi::RadonOperator op(nefi::Domain({5, 5}), {3, std::numbers::pi, 1, 1});
  try {
    nefi::radon_device(op, rnd({5, 5}, 1));
    ADD_FAILURE() << "no error for an image on the CPU";
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("cpu"), std::string::npos) << e.what();
  }
}

// Column indices are int32 (SparseRows, the device kernels): 46,340² pixels
// fit under 2^31 - 1 = 2,147,483,647 and 46,341² = 2,147,488,281 do not; the
// transpose's columns are the n_views x n_det sinogram rows. The operator
// checks before it builds anything (no allocation at that size).
TEST(NefiRadon, ColumnIndicesMustFitInt32) {
  EXPECT_NO_THROW(nefi::check_radon_index_range(46340LL * 46340, 2147483647LL));
  try {
    nefi::check_radon_index_range(46341LL * 46341, 16);
    ADD_FAILURE() << "no error for 46341^2 pixels";
  } catch (const fk::Error& e) {
    EXPECT_NE(e.given().find("2147488281 pixels"), std::string::npos) << e.what();
    EXPECT_NE(e.expected().find("int32"), std::string::npos) << e.what();
  }
  try {
    nefi::check_radon_index_range(16, 2147483648LL);
    ADD_FAILURE() << "no error for 2^31 sinogram rows";
  } catch (const fk::Error& e) {
    EXPECT_NE(e.given().find("2147483648 sinogram rows"), std::string::npos) << e.what();
  }
  // 46,341 pixels a side is over; so are 2^31 rows of a small image (here
  // 2^17 views of 2^14 detectors).
  EXPECT_THROW(nefi::RadonOperator(nefi::Domain({46341, 46341}), {1, std::numbers::pi, 1, 1}),
               fk::Error);
  EXPECT_THROW(nefi::RadonOperator(nefi::Domain({16, 16}),
                                   {int64_t{1} << 17, std::numbers::pi, int64_t{1} << 10, 1}),
               fk::Error);
}

}  // namespace
