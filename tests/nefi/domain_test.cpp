#include "nefi/domain.h"

#include <gtest/gtest.h>

#include "fk/factory.h"
#include "nefi/measurement.h"

namespace {

TEST(NefiDomain, CellCentredCoordsAndSpacing) {
  nefi::Domain d({4, 2}, {2.0, 1.0});
  auto c = d.coords(fk::DType::F64).to_vector<double>();
  ASSERT_EQ(c.size(), 16u);
  // Cell (i, j) sits at ((2i+1)/4 - 1, (2j+1)/2 - 1).
  EXPECT_DOUBLE_EQ(c[0], -0.75);
  EXPECT_DOUBLE_EQ(c[1], -0.5);
  EXPECT_DOUBLE_EQ(c[2 * 3 + 0], -0.25);  // cell 3 = (1, 1)
  EXPECT_DOUBLE_EQ(c[2 * 3 + 1], 0.5);
  EXPECT_DOUBLE_EQ(c[2 * 7 + 0], 0.75);
  EXPECT_EQ(d.spacing(), (std::vector<double>{0.5, 0.5}));
  EXPECT_EQ(d.spacing({8, 8}), (std::vector<double>{0.25, 0.125}));
}

TEST(NefiDomain, CoarsenRefineAt) {
  nefi::Domain d({64, 10});
  EXPECT_EQ(d.coarsen(2).shape(), fk::Dims({32, 5}));
  EXPECT_EQ(d.coarsen(4, 4).shape(), fk::Dims({16, 4}));
  EXPECT_EQ(d.refine().shape(), fk::Dims({128, 20}));
  EXPECT_EQ(d.at({3, 3}).extent(), d.extent());
}

TEST(NefiDomain, Errors) {
  EXPECT_THROW(nefi::Domain({0}), fk::Error);
  EXPECT_THROW(nefi::Domain({4}, {1.0, 2.0}), fk::Error);
  try {
    nefi::Domain({4}, {-1.0});
    FAIL();
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("positive extents"), std::string::npos);
  }
}

TEST(NefiMeasurement, AreaAveragingKeepsFractionalMask) {
  nefi::Measurement m;
  m.data = fk::from_vector(std::vector<double>{1, 3, 5, 7, 2, 2}, fk::Dims{6});
  m.mask = fk::from_vector(std::vector<double>{1, 0, 1, 1, 1, 1}, fk::Dims{6});
  m.noise_std = 0.1;
  nefi::Measurement c = m.resampled({3});
  // Pairs: (1, [3 unobserved]) -> 1 with weight 0.5; (5, 7) -> 6; (2, 2) -> 2.
  const std::vector<double> want_d{1, 6, 2}, want_m{0.5, 1, 1};
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(c.data.to_vector<double>()[i], want_d[i], 1e-12);
    EXPECT_NEAR(c.mask.to_vector<double>()[i], want_m[i], 1e-12);
  }
  EXPECT_DOUBLE_EQ(c.noise_std, 0.1);
  // Non-integer ratio: 6 -> 4 cells, each output covers 1.5 input cells.
  nefi::Measurement u;
  u.data = fk::from_vector(std::vector<double>{0, 1, 2, 3, 4, 5}, fk::Dims{6});
  auto v = u.resampled({4}).data.to_vector<double>();
  EXPECT_NEAR(v[0], (0 + 0.5 * 1) / 1.5, 1e-12);  // cells [0, 1.5)
  EXPECT_NEAR(v[1], (0.5 * 1 + 2) / 1.5, 1e-12);  // cells [1.5, 3)
  EXPECT_NEAR(v[2], (3 + 0.5 * 4) / 1.5, 1e-12);
  EXPECT_NEAR(v[3], (0.5 * 4 + 5) / 1.5, 1e-12);
}

}  // namespace
