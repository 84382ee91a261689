// ParametricField's starts: where each shape begins (the lattice, and the
// extrema of a start map with the rules that keep one start per object and
// the background's pull out); see parametric_field.h's init.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/random.h"
#include "nefi/field/parametric_field.h"

namespace nefi {
namespace {

constexpr const char* kWhere = "nefi::ParametricField";

}  // namespace

namespace {

// The start lattice: ceil(K^(1/d)) cells per axis over (-1, 1).
struct Lattice {
  int per_axis = 1;
  int64_t cells = 1;
  double spacing = 2, radius = 1;
  Lattice(int d, int K) {
    while (std::pow(per_axis, d) < K) ++per_axis;
    for (int a = 0; a < d; ++a) cells *= per_axis;
    spacing = 2.0 / per_axis;
    radius = spacing / 2;
  }
};

// Calls fn(nb) for `cell` and each of its 3^d - 1 neighbours inside the map
// until fn returns false; returns whether it ran through all of them.
template <class Fn>
bool each_neighbour(const fk::Tensor& m, int64_t cell, Fn&& fn) {
  const int d = m.dim();
  int64_t at[3];
  for (int64_t a = d - 1, rest = cell; a >= 0; --a) {
    at[a] = rest % m.size(a);
    rest /= m.size(a);
  }
  int steps = 1;
  for (int a = 0; a < d; ++a) steps *= 3;
  for (int s = 0; s < steps; ++s) {
    int64_t nb = 0;
    bool inside = true;
    for (int a = 0, rest = s; a < d; ++a, rest /= 3) {
      const int64_t j = at[a] + rest % 3 - 1;
      inside = inside && j >= 0 && j < m.size(a);
      nb = nb * m.size(a) + j;
    }
    if (inside && !fn(nb)) return false;
  }
  return true;
}

// Whether no neighbour of cell `at` (the 3^d - 1 around it) has a larger |v|.
bool local_extremum(const fk::Tensor& m, const std::vector<double>& v, const int64_t* at) {
  int64_t cell = 0;
  for (int a = 0; a < m.dim(); ++a) cell = cell * m.size(a) + at[a];
  return each_neighbour(m, cell, [&](int64_t nb) { return std::abs(v[nb]) <= std::abs(v[cell]); });
}

// The map smoothed along every axis by a gaussian as wide as the spacing of
// its nonzero cells, (cells / nonzero)^(1/d), at most an eighth of the axis
// (zero beyond the edges: renormalised weights would pull a sparse map's
// extrema to the edges): a shape's amplitude gradient is the pull summed
// over the shape, and sparse data (a mask) pull at isolated cells, where
// one cell's extremum says little. A dense map is left as it is.
// width gets the widest gaussian's sigma in cells (0: left as it is).
std::vector<double> smoothed(const fk::Tensor& m, std::vector<double> v, double& width) {
  const int d = m.dim();
  width = 0;
  const auto nonzero =
      static_cast<double>(std::count_if(v.begin(), v.end(), [](double e) { return e != 0; }));
  const double spacing = std::pow(static_cast<double>(v.size()) / std::max(nonzero, 1.0), 1.0 / d);
  if (spacing < 1.5) return v;
  for (int a = 0; a < d; ++a) {
    const int64_t n = m.size(a);
    const double s = std::min(spacing, static_cast<double>(n) / 8);
    if (s < 0.5) continue;
    width = std::max(width, s);
    const auto reach = static_cast<int64_t>(std::ceil(3 * s));
    std::vector<double> w(2 * reach + 1);
    for (int64_t t = -reach; t <= reach; ++t) w[t + reach] = std::exp(-0.5 * (t * t) / (s * s));
    int64_t stride = 1;
    for (int b = a + 1; b < d; ++b) stride *= m.size(b);
    const int64_t outer = static_cast<int64_t>(v.size()) / (n * stride);
    std::vector<double> out(v.size());
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t in = 0; in < stride; ++in)
        for (int64_t i = 0; i < n; ++i) {
          double acc = 0;
          for (int64_t j = std::max<int64_t>(0, i - reach); j <= std::min(n - 1, i + reach); ++j)
            acc += w[j - i + reach] * v[(o * n + j) * stride + in];
          out[(o * n + i) * stride + in] = acc;
        }
    v = std::move(out);
  }
  return v;
}

// The cells a background's pull reaches and an object's does not: within
// `margin` cells of the map's edge along an axis of more than 2 cells (a
// short axis is all edge), or within margin + 1 (through the 3^d - 1
// neighbours) of a cell outside a known support (support < 1/2: the pull
// is 0 there, so the background's pull inside ends next to the rim).
std::vector<char> edge_cells(const fk::Tensor& m, const std::vector<double>& support,
                             int64_t margin) {
  const int d = m.dim();
  const auto n = static_cast<int64_t>(m.numel());
  auto outside = [&](int64_t cell) { return !support.empty() && support[cell] < 0.5; };
  std::vector<int64_t> dist(n, -1), todo;
  for (int64_t cell = 0; cell < n; ++cell) {
    bool edge = outside(cell);
    for (int64_t a = d - 1, rest = cell; a >= 0; --a) {
      const int64_t len = m.size(a), i = rest % len;
      rest /= len;
      edge = edge || (len > 2 && (i <= margin || i >= len - 1 - margin));
    }
    if (edge) dist[cell] = 0;
    if (outside(cell)) todo.push_back(cell);
  }
  // Widen the support's outside by margin + 1 cells (breadth first).
  for (size_t head = 0; head < todo.size(); ++head) {
    const int64_t cell = todo[head];
    if (dist[cell] > margin) continue;
    each_neighbour(m, cell, [&](int64_t nb) {
      if (dist[nb] < 0) {
        dist[nb] = dist[cell] + 1;
        todo.push_back(nb);
      }
      return true;
    });
  }
  std::vector<char> edge(n);
  for (int64_t cell = 0; cell < n; ++cell) edge[cell] = dist[cell] >= 0;
  return edge;
}

// Whether extremum `from` (of flood number `flood` > 0) is joined to a shape
// already placed (through any of the 3^d - 1 neighbours) by cells at which
// the map keeps at least kSameObject of its own value: a shoulder of an
// object already started rather than an object of its own. An object larger
// or less round than a shape's start radius (a lobed inclusion) has several
// local extrema with shallow dips between them; two objects have a deeper
// valley. `reached` holds, per cell, the flood that reached it (0: none).
// Extrema come in order of falling value, so a cell an earlier flood
// reached is joined to a placed shape at every later (lower) floor: each
// flood stops at the first such cell and keeps its own, and every cell is
// flooded at most once over all the extrema (linear in the map; a fresh
// flood per extremum was quadratic on a flat plateau).
constexpr double kSameObject = 0.75;
// The other sign's extrema start shapes from this share of the strongest.
constexpr double kOtherSign = 0.5;
bool joined_to_placed(const fk::Tensor& m, const std::vector<double>& v, int64_t from, double sign,
                      int flood, std::vector<int>& reached) {
  if (reached[from] != 0) return true;
  const double floor = kSameObject * std::abs(v[from]);
  std::vector<int64_t> todo = {from};
  reached[from] = flood;
  bool joined = false;
  while (!todo.empty() && !joined) {
    const int64_t cell = todo.back();
    todo.pop_back();
    joined = !each_neighbour(m, cell, [&](int64_t nb) {
      if (reached[nb] == flood || v[nb] * sign < floor) return true;
      if (reached[nb] != 0) return false;  // joined
      reached[nb] = flood;
      todo.push_back(nb);
      return true;
    });
  }
  return joined;
}

// Whether an extremum of the other sign than the strongest's reads as the
// background's pull rather than an object: its region of cells keeping
// kObjectRegion of its value (joined through any of the 3^d - 1
// neighbours) meets an `edge` cell, a placed shape's region (`reached`:
// two objects of the other sign need a valley below half the weaker's
// value to start two shapes, where the strongest's sign needs 3/4) or a
// region rejected before (`rejected`). Rejected floods mark their cells:
// extrema come in order of falling value, so a later one whose region
// meets a rejected region contains it and is rejected too; an accepted one
// is placed (this is the last check before joined_to_placed, which its
// region cannot meet). Accepted regions are disjoint and rejected ones are
// never flooded again: each cell is flooded at most twice.
// `visit` holds, per cell, the last flood (`flood` > 0) that visited it.
constexpr double kObjectRegion = 0.5;  // of the extremum's value
bool background_pull(const fk::Tensor& m, const std::vector<double>& v, int64_t from, double sign,
                     const std::vector<char>& edge, const std::vector<int>& reached,
                     std::vector<char>& rejected, int flood, std::vector<int>& visit) {
  const double floor = kObjectRegion * std::abs(v[from]);
  std::vector<int64_t> todo = {from}, seen = {from};
  visit[from] = flood;
  bool background = reached[from] != 0 || rejected[from] != 0;
  while (!todo.empty() && !background) {
    const int64_t cell = todo.back();
    todo.pop_back();
    background = edge[cell] != 0 || !each_neighbour(m, cell, [&](int64_t nb) {
                   if (visit[nb] == flood || v[nb] * sign < floor) return true;
                   visit[nb] = flood;
                   todo.push_back(nb);
                   seen.push_back(nb);
                   return reached[nb] == 0 && rejected[nb] == 0;  // false: the background's
                 });
  }
  if (background)
    for (int64_t cell : seen) rejected[cell] = 1;
  return background;
}

// Whether x lies outside every shape of `placed`: its own radii (at least
// `floor`), or `fixed` (> 0) for all of them.
bool outside_placed(const ParametricStart& placed, int d, const double* x, double floor,
                    double fixed = 0) {
  for (size_t k = 0; k < placed.centres.size(); k += d) {
    double q = 0;
    for (int a = 0; a < d; ++a)
      q += std::pow((x[a] - placed.centres[k + a]) /
                        (fixed > 0 ? fixed : std::max(placed.radii[k + a], floor)),
                    2);
    if (q < 1) return false;
  }
  return true;
}

}  // namespace

