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
#include "nefi/cuda/parametric_cells.h"
#include "nefi/field/parametric_device.h"
#include "nefi/field/polygon_outline.h"
#include "nefi/field/star_harmonics.h"
#include "nefi/real_dispatch.h"

namespace nefi {
namespace {

constexpr const char* kWhere = "nefi::ParametricField";
using cuda::kShapeChunk;
using Profile = cuda::ShapeProfile;

// A stars' outline of degree 3..8 has 1 to 6 degree gates.
void check_star_gate_count(size_t gates, const char* where) {
  const int n_gates = kStarMaxDegree - kStarMinDegree + 1;
  FK_CHECK(gates >= 1 && static_cast<int>(gates) <= n_gates, where,
           "stars with 1 to " + fk::to_text(n_gates) + " degree gates (degrees " +
               fk::to_text(kStarMinDegree) + " to " + fk::to_text(kStarMaxDegree) + ")",
           fk::to_text(gates));
}

// vertices: the polygons' V (read for polygons only).
Profile profile_of(const std::string& family, double eps, const std::vector<double>& gates = {},
                   int vertices = 0) {
  FK_CHECK(family == "blobs" || family == "ellipses" || family == "stars" || family == "polygons",
           kWhere, "family blobs, ellipses, stars or polygons", "'" + family + "'");
  Profile p;
  p.ellipse = family != "blobs";
  if (p.ellipse) {
    FK_CHECK(eps > 0 && std::isfinite(eps), kWhere, "an edge width eps > 0", fk::to_text(eps));
    p.inv_2eps = 0.5 / eps;
  }
  FK_CHECK(family == "stars" || family == "polygons" || gates.empty(), kWhere,
           "degree gates for stars and polygons only",
           fk::to_text(gates.size()) + " for " + family);
  if (family == "polygons") {
    FK_CHECK(gates.size() == 1 && gates[0] >= 0 && gates[0] <= 1, kWhere,
             "polygons with one outline gate in [0, 1]",
             fk::to_text(gates.size()) + " gates" +
                 (gates.empty() ? "" : ", the first " + fk::to_text(gates[0])));
    FK_CHECK(vertices >= kPolygonMinVertices && vertices <= kPolygonMaxVertices, kWhere,
             "polygons of " + fk::to_text(kPolygonMinVertices) + " to " +
                 fk::to_text(kPolygonMaxVertices) + " vertices",
             fk::to_text(vertices));
    p.vertices = vertices;
    p.gates[0] = gates[0];
  }
  if (family == "stars") {
    check_star_gate_count(gates.size(), kWhere);
    for (double g : gates)
      FK_CHECK(g >= 0 && g <= 1, kWhere, "degree gates in [0, 1]", fk::to_text(g));
    p.degree = static_cast<int>(gates.size()) + kStarMinDegree - 1;
    std::copy(gates.begin(), gates.end(), p.gates);
  }
  return p;
}

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
    // Fixed chunks of points (parallel), each summing every shape's
    // partials and the background's over its sub-chunks in order, then the
    // chunks added in order: the same bits at any thread count, and on a
    // device (parametric_cells.h's order).
    const int64_t chunks = (n + kShapeChunk - 1) / kShapeChunk;
    const int64_t width = static_cast<int64_t>(sv.size()) + C;
    const int64_t sub = cuda::shape_sub_chunk(n, width);
    std::vector<double> part(static_cast<size_t>(chunks * width), 0.0);
    fk::parallel_for(0, chunks, 1, [&](int64_t lo, int64_t hi) {
      std::vector<double> dp(static_cast<size_t>(P));
      for (int64_t ch = lo; ch < hi; ++ch) {
        const int64_t end = std::min(n, (ch + 1) * kShapeChunk);
        double* row = part.data() + ch * width;
        for (int64_t first = ch * kShapeChunk; first < end; first += sub) {
          const int64_t last = std::min(end, first + sub);
          for (int64_t ck = 0; ck < C * K; ++ck) {
            std::fill(dp.begin(), dp.end(), 0.0);
            cuda::shape_gradient_over(profile, d, C, ck / K, x.data(), first, last,
                                      sv.data() + ck * P, go.data(), dp.data());
            for (int64_t e = 0; e < P; ++e) row[ck * P + e] += dp[e];
          }
          for (int64_t c = 0; c < C; ++c)
            row[static_cast<int64_t>(sv.size()) + c] +=
                cuda::background_gradient_over(C, c, first, last, go.data());
        }
      }
    });
    std::vector<double> ds(sv.size(), 0.0), db(static_cast<size_t>(C), 0.0);
    for (int64_t ch = 0; ch < chunks; ++ch) {
      const double* row = part.data() + ch * width;
      for (size_t e = 0; e < sv.size(); ++e) ds[e] += row[e];
      for (int64_t c = 0; c < C; ++c) db[c] += row[static_cast<int64_t>(sv.size()) + c];
    }
    return {fk::from_vector(ds, s.shape()).to(s.dtype()),
            fk::from_vector(db, b.shape()).to(b.dtype())};
  }
};

}  // namespace

