#include "nefi/field/parametric_field.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/parallel.h"
#include "fk/profile.h"
#include "fk/random.h"
#include "nefi/field/star_harmonics.h"
#include "nefi/real_dispatch.h"

namespace nefi {
namespace {

constexpr const char* kWhere = "nefi::ParametricField";
// Points per backward chunk (the unit of its deterministic reduction).
constexpr int64_t kBackwardChunk = 2048;

// The profile g(q) and dg/dq of one family, and the stars' boundary.
struct Profile {
  bool ellipse = false;  // ellipses and stars
  double inv_2eps = 0;   // 1 / (2 eps)
  int degree = 0;        // stars: the boundary's degrees L (0 otherwise)
  std::vector<double> gates;
  double value(double q) const {
    if (!ellipse) return std::exp(-0.5 * q);
    return 1.0 / (1.0 + std::exp(-(1.0 - q) * inv_2eps));
  }
  double slope(double g) const { return ellipse ? -g * (1.0 - g) * inv_2eps : -0.5 * g; }
};

Profile profile_of(const std::string& family, double eps, const std::vector<double>& gates = {}) {
  FK_CHECK(family == "blobs" || family == "ellipses" || family == "stars", kWhere,
           "family blobs, ellipses or stars", "'" + family + "'");
  Profile p;
  p.ellipse = family != "blobs";
  if (p.ellipse) {
    FK_CHECK(eps > 0 && std::isfinite(eps), kWhere, "an edge width eps > 0", std::to_string(eps));
    p.inv_2eps = 0.5 / eps;
  }
  FK_CHECK(family == "stars" || gates.empty(), kWhere, "degree gates for stars only",
           std::to_string(gates.size()) + " for " + family);
  if (family == "stars") {
    const int n_gates = kStarMaxDegree - kStarMinDegree + 1;
    FK_CHECK(!gates.empty() && static_cast<int>(gates.size()) <= n_gates, kWhere,
             "stars with 1 to " + std::to_string(n_gates) + " degree gates (degrees " +
                 std::to_string(kStarMinDegree) + " to " + std::to_string(kStarMaxDegree) + ")",
             std::to_string(gates.size()));
    for (double g : gates)
      FK_CHECK(g >= 0 && g <= 1, kWhere, "degree gates in [0, 1]", std::to_string(g));
    p.degree = static_cast<int>(gates.size()) + kStarMinDegree - 1;
    p.gates = gates;
  }
  return p;
}

// One point against one shape: diff = x - m, u = diff M, and
//   q = |u|^2 exp(-2 h(u / |u|))   (h = 0 but for stars)
// with dq/du (d entries) and, for stars, the harmonics Y_j at u / |u|.
struct ShapePoint {
  double diff[3], u[3], dq_du[3], basis[(kStarMaxDegree + 1) * (kStarMaxDegree + 1)];
  double q = 0;
  // with_slope: dq_du too (the backward); the forward reads q alone.
  void at(int d, const Profile& pr, const double* x, const double* p, bool with_slope) {
    const double* m = p + 1;
    const double* M = p + 1 + d;
    for (int l = 0; l < d; ++l) diff[l] = x[l] - m[l];
    double s2 = 0;
    for (int j = 0; j < d; ++j) {
      double s = 0;
      for (int l = 0; l < d; ++l) s += diff[l] * M[l * d + j];
      u[j] = s;
      s2 += s * s;
    }
    if (pr.degree == 0) {
      q = s2;
      for (int j = 0; j < d; ++j) dq_du[j] = 2 * u[j];
      return;
    }
    double dh_du[3];
    const double h = star_log_radius(d, pr.degree, u, p + 1 + d + d * d, pr.gates.data(),
                                     with_slope ? dh_du : nullptr, basis);
    const double e = std::exp(-2 * h);
    q = s2 * e;
    if (with_slope)
      for (int j = 0; j < d; ++j) dq_du[j] = 2 * e * (u[j] - s2 * dh_du[j]);
  }
};

// A point's coordinates and every shape's entries, widened to double.
std::vector<double> as_doubles(const fk::Tensor& t) {
  return t.contiguous().to_vector<double>();
}

struct ParametricBackward : fk::autograd::Node {
  fk::autograd::SavedTensor shapes, background;
  fk::Tensor coords;  // constant
  Profile profile;
  const char* name() const override { return "ParametricShapesBackward"; }
  void for_each_saved(const std::function<void(fk::autograd::SavedTensor&)>& fn) override {
    fn(shapes);
    fn(background);
  }
  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override {
    if (!grads[0].defined()) return {fk::Tensor(), fk::Tensor()};
    fk::autograd::NoGradGuard ng;
    fk::profile::OpScope scope("parametric_shapes_backward");
    const fk::Tensor& s = shapes.unpack(name());
    const fk::Tensor& b = background.unpack(name());
    const int64_t n = coords.size(0), C = s.size(0), K = s.size(1), P = s.size(2);
    const int d = static_cast<int>(coords.size(1));
    const std::vector<double> x = as_doubles(coords), sv = as_doubles(s), go = as_doubles(grads[0]);
    std::vector<double> ds(sv.size(), 0.0), db(static_cast<size_t>(C), 0.0);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t c = 0; c < C; ++c) db[c] += go[i * C + c];
    // Fixed chunks of points, each summing every shape's partials, then the
    // chunks added in order: the same bits at any thread count.
    const int64_t chunks = (n + kBackwardChunk - 1) / kBackwardChunk;
    std::vector<double> part(static_cast<size_t>(chunks) * sv.size(), 0.0);
    fk::parallel_for(0, chunks, 1, [&](int64_t lo, int64_t hi) {
      ShapePoint sp;
      const int H = star_harmonic_count(d, profile.degree);
      std::vector<double> coefficient_gate(static_cast<size_t>(H));
      for (int j = 0; j < H; ++j)
        coefficient_gate[j] = profile.gates[star_harmonic_degree(d, j) - kStarMinDegree];
      for (int64_t ch = lo; ch < hi; ++ch)
        for (int64_t ck = 0; ck < C * K; ++ck) {
          const int64_t c = ck / K;
          const double* p = sv.data() + ck * P;
          double* dp = part.data() + ch * static_cast<int64_t>(sv.size()) + ck * P;
          const double a = std::sinh(p[0]), da = std::cosh(p[0]);
          for (int64_t i = ch * kBackwardChunk; i < std::min(n, (ch + 1) * kBackwardChunk); ++i) {
            const double gi = go[i * C + c];
            if (gi == 0) continue;
            sp.at(d, profile, x.data() + i * d, p, true);
            const double g = profile.value(sp.q);
            dp[0] += gi * g * da;
            const double dq = gi * a * profile.slope(g);
            if (dq == 0) continue;
            for (int l = 0; l < d; ++l) {
              double dd = 0;  // d q / d diff_l = sum_j dq/du_j M_lj
              for (int j = 0; j < d; ++j) {
                dp[1 + d + l * d + j] += dq * sp.dq_du[j] * sp.diff[l];
                dd += sp.dq_du[j] * p[1 + d + l * d + j];
              }
              dp[1 + l] -= dq * dd;
            }
            // d q / d c_j = -2 q g_l(j) Y_j
            for (int j = 0; j < H; ++j)
              dp[1 + d + d * d + j] -= 2 * dq * sp.q * coefficient_gate[j] * sp.basis[j];
          }
        }
    });
    for (int64_t ch = 0; ch < chunks; ++ch)
      for (size_t e = 0; e < sv.size(); ++e) ds[e] += part[ch * sv.size() + e];
    return {fk::from_vector(ds, s.shape()).to(s.dtype()),
            fk::from_vector(db, b.shape()).to(b.dtype())};
  }
};

}  // namespace

