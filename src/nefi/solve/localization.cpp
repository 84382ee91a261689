#include "nefi/solve/localization.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "fk/error.h"

namespace nefi {

std::vector<int64_t> hungarian_assignment(const std::vector<double>& cost, int64_t rows,
                                          int64_t cols) {
  FK_CHECK(rows >= 0 && cols >= 0 && static_cast<int64_t>(cost.size()) == rows * cols,
           "nefi::hungarian_assignment", fk::to_text(rows * cols) + " costs",
           fk::to_text(cost.size()));
  for (double c : cost)
    FK_CHECK(std::isfinite(c), "nefi::hungarian_assignment", "finite costs", fk::to_text(c));
  std::vector<int64_t> out(rows, -1);
  if (rows == 0 || cols == 0) return out;
  if (rows > cols) {  // assign the columns to rows on the transpose
    std::vector<double> t(cost.size());
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) t[j * rows + i] = cost[i * cols + j];
    const std::vector<int64_t> col_to_row = hungarian_assignment(t, cols, rows);
    for (int64_t j = 0; j < cols; ++j) out[col_to_row[j]] = j;
    return out;
  }
  // Shortest augmenting paths with row potentials u and column potentials v
  // (1-based; column 0 is the virtual start). match[j]: the row holding column j.
  const int64_t n = rows, m = cols;
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> u(n + 1, 0.0), v(m + 1, 0.0);
  std::vector<int64_t> match(m + 1, 0), way(m + 1, 0);
  for (int64_t i = 1; i <= n; ++i) {
    match[0] = i;
    int64_t j0 = 0;
    std::vector<double> minv(m + 1, inf);
    std::vector<char> used(m + 1, 0);
    do {
      used[j0] = 1;
      const int64_t i0 = match[j0];
      double delta = inf;
      int64_t j1 = 0;
      for (int64_t j = 1; j <= m; ++j) {
        if (used[j]) continue;
        const double cur = cost[(i0 - 1) * m + (j - 1)] - u[i0] - v[j];
        if (cur < minv[j]) {
          minv[j] = cur;
          way[j] = j0;
        }
        if (minv[j] < delta) {
          delta = minv[j];
          j1 = j;
        }
      }
      for (int64_t j = 0; j <= m; ++j) {
        if (used[j]) {
          u[match[j]] += delta;
          v[j] -= delta;
        } else {
          minv[j] -= delta;
        }
      }
      j0 = j1;
    } while (match[j0] != 0);
    do {  // flip the augmenting path back to its start
      const int64_t j1 = way[j0];
      match[j0] = match[j1];
      j0 = j1;
    } while (j0 != 0);
  }
  for (int64_t j = 1; j <= m; ++j)
    if (match[j] != 0) out[match[j] - 1] = j - 1;
  return out;
}

std::vector<std::pair<int64_t, int64_t>> peak_positions(const std::vector<double>& map,
                                                        const fk::Dims& shape, double threshold) {
  FK_CHECK(shape.size() == 2 && static_cast<int64_t>(map.size()) == shape.numel(),
           "nefi::peak_positions", "a 2-D map", shape.str());
  const int64_t H = shape[0], W = shape[1];
  double mx = 0;
  for (double v : map) mx = std::max(mx, v);
  std::vector<std::pair<double, int64_t>> found;
  if (mx <= 0) return {};
  for (int64_t i = 0; i < H; ++i)
    for (int64_t j = 0; j < W; ++j) {
      const double c = map[i * W + j];
      if (c <= threshold * mx) continue;
      bool peak = true;
      for (int64_t di = -1; di <= 1 && peak; ++di)
        for (int64_t dj = -1; dj <= 1 && peak; ++dj) {
          const int64_t a = i + di, b = j + dj;
          if ((di == 0 && dj == 0) || a < 0 || a >= H || b < 0 || b >= W) continue;
          const double o = map[a * W + b];
          // Earlier neighbours (C order) must be strictly lower: one cell per plateau.
          const bool earlier = a * W + b < i * W + j;
          peak = earlier ? o < c : o <= c;
        }
      if (peak) found.push_back({c, i * W + j});
    }
  std::stable_sort(found.begin(), found.end(),
                   [](const auto& x, const auto& y) { return x.first > y.first; });
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const auto& [v, at] : found) out.push_back({at / W, at % W});
  return out;
}

PeakMatch hungarian_f1(const std::vector<std::pair<int64_t, int64_t>>& pred,
                       const std::vector<std::pair<int64_t, int64_t>>& truth, double radius) {
  PeakMatch m;
  m.n_pred = static_cast<int64_t>(pred.size());
  m.n_true = static_cast<int64_t>(truth.size());
  if (m.n_pred + m.n_true == 0) {
    m.f1 = 1.0;
    m.mean_distance = std::numeric_limits<double>::quiet_NaN();  // no hit
    return m;
  }
  // Pairs beyond the radius cost more than any set of pairs within it, so the
  // assignment first maximises the matches, then minimises their distance.
  const double far = (radius + 1) * static_cast<double>(m.n_pred + m.n_true + 1);
  std::vector<double> cost(m.n_pred * m.n_true);
  auto dist = [&](int64_t p, int64_t t) {
    return std::hypot(static_cast<double>(pred[p].first - truth[t].first),
                      static_cast<double>(pred[p].second - truth[t].second));
  };
  for (int64_t p = 0; p < m.n_pred; ++p)
    for (int64_t t = 0; t < m.n_true; ++t) {
      const double d = dist(p, t);
      cost[p * m.n_true + t] = d <= radius ? d : far;
    }
  const std::vector<int64_t> a = hungarian_assignment(cost, m.n_pred, m.n_true);
  double total = 0;
  for (int64_t p = 0; p < m.n_pred; ++p)
    if (a[p] >= 0 && dist(p, a[p]) <= radius) {
      ++m.true_positives;
      total += dist(p, a[p]);
    }
  m.f1 = 2.0 * m.true_positives / static_cast<double>(m.n_pred + m.n_true);
  m.mean_distance = m.true_positives ? total / static_cast<double>(m.true_positives)
                                     : std::numeric_limits<double>::quiet_NaN();
  return m;
}

