#pragma once
// The seeded random fields the elliptic solve tests (CPU and device) build
// their systems from, f64 on the CPU: coefficients σ, κ from positive(),
// right-hand sides and cotangents from normal().
#include <cstdint>

#include "fk/ops/binary.h"
#include "fk/random.h"
#include "fk/shape.h"
#include "fk/tensor.h"

namespace nefi::elliptic::test {

// Uniform in [0.5, 2.5): a coefficient bounded away from 0.
inline fk::Tensor positive(const fk::Dims& s, uint64_t seed) {
  fk::Generator g(seed);
  return fk::rand(s, {fk::DType::F64}, &g) * 2.0 + 0.5;
}

// Standard normal.
inline fk::Tensor normal(const fk::Dims& s, uint64_t seed) {
  fk::Generator g(seed);
  return fk::randn(s, {fk::DType::F64}, &g);
}

}  // namespace nefi::elliptic::test