int parametric_shape_size(int ndim, int harmonics, int vertices) {
  return 1 + ndim + ndim * ndim + star_harmonic_count(ndim, harmonics) + vertices;
}

int check_parametric_operands(const fk::Tensor& coords, const fk::Tensor& shapes,
                              const fk::Tensor& background, const std::string& family, int degree,
                              const char* op) {
  const bool stars = family == "stars", polygons = family == "polygons";
  FK_CHECK(family == "blobs" || family == "ellipses" || stars || polygons, op,
           "family blobs, ellipses, stars or polygons", "'" + family + "'");
  FK_CHECK(coords.dim() == 2 && coords.size(1) >= (stars || polygons ? 2 : 1) &&
               coords.size(1) <= (polygons ? 2 : 3),
           op,
           stars      ? "coordinates (N, d) with d 2 or 3 for stars"
           : polygons ? "coordinates (N, 2) for polygons"
                      : "coordinates (N, d) with d in 1..3",
           coords.shape().str());
  FK_CHECK(!stars || (degree >= kStarMinDegree && degree <= kStarMaxDegree), op,
           "stars of an outline degree " + fk::to_text(kStarMinDegree) + " to " +
               fk::to_text(kStarMaxDegree) + " (1 to " +
               fk::to_text(kStarMaxDegree - kStarMinDegree + 1) + " degree gates)",
           fk::to_text(degree));
  // A polygon's V is what its shapes hold past the alpha, centre and matrix.
  FK_CHECK(!polygons || (shapes.dim() == 3 && shapes.size(2) >= 7 + kPolygonMinVertices &&
                         shapes.size(2) <= 7 + kPolygonMaxVertices),
           op,
           "polygons' shapes (C, K, 7 + V) with V in " + fk::to_text(kPolygonMinVertices) + ".." +
               fk::to_text(kPolygonMaxVertices),
           shapes.shape().str());
  const int vertices = polygons ? static_cast<int>(shapes.size(2)) - 7 : 0;
  const int d = static_cast<int>(coords.size(1));
  const int P = parametric_shape_size(d, stars ? degree : 0, vertices);
  FK_CHECK(shapes.dim() == 3 && shapes.size(2) == P, op, "shapes (C, K, " + fk::to_text(P) + ")",
           shapes.shape().str());
  FK_CHECK(background.dim() == 1 && background.size(0) == shapes.size(0), op,
           "a background of " + fk::to_text(shapes.size(0)) + " channels",
           background.shape().str());
  const fk::DType dt = shapes.dtype();
  FK_CHECK((dt == fk::DType::F32 || dt == fk::DType::F64) && coords.dtype() == dt &&
               background.dtype() == dt,
           op, "coordinates, shapes and background of one real dtype (f32 or f64)",
           std::string(fk::name(coords.dtype())) + ", " + fk::name(dt) + ", " +
               fk::name(background.dtype()));
  FK_CHECK(coords.device() == shapes.device() && background.device() == shapes.device(), op,
           "coordinates, shapes and background on one device",
           coords.device().str() + ", " + shapes.device().str() + ", " + background.device().str());
  return vertices;
}

