#pragma once
// Helpers shared by the heat operator's test files: small f64 reductions,
// a test diffusivity and configuration, a step geometry, and one implicit
// step by a named backend and solver.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "fk/autograd.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/reduce.h"
#include "fk/random.h"
#include "fk/tensor.h"
#include "fk/test_util.h"
#include "nefi/operators/heat/heat_operator.h"
#include "nefi/operators/heat/step_solver.h"
#include "nefi/operators/operator_checks.h"

namespace heat_test {
namespace heat = nefi::heat;
using fk::test::max_abs;
using fk::test::max_abs_diff;

using nefi::test::dot;

inline double l2(const fk::Tensor& t) {
  return std::sqrt(dot(t, t));
}

// A smooth positive diffusivity with a low-α inclusion, (nx, ny, nz).
inline fk::Tensor test_alpha(const fk::Dims& s, fk::DType dt, uint64_t seed = 3) {
  fk::Generator g(seed);
  return fk::uniform(s, 0.08, 0.2, {dt}, &g);
}

inline nefi::HeatConfig small_config() {
  nefi::HeatConfig c;
  c.extent = {2.0, 2.0, 1.0};
  c.dt = 0.05;
  c.n_frames = 4;
  c.flash.width_xy = 0.5;
  c.flash.width_z = 0.3;
  return c;
}

inline heat::StepGeometry geometry(int64_t nx, int64_t ny, int64_t nz, std::vector<double> extent,
                                   double dt, double sink = 0) {
  return {nx, ny, nz, extent[0] / nx, extent[1] / ny, extent[2] / nz, dt, sink};
}

// One implicit step A x = b warm-started from b, by the named backend and solver.
inline fk::Tensor one_step(const fk::Tensor& alpha, const heat::StepGeometry& g,
                           const fk::Tensor& b, bool flat, heat::SolverOptions o) {
  auto s = heat::make_step_solver(alpha, g, flat, o);
  s->start(b);
  s->solve(b);
  fk::Tensor x = fk::empty(g.shape(), {alpha.dtype()});
  s->result(x);
  return x;
}

// Gradient of ℓ = <apply(α), w> through the operator's grad_mode.
inline fk::Tensor loss_gradient(const nefi::HeatOperator& op, const fk::Tensor& alpha,
                                const fk::Tensor& w) {
  fk::Tensor a = alpha.detach().clone();
  a.set_requires_grad(true);
  fk::Tensor loss = fk::sum(fk::mul(op.apply(a), w));
  loss.backward();
  return a.grad();
}

}  // namespace heat_test