namespace {

struct Mass {
  double at, weight;
};

// Unit-mass list of the positive cells of x (C order, H x W).
std::vector<std::pair<int64_t, double>> unit_mass(const std::vector<double>& x) {
  std::vector<std::pair<int64_t, double>> m;
  double total = 0;
  for (size_t k = 0; k < x.size(); ++k)
    if (x[k] > 0) {
      m.push_back({static_cast<int64_t>(k), x[k]});
      total += x[k];
    }
  FK_CHECK(total > 0, "nefi::sliced_wasserstein", "maps with positive mass", "none");
  for (auto& [k, w] : m) w /= total;
  return m;
}

// W2^2 between two sorted unit-mass 1-D distributions: walk both quantile
// functions, pairing equal slices of mass.
double wasserstein2_squared(const std::vector<Mass>& a, const std::vector<Mass>& b) {
  size_t i = 0, j = 0;
  double ra = a[0].weight, rb = b[0].weight, sum = 0;
  while (i < a.size() && j < b.size()) {
    const double m = std::min(ra, rb), d = a[i].at - b[j].at;
    sum += m * d * d;
    ra -= m;
    rb -= m;
    if (ra <= 1e-15 && ++i < a.size()) ra = a[i].weight;
    if (rb <= 1e-15 && ++j < b.size()) rb = b[j].weight;
  }
  return sum;
}

// Prewitt gradient magnitude of a map scaled to max |x| = 1, replicated edges.
std::vector<double> prewitt_magnitude(const std::vector<double>& x, int64_t H, int64_t W) {
  double mx = 0;
  for (double v : x) mx = std::max(mx, std::abs(v));
  const double s = mx > 0 ? 1.0 / mx : 1.0;
  auto at = [&](int64_t i, int64_t j) {
    return s * x[std::clamp<int64_t>(i, 0, H - 1) * W + std::clamp<int64_t>(j, 0, W - 1)];
  };
  std::vector<double> g(H * W);
  for (int64_t i = 0; i < H; ++i)
    for (int64_t j = 0; j < W; ++j) {
      double gx = 0, gy = 0;
      for (int64_t d = -1; d <= 1; ++d) {
        gx += (at(i + d, j + 1) - at(i + d, j - 1)) / 3.0;
        gy += (at(i + 1, j + d) - at(i - 1, j + d)) / 3.0;
      }
      g[i * W + j] = std::sqrt(gx * gx + gy * gy);
    }
  return g;
}

}  // namespace

double gmsd(const std::vector<double>& x, const std::vector<double>& ref, const fk::Dims& shape,
            double c) {
  FK_CHECK(shape.size() == 2 && static_cast<int64_t>(x.size()) == shape.numel() &&
               ref.size() == x.size(),
           "nefi::gmsd", "two 2-D maps of " + shape.str(),
           fk::to_text(x.size()) + " and " + fk::to_text(ref.size()) + " values");
  const auto m1 = prewitt_magnitude(x, shape[0], shape[1]);
  const auto m2 = prewitt_magnitude(ref, shape[0], shape[1]);
  std::vector<double> gms(m1.size());
  double mean = 0;
  for (size_t i = 0; i < gms.size(); ++i) {
    gms[i] = (2 * m1[i] * m2[i] + c) / (m1[i] * m1[i] + m2[i] * m2[i] + c);
    mean += gms[i] / gms.size();
  }
  double var = 0;
  for (double g : gms) var += (g - mean) * (g - mean) / gms.size();
  return std::sqrt(var);
}

double sliced_wasserstein(const std::vector<double>& x, const std::vector<double>& ref,
                          const fk::Dims& shape, int n_proj) {
  FK_CHECK(shape.size() == 2 && static_cast<int64_t>(x.size()) == shape.numel() &&
               ref.size() == x.size(),
           "nefi::sliced_wasserstein", "two 2-D maps of " + shape.str(),
           fk::to_text(x.size()) + " and " + fk::to_text(ref.size()) + " values");
  FK_CHECK(n_proj >= 1, "nefi::sliced_wasserstein", "n_proj >= 1", fk::to_text(n_proj));
  const int64_t W = shape[1];
  const double unit = 1.0 / static_cast<double>(std::max(shape[0], shape[1]));
  const auto mx = unit_mass(x), mr = unit_mass(ref);
  auto project = [&](const std::vector<std::pair<int64_t, double>>& m, double c, double s) {
    std::vector<Mass> p;
    for (const auto& [k, w] : m) p.push_back({unit * ((k / W) * c + (k % W) * s), w});
    std::sort(p.begin(), p.end(), [](const Mass& u, const Mass& v) { return u.at < v.at; });
    return p;
  };
  double total = 0;
  for (int k = 0; k < n_proj; ++k) {
    const double th = std::numbers::pi * (k + 0.5) / n_proj;
    const double c = std::cos(th), s = std::sin(th);
    total += wasserstein2_squared(project(mx, c, s), project(mr, c, s));
  }
  return std::sqrt(total / n_proj);
}

}  // namespace nefi
