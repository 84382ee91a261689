#include "nefi/instances/numpy_rng.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "fk/error.h"

namespace {

using nefi::NumpyRng;

// Values printed by NumPy 2.4 (`np.random.default_rng(seed)`), the stream the
// reference's scenes are drawn from.
TEST(NumpyRng, MatchesNumpyDefaultRng) {
  NumpyRng a(0);
  EXPECT_EQ(a.random(), 0.6369616873214543);
  EXPECT_EQ(a.random(), 0.2697867137638703);
  EXPECT_EQ(a.random(), 0.04097352393619469);
  // Mixed draws: an integer takes the low half of a fresh 64-bit output and
  // the next integer its buffered high half; doubles bypass the buffer.
  NumpyRng b(0);
  EXPECT_EQ(b.uniform(0.1, 0.2), 0.16369616873214543);
  EXPECT_EQ(b.integers(1, 3), 2);
  EXPECT_EQ(b.integers(0, 3), 0);
  EXPECT_EQ(b.uniform(), 0.04097352393619469);
  EXPECT_EQ(b.integers(0, 1000000), 75240);
  EXPECT_EQ(b.integers(5, 9), 5);
  EXPECT_EQ(b.integers(5, 9), 5);
  EXPECT_EQ(b.uniform(), 0.9127555772777217);
  NumpyRng c(12345);
  EXPECT_EQ(c.random(), 0.22733602246716966);
  EXPECT_EQ(c.integers(1, 5), 4);
  NumpyRng d((uint64_t{1} << 40) + 7);  // two 32-bit entropy words
  EXPECT_EQ(d.random(), 0.829812891829413);
}

// Values printed by NumPy 1.24 (`default_rng(s).standard_exponential(k)` and
// `.dirichlet(np.ones(k))`); the ziggurat tables are built here, not copied.
TEST(NumpyRng, StandardExponentialAndFlatDirichletMatchNumpy) {
  NumpyRng a(0);
  EXPECT_EQ(a.standard_exponential(), 0.6799319039689096);
  EXPECT_EQ(a.standard_exponential(), 1.0195971014658647);
  EXPECT_EQ(a.standard_exponential(), 0.019806662589055352);
  EXPECT_EQ(a.standard_exponential(), 0.0022693266812281823);
  EXPECT_EQ(a.standard_exponential(), 0.5503428726390482);
  NumpyRng b(0);
  const std::vector<double> w4 = b.dirichlet_flat(4), w3 = b.dirichlet_flat(3);
  EXPECT_EQ(w4, (std::vector<double>{0.3949407129162019, 0.5922363751276989, 0.011504765988698002,
                                     0.0013181459674011687}));
  EXPECT_EQ(w3,
            (std::vector<double>{0.19284115740092955, 0.5711341339024646, 0.23602470869660575}));
  EXPECT_EQ(b.random(), 0.7294965609839984);  // the stream continues where NumPy's does
  // A million draws take every branch (about 470 tail and 11k wedge draws): a
  // single draw off its NumPy value would move the sum by O(1).
  NumpyRng c(123);
  std::vector<double> x(1000000);
  for (double& v : x) v = c.standard_exponential();
  EXPECT_EQ(*std::max_element(x.begin(), x.end()), 14.30306657246529);
  EXPECT_NEAR(std::accumulate(x.begin(), x.end(), 0.0L), 999252.8016817785L, 1e-6L);
  EXPECT_THROW(c.dirichlet_flat(0), fk::Error);
}

// Values printed by NumPy 1.24 (`default_rng(s).standard_normal(k)`). The
// strips are rebuilt here and land a few units in the last place from
// NumPy's table, so a draw agrees to 1e-13 relative and exactly in f32.
TEST(NumpyRng, StandardNormalMatchesNumpy) {
  auto expect_draw = [](double got, double numpy) {
    EXPECT_NEAR(got, numpy, 1e-13 * std::abs(numpy));
    EXPECT_EQ(static_cast<float>(got), static_cast<float>(numpy));
  };
  NumpyRng a(0);
  for (double v : {0.1257302210933933, -0.1321048632913019, 0.6404226504432821, 0.10490011715303971,
                   -0.535669373161111})
    expect_draw(a.standard_normal(), v);
  EXPECT_EQ(a.random(), 0.9127555772777217);  // the same number of 64-bit words consumed
  NumpyRng b(0);
  std::vector<double> x(479);
  for (double& v : x) v = b.standard_normal();
  expect_draw(x[303], -3.772275156122734);  // draws from the tail beyond r
  expect_draw(x[478], -3.899421730054339);
  // A million draws take every branch (about 250 tail and 15k wedge draws):
  // one draw off its NumPy value or stream position would move these by O(1).
  NumpyRng c(123);
  std::vector<double> y(1000000);
  for (double& v : y) v = c.standard_normal();
  EXPECT_NEAR(*std::max_element(y.begin(), y.end()), 4.8988956234348855, 1e-13);
  EXPECT_NEAR(std::accumulate(y.begin(), y.end(), 0.0L), 545.7520460580738L, 1e-6L);
}

TEST(NumpyRng, IntegersStayInRangeAndBadRangesAreErrors) {
  NumpyRng r(7);
  bool seen[4] = {};
  for (int i = 0; i < 400; ++i) {
    const int64_t v = r.integers(-2, 2);
    ASSERT_GE(v, -2);
    ASSERT_LT(v, 2);
    seen[v + 2] = true;
  }
  for (bool s : seen) EXPECT_TRUE(s);
  EXPECT_EQ(r.integers(3, 4), 3);
  EXPECT_THROW(r.integers(3, 3), fk::Error);
  EXPECT_THROW(r.integers(0, int64_t{1} << 40), fk::Error);
}

}  // namespace