void ParametricField::start_at_extrema(int channel, const fk::Tensor& map,
                                       const fk::Tensor& support) {
  FK_CHECK(channel >= 0 && channel < n_out_, kWhere,
           "a channel in [0, " + fk::to_text(n_out_) + ")", fk::to_text(channel));
  FK_CHECK(map.dim() == ndim_ && map.numel() > 0 && fk::is_floating(map.dtype()), kWhere,
           "a real " + fk::to_text(ndim_) + "-D start map",
           std::string(fk::name(map.dtype())) + " " + map.shape().str());
  const fk::Tensor m = map.detach().to(fk::DType::F64).contiguous();
  std::vector<double> v = m.to_vector<double>();
  for (double& e : v)
    if (!std::isfinite(e)) e = 0;  // no pull known there
  FK_CHECK(!support.defined() || support.shape() == m.shape(), kWhere,
           "a support of the map's shape " + m.shape().str(),
           support.defined() ? support.shape().str() : "");
  double width = 0;
  v = smoothed(m, std::move(v), width);
  // A smoothed map falls towards its edges (zeros beyond them), so the
  // background's pull there can stop short of the edge by the smoothing's
  // width.
  const std::vector<char> edge = edge_cells(
      m,
      support.defined() ? support.detach().to(fk::DType::F64).contiguous().to_vector<double>()
                        : std::vector<double>{},
      static_cast<int64_t>(std::ceil(width)));
  const int d = ndim_, K = cfg_.count;
  const Lattice L(d, K);
  ParametricStart placed;
  std::vector<int64_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), int64_t{0});
  std::stable_sort(idx.begin(), idx.end(),
                   [&](int64_t i, int64_t j) { return std::abs(v[i]) > std::abs(v[j]); });
  // Extrema of the strongest one's sign, and of the other sign those at
  // least kOtherSign as strong whose half-value region is an object's: off
  // the map's edge and apart from the shapes placed (objects both brighter
  // and darker than the start). The other sign's pull is mostly the
  // background's (the constant start sits between it and the objects),
  // which reaches the edge and which the background value answers.
  const double strongest = v[idx[0]] > 0 ? 1.0 : -1.0;
  std::vector<int> reached(v.size(), 0);    // joined_to_placed's floods
  std::vector<char> rejected(v.size(), 0);  // background_pull's
  std::vector<int> visit(v.size(), 0);
  int floods = 0, other_floods = 0;
  for (int64_t cell : idx) {
    if (static_cast<int>(placed.centres.size()) == K * d || v[cell] == 0) break;
    const double sign = v[cell] > 0 ? 1.0 : -1.0;
    const bool other = sign != strongest;
    if (other && std::abs(v[cell]) < kOtherSign * std::abs(v[idx[0]])) continue;
    double x[3];
    int64_t at[3];
    for (int64_t a = d - 1, rest = cell; a >= 0; --a) {
      at[a] = rest % m.size(a);
      x[a] = (2.0 * static_cast<double>(at[a]) + 1.0) / static_cast<double>(m.size(a)) - 1.0;
      rest /= m.size(a);
    }
    if (!outside_placed(placed, d, x, L.radius / 2) || !local_extremum(m, v, at) ||
        (other &&
         background_pull(m, v, cell, sign, edge, reached, rejected, ++other_floods, visit)) ||
        joined_to_placed(m, v, cell, sign, ++floods, reached))
      continue;
    placed.centres.insert(placed.centres.end(), x, x + d);
    // Radius along each axis: the extremum's half width at half its value
    // (cells either side, plus half the centre cell), r / 4 to r (a sparse
    // map's pull is single cells).
    for (int a = 0; a < d; ++a) {
      int64_t stride = 1;
      for (int b = a + 1; b < d; ++b) stride *= m.size(b);
      double cells = 0.5;
      for (int dir : {-1, 1})
        for (int64_t j = at[a] + dir; j >= 0 && j < m.size(a); j += dir) {
          if (v[cell + (j - at[a]) * stride] * sign < 0.5 * std::abs(v[cell])) break;
          cells += 0.5;
        }
      placed.radii.push_back(
          std::clamp(cells * 2.0 / static_cast<double>(m.size(a)), L.radius / 4, L.radius));
    }
  }
  placed_.resize(n_out_);
  placed_[channel] = std::move(placed);
}

