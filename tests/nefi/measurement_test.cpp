// check_mask (measurement.h): the one mask check every solver makes at a
// stage's setup, and Measurement::resampled's refusal of a mask that is not
// of the data's shape (it would read past the mask).
#include "nefi/measurement.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/test_util.h"

namespace {

nefi::Measurement with_mask(std::vector<double> mask) {
  nefi::Measurement m;
  m.data = fk::from_vector(std::vector<double>{1, 2, 3, 4}, fk::Dims{2, 2});
  m.mask = fk::from_vector(mask, fk::Dims{static_cast<int64_t>(mask.size())});
  if (mask.size() == 4) m.mask = m.mask.reshape({2, 2});
  return m;
}

// check_mask's error, or "" when it passes.
std::string mask_error(const nefi::Measurement& m, const std::string& whose = "") {
  return fk::test::error_of([&] { nefi::check_mask(m, "where", whose); });
}

TEST(NefiCheckMask, AMaskObservingSomeCellPassesAndNoMaskPasses) {
  EXPECT_EQ(mask_error(with_mask({0, 0, 0.25, 0})), "");
  nefi::Measurement none = with_mask({1, 1, 1, 1});
  none.mask = fk::Tensor();
  EXPECT_EQ(mask_error(none), "");
}

TEST(NefiCheckMask, AnAllZeroMaskIsRefusedNamingWhose) {
  EXPECT_EQ(mask_error(with_mask({0, 0, 0, 0}), "problem 2"),
            "where: expected a mask with at least one observed cell, got an all-zero mask in "
            "problem 2");
  EXPECT_EQ(mask_error(with_mask({0, 0, 0, 0})),
            "where: expected a mask with at least one observed cell, got an all-zero mask");
}

TEST(NefiCheckMask, WeightsOutsideZeroToOneAndAWrongShapeAreRefused) {
  // -1 and 2 sum to a positive weight: the sum alone would let it pass.
  EXPECT_NE(mask_error(with_mask({-1, 1, 0, 0})).find("mask weights in [0, 1], got a weight -1"),
            std::string::npos);
  EXPECT_NE(mask_error(with_mask({1, 2, 0, 0})).find("mask weights in [0, 1], got a weight 2"),
            std::string::npos);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_NE(mask_error(with_mask({1, nan, 0, 0})).find("mask weights in [0, 1]"),
            std::string::npos);
  const std::string shape = mask_error(with_mask({1, 1, 1}), "problem 0");
  EXPECT_NE(shape.find("a mask of the data's shape [2, 2]"), std::string::npos) << shape;
  EXPECT_NE(shape.find("[3] in problem 0"), std::string::npos) << shape;
}

TEST(NefiMeasurement, ResamplingAMaskOfAnotherShapeIsRefused) {
  EXPECT_THROW((void)with_mask({1, 1, 1}).resampled(fk::Dims{1, 1}), fk::Error);
  // The area mean of a mask observing one cell of four, and its data there.
  const nefi::Measurement c = with_mask({0, 0, 1, 0}).resampled(fk::Dims{1, 1});
  EXPECT_DOUBLE_EQ(c.mask.item(), 0.25);
  EXPECT_DOUBLE_EQ(c.data.item(), 3.0);
}

}  // namespace
