#pragma once
// Forward models for the bring-your-own-problem tests, written as host
// functions on f64 arrays as a caller outside fieldkit would write them.
#include <cmath>
#include <memory>
#include <vector>

#include "fk/factory.h"
#include "nefi/operators/function_operator.h"

namespace nefi::test {

// y = A x for a dense row-major A (m x n), adjoint A^T.
inline ForwardModel matrix_model(std::vector<double> a, int64_t m, int64_t n) {
  auto A = std::make_shared<std::vector<double>>(std::move(a));
  ForwardModel f;
  f.forward = [A, m, n](const std::vector<fk::Tensor>& xs) {
    const std::vector<double> v = xs[0].to_vector<double>();
    std::vector<double> y(m, 0.0);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) y[i] += (*A)[i * n + j] * v[j];
    return fk::from_vector(y, fk::Dims{m});
  };
  f.vjp = [A, m, n](const std::vector<fk::Tensor>&, const fk::Tensor& g) {
    const std::vector<double> gv = g.to_vector<double>();
    std::vector<double> r(n, 0.0);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) r[j] += (*A)[i * n + j] * gv[i];
    return std::vector<fk::Tensor>{fk::from_vector(r, fk::Dims{n})};
  };
  return f;
}

// A row-normalised Gaussian blur of width sigma (cells) on n cells, n x n.
inline std::vector<double> blur_matrix(int64_t n, double sigma) {
  std::vector<double> a(n * n);
  for (int64_t i = 0; i < n; ++i) {
    double s = 0;
    for (int64_t j = 0; j < n; ++j)
      s += a[i * n + j] = std::exp(-0.5 * std::pow((i - j) / sigma, 2));
    for (int64_t j = 0; j < n; ++j) a[i * n + j] /= s;
  }
  return a;
}

}  // namespace nefi::test
