#include "nefi/operators/elliptic/elliptic_banded.h"

#include <gtest/gtest.h>

#include <cmath>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/random.h"
#include "fk/testing.h"
#include "nefi/operators/elliptic/elliptic_solve.h"
#include "nefi/operators/elliptic/elliptic_test_grid.h"

namespace {

using nefi::elliptic::EllipticGrid;
using nefi::elliptic::LinearSolver;
using nefi::elliptic::SolveOptions;
using nefi::elliptic::test::box;

fk::Tensor positive(const fk::Dims& s, uint64_t seed) {
  fk::Generator g(seed);
  return fk::rand(s, {fk::DType::F64}, &g) * 4.0 + 0.1;
}

SolveOptions options(LinearSolver solver) {
  SolveOptions o;
  o.cg.tol = 1e-14;
  o.solver = solver;
  return o;
}

// The banded Cholesky against the PCG at tol 1e-14 (f64): Dirichlet and
// mixed sides, κ, a batched σ, the pure-Neumann null space (zero-mean gauge),
// 1-D, 2-D and 3-D grids.
TEST(NefiEllipticBanded, AgreesWithTightPcg) {
  struct Case {
    fk::Dims shape;
    const char* bc;
    bool kappa, batched;
  };
  for (const Case& c : {Case{{13}, "dirichlet:neumann", false, false},
                        Case{{9, 7}, "dirichlet,neumann", false, true},
                        Case{{8, 6}, "neumann", true, false}, Case{{10, 8}, "neumann", false, true},
                        Case{{4, 3, 5}, "neumann,dirichlet,neumann", false, false}}) {
    const EllipticGrid g = box(c.shape, c.bc);
    fk::Dims batch = c.shape;
    batch.insert(0, 3);
    const fk::Tensor sigma = positive(c.batched ? batch : c.shape, 1);
    const fk::Tensor kappa = c.kappa ? positive(c.shape, 2) : fk::Tensor();
    fk::Generator gen(3);
    const fk::Tensor b = fk::randn(batch, {fk::DType::F64}, &gen);
    const auto ref = nefi::elliptic::solve_elliptic(sigma, b, kappa, g, options(LinearSolver::kCg))
                         .to_vector<double>();
    const auto got =
        nefi::elliptic::solve_elliptic(sigma, b, kappa, g, options(LinearSolver::kBanded))
            .to_vector<double>();
    double scale = 0;
    for (double v : ref) scale = std::max(scale, std::abs(v));
    for (size_t i = 0; i < ref.size(); ++i) EXPECT_NEAR(got[i], ref[i], 1e-9 * scale) << c.bc;
  }
}

// The kept factors serve only the very same system: σ₁, then σ₂ differing
// in one cell, then σ₁ again solve as three fresh solves would (σ₁'s twice
// bitwise alike, σ₂'s its own), and so does σ₁ on a grid of another spacing.
TEST(NefiEllipticBanded, KeptFactorsServeOnlyTheSameSystem) {
  const EllipticGrid g = box({6, 5}, "neumann");
  EllipticGrid wide = g;
  wide.spacing = {0.5, 0.5};
  const fk::Tensor s1 = positive({6, 5}, 7);
  std::vector<double> v = s1.to_vector<double>();
  v[17] *= 1.5;
  const fk::Tensor s2 = fk::from_vector(v, {6, 5});
  fk::Generator gen(8);
  const fk::Tensor b = fk::randn({2, 6, 5}, {fk::DType::F64}, &gen);
  auto banded = [&](const fk::Tensor& s, const EllipticGrid& grid) {
    return nefi::elliptic::solve_elliptic(s, b, {}, grid, options(LinearSolver::kBanded))
        .to_vector<double>();
  };
  auto pcg = [&](const fk::Tensor& s, const EllipticGrid& grid) {
    return nefi::elliptic::solve_elliptic(s, b, {}, grid, options(LinearSolver::kCg))
        .to_vector<double>();
  };
  const auto x1 = banded(s1, g), x2 = banded(s2, g), x1again = banded(s1, g);
  const auto xw = banded(s1, wide);
  EXPECT_EQ(x1, x1again);
  for (const auto& [got, want] :
       {std::pair{x1, pcg(s1, g)}, std::pair{x2, pcg(s2, g)}, std::pair{xw, pcg(s1, wide)}}) {
    double scale = 0;
    for (double w : want) scale = std::max(scale, std::abs(w));
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-9 * scale) << i;
  }
}

// The IFT gradient through the banded solve against central differences
// (f64), in the null-space case the eit instance uses.
TEST(NefiEllipticBanded, IftGradientMatchesFiniteDifferences) {
  const EllipticGrid g = box({4, 3}, "neumann");
  fk::Tensor sigma = positive({4, 3}, 4).set_requires_grad(true);
  fk::Generator gen(5);
  fk::Tensor b = fk::randn({2, 4, 3}, {fk::DType::F64}, &gen).set_requires_grad(true);
  auto fn = [&](const std::vector<fk::Tensor>& in) {
    return nefi::elliptic::solve_elliptic(in[0], in[1], {}, g, options(LinearSolver::kBanded));
  };
  fk::testing::GradcheckOptions gc;
  gc.atol = 1e-7;
  gc.rtol = 1e-5;
  EXPECT_EQ(fk::testing::gradcheck(fn, {sigma, b}, gc), "");
}

// A periodic axis has no band: the solve keeps the PCG (same answer) and the
// banded solver refuses it; a singular system (Neumann, no κ, no projection)
// is a clear error, not a wrong answer.
TEST(NefiEllipticBanded, RefusesWhatIsNotBandedOrDefinite) {
  const EllipticGrid per = box({6, 5}, "periodic,neumann");
  EXPECT_FALSE(nefi::elliptic::banded_applicable(per));
  EXPECT_TRUE(nefi::elliptic::banded_applicable(box({6, 5}, "neumann,dirichlet")));
  const fk::Tensor sigma = positive({6, 5}, 6);
  fk::Generator gen(7);
  const fk::Tensor b = fk::randn({6, 5}, {fk::DType::F64}, &gen);
  const auto a = nefi::elliptic::solve_elliptic(sigma, b, {}, per, options(LinearSolver::kBanded))
                     .to_vector<double>();
  const auto c = nefi::elliptic::solve_elliptic(sigma, b, {}, per, options(LinearSolver::kCg))
                     .to_vector<double>();
  EXPECT_EQ(a, c);
  SolveOptions singular = options(LinearSolver::kBanded);
  singular.nullspace = nefi::elliptic::Nullspace::kNone;
  EXPECT_THROW(nefi::elliptic::solve_elliptic(sigma, b, {}, box({6, 5}, "neumann"), singular),
               fk::Error);
  EXPECT_EQ(nefi::elliptic::parse_linear_solver("banded"), LinearSolver::kBanded);
  EXPECT_THROW(nefi::elliptic::parse_linear_solver("lu"), fk::Error);
}

}  // namespace
