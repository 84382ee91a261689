#pragma once
// Gradient check through the module API: the leaves a module computes with
// are its own parameters, so instead of fk::testing::gradcheck (which clones
// its inputs) this perturbs every component of every given leaf in place and
// compares the central difference of L = sum(y * r) (r a fixed random
// projection of the output) with the gradient backward() accumulates. f64.
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "fk/fk.h"
#include "fk/test_util.h"

namespace minkowski::nn::testing {

inline std::string module_gradcheck(const std::function<fk::Tensor()>& forward,
                                    const std::vector<fk::Tensor>& leaves, double eps = 1e-6,
                                    double tol = 1e-5) {
  fk::Tensor y = forward();
  const fk::Tensor r = fk::test::random_tensor(y.shape(), fk::DType::F64, -1.0, 1.0, 5);
  auto loss = [&](const fk::Tensor& out) { return fk::sum(fk::mul(out, r)); };
  for (const auto& l : leaves) {
    fk::Tensor g = l;
    g.set_grad(fk::Tensor());
  }
  loss(y).backward();
  fk::autograd::NoGradGuard no_grad;
  for (size_t a = 0; a < leaves.size(); ++a) {
    fk::Tensor leaf = leaves[a];
    if (!leaf.grad().defined()) return "leaf " + std::to_string(a) + " got no gradient";
    const std::vector<double> analytic = leaf.grad().to_vector<double>();
    double* p = leaf.data<double>();
    for (int64_t k = 0; k < leaf.numel(); ++k) {
      const double saved = p[k];
      p[k] = saved + eps;
      const double plus = loss(forward()).item();
      p[k] = saved - eps;
      const double minus = loss(forward()).item();
      p[k] = saved;
      const double numerical = (plus - minus) / (2 * eps);
      if (!(std::abs(numerical - analytic[k]) <= tol * (1.0 + std::abs(numerical)))) {
        return "leaf " + std::to_string(a) + " component " + std::to_string(k) + ": analytic " +
               std::to_string(analytic[k]) + ", numerical " + std::to_string(numerical);
      }
    }
  }
  return "";
}

}  // namespace minkowski::nn::testing