fk::Tensor parametric_shapes(const fk::Tensor& coords, const fk::Tensor& shapes,
                             const fk::Tensor& background, const std::string& family, double eps,
                             const std::vector<double>& degree_gates) {
  constexpr const char* kOp = "nefi::parametric_shapes";
  if (family == "stars") check_star_gate_count(degree_gates.size(), kOp);
  const int degree =
      family == "stars" ? static_cast<int>(degree_gates.size()) + kStarMinDegree - 1 : 0;
  const int vertices = check_parametric_operands(coords, shapes, background, family, degree, kOp);
  FK_CHECK(shapes.device().is_cpu(), kOp, "tensors on the cpu", shapes.device().str());
  const Profile profile = profile_of(family, eps, degree_gates, vertices);
  const int d = static_cast<int>(coords.size(1));
  const int P = static_cast<int>(shapes.size(2));
  const fk::DType dt = shapes.dtype();
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
      for (int64_t i = lo; i < hi; ++i)
        for (int64_t c = 0; c < C; ++c)
          out[i * C + c] = static_cast<T>(cuda::shapes_value_at(profile, d, K, P, xv.data() + i * d,
                                                                sv.data() + c * K * P, bv[c]));
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
           fk::to_text(cfg_.count));
  const bool stars = cfg_.family == "stars";
  FK_CHECK(!stars || (cfg_.harmonics >= kStarMinDegree && cfg_.harmonics <= kStarMaxDegree), kWhere,
           "stars with an outline of degree " + fk::to_text(kStarMinDegree) + " to " +
               fk::to_text(kStarMaxDegree),
           fk::to_text(cfg_.harmonics));
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

void ParametricField::to(fk::Device d) {
  fk::check_usable(d, "nefi::ParametricField::to");
  params_.to(d);
  if (d != device_) {
    coords_ = fk::Tensor();
    tunables_ = fk::Tensor();
    layered_rows_ = LayeredRows();
  }
  device_ = d;
}

const fk::Tensor& ParametricField::tunables_on_device(double progress) {
  std::vector<double> v(cuda::kShapeTunables, 0.0);
  v[0] = cfg_.family == "blobs" ? 0.0 : 0.5 / eps(progress);
  const std::vector<double> g = gates(progress);
  std::copy(g.begin(), g.end(), v.begin() + 1);
  if (!tunables_.defined()) {
    tunables_ = fk::from_vector(v, fk::Dims{cuda::kShapeTunables}).to(device_);
  } else if (v != tunables_value_) {
    fk::autograd::NoGradGuard ng;
    tunables_.copy_(fk::from_vector(v, fk::Dims{cuda::kShapeTunables}));
  }
  tunables_value_ = v;
  return tunables_;
}

bool ParametricField::retarget(double progress) {
  // The tunables are made by the first forward; a layered background's
  // width and gates are numbers of each forward (layered_field.h).
  if (!device_.is_cuda() || !tunables_.defined() || cfg_.layers) return false;
  tunables_on_device(progress);
  return !heads_read_progress(heads_);
}

FieldMap ParametricField::forward(const Domain& domain, double progress) {
  FK_CHECK(domain.ndim() == ndim_, kWhere, fk::to_text(ndim_) + "-D domain", domain.str());
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
          ? parametric_shapes_device(coords_, p[0], p[1], cfg_.family, degree_,
                                     tunables_on_device(progress))
          : parametric_shapes(coords_, p[0], p[1], cfg_.family, eps(progress), gates(progress));
  if (cfg_.layers) {  // the background's layers: their base is b, already in raw
    std::vector<fk::Tensor> layers{fk::zeros({n_out_}, {fk::DType::F32, device_})};
    layers.insert(layers.end(), p.begin() + layers_first_, p.end());
    raw =
        fk::add(raw, layered_grid(domain.shape(), *cfg_.layers, progress, layers, &layered_rows_));
  }
  return apply_heads(heads_, raw, domain.shape(), progress);
}

}  // namespace nefi
