#include "nefi/solve/lbfgs.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "fk/error.h"

namespace nefi {
namespace {

// The sum of a_i b_i over four partial sums (a fixed order: deterministic).
// One running sum waits an add's latency per entry; with four the two-loop's
// passes run at memory speed (17 % of a 512^2 spectral fit's step went to
// them with one, docs/performance.md).
double dot(const double* a, const double* b, size_t n) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 += a[i] * b[i];
    s1 += a[i + 1] * b[i + 1];
    s2 += a[i + 2] * b[i + 2];
    s3 += a[i + 3] * b[i + 3];
  }
  for (; i < n; ++i) s0 += a[i] * b[i];
  return (s0 + s1) + (s2 + s3);
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  return dot(a.data(), b.data(), a.size());
}

// q += c u, then returns w . q (the updated q) from the same pass, as dot's sums.
double axpy_dot(std::vector<double>& q, double c, const std::vector<double>& u,
                const std::vector<double>& w) {
  double* qp = q.data();
  const double *up = u.data(), *wp = w.data();
  const size_t n = q.size();
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    qp[i] += c * up[i];
    qp[i + 1] += c * up[i + 1];
    qp[i + 2] += c * up[i + 2];
    qp[i + 3] += c * up[i + 3];
    s0 += wp[i] * qp[i];
    s1 += wp[i + 1] * qp[i + 1];
    s2 += wp[i + 2] * qp[i + 2];
    s3 += wp[i + 3] * qp[i + 3];
  }
  for (; i < n; ++i) {
    qp[i] += c * up[i];
    s0 += wp[i] * qp[i];
  }
  return (s0 + s1) + (s2 + s3);
}

double max_abs(const std::vector<double>& a) {
  double m = 0;
  for (double v : a) m = std::max(m, std::abs(v));
  return m;
}

// Minimiser of the cubic through (x1, f1, g1) and (x2, f2, g2), clamped to
// [lo, hi]; the interval's midpoint when the cubic has no minimiser.
double cubic_min(double x1, double f1, double g1, double x2, double f2, double g2, double lo,
                 double hi) {
  const double d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2);
  const double d2sq = d1 * d1 - g1 * g2;
  if (!(d2sq >= 0)) return 0.5 * (lo + hi);
  const double d2 = std::sqrt(d2sq);
  const double m = x1 <= x2 ? x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
                            : x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2));
  return std::min(std::max(m, lo), hi);
}

double cubic_min(double x1, double f1, double g1, double x2, double f2, double g2) {
  return cubic_min(x1, f1, g1, x2, f2, g2, std::min(x1, x2), std::max(x1, x2));
}

// One end of a bracket: step, value, gradient, directional derivative.
struct Point {
  double t = 0, f = 0;
  std::vector<double> g;
  double gtd = 0;
};

}  // namespace

void LbfgsOptions::validate() const {
  FK_CHECK(history >= 1, "nefi::LbfgsOptions", "history >= 1", fk::to_text(history));
  FK_CHECK(max_iter >= 1, "nefi::LbfgsOptions", "max_iter >= 1", fk::to_text(max_iter));
  FK_CHECK(max_eval >= 0, "nefi::LbfgsOptions", "max_eval >= 0 (0: max_iter · 5 / 4)",
           fk::to_text(max_eval));
  FK_CHECK(tolerance_grad >= 0 && tolerance_change >= 0, "nefi::LbfgsOptions", "tolerances >= 0",
           fk::to_text(tolerance_grad) + ", " + fk::to_text(tolerance_change));
  FK_CHECK(line_search == "strong_wolfe" || line_search == "none", "nefi::LbfgsOptions",
           "line_search strong_wolfe or none", line_search);
}

