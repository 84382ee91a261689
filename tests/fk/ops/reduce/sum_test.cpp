#include "fk/ops/reduce/sum.h"

#include <cmath>
#include <string>
#include <vector>

#include "../../test_util.h"
#include "../backward_check.h"
#include "fk/thread_count.h"
#include "reference.h"

namespace fk {
namespace {

using namespace reduce_ref;

TEST(Sum, SumOfRunsNotAMultipleOfTheVectorWidth) {
  const std::vector<int64_t> sizes = {1,  2,  3,  5,  7,    8,     9,     15,        17,
                                      31, 33, 63, 65, 1001, 32767, 32769, 65536 + 3, 100003};
  for (int64_t n : sizes) {
    SCOPED_TRACE("n = " + std::to_string(n));
    // Values of both signs and mixed magnitudes, so the order of the adds shows.
    Tensor x64 =
        mul(test::random_tensor({n}, DType::F64, -1, 1, static_cast<unsigned>(n)),
            exp(test::random_tensor({n}, DType::F64, -8, 8, static_cast<unsigned>(n + 1))));
    std::vector<double> v = x64.to_vector<double>();
    long double exact = 0, abs_total = 0;
    for (double e : v) exact += e, abs_total += std::fabs(e);
    for (int threads : {1, 2}) {
      const test::ThreadCount count(threads);
      // f64: exactly the documented order, and within its error bound of the
      // long double sum ((n / 8 + 4) eps sum |x|).
      const double s64 = sum(x64).item();
      EXPECT_EQ(s64, documented_sum(v.data(), n));
      EXPECT_NEAR(s64, static_cast<double>(exact),
                  static_cast<double>(abs_total) * (n / 8.0 + 4) * 0x1p-53);
      // f32: accumulated in f64, so the result is the exact sum rounded to f32
      // (up to the f64 error, far below half an f32 ulp).
      Tensor x32 = x64.to(DType::F32);
      long double exact32 = 0, abs32 = 0;
      for (float e : x32.to_vector<float>()) exact32 += e, abs32 += std::fabs(e);
      const double s32 = sum(x32).item();
      EXPECT_NEAR(s32, static_cast<double>(exact32),
                  std::fabs(static_cast<double>(exact32)) * 0x1p-24 +
                      static_cast<double>(abs32) * (n / 8.0 + 4) * 0x1p-53);
      // Rows of this length (last dim) of a 3-row matrix: the same order.
      Tensor m = x64.reshape({1, n}).expand({3, n}).contiguous();
      std::vector<double> rows = sum(m, {1}).to_vector<double>();
      for (double r : rows) EXPECT_EQ(r, s64);
      // Columns are accumulated lane by lane in increasing row order (the
      // lanes are the vector): within n eps sum |x| of the exact sum.
      for (double c : sum(m.t().contiguous(), {0}).to_vector<double>()) {
        EXPECT_NEAR(c, static_cast<double>(exact), static_cast<double>(abs_total) * n * 0x1p-53);
      }
    }
  }
}

// The exposed backward functions against autograd and the plain rule (g
// broadcast back over the reduced dims; mean's divided by their count).
TEST(Sum, PureBackwardMatchesAutogradAndBroadcast) {
  Tensor x = test::random_tensor({3, 4, 5}, DType::F64, -1, 1, 81);
  for (const DimsCase& c : dims_cases()) {
    for (bool keepdim : {false, true}) {
      SCOPED_TRACE("dims " + c.dims.str() + (keepdim ? " keepdim" : ""));
      Dims out_shape = expected_shape({3, 4, 5}, c.reduced, keepdim);
      Tensor g = test::random_tensor(out_shape, DType::F64, -1, 1, 82);
      Tensor gs = sum_backward(g, x.shape(), c.dims, keepdim);
      test::expect_same(
          gs, test::autograd_grad([&](const Tensor& t) { return sum(t, c.dims, keepdim); }, x, g),
          0);
      // Plain rule: every input element receives the gradient of its output.
      std::vector<double> gv = g.to_vector<double>(), got = gs.to_vector<double>();
      std::vector<double> positions(60);
      for (size_t i = 0; i < positions.size(); ++i) positions[i] = static_cast<double>(i);
      auto pos_groups = groups(positions, {3, 4, 5}, c.reduced);
      for (size_t o = 0; o < pos_groups.size(); ++o) {
        for (double i : pos_groups[o]) EXPECT_EQ(got[static_cast<size_t>(i)], gv[o]);
      }
      const double count = 60.0 / static_cast<double>(g.numel());
      Tensor gm = mean_backward(g, x.shape(), c.dims, keepdim);
      test::expect_same(gm, div(gs, count), 1e-15);
      test::expect_same(
          gm, test::autograd_grad([&](const Tensor& t) { return mean(t, c.dims, keepdim); }, x, g),
          1e-15);
    }
  }
}

// mean divides the f64-accumulated sum before its one rounding: an f32 mean
// of values near the f32 maximum is theirs (the f32 sum was inf), the mean
// of 2^24, 1, 0, 0, 0 rounds once; integers are summed in f64 (an i64 sum of
// 2^62 + 2^62 wrapped to a negative mean).
TEST(Sum, MeanRoundsOnceAndDoesNotWrap) {
  const float big = 3e38f;
  Tensor f = from_vector(std::vector<float>{big, big});
  EXPECT_EQ(mean(f).item(), static_cast<double>(big));
  const double exact = (16777216.0 + 1) / 5;
  EXPECT_EQ(mean(from_vector(std::vector<float>{16777216.0f, 1, 0, 0, 0})).item(),
            static_cast<double>(static_cast<float>(exact)));
  Tensor i = from_vector(std::vector<int64_t>{int64_t{1} << 62, int64_t{1} << 62});
  EXPECT_EQ(mean(i).dtype(), DType::F32);
  EXPECT_EQ(mean(i).item(), 0x1p62);
  // ... and exact where the i64 sum holds it (f64 addition rounded 2^60 + 7)
  EXPECT_EQ(
      mean(from_vector(std::vector<int64_t>{(int64_t{1} << 60) + 7, -(int64_t{1} << 60)})).item(),
      3.5);
  // Per row and over a leading dim, with the gradient 1/n.
  Tensor x = test::random_tensor({3, 5}, DType::F64, -1, 1, 7).set_requires_grad(true);
  const std::vector<double> v = x.to_vector<double>();
  std::vector<double> cols(5, 0.0);
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 5; ++c) cols[c] += v[r * 5 + c] / 3;
  test::expect_close(mean(x, {0}), cols, 1e-15);
  sum(mean(x, {1})).backward();
  test::expect_close(x.grad(), std::vector<double>(15, 0.2), 0);
  EXPECT_TRUE(std::isnan(mean(zeros({0}, {DType::F32})).item()));
}

}  // namespace
}  // namespace fk
