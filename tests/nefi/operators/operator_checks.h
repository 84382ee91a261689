#pragma once
// What the operator tests share: seeded f64 normal inputs, the dot product
// of two tensors' values, the adjoint dot test <A x, y> = <x, A^T y> with
// A^T from the operator's vjp, and an f64 gradcheck of apply.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "fk/random.h"
#include "fk/testing.h"
#include "nefi/operators/operator.h"

namespace nefi::test {

inline fk::Tensor rnd(const fk::Dims& s, uint64_t seed) {
  fk::Generator g(seed);
  return fk::randn(s, {fk::DType::F64}, &g);
}

inline double dot(const fk::Tensor& a, const fk::Tensor& b) {
  const auto x = a.to_vector<double>(), y = b.to_vector<double>();
  double s = 0;
  for (size_t i = 0; i < x.size(); ++i) s += x[i] * y[i];
  return s;
}

inline void expect_adjoint(const nefi::Operator& op, const fk::Dims& shape) {
  const fk::Tensor x = rnd(shape, 1), y = rnd(op.output_shape(shape), 2);
  const double lhs = dot(op.apply(x), y), rhs = dot(x, op.vjp(x, y));
  EXPECT_NEAR(lhs, rhs, 1e-10 * (1 + std::abs(lhs))) << op.kind();
}

inline void expect_gradcheck(const nefi::Operator& op, const fk::Dims& shape) {
  fk::Tensor x = rnd(shape, 3);
  x.set_requires_grad(true);
  auto fn = [&](const std::vector<fk::Tensor>& in) { return op.apply(in[0]); };
  EXPECT_EQ(fk::testing::gradcheck(fn, {x}), "") << op.kind();
}

}  // namespace nefi::test