LineSearchResult strong_wolfe(const DirectionalObjective& phi, double f0,
                              const std::vector<double>& g0, const std::vector<double>& d, double t,
                              double gtd0, double tolerance_change, int max_ls, double c1,
                              double c2) {
  const double d_norm = max_abs(d);
  int evals = 0;
  auto eval = [&](double tt) {
    Point p;
    p.t = tt;
    p.f = phi(tt, p.g);
    p.gtd = dot(p.g, d);
    ++evals;
    return p;
  };
  const Point start{0, f0, g0, gtd0};
  Point prev = start, cur = eval(t);
  // Bracketing: grow the step until it overshoots, or meets the conditions.
  std::vector<Point> br;
  bool done = false;
  int it = 0;
  while (it < max_ls) {
    if (cur.f > f0 + c1 * cur.t * gtd0 || (it > 1 && cur.f >= prev.f)) {
      br = {prev, cur};
      break;
    }
    if (std::abs(cur.gtd) <= -c2 * gtd0) {
      br = {cur};
      done = true;
      break;
    }
    if (cur.gtd >= 0) {
      br = {prev, cur};
      break;
    }
    const double lo = cur.t + 0.01 * (cur.t - prev.t), hi = cur.t * 10;
    const double next = cubic_min(prev.t, prev.f, prev.gtd, cur.t, cur.f, cur.gtd, lo, hi);
    prev = std::move(cur);
    cur = eval(next);
    ++it;
  }
  if (it == max_ls) br = {start, cur};
  // Zoom: shrink the bracket [low, high] around a point that meets them.
  bool insufficient = false;
  size_t low = br.front().f <= br.back().f ? 0 : br.size() - 1, high = br.size() - 1 - low;
  while (!done && it < max_ls) {
    const double a = std::min(br[0].t, br[1].t), b = std::max(br[0].t, br[1].t);
    if ((b - a) * d_norm < tolerance_change) break;
    double tt = cubic_min(br[0].t, br[0].f, br[0].gtd, br[1].t, br[1].f, br[1].gtd);
    // Keep the trial away from the ends, or the bracket barely shrinks.
    const double eps = 0.1 * (b - a);
    if (std::min(b - tt, tt - a) < eps) {
      if (insufficient || tt >= b || tt <= a) {
        tt = std::abs(tt - b) < std::abs(tt - a) ? b - eps : a + eps;
        insufficient = false;
      } else {
        insufficient = true;
      }
    } else {
      insufficient = false;
    }
    Point p = eval(tt);
    ++it;
    if (p.f > f0 + c1 * p.t * gtd0 || p.f >= br[low].f) {
      br[high] = std::move(p);
      low = br[0].f <= br[1].f ? 0 : 1;
      high = 1 - low;
    } else {
      if (std::abs(p.gtd) <= -c2 * gtd0)
        done = true;
      else if (p.gtd * (br[high].t - br[low].t) >= 0)
        br[high] = br[low];
      br[low] = std::move(p);
    }
  }
  return {br[low].t, br[low].f, std::move(br[low].g), evals};
}

Lbfgs::Lbfgs(LbfgsOptions options) : o_(std::move(options)) {
  o_.validate();
}

void Lbfgs::reset() {
  s_.clear();
  y_.clear();
  rho_.clear();
  d_.clear();
  prev_g_.clear();
  t_ = 0;
  h_diag_ = 1;
  n_iter_ = n_eval_ = 0;
}

LbfgsState Lbfgs::state() const {
  return {{s_.begin(), s_.end()},
          {y_.begin(), y_.end()},
          {rho_.begin(), rho_.end()},
          d_,
          prev_g_,
          t_,
          h_diag_,
          n_iter_,
          n_eval_};
}

void Lbfgs::restore(const LbfgsState& st, size_t n) {
  const size_t k = st.s.size();
  bool ok = k <= static_cast<size_t>(o_.history) && st.y.size() == k && st.rho.size() == k &&
            (st.d.empty() || st.d.size() == n) && (st.prev_g.empty() || st.prev_g.size() == n) &&
            st.n_iter >= 0 && st.n_eval >= 0 && std::isfinite(st.t) && std::isfinite(st.h_diag);
  for (size_t i = 0; ok && i < k; ++i) ok = st.s[i].size() == n && st.y[i].size() == n;
  FK_CHECK(ok, "nefi::Lbfgs::restore",
           "a state of " + fk::to_text(n) + "-value vectors with at most " +
               fk::to_text(o_.history) + " curvature pairs",
           fk::to_text(k) + " pairs, a direction of " + fk::to_text(st.d.size()) + " values");
  s_.assign(st.s.begin(), st.s.end());
  y_.assign(st.y.begin(), st.y.end());
  rho_.assign(st.rho.begin(), st.rho.end());
  d_ = st.d;
  prev_g_ = st.prev_g;
  t_ = st.t;
  h_diag_ = st.h_diag;
  n_iter_ = st.n_iter;
  n_eval_ = st.n_eval;
}

