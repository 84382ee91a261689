#pragma once
// Checking an op's exposed pure backward function against the gradient the
// autograd tape computes for the same seed.
#include <gtest/gtest.h>

#include <functional>

#include "fk/fk.h"

namespace fk::test {

// dL/dx for L = sum(Re(conj(g) * f(x))), i.e. f(x).backward(g), by autograd.
inline Tensor autograd_grad(const std::function<Tensor(const Tensor&)>& f, const Tensor& x,
                            const Tensor& g) {
  Tensor leaf = x.detach().clone().set_requires_grad(true);
  f(leaf).backward(g);
  return leaf.grad();
}

// a and b have one shape and agree within tol (max |a - b|; complex too).
inline void expect_same(const Tensor& a, const Tensor& b, double tol) {
  ASSERT_EQ(a.shape(), b.shape());
  if (a.numel() == 0) return;
  EXPECT_LE(amax(abs(sub(a.to(b.dtype()), b))).item(), tol);
}

}  // namespace fk::test