int parametric_shape_size(int ndim, int harmonics) {
  return 1 + ndim + ndim * ndim + star_harmonic_count(ndim, harmonics);
}

fk::Tensor parametric_shapes(const fk::Tensor& coords, const fk::Tensor& shapes,
                             const fk::Tensor& background, const std::string& family, double eps,
                             const std::vector<double>& degree_gates) {
  constexpr const char* kOp = "nefi::parametric_shapes";
  const Profile profile = profile_of(family, eps, degree_gates);
  FK_CHECK(
      coords.dim() == 2 && coords.size(1) >= (profile.degree > 0 ? 2 : 1) && coords.size(1) <= 3,
      kOp,
      profile.degree > 0 ? "coordinates (N, d) with d 2 or 3 for stars"
                         : "coordinates (N, d) with d in 1..3",
      coords.shape().str());
  const int d = static_cast<int>(coords.size(1));
  const int P = parametric_shape_size(d, profile.degree);
  FK_CHECK(shapes.dim() == 3 && shapes.size(2) == P, kOp,
           "shapes (C, K, " + std::to_string(P) + ")", shapes.shape().str());
  FK_CHECK(background.dim() == 1 && background.size(0) == shapes.size(0), kOp,
           "a background of " + std::to_string(shapes.size(0)) + " channels",
           background.shape().str());
  const fk::DType dt = shapes.dtype();
  FK_CHECK((dt == fk::DType::F32 || dt == fk::DType::F64) && coords.dtype() == dt &&
               background.dtype() == dt,
           kOp, "coordinates, shapes and background of one real dtype (f32 or f64)",
           std::string(fk::name(coords.dtype())) + ", " + fk::name(dt) + ", " +
               fk::name(background.dtype()));
  FK_CHECK(coords.device().is_cpu() && shapes.device().is_cpu() && background.device().is_cpu(),
           kOp, "tensors on the cpu", shapes.device().str());
  fk::profile::OpScope scope("parametric_shapes");
  const int64_t n = coords.size(0), C = shapes.size(0), K = shapes.size(1);
  const fk::Tensor x = coords.contiguous();
  const std::vector<double> xv = as_doubles(x), sv = as_doubles(shapes.detach()),
                            bv = as_doubles(background.detach());
  fk::Tensor y = fk::empty({n, C}, {dt});
  dispatch_real(dt, [&](auto zero) {
    using T = decltype(zero);
    T* out = y.data<T>();
    fk::parallel_for(0, n, 256, [&](int64_t lo, int64_t hi) {
      ShapePoint sp;
      for (int64_t i = lo; i < hi; ++i)
        for (int64_t c = 0; c < C; ++c) {
          double r = bv[c];
          for (int64_t k = 0; k < K; ++k) {
            const double* p = sv.data() + (c * K + k) * P;
            sp.at(d, profile, xv.data() + i * d, p, false);
            r += std::sinh(p[0]) * profile.value(sp.q);
          }
          out[i * C + c] = static_cast<T>(r);
        }
    });
  });
  if (fk::autograd::needs_grad(shapes, background)) {
    auto node = std::make_shared<ParametricBackward>();
    node->coords = x;
    node->shapes = shapes;
    node->background = background;
    node->profile = profile;
    fk::autograd::record(node, {shapes, background}, y);
  }
  return y;
}