// d = −H g by the two-loop recursion, after adding the pair of the last step.
void Lbfgs::update_direction(const std::vector<double>& g) {
  const size_t n = g.size();
  std::vector<double> y(n), s(n);
  for (size_t i = 0; i < n; ++i) {
    y[i] = g[i] - prev_g_[i];
    s[i] = d_[i] * t_;
  }
  const double ys = dot(y, s);
  if (ys > 1e-10) {
    if (static_cast<int>(s_.size()) == o_.history) {
      s_.pop_front();
      y_.pop_front();
      rho_.pop_front();
    }
    h_diag_ = ys / dot(y, y);
    s_.push_back(std::move(s));
    y_.push_back(std::move(y));
    rho_.push_back(1.0 / ys);
  }
  // The two-loop recursion; each update of q also takes the next pair's dot
  // product with it, one pass over q per pair and loop.
  const size_t m = s_.size();
  std::vector<double> q(n), al(m);
  for (size_t i = 0; i < n; ++i) q[i] = -g[i];
  double next = m > 0 ? dot(s_[m - 1], q) : 0;  // s_k . q
  for (size_t k = m; k-- > 0;) {
    al[k] = next * rho_[k];
    // The last update's sum (with y_0, unused) is the price of one loop body.
    next = axpy_dot(q, -al[k], y_[k], k > 0 ? s_[k - 1] : y_[k]);
  }
  for (double& v : q) v *= h_diag_;
  next = m > 0 ? dot(y_[0], q) : 0;  // y_k . q
  for (size_t k = 0; k < m; ++k) {
    const double be = next * rho_[k];
    next = axpy_dot(q, al[k] - be, s_[k], k + 1 < m ? y_[k + 1] : s_[k]);
  }
  d_ = std::move(q);
}

double Lbfgs::step(const Objective& f, std::vector<double>& x, double lr) {
  const size_t n = x.size();
  std::vector<double> g(n);
  double loss = f(x, g);
  int evals = 1;
  ++n_eval_;
  if (max_abs(g) <= o_.tolerance_grad) return loss;
  for (int it = 1; it <= o_.max_iter; ++it) {
    if (++n_iter_ == 1 || d_.size() != n) {
      d_.assign(n, 0.0);
      for (size_t i = 0; i < n; ++i) d_[i] = -g[i];
      s_.clear();
      y_.clear();
      rho_.clear();
      h_diag_ = 1;
    } else {
      update_direction(g);
    }
    prev_g_ = g;
    const double prev_loss = loss;
    if (n_iter_ == 1) {
      double l1 = 0;
      for (double v : g) l1 += std::abs(v);
      t_ = std::min(1.0, 1.0 / l1) * lr;
    } else {
      t_ = lr;
    }
    const double gtd = dot(g, d_);
    if (gtd > -o_.tolerance_change) break;
    int ls_evals = 0;
    bool optimal = false;
    if (o_.line_search == "strong_wolfe") {
      std::vector<double> xt(n);
      auto phi = [&](double t, std::vector<double>& gt) {
        for (size_t i = 0; i < n; ++i) xt[i] = x[i] + t * d_[i];
        return f(xt, gt);
      };
      // The bracket's own tolerance stays strong_wolfe's 1e-9, as torch's
      // step() calls it: tolerance_change sets the step's stops only.
      LineSearchResult r = strong_wolfe(phi, loss, g, d_, t_, gtd);
      t_ = r.t;
      loss = r.f;
      g = std::move(r.g);
      for (size_t i = 0; i < n; ++i) x[i] += t_ * d_[i];
      ls_evals = r.evals;
      optimal = max_abs(g) <= o_.tolerance_grad;
    } else {
      for (size_t i = 0; i < n; ++i) x[i] += t_ * d_[i];
      if (it != o_.max_iter) {
        loss = f(x, g);
        ls_evals = 1;
        optimal = max_abs(g) <= o_.tolerance_grad;
      }
    }
    evals += ls_evals;
    n_eval_ += ls_evals;
    if (it == o_.max_iter || evals >= o_.eval_cap() || optimal) break;
    if (max_abs(d_) * std::abs(t_) <= o_.tolerance_change) break;
    if (std::abs(loss - prev_loss) < o_.tolerance_change) break;
  }
  return loss;
}

}  // namespace nefi
