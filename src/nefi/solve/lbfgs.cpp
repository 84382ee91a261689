#include "nefi/solve/lbfgs.h"

#include <cmath>

namespace nefi {
namespace {
double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}
}  // namespace

void Lbfgs::reset() {
  s_.clear();
  y_.clear();
  have_ = false;
}

double Lbfgs::step(const Objective& f, std::vector<double>& x, double lr) {
  const size_t n = x.size();
  if (!have_ || g_.size() != n) {
    g_.assign(n, 0.0);
    fx_ = f(x, g_);
    have_ = true;
  }
  // Two-loop recursion: d = -H g.
  std::vector<double> q = g_;
  const size_t m = s_.size();
  std::vector<double> alpha(m);
  for (size_t k = m; k-- > 0;) {
    alpha[k] = dot(s_[k], q) / dot(y_[k], s_[k]);
    for (size_t i = 0; i < n; ++i) q[i] -= alpha[k] * y_[k][i];
  }
  double gamma = 1.0;
  if (m > 0) gamma = dot(s_.back(), y_.back()) / dot(y_.back(), y_.back());
  for (double& v : q) v *= gamma;
  for (size_t k = 0; k < m; ++k) {
    const double beta = dot(y_[k], q) / dot(y_[k], s_[k]);
    for (size_t i = 0; i < n; ++i) q[i] += (alpha[k] - beta) * s_[k][i];
  }
  std::vector<double> d(n);
  for (size_t i = 0; i < n; ++i) d[i] = -q[i];
  double gd = dot(g_, d);
  if (!(gd < 0)) {  // not a descent direction: restart from steepest descent
    reset();
    have_ = true;
    for (size_t i = 0; i < n; ++i) d[i] = -g_[i];
    gd = -dot(g_, g_);
  }
  double t = lr;
  if (m == 0) t = lr / std::max(1e-12, std::sqrt(dot(d, d)));
  std::vector<double> xn(n), gn(n);
  double fn = fx_;
  for (int e = 0; e < max_evals_; ++e) {
    for (size_t i = 0; i < n; ++i) xn[i] = x[i] + t * d[i];
    fn = f(xn, gn);
    if (std::isfinite(fn) && fn <= fx_ + 1e-4 * t * gd) break;
    t *= 0.5;
    if (e + 1 == max_evals_) {  // no decrease: keep x
      f(x, g_);
      return fx_;
    }
  }
  std::vector<double> s(n), y(n);
  for (size_t i = 0; i < n; ++i) {
    s[i] = xn[i] - x[i];
    y[i] = gn[i] - g_[i];
  }
  if (dot(s, y) > 1e-12) {
    s_.push_back(std::move(s));
    y_.push_back(std::move(y));
    if (static_cast<int>(s_.size()) > history_) {
      s_.pop_front();
      y_.pop_front();
    }
  }
  x = xn;
  g_ = gn;
  fx_ = fn;
  return fn;
}

}  // namespace nefi
