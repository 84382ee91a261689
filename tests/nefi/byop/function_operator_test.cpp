// FunctionOperator: a caller's host functions as a differentiable operator —
// values and gradients against the functions themselves, the adjoint dot
// test, f64 gradcheck through a nonlinear model, and the refusals.
#include "nefi/operators/function_operator.h"

#include <gtest/gtest.h>

#include <cmath>

#include "byop_test_models.h"
#include "fk/autograd.h"
#include "fk/ops/reduce.h"
#include "fk/test_util.h"
#include "fk/testing.h"
#include "nefi/byop/auto_problem.h"

namespace {

using nefi::ForwardModel;
using nefi::FunctionOperator;

std::vector<double> random_matrix(int64_t m, int64_t n) {
  return fk::test::random_values(m * n, -1, 1, 3);
}

TEST(NefiFunctionOperator, AppliesTheFunctionAndItsAdjoint) {
  const int64_t m = 7, n = 5;
  const auto a = random_matrix(m, n);
  auto op = std::make_shared<FunctionOperator>(fk::Dims{n}, fk::Dims{m},
                                               nefi::test::matrix_model(a, m, n), 1.0, "A");
  const fk::Tensor x = fk::test::random_tensor({n}, fk::DType::F32, -1, 1, 5);
  const fk::Tensor y = op->apply(x);
  EXPECT_EQ(y.dtype(), fk::DType::F32);
  ASSERT_EQ(y.shape(), fk::Dims{m});
  const auto xv = x.to_vector<double>();
  const auto yv = y.to_vector<double>();
  for (int64_t i = 0; i < m; ++i) {
    double s = 0;
    for (int64_t j = 0; j < n; ++j) s += a[i * n + j] * xv[j];
    EXPECT_NEAR(yv[i], s, 1e-5);
  }
  // Adjoint dot test <A x, g> = <x, A^T g> in f64.
  const fk::Tensor x64 = fk::test::random_tensor({n}, fk::DType::F64, -1, 1, 8);
  const fk::Tensor g64 = fk::test::random_tensor({m}, fk::DType::F64, -1, 1, 9);
  const auto ax = op->apply(x64).to_vector<double>(), atg = op->vjp(x64, g64).to_vector<double>();
  const auto gv = g64.to_vector<double>(), x6 = x64.to_vector<double>();
  double lhs = 0, rhs = 0;
  for (int64_t i = 0; i < m; ++i) lhs += ax[i] * gv[i];
  for (int64_t j = 0; j < n; ++j) rhs += x6[j] * atg[j];
  EXPECT_NEAR(lhs, rhs, 1e-12 * std::max(1.0, std::abs(lhs)));
  EXPECT_EQ(op->homogeneity(), 1.0);
  EXPECT_TRUE(op->linear());
}

TEST(NefiFunctionOperator, GradcheckThroughANonlinearModel) {
  // y = sin(A x): its vjp is A^T (cos(A x) g).
  const int64_t m = 6, n = 4;
  const auto a = random_matrix(m, n);
  const ForwardModel lin = nefi::test::matrix_model(a, m, n);
  ForwardModel f;
  f.forward = [lin](const std::vector<fk::Tensor>& xs) {
    std::vector<double> v = lin.forward(xs).to_vector<double>();
    for (double& e : v) e = std::sin(e);
    return fk::from_vector(v, fk::Dims{static_cast<int64_t>(v.size())});
  };
  f.vjp = [lin](const std::vector<fk::Tensor>& xs, const fk::Tensor& g) {
    std::vector<double> ax = lin.forward(xs).to_vector<double>(), gv = g.to_vector<double>();
    for (size_t i = 0; i < ax.size(); ++i) gv[i] *= std::cos(ax[i]);
    return lin.vjp(xs, fk::from_vector(gv, g.shape()));
  };
  auto op = std::make_shared<FunctionOperator>(fk::Dims{n}, fk::Dims{m}, f);
  EXPECT_FALSE(op->homogeneity().has_value());
  const fk::Tensor x = fk::test::random_tensor({n}, fk::DType::F64, -1, 1, 4);
  EXPECT_GRADCHECK([&](const std::vector<fk::Tensor>& in) { return op->apply(in[0]); },
                   std::vector<fk::Tensor>{x.detach().set_requires_grad(true)});
}

TEST(NefiFunctionOperator, RefusesWhatItCannotDo) {
  const int64_t n = 4;
  ForwardModel wrong = nefi::test::matrix_model(random_matrix(3, n), 3, n);
  auto op = std::make_shared<FunctionOperator>(fk::Dims{n}, fk::Dims{5}, wrong, 1.0, "short");
  const fk::Tensor x = fk::zeros({n});
  std::string e = fk::test::error_of([&] { (void)op->apply(x); });
  EXPECT_NE(e.find("forward model 'short'"), std::string::npos) << e;
  EXPECT_NE(e.find("[5]"), std::string::npos) << e;
  EXPECT_NE(e.find("[3]"), std::string::npos) << e;
  e = fk::test::error_of([&] { (void)op->apply(fk::zeros({n + 1})); });
  EXPECT_NE(e.find("field 'x' of shape [4]"), std::string::npos) << e;
  e = fk::test::error_of([&] { (void)op->at_resolution({8}); });
  EXPECT_NE(e.find("its own grid [4] or a coarser one"), std::string::npos) << e;
  EXPECT_EQ(op->at_resolution({n}).get(), op.get());
  EXPECT_NE(nefi::device_solve_refusal(*op, fk::cuda_device(0)), "");
  EXPECT_FALSE(op->graph_capturable());
  ForwardModel none;
  e = fk::test::error_of([&] { FunctionOperator({n}, {n}, none); });
  EXPECT_NE(e.find("no forward"), std::string::npos) << e;
  // The right number of values in the wrong layout is refused, not reordered.
  ForwardModel transposed = wrong;
  transposed.forward = [](const std::vector<fk::Tensor>&) { return fk::zeros({2, 3}); };
  auto op3 = std::make_shared<FunctionOperator>(fk::Dims{n}, fk::Dims{3, 2}, transposed);
  e = fk::test::error_of([&] { (void)op3->apply(x); });
  EXPECT_NE(e.find("expected an output of shape [3, 2], got [2, 3]"), std::string::npos) << e;
  transposed.forward = [](const std::vector<fk::Tensor>&) { return fk::zeros({1, 3, 2}); };
  auto op4 = std::make_shared<FunctionOperator>(fk::Dims{n}, fk::Dims{3, 2}, transposed);
  EXPECT_EQ(op4->apply(x).shape(), fk::Dims({3, 2}));  // length-1 axes are fine
  ForwardModel ints = wrong;
  ints.forward = [](const std::vector<fk::Tensor>&) { return fk::zeros({3}, {fk::DType::I64}); };
  auto op2 = std::make_shared<FunctionOperator>(fk::Dims{n}, fk::Dims{3}, ints);
  e = fk::test::error_of([&] { (void)op2->apply(x); });
  EXPECT_NE(e.find("an output of real floating-point values"), std::string::npos) << e;
}

TEST(NefiFunctionOperator, SeveralNamedFields) {
  // y = a * sin(b) elementwise: gradients (sin b g, a cos b g), by gradcheck.
  const int64_t n = 5;
  ForwardModel f;
  f.forward = [](const std::vector<fk::Tensor>& xs) {
    std::vector<double> a = xs[0].to_vector<double>(), b = xs[1].to_vector<double>();
    for (size_t i = 0; i < a.size(); ++i) a[i] *= std::sin(b[i]);
    return fk::from_vector(a, xs[0].shape());
  };
  f.vjp = [](const std::vector<fk::Tensor>& xs, const fk::Tensor& g) {
    std::vector<double> a = xs[0].to_vector<double>(), b = xs[1].to_vector<double>();
    std::vector<double> gv = g.to_vector<double>(), ga(a.size()), gb(a.size());
    for (size_t i = 0; i < a.size(); ++i) {
      ga[i] = std::sin(b[i]) * gv[i];
      gb[i] = a[i] * std::cos(b[i]) * gv[i];
    }
    return std::vector<fk::Tensor>{fk::from_vector(ga, g.shape()), fk::from_vector(gb, g.shape())};
  };
  auto op = std::make_shared<FunctionOperator>(fk::Dims{n}, fk::Dims{n}, f, std::nullopt, "amp",
                                               std::vector<std::string>{"amplitude", "phase"});
  EXPECT_EQ(op->primary, "amplitude");
  const fk::Tensor a = fk::test::random_tensor({n}, fk::DType::F64, 0.5, 1, 1);
  const fk::Tensor b = fk::test::random_tensor({n}, fk::DType::F64, -1, 1, 2);
  EXPECT_GRADCHECK(
      [&](const std::vector<fk::Tensor>& in) {
        return op->forward({{"amplitude", in[0]}, {"phase", in[1]}});
      },
      (std::vector<fk::Tensor>{a.detach().set_requires_grad(true),
                               b.detach().set_requires_grad(true)}));
  std::string e = fk::test::error_of([&] { (void)op->forward({{"amplitude", a}}); });
  EXPECT_NE(e.find("a field named 'phase'"), std::string::npos) << e;
  e = fk::test::error_of([&] { (void)op->apply(a); });
  EXPECT_NE(e.find("fields by name"), std::string::npos) << e;
  ForwardModel one = f;
  one.vjp = [](const std::vector<fk::Tensor>& xs, const fk::Tensor&) {
    return std::vector<fk::Tensor>{xs[0]};
  };
  auto op1 = std::make_shared<FunctionOperator>(fk::Dims{n}, fk::Dims{n}, one, std::nullopt, "amp",
                                                std::vector<std::string>{"amplitude", "phase"});
  fk::Tensor ar = a.detach().set_requires_grad(true);
  e = fk::test::error_of([&] {
    fk::Tensor y = op1->forward({{"amplitude", ar}, {"phase", b}});
    y.backward(fk::ones_like(y));
  });
  EXPECT_NE(e.find("2 gradients (one per field)"), std::string::npos) << e;
}

// y = (x, theta * s): the field seen directly, then a block that only the
// parameter theta explains (s a known pattern of 6 values).
ForwardModel with_parameter(int64_t n) {
  ForwardModel f;
  f.forward = [n](const std::vector<fk::Tensor>& xs) {
    std::vector<double> y = xs[0].to_vector<double>();
    const double theta = xs[1].item();
    for (int k = 0; k < 6; ++k) y.push_back(theta * (1 + 0.5 * k));
    return fk::from_vector(y, fk::Dims{n + 6});
  };
  f.vjp = [n](const std::vector<fk::Tensor>&, const fk::Tensor& g) {
    const std::vector<double> gv = g.to_vector<double>();
    double gt = 0;
    for (int k = 0; k < 6; ++k) gt += gv[n + k] * (1 + 0.5 * k);
    return std::vector<fk::Tensor>{
        fk::from_vector(std::vector<double>(gv.begin(), gv.begin() + n), fk::Dims{n}),
        fk::full({}, gt, {fk::DType::F64})};
  };
  return f;
}

TEST(NefiFunctionOperator, TrainsItsOwnParametersWithTheField) {
  const int64_t n = 24;
  auto op = std::make_shared<FunctionOperator>(
      fk::Dims{n}, fk::Dims{n + 6}, with_parameter(n), std::nullopt, "offset",
      std::vector<std::string>{"x"}, std::vector<fk::Tensor>{fk::full({}, 0.5, {fk::DType::F64})});
  ASSERT_EQ(op->parameters().size(), 1u);
  // The parameter's gradient comes from the vjp's last entry.
  fk::Tensor x = fk::test::random_tensor({n}, fk::DType::F32, -1, 1, 9);
  x.set_requires_grad(true);
  fk::sum(op->apply(x)).backward();
  EXPECT_NEAR(op->parameters()[0].grad().item(), 1 + 1.5 + 2 + 2.5 + 3 + 3.5, 1e-5);
  // A fit finds theta = 2 and every solve starts from the 0.5 given.
  std::vector<double> truth(n), y;
  for (int64_t i = 0; i < n; ++i) truth[i] = 1 + 0.3 * std::sin(0.4 * i);
  y = truth;
  for (int k = 0; k < 6; ++k) y.push_back(2.0 * (1 + 0.5 * k));
  nefi::Measurement m;
  m.data = fk::from_vector(y, {n + 6});
  nefi::AutoOptions o;
  o.prior = "nonnegative + smooth(0.01)";  // a penalty: the weighing probe runs
  o.noise_std = 0.0;
  o.budget = "600";
  const nefi::AutoProblem ap = nefi::auto_problem(op, {n}, m, o);
  EXPECT_NEAR(op->parameters()[0].item(), 0.5, 1e-7);  // the probe's steps undone
  (void)ap.solve();
  const double fitted = op->parameters()[0].item();
  EXPECT_NEAR(fitted, 2.0, 0.02);
  (void)ap.solve();
  EXPECT_NEAR(op->parameters()[0].item(), fitted, 1e-6);  // from 0.5 again: the same fit
}

TEST(NefiFunctionOperator, ParameterGradientsAreChecked) {
  ForwardModel f = with_parameter(4);
  f.vjp = [](const std::vector<fk::Tensor>& xs, const fk::Tensor&) {
    return std::vector<fk::Tensor>{xs[0]};  // none for the parameter
  };
  auto op = std::make_shared<FunctionOperator>(
      fk::Dims{4}, fk::Dims{10}, f, std::nullopt, "short", std::vector<std::string>{"x"},
      std::vector<fk::Tensor>{fk::full({}, 1.0, {fk::DType::F64})});
  fk::Tensor x = fk::zeros({4});
  x.set_requires_grad(true);
  try {
    fk::sum(op->apply(x)).backward();
    ADD_FAILURE() << "a vjp without the parameter's gradient was taken";
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("one per field, then one per parameter"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(FunctionOperator(fk::Dims{4}, fk::Dims{10}, with_parameter(4), std::nullopt, "c",
                                {"x"}, {fk::Tensor{}}),
               fk::Error);
}

}  // namespace