int ParametricField::placed_from_map(int channel) const {
  if (channel < 0 || channel >= static_cast<int>(placed_.size())) return 0;
  return static_cast<int>(placed_[channel].centres.size()) / ndim_;
}

ParametricStart ParametricField::start_shapes(int channel, uint64_t seed) const {
  const int d = ndim_, K = cfg_.count;
  const Lattice L(d, K);
  fk::Generator gen(seed ^ (0x9E3779B97F4A7C15ull * static_cast<uint64_t>(channel + 1)));
  const std::vector<int64_t> order =
      fk::randperm(L.cells, {fk::DType::I64}, &gen).to_vector<int64_t>();
  const std::vector<double> jitter =
      fk::uniform({K, d}, -0.25, 0.25, {fk::DType::F64}, &gen).to_vector<double>();
  ParametricStart start;
  if (placed_from_map(channel) > 0) start = placed_[channel];
  const bool mapped = !start.centres.empty();
  // The lattice: every centre without a map, the rest with one (cells
  // nearer than r to a placed shape last; spare shapes start at r / 4, so
  // one on the background starts with little reach).
  std::vector<char> used(L.cells, 0);
  for (int pass = 0; pass < 2 && static_cast<int>(start.centres.size()) < K * d; ++pass)
    for (int k = 0; k < L.cells && static_cast<int>(start.centres.size()) < K * d; ++k) {
      if (used[k]) continue;
      double x[3];
      int64_t cell = order[k];
      for (int a = d - 1; a >= 0; --a) {
        const int64_t i = cell % L.per_axis;
        cell /= L.per_axis;
        x[a] =
            -1.0 + (static_cast<double>(i) + 0.5 + (k < K ? jitter[k * d + a] : 0.0)) * L.spacing;
      }
      if (pass == 1 || outside_placed(start, d, x, L.radius, L.radius)) {
        start.centres.insert(start.centres.end(), x, x + d);
        start.radii.insert(start.radii.end(), d, mapped ? L.radius / 4 : L.radius);
        used[k] = 1;
      }
    }
  return start;
}

}  // namespace nefi
