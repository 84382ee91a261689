#include "nefi/field/parametric_field.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary/binary.h"
#include "fk/parallel.h"
#include "fk/profile.h"
#include "nefi/field/parametric_device.h"
#include "nefi/field/polygon_outline.h"
#include "nefi/field/star_harmonics.h"
#include "nefi/real_dispatch.h"

namespace nefi {
namespace {

constexpr const char* kWhere = "nefi::ParametricField";
// Points per backward chunk (the unit of its deterministic reduction).
constexpr int64_t kBackwardChunk = 2048;

// The profile g(q) and dg/dq of one family, and the stars' or polygons'
// boundary.
struct Profile {
  bool ellipse = false;       // all but blobs
  double inv_2eps = 0;        // 1 / (2 eps)
  int degree = 0;             // stars: the boundary's degrees L (0 otherwise)
  int vertices = 0;           // polygons: V (0 otherwise)
  std::vector<double> gates;  // stars: per degree; polygons: the outline's one
  double value(double q) const {
    if (!ellipse) return std::exp(-0.5 * q);
    return 1.0 / (1.0 + std::exp(-(1.0 - q) * inv_2eps));
  }
  double slope(double g) const { return ellipse ? -g * (1.0 - g) * inv_2eps : -0.5 * g; }
};

// vertices: the polygons' V (read for polygons only).
Profile profile_of(const std::string& family, double eps, const std::vector<double>& gates = {},
                   int vertices = 0) {
  FK_CHECK(family == "blobs" || family == "ellipses" || family == "stars" || family == "polygons",
           kWhere, "family blobs, ellipses, stars or polygons", "'" + family + "'");
  Profile p;
  p.ellipse = family != "blobs";
  if (p.ellipse) {
    FK_CHECK(eps > 0 && std::isfinite(eps), kWhere, "an edge width eps > 0", std::to_string(eps));
    p.inv_2eps = 0.5 / eps;
  }
  FK_CHECK(family == "stars" || family == "polygons" || gates.empty(), kWhere,
           "degree gates for stars and polygons only",
           std::to_string(gates.size()) + " for " + family);
  if (family == "polygons") {
    FK_CHECK(gates.size() == 1 && gates[0] >= 0 && gates[0] <= 1, kWhere,
             "polygons with one outline gate in [0, 1]",
             std::to_string(gates.size()) + " gates" +
                 (gates.empty() ? "" : ", the first " + std::to_string(gates[0])));
    FK_CHECK(vertices >= kPolygonMinVertices && vertices <= kPolygonMaxVertices, kWhere,
             "polygons of " + std::to_string(kPolygonMinVertices) + " to " +
                 std::to_string(kPolygonMaxVertices) + " vertices",
             std::to_string(vertices));
    p.vertices = vertices;
    p.gates = gates;
  }
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
//   q = |u|^2 exp(-2 h(u / |u|))   (h = 0 but for stars and polygons)
// with dq/du (d entries) and dh/dc: for stars the harmonics Y_j at u / |u|,
// for polygons the two vertices' weights.
struct ShapePoint {
  double diff[3], u[3], dq_du[3], basis[(kStarMaxDegree + 1) * (kStarMaxDegree + 1)];
  double q = 0;
  int vertex = 0;                    // polygons: dh/dc is nonzero at vertex and vertex + 1
  double vertex_weight[2] = {0, 0};  // ... where it is these, times the gate
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
    if (pr.degree == 0 && pr.vertices == 0) {
      q = s2;
      for (int j = 0; j < d; ++j) dq_du[j] = 2 * u[j];
      return;
    }
    double dh_du[3];
    double h = 0;
    if (pr.vertices > 0) {
      const double gate = pr.gates[0];
      h = gate * polygon_log_radius(pr.vertices, u, p + 1 + d + d * d, with_slope ? dh_du : nullptr,
                                    &vertex, vertex_weight);
      if (with_slope)
        for (int j = 0; j < d; ++j) dh_du[j] *= gate;
    } else {
      h = star_log_radius(d, pr.degree, u, p + 1 + d + d * d, pr.gates.data(),
                          with_slope ? dh_du : nullptr, basis);
    }
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
            // d q / d c_j = -2 q dh/dc_j: stars g_l(j) Y_j, polygons gate times a
            // vertex weight
            for (int j = 0; j < H; ++j)
              dp[1 + d + d * d + j] -= 2 * dq * sp.q * coefficient_gate[j] * sp.basis[j];
            if (profile.vertices > 0) {
              const double f = 2 * dq * sp.q * profile.gates[0];
              double* dc = dp + 1 + d + d * d;
              dc[sp.vertex] -= f * sp.vertex_weight[0];
              dc[(sp.vertex + 1) % profile.vertices] -= f * sp.vertex_weight[1];
            }
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

int parametric_shape_size(int ndim, int harmonics, int vertices) {
  return 1 + ndim + ndim * ndim + star_harmonic_count(ndim, harmonics) + vertices;
}

fk::Tensor parametric_shapes(const fk::Tensor& coords, const fk::Tensor& shapes,
                             const fk::Tensor& background, const std::string& family, double eps,
                             const std::vector<double>& degree_gates) {
  constexpr const char* kOp = "nefi::parametric_shapes";
  const bool stars = family == "stars", polygons = family == "polygons";
  FK_CHECK(coords.dim() == 2 && coords.size(1) >= (stars || polygons ? 2 : 1) &&
               coords.size(1) <= (polygons ? 2 : 3),
           kOp,
           stars      ? "coordinates (N, d) with d 2 or 3 for stars"
           : polygons ? "coordinates (N, 2) for polygons"
                      : "coordinates (N, d) with d in 1..3",
           coords.shape().str());
  // A polygon's V is what its shapes hold past the alpha, centre and matrix.
  FK_CHECK(!polygons || (shapes.dim() == 3 && shapes.size(2) >= 7 + kPolygonMinVertices &&
                         shapes.size(2) <= 7 + kPolygonMaxVertices),
           kOp,
           "polygons' shapes (C, K, 7 + V) with V in " + std::to_string(kPolygonMinVertices) +
               ".." + std::to_string(kPolygonMaxVertices),
           shapes.shape().str());
  const int vertices = polygons ? static_cast<int>(shapes.size(2)) - 7 : 0;
  const Profile profile = profile_of(family, eps, degree_gates, vertices);
  const int d = static_cast<int>(coords.size(1));
  const int P = parametric_shape_size(d, profile.degree, profile.vertices);
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
  const bool polygons = cfg_.family == "polygons";
  FK_CHECK(!polygons || shape.size() == 2, kWhere, "polygons on a 2-D domain", shape.str());
  degree_ = stars ? cfg_.harmonics : 0;
  vertices_ = polygons ? cfg_.vertices : 0;
  profile_of(cfg_.family, cfg_.eps_start, gates(1.0), vertices_);
  profile_of(cfg_.family, cfg_.eps_end, gates(1.0), vertices_);
  ndim_ = shape.size();
  for (const HeadPtr& h : heads_) n_out_ += h->n_in();
  primary_ = heads_.front()->name();
  params_.add("shapes", {n_out_, cfg_.count, parametric_shape_size(ndim_, degree_, vertices_)});
  params_.add("background", {n_out_});
  if (cfg_.layers) {
    check_layered_config(*cfg_.layers, shape, kWhere);
    layers_first_ = add_layered_interfaces(params_, n_out_, *cfg_.layers, ndim_);
  }
  params_.allocate(fk::DType::F32);
  reset_parameters(seed);
}

double ParametricField::eps(double progress) const {
  return cfg_.eps_start * std::pow(cfg_.eps_end / cfg_.eps_start, std::clamp(progress, 0.0, 1.0));
}

std::vector<double> ParametricField::gates(double progress) const {
  if (cfg_.family == "polygons") return {polygon_gate(std::clamp(progress, 0.0, 1.0))};
  if (degree_ == 0) return {};
  std::vector<double> g(static_cast<size_t>(degree_ - kStarMinDegree + 1));
  star_degree_gates(degree_, std::clamp(progress, 0.0, 1.0), g.data());
  return g;
}

void ParametricField::reset_parameters(uint64_t seed) {
  fk::autograd::NoGradGuard ng;
  const int d = ndim_, K = cfg_.count, P = parametric_shape_size(d, degree_, vertices_);
  std::vector<double> v(static_cast<size_t>(n_out_) * K * P, 0.0);
  for (int c = 0; c < n_out_; ++c) {
    const ParametricStart start = start_shapes(c, seed);
    for (int k = 0; k < K; ++k) {
      double* p = v.data() + (static_cast<size_t>(c) * K + k) * P;
      for (int a = 0; a < d; ++a) {
        p[1 + a] = start.centres[k * d + a];
        p[1 + d + a * d + a] = 1.0 / start.radii[k * d + a];
      }
      for (int j = 0; j < vertices_; ++j)
        p[1 + d + d * d + j] = polygon_start_log_radius(vertices_);
    }
  }
  params_.raw(0).copy_(fk::from_vector(v, params_.shape(0)).to(fk::DType::F32));
  params_.raw(1).copy_(fk::from_vector(output_bias(heads_), fk::Dims{n_out_}).to(fk::DType::F32));
  if (cfg_.layers) reset_layered_interfaces(params_, layers_first_, *cfg_.layers);
  params_.flat().bump_version();
}

bool ParametricField::has_device_path() const {
  return (cfg_.family == "blobs" || cfg_.family == "ellipses") && !cfg_.layers;
}

void ParametricField::to(fk::Device d) {
  FK_CHECK(d.is_cpu() || has_device_path(), "nefi::ParametricField::to",
           "the cpu for a '" + kind() +
               "' field (only blobs and ellipses, without layers, train on a device)",
           d.str());
  fk::check_usable(d, "nefi::ParametricField::to");
  params_.to(d);
  if (d != device_) {
    coords_ = fk::Tensor();
    inv_2eps_ = fk::Tensor();
  }
  device_ = d;
}

const fk::Tensor& ParametricField::inv_2eps_on_device(double progress) {
  const double v = 0.5 / eps(progress);
  if (!inv_2eps_.defined()) {
    inv_2eps_ = fk::full(fk::Dims{}, v, {fk::DType::F32, device_});
  } else if (v != inv_2eps_value_) {
    fk::autograd::NoGradGuard ng;
    inv_2eps_.copy_(fk::full(fk::Dims{}, v, {fk::DType::F32}));
  }
  inv_2eps_value_ = v;
  return inv_2eps_;
}

bool ParametricField::retarget(double progress) {
  if (!device_.is_cuda()) return false;
  if (cfg_.family == "ellipses") {
    if (!inv_2eps_.defined()) return false;  // made by the first forward
    inv_2eps_on_device(progress);
  }
  return !heads_read_progress(heads_);
}

FieldMap ParametricField::forward(const Domain& domain, double progress) {
  FK_CHECK(domain.ndim() == ndim_, kWhere, std::to_string(ndim_) + "-D domain", domain.str());
  FK_CHECK(params_.flat().device() == device_, kWhere,
           "parameters on " + device_.str() + " (where to() put them)",
           params_.flat().device().str());
  if (!coords_.defined() || !(coords_shape_ == domain.shape())) {
    coords_ =
        domain.coords(fk::DType::F32).reshape({domain.numel(), ndim_}).contiguous().to(device_);
    coords_shape_ = domain.shape();
  }
  const std::vector<fk::Tensor> p = params_.views();
  fk::Tensor raw =
      device_.is_cuda()
          ? parametric_shapes_ops(
                coords_, p[0], p[1],
                cfg_.family == "ellipses" ? inv_2eps_on_device(progress) : fk::Tensor())
          : parametric_shapes(coords_, p[0], p[1], cfg_.family, eps(progress), gates(progress));
  if (cfg_.layers) {  // the background's layers: their base is b, already in raw
    std::vector<fk::Tensor> layers{fk::zeros({n_out_}, {fk::DType::F32})};
    layers.insert(layers.end(), p.begin() + layers_first_, p.end());
    raw = fk::add(raw, layered_grid(domain.shape(), *cfg_.layers, progress, layers));
  }
  return apply_heads(heads_, raw, domain.shape(), progress);
}

}  // namespace nefi