ParametricField::ParametricField(const fk::Dims& shape, std::vector<HeadPtr> heads,
                                 ParametricConfig cfg, uint64_t seed)
    : heads_(std::move(heads)), cfg_(std::move(cfg)) {
  FK_CHECK(!heads_.empty(), kWhere, "at least one head", "none");
  FK_CHECK(shape.size() >= 1 && shape.size() <= 3, kWhere, "a 1-, 2- or 3-D domain", shape.str());
  FK_CHECK(cfg_.count >= 1 && cfg_.count <= 256, kWhere, "a shape count in [1, 256]",
           std::to_string(cfg_.count));
  const bool stars = cfg_.family == "stars";
  FK_CHECK(!stars || (cfg_.harmonics >= kStarMinDegree && cfg_.harmonics <= kStarMaxDegree), kWhere,
           "stars with an outline of degree " + std::to_string(kStarMinDegree) + " to " +
               std::to_string(kStarMaxDegree),
           std::to_string(cfg_.harmonics));
  FK_CHECK(!stars || shape.size() >= 2, kWhere,
           "stars on a 2- or 3-D domain (a 1-D star is an interval: ellipses)", shape.str());
  degree_ = stars ? cfg_.harmonics : 0;
  profile_of(cfg_.family, cfg_.eps_start, gates(1.0));
  profile_of(cfg_.family, cfg_.eps_end, gates(1.0));
  ndim_ = shape.size();
  for (const HeadPtr& h : heads_) n_out_ += h->n_in();
  primary_ = heads_.front()->name();
  params_.add("shapes", {n_out_, cfg_.count, parametric_shape_size(ndim_, degree_)});
  params_.add("background", {n_out_});
  params_.allocate(fk::DType::F32);
  reset_parameters(seed);
}

