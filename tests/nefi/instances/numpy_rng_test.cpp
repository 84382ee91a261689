#include "nefi/instances/numpy_rng.h"

#include <gtest/gtest.h>

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
