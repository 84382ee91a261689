#include "nefi/operators/elliptic/point_sources.h"

#include <gtest/gtest.h>

#include "fk/error.h"

namespace {

// Mass q / volume spread over the 4 nearest centres with centroid x; an edge
// position keeps its mass on the edge cells; wrong axis counts and positions
// outside the box are errors.
TEST(NefiEllipticPointSources, CloudInCellKeepsMassAndCentroid) {
  nefi::elliptic::EllipticGrid g;
  g.shape = {8, 6};
  g.spacing = {0.5, 0.25};
  g.boundary = nefi::elliptic::parse_boundary("neumann", 2);
  const double vol = 0.5 * 0.25;
  const auto rhs = nefi::elliptic::point_source_rhs(g, {{{1.9, 0.8}, 2.0}, {{0.0, 1.5}, -1.0}});
  double mass = 0, cx = 0, cy = 0, interior = 0;
  int nonzero = 0;
  for (int64_t i = 0; i < 8; ++i)
    for (int64_t j = 0; j < 6; ++j) {
      const double v = rhs[i * 6 + j] * vol;
      mass += v;
      nonzero += v != 0;
      if (i >= 2) {  // the first source's cells only
        interior += v;
        cx += v * (i + 0.5) * 0.5;
        cy += v * (j + 0.5) * 0.25;
      }
    }
  EXPECT_NEAR(mass, 1.0, 1e-14);
  EXPECT_NEAR(interior, 2.0, 1e-14);
  EXPECT_NEAR(cx / interior, 1.9, 1e-14);
  EXPECT_NEAR(cy / interior, 0.8, 1e-14);
  EXPECT_EQ(nonzero, 4 + 1);  // the corner source lands on one cell
  EXPECT_NEAR(rhs[0 * 6 + 5] * vol, -1.0, 1e-14);
  EXPECT_THROW(nefi::elliptic::point_source_rhs(g, {{{1.0}, 1.0}}), fk::Error);
  EXPECT_THROW(nefi::elliptic::point_source_rhs(g, {{{4.1, 0.5}, 1.0}}), fk::Error);
}

}  // namespace