double ParametricField::eps(double progress) const {
  return cfg_.eps_start * std::pow(cfg_.eps_end / cfg_.eps_start, std::clamp(progress, 0.0, 1.0));
}

std::vector<double> ParametricField::gates(double progress) const {
  if (degree_ == 0) return {};
  std::vector<double> g(static_cast<size_t>(degree_ - kStarMinDegree + 1));
  star_degree_gates(degree_, std::clamp(progress, 0.0, 1.0), g.data());
  return g;
}

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
           "a channel in [0, " + std::to_string(n_out_) + ")", std::to_string(channel));
  FK_CHECK(map.dim() == ndim_ && map.numel() > 0 && fk::is_floating(map.dtype()), kWhere,
           "a real " + std::to_string(ndim_) + "-D start map",
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

void ParametricField::reset_parameters(uint64_t seed) {
  fk::autograd::NoGradGuard ng;
  const int d = ndim_, K = cfg_.count, P = parametric_shape_size(d, degree_);
  std::vector<double> v(static_cast<size_t>(n_out_) * K * P, 0.0);
  for (int c = 0; c < n_out_; ++c) {
    const ParametricStart start = start_shapes(c, seed);
    for (int k = 0; k < K; ++k) {
      double* p = v.data() + (static_cast<size_t>(c) * K + k) * P;
      for (int a = 0; a < d; ++a) {
        p[1 + a] = start.centres[k * d + a];
        p[1 + d + a * d + a] = 1.0 / start.radii[k * d + a];
      }
    }
  }
  params_.raw(0).copy_(fk::from_vector(v, params_.shape(0)).to(fk::DType::F32));
  params_.raw(1).copy_(fk::from_vector(output_bias(heads_), fk::Dims{n_out_}).to(fk::DType::F32));
  params_.flat().bump_version();
}

FieldMap ParametricField::forward(const Domain& domain, double progress) {
  FK_CHECK(domain.ndim() == ndim_, kWhere, std::to_string(ndim_) + "-D domain", domain.str());
  FK_CHECK(params_.flat().device().is_cpu(), kWhere, "parameters on the cpu",
           params_.flat().device().str());
  if (!coords_.defined() || !(coords_shape_ == domain.shape())) {
    coords_ = domain.coords(fk::DType::F32).reshape({domain.numel(), ndim_}).contiguous();
    coords_shape_ = domain.shape();
  }
  const std::vector<fk::Tensor> p = params_.views();
  const fk::Tensor raw =
      parametric_shapes(coords_, p[0], p[1], cfg_.family, eps(progress), gates(progress));
  return apply_heads(heads_, raw, domain.shape(), progress);
}

}  // namespace nefi
