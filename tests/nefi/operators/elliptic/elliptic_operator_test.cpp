#include "nefi/operators/elliptic/elliptic_operator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/random.h"
#include "fk/testing.h"

namespace {

// Two right-hand sides (a point-like source and its negative elsewhere) and
// an observation of the first row's cells, referenced to their mean.
nefi::GridFunction sources() {
  return [](const nefi::Domain& d) {
    const int64_t n0 = d.shape()[0], n1 = d.shape()[1];
    fk::Tensor b = fk::zeros({2, n0, n1}, {fk::DType::F64});
    std::vector<double> v(2 * n0 * n1, 0.0);
    v[0] = 1, v[n0 * n1 - 1] = -1;
    v[n0 * n1 + n1] = 1, v[n0 * n1 + n1 + 1] = -1;
    return fk::from_vector(v, {2, n0, n1});
  };
}
nefi::GridFunction first_row() {
  return [](const nefi::Domain& d) {
    const int64_t n0 = d.shape()[0], n1 = d.shape()[1];
    std::vector<double> w(3 * n0 * n1, 0.0);
    for (int64_t m = 0; m < 3; ++m) {
      const int64_t j = m * (n1 - 1) / 2;
      for (int64_t k = 0; k < 3; ++k) w[m * n0 * n1 + k * (n1 - 1) / 2] -= 1.0 / 3;
      w[m * n0 * n1 + j] += 1.0;
    }
    return fk::from_vector(w, {3, n0 * n1});
  };
}

// Neumann sides, sigma = exp(x), warm starts on, CG to `tol`.
nefi::EllipticOperatorOptions warm_exp_options(double tol) {
  nefi::EllipticOperatorOptions o;
  o.boundary = "neumann";
  o.sigma_transform = "exp";
  o.solve.cg.tol = tol;
  o.warm_start = true;
  return o;
}

TEST(NefiEllipticOperator, ShapesResolutionAndGradcheck) {
  const nefi::EllipticOperator op(nefi::Domain({5, 4}, {2.0, 2.0}), sources(), first_row(),
                                  warm_exp_options(1e-13));
  EXPECT_EQ(op.output_shape({5, 4}), fk::Dims({2, 3}));
  EXPECT_EQ(op.fidelity_tag(), "elliptic-fv");
  auto coarse = op.at_resolution({3, 3});
  EXPECT_EQ(coarse->output_shape({3, 3}), fk::Dims({2, 3}));
  fk::Generator gen(1);
  fk::Tensor y = fk::randn({5, 4}, {fk::DType::F64}, &gen) * 0.5;
  y.set_requires_grad(true);
  auto fn = [&](const std::vector<fk::Tensor>& in) { return op.apply(in[0]); };
  EXPECT_EQ(fk::testing::gradcheck(fn, {y}), "");
  EXPECT_GT(op.solve_state().last_adjoint.total_iterations, 0);
  EXPECT_EQ(coarse->apply(fk::zeros({3, 3}, {fk::DType::F32})).shape(), fk::Dims({2, 3}));
}

// One observation matrix per right-hand side (P, M, numel): pattern p reads
// the first-row observable scaled by p + 1, checked against the shared one.
TEST(NefiEllipticOperator, PerPatternObservation) {
  nefi::EllipticOperatorOptions o;
  o.boundary = "dirichlet:neumann";
  o.solve.cg.tol = 1e-13;
  auto per_pattern = [](const nefi::Domain& d) {
    const fk::Tensor w = first_row()(d);
    std::vector<double> v = w.to_vector<double>(), out;
    for (int p = 0; p < 2; ++p)
      for (double x : v) out.push_back((p + 1) * x);
    return fk::from_vector(out, {2, w.size(0), w.size(1)});
  };
  const nefi::Domain d({5, 4}, {2.0, 2.0});
  const nefi::EllipticOperator shared(d, sources(), first_row(), o);
  const nefi::EllipticOperator each(d, sources(), per_pattern, o);
  EXPECT_EQ(each.output_shape({5, 4}), fk::Dims({2, 3}));
  fk::Generator gen(2);
  fk::Tensor s = fk::rand({5, 4}, {fk::DType::F64}, &gen) + 0.5;
  const auto a = shared.apply(s).to_vector<double>(), b = each.apply(s).to_vector<double>();
  for (int k = 0; k < 6; ++k) EXPECT_NEAR(b[k], (k / 3 + 1) * a[k], 1e-12) << k;
  s.set_requires_grad(true);
  auto fn = [&](const std::vector<fk::Tensor>& in) { return each.apply(in[0]); };
  EXPECT_EQ(fk::testing::gradcheck(fn, {s}), "");
}

TEST(NefiEllipticOperator, BadInputsAreErrors) {
  nefi::EllipticOperatorOptions o;
  const nefi::Domain d({4, 4});
  o.sigma_transform = "softplus";
  EXPECT_THROW(nefi::EllipticOperator(d, sources(), {}, o), fk::Error);
  o.sigma_transform = "identity";
  o.boundary = "dirichlet,dirichlet,dirichlet";
  EXPECT_THROW(nefi::EllipticOperator(d, sources(), {}, o), fk::Error);
  o.boundary = "dirichlet";
  auto wrong = [](const nefi::Domain&) { return fk::zeros({2, 3, 4}, {fk::DType::F64}); };
  EXPECT_THROW(nefi::EllipticOperator(d, wrong, {}, o), fk::Error);
  const nefi::EllipticOperator op(d, sources(), {}, o);
  EXPECT_EQ(op.output_shape({4, 4}), fk::Dims({2, 4, 4}));
  EXPECT_THROW(op.apply(fk::ones({4, 5}, {fk::DType::F64})), fk::Error);
  EXPECT_THROW(op.apply(fk::zeros({4, 4}, {fk::DType::F64})), fk::Error);  // σ = 0
}

// The device path's refusal names the setting that keeps the operator on the
// host (and only then is the step not graph-capturable).
TEST(NefiEllipticOperator, DeviceRefusalNamesTheSetting) {
  const nefi::Domain dom({6, 5}, {1.0, 1.0});
  auto reason = [&](const std::function<void(nefi::elliptic::SolveOptions&)>& set) {
    nefi::EllipticOperatorOptions o;
    set(o.solve);
    const nefi::EllipticOperator op(dom, sources(), first_row(), o);
    EXPECT_EQ(op.graph_capturable(), op.host_only_reason().empty());
    EXPECT_EQ(op.not_capturable_reason(), op.host_only_reason());  // not the generic cause
    return op.host_only_reason();
  };
  EXPECT_EQ(reason([](auto&) {}), "");
  EXPECT_EQ(reason([](auto& s) { s.grad_mode = nefi::elliptic::GradMode::kNone; }), "");
  EXPECT_NE(reason([](auto& s) {
              s.solver = nefi::elliptic::LinearSolver::kBanded;
            }).find("linear_solver banded"),
            std::string::npos);
  // precond multigrid is not refused: the device CG runs the V-cycle too.
  EXPECT_EQ(reason([](auto& s) { s.cg.precond = nefi::elliptic::Preconditioner::kMultigrid; }), "");
  EXPECT_NE(reason([](auto& s) {
              s.grad_mode = nefi::elliptic::GradMode::kUnrolled;
            }).find("grad_mode unrolled"),
            std::string::npos);
}

// A device solve runs the preconditioner it is given (the device V-cycle
// for multigrid): the operator notes no substitution for either.
TEST(NefiEllipticOperator, DeviceNoteIsEmptyForBothPreconditioners) {
  namespace el = nefi::elliptic;
  const nefi::Domain dom({6, 5}, {1.0, 1.0});
  nefi::EllipticOperatorOptions o;
  EXPECT_EQ(nefi::EllipticOperator(dom, sources(), first_row(), o).device_note(), "");
  o.solve.cg.precond = el::Preconditioner::kMultigrid;
  EXPECT_EQ(nefi::EllipticOperator(dom, sources(), first_row(), o).device_note(), "");
  EXPECT_EQ(el::device_refusal(o.solve), "");
}

// One operator called from several threads (a Python caller's, the GIL
// released): its warm starts are read and replaced under their lock, so no
// call sees another's half-written iterate, and each answer is the solve's
// to its tolerance (warm starts move an answer within it).
TEST(NefiEllipticOperator, OneOperatorServesSeveralThreads) {
  const nefi::EllipticOperator op(nefi::Domain({12, 10}, {2.0, 2.0}), sources(), first_row(),
                                  warm_exp_options(1e-12));
  fk::Generator gen(3);
  std::vector<fk::Tensor> xs;
  for (int i = 0; i < 4; ++i) xs.push_back(fk::randn({12, 10}, {fk::DType::F64}, &gen) * 0.3);
  const fk::Tensor g = fk::ones(op.output_shape({12, 10}), {fk::DType::F64});
  std::vector<fk::Tensor> want, want_vjp;
  for (const fk::Tensor& x : xs) {
    want.push_back(op.apply(x));
    want_vjp.push_back(op.vjp(x, g));
  }
  auto apart = [](const fk::Tensor& a, const fk::Tensor& b) {
    const std::vector<double> u = a.to(fk::DType::F64).to_vector<double>(),
                              v = b.to(fk::DType::F64).to_vector<double>();
    double d = 0;
    for (size_t i = 0; i < u.size(); ++i) d = std::max(d, std::abs(u[i] - v[i]));
    return d;
  };
  std::vector<double> worst(xs.size(), 0.0);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < xs.size(); ++t)
    threads.emplace_back([&, t] {
      for (int call = 0; call < 40; ++call) {
        worst[t] = std::max(
            {worst[t], apart(op.apply(xs[t]), want[t]), apart(op.vjp(xs[t], g), want_vjp[t])});
      }
    });
  for (std::thread& th : threads) th.join();
  for (double w : worst) EXPECT_LT(w, 1e-8);
}

}  // namespace
