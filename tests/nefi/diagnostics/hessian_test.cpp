// The loss Hessian in the field's parameters: a grid field seen through
// gains g under w mean (g x - y)^2 has the Hessian (2 w / N) diag(g^2)
// exactly; the parameters are left as they were, and bad settings are
// refused by name.
#include "nefi/diagnostics/hessian.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "fk/error.h"
#include "fk/factory.h"
#include "nefi/field/grid_field.h"
#include "nefi/field/heads.h"
#include "nefi/field/neural_field.h"
#include "nefi/losses/data_losses.h"
#include "nefi/operators/pointwise.h"

namespace nefi::diagnostics {
namespace {

// A grid field of g's size seen through the gains g, its loss w mean (g x - y)^2.
InverseProblem gains_problem(const std::vector<double>& g, double w) {
  const auto n = static_cast<int64_t>(g.size());
  std::vector<double> y(g.size());
  for (int64_t i = 0; i < n; ++i) y[i] = std::sin(0.3 * static_cast<double>(i));
  InverseProblem p;
  p.domain = Domain(fk::Dims{n}, {1.0});
  p.field = std::make_shared<GridField>(fk::Dims{n}, std::vector<HeadPtr>{identity_head("x")});
  p.field->reset_parameters(0);
  p.op = std::make_shared<PointwiseOperator>(fk::from_vector(g, {n}));
  p.losses.add(mse_loss(), w);
  p.measurement.data = fk::from_vector(y, {n}).to(fk::DType::F32);
  return p;
}

TEST(Hessian, AGridFieldThroughGainsHasTheDataTermsCurvature) {
  const int64_t n = 24;
  std::vector<double> g(n);
  for (int64_t i = 0; i < n; ++i) g[i] = 0.5 + 0.1 * static_cast<double>(i);
  const double w = 3.0;
  InverseProblem p = gains_problem(g, w);
  const std::vector<double> before = p.field->params().flat().to_vector<double>();
  const HessianSpectrum s = hessian_spectrum(p, 2, n, 5);
  EXPECT_EQ(s.parameters, n);
  const double top = 2 * w / n * g.back() * g.back(), low = 2 * w / n * g[0] * g[0];
  EXPECT_NEAR(s.eigenvalues.largest[0], top, 1e-3 * top);
  EXPECT_NEAR(s.eigenvalues.smallest[0], low, 1e-3 * top);
  EXPECT_NEAR(s.condition, top / low, 1e-2 * top / low);
  EXPECT_EQ(p.field->params().flat().to_vector<double>(), before);
  EXPECT_THROW(hessian_spectrum(p, 3, 2, 5), fk::Error);
  EXPECT_THROW(hessian_spectrum(p, 2, 5000, 5), fk::Error);
  EXPECT_EQ(p.field->params().flat().to_vector<double>(), before);
}

// A smallest curvature within the products' error of 0 (below 1e-4 of the
// largest) has no condition number: inf, as documented (its ratio was given).
TEST(Hessian, AnUnresolvedSmallestCurvatureHasNoCondition) {
  std::vector<double> g(16, 1.0);
  g[0] = 0.002;  // curvature 4e-6 of the others'
  InverseProblem p = gains_problem(g, 1.0);
  const HessianSpectrum s = hessian_spectrum(p, 1, 16, 5);
  EXPECT_LT(std::abs(s.eigenvalues.smallest[0]), 1e-4 * s.eigenvalues.largest[0]);
  EXPECT_TRUE(std::isinf(s.condition)) << s.condition;
}

// A half-precision trunk is refused: its gradients' rounding swamps the
// finite-difference step (toy1d's bf16 eigenvalues were 5-7 % off).
TEST(Hessian, AnAutocastFieldIsRefused) {
  InverseProblem p = gains_problem(std::vector<double>(8, 1.0), 1.0);
  NeuralFieldConfig cfg;
  cfg.hidden = 4;
  cfg.depth = 1;
  cfg.n_octaves = 1;
  cfg.autocast = fk::DType::BF16;
  p.field = std::make_shared<NeuralField>(1, std::vector<HeadPtr>{identity_head("x")}, cfg);
  try {
    (void)hessian_spectrum(p, 1, 4, 5);
    ADD_FAILURE() << "an autocast field was diagnosed";
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("expected a field without autocast"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("got autocast bf16"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace nefi::diagnostics
