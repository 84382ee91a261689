#pragma once
// Forward models for the bring-your-own-problem tests, written as host
// functions on f64 arrays as a caller outside fieldkit would write them,
// and the scenes they measure.
#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "fk/factory.h"
#include "nefi/byop/auto_problem.h"
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

// Two rectangles and a disc on an n x n grid, values 0, 0.5 and 1; with
// `blur`, smoothed by a Gaussian of that many cells (an image whose spectrum
// has decayed by the grid's highest frequencies, as a scan's does).
inline fk::Tensor shapes_phantom(int64_t n, double blur = 0) {
  std::vector<double> v(n * n, 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const double y = (i + 0.5) / n, x = (j + 0.5) / n;
      if (y > 0.15 && y < 0.45 && x > 0.1 && x < 0.55) v[i * n + j] = 0.5;
      if ((x - 0.65) * (x - 0.65) + (y - 0.65) * (y - 0.65) < 0.04) v[i * n + j] = 1.0;
      if (y > 0.7 && y < 0.85 && x > 0.15 && x < 0.4) v[i * n + j] = 1.0;
    }
  if (blur > 0) {
    const int r = static_cast<int>(std::ceil(3 * blur));
    std::vector<double> w(2 * r + 1), tmp(n * n, 0.0), out(n * n, 0.0);
    double sum = 0;
    for (int k = -r; k <= r; ++k) sum += w[k + r] = std::exp(-0.5 * k * k / (blur * blur));
    for (double& e : w) e /= sum;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j)
        for (int k = -r; k <= r; ++k)
          if (j + k >= 0 && j + k < n) tmp[i * n + j] += w[k + r] * v[i * n + j + k];
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j)
        for (int k = -r; k <= r; ++k)
          if (i + k >= 0 && i + k < n) out[i * n + j] += w[k + r] * tmp[(i + k) * n + j];
    v = out;
  }
  return fk::from_vector(v, {n, n});
}

inline fk::Tensor with_noise(const fk::Tensor& y, double sigma, unsigned seed) {
  auto v = y.to_vector<double>();
  std::mt19937_64 g(seed);
  std::normal_distribution<double> nd(0, sigma);
  for (double& e : v) e += nd(g);
  return fk::from_vector(v, y.shape());
}

// An n x n k-space sampling mask in numpy.fft order (DC at index 0): every
// frequency within `radius` of DC (in units of the Nyquist frequency), and
// each other one with probability `fraction` (drawn from `seed`).
inline fk::Tensor variable_density_mask(int64_t n, double radius, double fraction, unsigned seed) {
  std::vector<double> mask(n * n);
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(0, 1);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const double fi = (i <= n / 2 ? i : i - n) / (0.5 * n),
                   fj = (j <= n / 2 ? j : j - n) / (0.5 * n);
      mask[i * n + j] = fi * fi + fj * fj < radius * radius || u(g) < fraction ? 1.0 : 0.0;
    }
  return fk::from_vector(mask, {n, n});
}

// The value auto_problem decided for `key` (empty when it made no such decision).
inline std::string value_of(const nefi::AutoProblem& ap, const std::string& key) {
  for (const auto& d : ap.decisions)
    if (d.key == key) return d.value;
  return "";
}

// Bumps on n cells seen through a blur matrix, with noise of `rel` x max.
struct Blur1D {
  int64_t n;
  std::vector<double> gt, y;
  double sigma;
  nefi::OperatorPtr op;
  Blur1D(int64_t n_, double rel, unsigned seed = 1) : n(n_) {
    const auto a = blur_matrix(n, 2.0);
    op = std::make_shared<nefi::FunctionOperator>(fk::Dims{n}, fk::Dims{n}, matrix_model(a, n, n),
                                                  1.0, "blur");
    gt.assign(n, 0.0);
    for (auto [c, w, h] : {std::tuple{0.3, 0.05, 1.0}, {0.6, 0.03, 0.6}, {0.75, 0.08, 0.8}})
      for (int64_t i = 0; i < n; ++i)
        gt[i] += h * std::exp(-0.5 * std::pow(((i + 0.5) / n - c) / w, 2));
    y.assign(n, 0.0);
    double mx = 0;
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < n; ++j) y[i] += a[i * n + j] * gt[j];
      mx = std::max(mx, y[i]);
    }
    sigma = rel * mx;
    std::mt19937_64 g(seed);
    std::normal_distribution<double> nd(0, sigma);
    for (double& v : y) v += nd(g);
  }
  nefi::Measurement measurement() const {
    nefi::Measurement m;
    m.data = fk::from_vector(y, {n});
    return m;
  }
};

// Two fields on n cells, as one linear model of two inputs: "a" (Blur1D's
// bumps, noise-free) through its blur stacked on "b" (a signed ramp from
// -0.5) seen directly; output (2, n). `homogeneity`: what the model
// declares.
struct BumpsAndRamp {
  Blur1D bumps;
  std::vector<double> ramp;
  OperatorPtr op;
  Measurement measurement;
  BumpsAndRamp(int64_t n, std::optional<double> homogeneity) : bumps(n, 0.0), ramp(n) {
    const ForwardModel blur = matrix_model(blur_matrix(n, 2.0), n, n);
    ForwardModel f;
    f.forward = [blur](const std::vector<fk::Tensor>& xs) {
      std::vector<double> y = blur.forward({xs[0]}).to_vector<double>();
      const std::vector<double> r = xs[1].to_vector<double>();
      y.insert(y.end(), r.begin(), r.end());
      return fk::from_vector(y, {2, static_cast<int64_t>(r.size())});
    };
    f.vjp = [blur](const std::vector<fk::Tensor>& xs, const fk::Tensor& g) {
      return std::vector<fk::Tensor>{blur.vjp({xs[0]}, g.select(0, 0).contiguous())[0],
                                     g.select(0, 1).contiguous()};
    };
    op = std::make_shared<FunctionOperator>(fk::Dims{n}, fk::Dims{2, n}, f, homogeneity, "two",
                                            std::vector<std::string>{"a", "b"});
    std::vector<double> y = bumps.y;
    for (int64_t i = 0; i < n; ++i) y.push_back(ramp[i] = -0.5 + static_cast<double>(i) / n);
    measurement.data = fk::from_vector(y, {2, n});
  }
};

}  // namespace nefi::test
